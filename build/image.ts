// `npm run image`: the DaemonSet's image, built without a container engine, for
// linux/amd64 (Bun's baseline build: CPUs without AVX2 too) and linux/arm64: meshcni
// (compiled for each), and what it runs, from Debian bookworm: glibc, and iptables with
// its libraries (the agent's sweeps read and repair pods' iptables rules). No shell, no
// package manager. Written to build/meshcni-image.tar (an OCI image layout archive) as
// ghcr.io/meshcni/meshcni:<version>, the tag deploy/daemonset.yaml names.
import { lstatSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { execa } from "execa";
import { buildInfo, imageRepository } from "../src/build-info.js";
import { extractPackages } from "./debian.js";
import { type LayerEntry, writeOciArchive } from "./oci.js";

const root = join(import.meta.dirname, "..");
export const imageName = `${imageRepository}:${buildInfo.version}`;
export const imageArchive = join(root, "build/meshcni-image.tar");
const targets = { amd64: "bun-linux-x64-baseline", arm64: "bun-linux-arm64" } as const;
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

async function platform(arch: keyof typeof targets) {
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
      "src/cli.ts",
      "--outfile",
      binary,
      "--define",
      `MESHCNI_COMMIT="${(await execa("git", ["describe", "--always", "--dirty", "--abbrev=12"], { cwd: root, reject: false })).stdout || "unknown"}"`,
    ],
    { cwd: root, preferLocal: true },
  );
  const packages = await extractPackages(arch, ["libc6", "iptables"], join(work, "rootfs"), join(root, ".cache/debs", arch));
  const entries: LayerEntry[] = [
    ...tree(join(work, "rootfs")),
    { path: "usr/local/bin/meshcni", source: binary, mode: 0o755 },
    { path: "tmp", directory: true, mode: 0o1777 },
  ];
  return {
    os: "linux" as const,
    architecture: arch,
    entries,
    config: { Entrypoint: ["/usr/local/bin/meshcni"], Cmd: ["install"], Env: ["PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] },
    packages,
  };
}

/** Builds the image for these architectures into `archive`; prints and returns what is in it. */
export async function buildImage(archs: Array<keyof typeof targets>, archive = imageArchive): Promise<Record<string, number>> {
  const platforms = [];
  for (const arch of archs) platforms.push(await platform(arch));
  const sizes = await writeOciArchive(archive, imageName, platforms);
  console.log(`${imageName} -> ${archive} (${(lstatSync(archive).size / 2 ** 20).toFixed(1)} MB archive)`);
  for (const { architecture, packages } of platforms) {
    const mb = (key: string) => (sizes[key]! / 2 ** 20).toFixed(1);
    console.log(
      `  linux/${architecture}: ${mb(`linux/${architecture}`)} MB, gzipped ${mb(`linux/${architecture}:gzip`)} MB; Debian: ${packages.join(" ")}`,
    );
  }
  return sizes;
}

if (import.meta.main) await buildImage(["amd64", "arm64"]);
