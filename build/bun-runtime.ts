// The Bun runtimes `npm run image` compiles meshcni into, one per platform, pinned: the
// npm package of each at the version of the project's own bun (package-lock.json), checked
// against the integrity recorded here before it is used. Without this, `bun build --compile
// --target` fetches whatever runtime it finds, outside any lock.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";

/** Each image platform's runtime: its npm package and that package's integrity (npm's SRI, sha512). */
export const bunRuntimes = {
  amd64: {
    name: "@oven/bun-linux-x64-baseline",
    version: "1.4.5",
    integrity: "sha512-s8yMwYcFnnrA178gji0gZbkE2WVDej/Ti1x770oPfihxyRxSMNhGhiAQNXV53aDeraZxksdvKV/RAdQBCd0qPA==",
  },
  arm64: {
    name: "@oven/bun-linux-aarch64",
    version: "1.4.5",
    integrity: "sha512-4BXmsSKnjOrlGWqZV4x/oWa7AVoR+B6lCXddMzOAXBIm3t50eslg9wb66gmtW1AamEQ1l1CDvmmruysEhqOWMg==",
  },
} as const;
export type ImageArch = keyof typeof bunRuntimes;

/** The npm registry's tarball of a package version. */
export const tarballUrl = ({ name, version }: { name: string; version: string }) =>
  `https://registry.npmjs.org/${name}/-/${name.slice(name.indexOf("/") + 1)}-${version}.tgz`;

/** Whether `data` is what an SRI string (`sha512-<base64>`) names. */
export function matchesIntegrity(data: Buffer, integrity: string): boolean {
  const [algorithm, digest] = integrity.split("-", 2);
  if (algorithm !== "sha512" || !digest) throw new Error(`integrity ${JSON.stringify(integrity)} is no sha512 SRI`);
  return createHash("sha512").update(data).digest("base64") === digest;
}

/**
 * The runtime for `arch`, as an executable path under `cache`: its tarball downloaded once,
 * checked against the pinned integrity each time it is used, its `bin/bun` extracted.
 */
export async function bunRuntime(arch: ImageArch, cache: string): Promise<string> {
  const pinned = bunRuntimes[arch];
  const dir = join(cache, `${pinned.name.replace("/", "+")}-${pinned.version}`);
  const tarball = join(dir, "package.tgz");
  mkdirSync(dir, { recursive: true });
  if (!existsSync(tarball)) {
    const response = await fetch(tarballUrl(pinned));
    if (!response.ok) throw new Error(`GET ${tarballUrl(pinned)}: ${response.status}`);
    const data = Buffer.from(await response.arrayBuffer());
    if (!matchesIntegrity(data, pinned.integrity)) throw new Error(`${tarballUrl(pinned)} does not match its pinned integrity`);
    writeFileSync(tarball, data);
  }
  if (!matchesIntegrity(readFileSync(tarball), pinned.integrity)) throw new Error(`${tarball} does not match its pinned integrity`);
  await execa("tar", ["-xzf", tarball, "-C", dir, "package/bin/bun"]);
  return join(dir, "package/bin/bun");
}
