// `npm run image`: the DaemonSet's image, built without a container engine, for
// linux/amd64 (Bun's baseline build: CPUs without AVX2 too) and linux/arm64: meshcni
// (compiled for each into the Bun runtime pinned in bun-runtime.ts), and what it runs, from
// Debian bookworm: glibc, and iptables with its libraries (the agent's sweeps read and repair
// pods' iptables rules), exactly the packages build/debian-packages.lock.json names (a
// package the archive has changed is refused until the lock is updated on purpose:
// `npm run image -- --update-lock`). No shell, no package manager. Written to
// build/meshcni-image.tar (an OCI image layout archive) as ghcr.io/meshcni/meshcni:<version>,
// the tag deploy/daemonset.yaml names; its digest printed, for `meshcni manifests --image
// NAME@DIGEST` and the chart's image.digest.
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { execa } from "execa";
import { buildInfo, imageRepository } from "../src/build-info.js";
import { bunRuntime, bunRuntimes, type ImageArch } from "./bun-runtime.js";
import { asLock, extractPackages, lockDifferences, type PackageLock, resolvePackages } from "./debian.js";
import { type LayerEntry, writeOciArchive } from "./oci.js";

const root = join(import.meta.dirname, "..");
export const imageName = `${imageRepository}:${buildInfo.version}`;
export const imageArchive = join(root, "build/meshcni-image.tar");
const targets = { amd64: "bun-linux-x64-baseline", arm64: "bun-linux-arm64" } as const;
export const packageLockPath = join(root, "build/debian-packages.lock.json");
const imageRoots = ["libc6", "iptables"];
/** Documentation and package bookkeeping: nothing of it runs. */
const skipped = /^usr\/share\/(doc|man|info|lintian|locale)\//;

/** Every file, link and directory under `dir`, as layer entries at their path relative to it. */
function tree(dir: string): LayerEntry[] {
  const entries: LayerEntry[] = [];
  const walk = (path: string) => {
    for (const name of readdirSync(path)) {
      const full = join(path, name);
      const inImage = relative(dir, full);
      if (skipped.test(`${inImage}/`)) continue;
      const stat = lstatSync(full);
      if (stat.isDirectory()) {
        entries.push({ path: inImage, directory: true, mode: stat.mode & 0o7777 });
        walk(full);
      } else entries.push({ path: inImage, source: full });
    }
  };
  walk(dir);
  return entries;
}

/**
 * The packages for `arch` as the lock names them: refused, each difference said, when the
 * archive serves anything else, unless `updateLock` (then the lock takes what it serves).
 */
async function lockedPackages(arch: ImageArch, updateLock: boolean) {
  const lock = JSON.parse(readFileSync(packageLockPath, "utf8")) as Record<string, PackageLock>;
  const resolved = await resolvePackages(arch, imageRoots, join(root, ".cache/debs", arch));
  const differences = lockDifferences(lock[arch] ?? {}, asLock(resolved));
  if (differences.length > 0 && !updateLock)
    throw new Error(
      `Debian's archive no longer serves what build/debian-packages.lock.json holds for ${arch}:\n  ${differences.join("\n  ")}\n` +
        "review the change, then take it on purpose: npm run image -- --update-lock",
    );
  if (differences.length > 0) writeFileSync(packageLockPath, `${JSON.stringify({ ...lock, [arch]: asLock(resolved) }, null, 2)}\n`);
  return resolved;
}

/** The commit a build names (meshcni --version, meshcni_build_info): git's, unless another build is asked for. */
async function commitOf(asked: string | undefined): Promise<string> {
  if (asked) return asked;
  return (await execa("git", ["describe", "--always", "--dirty", "--abbrev=12"], { cwd: root, reject: false })).stdout || "unknown";
}

async function platform(arch: ImageArch, updateLock: boolean, commit?: string) {
  const work = join(root, ".cache/image", arch);
  rmSync(join(work, "rootfs"), { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const binary = join(work, "meshcni");
  await execa(
    "bun",
    [
      "build",
      "--compile",
      "--bytecode",
      "--minify",
      "--format=esm",
      "--splitting",
      `--target=${targets[arch]}`,
      `--compile-executable-path=${await bunRuntime(arch, join(root, ".cache/bun-runtimes"))}`,
      "src/cli.ts",
      "--outfile",
      binary,
      "--define",
      `MESHCNI_COMMIT="${await commitOf(commit)}"`,
    ],
    { cwd: root, preferLocal: true },
  );
  const resolved = await lockedPackages(arch, updateLock);
  await extractPackages(resolved, join(work, "rootfs"), join(root, ".cache/debs", arch));
  const packages = [...resolved.values()].map((found) => `${found.name}=${found.version}`).sort();
  const runtime = bunRuntimes[arch];
  const entries: LayerEntry[] = [
    ...tree(join(work, "rootfs")),
    { path: "usr/local/bin/meshcni", source: binary, mode: 0o755 },
    { path: "tmp", directory: true, mode: 0o1777 },
  ];
  return {
    os: "linux" as const,
    architecture: arch,
    entries,
    config: {
      Entrypoint: ["/usr/local/bin/meshcni"],
      Cmd: ["install"],
      Env: ["PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
      // What it holds, readable with crictl inspecti or any registry client.
      Labels: {
        "org.opencontainers.image.version": buildInfo.version,
        "io.meshcni.bun-runtime": `${runtime.name}@${runtime.version} ${runtime.integrity}`,
        "io.meshcni.debian-packages": packages.join(" "),
      },
    },
    packages,
  };
}

/**
 * Builds the image for these architectures into `archive`; prints and returns what is in it.
 * `other`: another build (the tests' second version to roll out to): its tag and the commit its binary names.
 */
export async function buildImage(
  archs: ImageArch[],
  archive = imageArchive,
  updateLock = false,
  other?: { tag: string; commit: string },
): Promise<Record<string, number>> {
  const platforms = [];
  for (const arch of archs) platforms.push(await platform(arch, updateLock, other?.commit));
  const name = other ? `${imageRepository}:${other.tag}` : imageName;
  const { sizes, digest } = await writeOciArchive(archive, name, platforms);
  console.log(`${name} -> ${archive} (${(lstatSync(archive).size / 2 ** 20).toFixed(1)} MB archive)`);
  console.log(`  digest: ${name}@${digest}`);
  for (const { architecture, packages } of platforms) {
    const mb = (key: string) => (sizes[key]! / 2 ** 20).toFixed(1);
    console.log(
      `  linux/${architecture}: ${mb(`linux/${architecture}`)} MB, gzipped ${mb(`linux/${architecture}:gzip`)} MB; Debian: ${packages.join(" ")}`,
    );
  }
  return sizes;
}

if (import.meta.main) await buildImage(["amd64", "arm64"], imageArchive, process.argv.includes("--update-lock"));
