// Debian packages for an image's root filesystem, of any architecture, without a
// package manager in the image or apt's config on the build host changed: the suites'
// InRelease checked with gpgv against Debian's archive keyring (only what it signed is
// read, and not past its Valid-Until), each Packages index and .deb checked against the
// digests it signs, the packages' files extracted by dpkg-deb.
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

export interface Package {
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

const signedHeader = "-----BEGIN PGP SIGNED MESSAGE-----\n";
const signatureEnd = /-----END PGP SIGNATURE-----\n?$/;

/**
 * The part of an InRelease that gpgv verified against `keyringPath`, and nothing else:
 * gpgv passes a file with text before or after the signed block, so such a file is
 * refused, and the payload is what gpgv itself writes out (`--output`), never the file
 * read again. A Valid-Until in the past (a replayed, stale index) is refused too.
 */
export async function verifiedRelease(inRelease: Buffer, keyringPath: string, dir: string, now: Date = new Date()): Promise<string> {
  const text = inRelease.toString();
  const headers = text.split(signedHeader).length - 1;
  if (!text.startsWith(signedHeader) || headers !== 1 || !signatureEnd.test(text))
    throw new Error("InRelease has text outside its one clearsigned block: refused");
  mkdirSync(dir, { recursive: true });
  const signed = join(dir, "InRelease");
  writeFileSync(signed, inRelease);
  const release = (await execa("gpgv", ["--keyring", keyringPath, "--output", "-", signed], { stripFinalNewline: false })).stdout;
  const validUntil = /^Valid-Until: (.+)$/m.exec(release)?.[1];
  if (validUntil !== undefined) {
    const until = new Date(validUntil);
    if (Number.isNaN(until.getTime())) throw new Error(`InRelease's Valid-Until is not a date: ${validUntil}`);
    if (until.getTime() < now.getTime())
      throw new Error(`InRelease expired at ${until.toISOString()} (Valid-Until): a stale or replayed index`);
  }
  return release;
}

/** The SHA256 digest a Release lists for `path`. */
export function releaseDigest(release: string, path: string): string | undefined {
  const section = /^SHA256:\n((?: .*\n?)*)/m.exec(release)?.[1] ?? "";
  return new RegExp(`^ ([0-9a-f]{64})\\s+\\d+ ${path.replace(/\./g, "\\.")}$`, "m").exec(section)?.[1];
}

/** A suite's packages for one architecture, from its signed index. */
async function suitePackages(base: string, suite: string, arch: string, cache: string): Promise<Package[]> {
  const release = await verifiedRelease(await download(`${base}/dists/${suite}/InRelease`), keyring, join(cache, suite));
  const path = `main/binary-${arch}/Packages.xz`;
  const digest = releaseDigest(release, path);
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

/** A package as the lock holds it. */
export interface LockedPackage {
  version: string;
  sha256: string;
}
export type PackageLock = Record<string, LockedPackage>;

/** What `resolved` has that `lock` has not, or otherwise: empty when the archive still serves exactly the lock. */
export function lockDifferences(lock: PackageLock, resolved: PackageLock): string[] {
  const names = [...new Set([...Object.keys(lock), ...Object.keys(resolved)])].sort();
  return names.flatMap((name) => {
    const [locked, found] = [lock[name], resolved[name]];
    if (!found) return [`${name} ${locked!.version}: locked, no longer wanted`];
    if (!locked) return [`${name} ${found.version}: wanted, not in the lock`];
    if (locked.version !== found.version) return [`${name}: ${locked.version} locked, ${found.version} in the archive`];
    if (locked.sha256 !== found.sha256) return [`${name} ${found.version}: another .deb than the locked one (sha256 ${found.sha256})`];
    return [];
  });
}

/**
 * `roots` and everything they depend on, as Debian bookworm serves them now (the latest of
 * its suites), each checked against its signed index.
 */
export async function resolvePackages(arch: "amd64" | "arm64", roots: string[], cache: string): Promise<Map<string, Package>> {
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
  return wanted;
}

/** The packages as a lock holds them. */
export const asLock = (packages: Map<string, Package>): PackageLock =>
  Object.fromEntries(
    [...packages].sort(([a], [b]) => a.localeCompare(b)).map(([name, { version, sha256 }]) => [name, { version, sha256 }]),
  );

/** Extracts the packages into `rootfs`, each .deb checked against its signed digest (cached by it). */
export async function extractPackages(packages: Map<string, Package>, rootfs: string, cache: string): Promise<void> {
  mkdirSync(rootfs, { recursive: true });
  for (const found of packages.values()) {
    const deb = join(cache, `${found.sha256}.deb`);
    if (!existsSync(deb)) {
      const data = await download(found.url);
      if (sha256(data) !== found.sha256) throw new Error(`${found.url} does not match its signed digest`);
      writeFileSync(deb, data);
    } else if (sha256(readFileSync(deb)) !== found.sha256) throw new Error(`${deb} is corrupt`);
    await execa("dpkg-deb", ["--extract", deb, rootfs]);
  }
}
