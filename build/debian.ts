// Debian packages for an image's root filesystem, of any architecture, without a
// package manager in the image or apt's config on the build host changed: the suites'
// InRelease checked with gpgv against Debian's archive keyring, each Packages index and
// .deb checked against the digests it signs, the packages' files extracted by dpkg-deb.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";

const keyring = "/usr/share/keyrings/debian-archive-keyring.gpg";
const suites = [
  { base: "http://deb.debian.org/debian", suite: "bookworm" },
  { base: "http://deb.debian.org/debian", suite: "bookworm-updates" },
  { base: "http://deb.debian.org/debian-security", suite: "bookworm-security" },
];

interface Package {
  name: string;
  version: string;
  url: string;
  sha256: string;
  depends: string[];
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

/** A suite's packages for one architecture, from its signed index. */
async function suitePackages(base: string, suite: string, arch: string, cache: string): Promise<Package[]> {
  const inRelease = await download(`${base}/dists/${suite}/InRelease`);
  const signed = join(cache, `${suite}.InRelease`);
  writeFileSync(signed, inRelease);
  await execa("gpgv", ["--keyring", keyring, signed]);
  const path = `main/binary-${arch}/Packages.xz`;
  const digest = new RegExp(`^ ([0-9a-f]{64})\\s+\\d+ ${path.replace(/\./g, "\\.")}$`, "m").exec(
    inRelease.toString().split("\nSHA256:\n")[1] ?? "",
  )?.[1];
  if (!digest) throw new Error(`${suite}'s InRelease lists no ${path}`);
  const index = await download(`${base}/dists/${suite}/${path}`);
  if (sha256(index) !== digest) throw new Error(`${suite}/${path} does not match its signed digest`);
  const text = (await execa("xz", ["-dc"], { input: index, encoding: "utf8" })).stdout;
  return text.split("\n\n").flatMap((stanza) => {
    const field = (key: string) => new RegExp(`^${key}: (.*)$`, "m").exec(stanza)?.[1];
    const name = field("Package");
    if (!name) return [];
    // The first of each alternative (a | b) is taken: the essentials of a small image.
    const depends = [field("Pre-Depends"), field("Depends")]
      .flatMap((list) => (list ? list.split(",") : []))
      .map(
        (dependency) =>
          dependency
            .split("|")[0]!
            .trim()
            .split(/[\s:(]/)[0]!,
      )
      .filter(Boolean);
    return [{ name, version: field("Version")!, url: `${base}/${field("Filename")}`, sha256: field("SHA256")!, depends }];
  });
}

/**
 * Extracts `roots` and everything they depend on (Debian bookworm, the latest of its
 * suites) into `rootfs`; returns each package with its version.
 */
export async function extractPackages(arch: "amd64" | "arm64", roots: string[], rootfs: string, cache: string): Promise<string[]> {
  mkdirSync(cache, { recursive: true });
  const newest = new Map<string, Package>();
  for (const { base, suite } of suites) {
    for (const found of await suitePackages(base, suite, arch, cache)) {
      const known = newest.get(found.name);
      const newer =
        !known || (await execa("dpkg", ["--compare-versions", found.version, "gt", known.version], { reject: false })).exitCode === 0;
      if (newer) newest.set(found.name, found);
    }
  }
  const wanted = new Map<string, Package>();
  const queue = [...roots];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (wanted.has(name)) continue;
    const found = newest.get(name);
    if (!found) throw new Error(`no Debian package ${name} for ${arch}`);
    wanted.set(name, found);
    queue.push(...found.depends);
  }
  mkdirSync(rootfs, { recursive: true });
  for (const found of wanted.values()) {
    const deb = join(cache, `${found.sha256}.deb`);
    if (!existsSync(deb)) {
      const data = await download(found.url);
      if (sha256(data) !== found.sha256) throw new Error(`${found.url} does not match its signed digest`);
      writeFileSync(deb, data);
    } else if (sha256(readFileSync(deb)) !== found.sha256) throw new Error(`${deb} is corrupt`);
    await execa("dpkg-deb", ["--extract", deb, rootfs]);
  }
  return [...wanted.values()].map((found) => `${found.name}=${found.version}`).sort();
}
