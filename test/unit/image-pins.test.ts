import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bunRuntimes, matchesIntegrity, tarballUrl } from "../../build/bun-runtime.js";
import { lockDifferences, type PackageLock } from "../../build/debian.js";
import { packageLockPath } from "../../build/image.js";
import { projectRoot } from "../kit/paths.js";

const npmLock = JSON.parse(readFileSync(join(projectRoot, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version: string; integrity?: string }>;
};

/** What the image is built from, pinned (issue 41): the Bun runtimes and the Debian packages. */
describe("the image's pins", () => {
  it("compiles into runtimes of the project's own bun version; the one package-lock.json holds has its integrity", () => {
    const bun = npmLock.packages["node_modules/bun"]!.version;
    for (const runtime of Object.values(bunRuntimes)) expect(runtime.version).toBe(bun);
    expect(bunRuntimes.arm64.integrity).toBe(npmLock.packages["node_modules/@oven/bun-linux-aarch64"]!.integrity);
    expect(tarballUrl(bunRuntimes.amd64)).toBe(
      "https://registry.npmjs.org/@oven/bun-linux-x64-baseline/-/bun-linux-x64-baseline-1.4.5.tgz",
    );
  });

  it("takes a runtime only when its bytes are what the pin names", () => {
    const data = Buffer.from("a runtime");
    const integrity = `sha512-${createHash("sha512").update(data).digest("base64")}`;
    expect(matchesIntegrity(data, integrity)).toBe(true);
    expect(matchesIntegrity(Buffer.from("another"), integrity)).toBe(false);
    expect(() => matchesIntegrity(data, "sha1-abc")).toThrow('integrity "sha1-abc" is no sha512 SRI');
  });

  it("locks each architecture's Debian packages, glibc and iptables among them, by version and digest", () => {
    const lock = JSON.parse(readFileSync(packageLockPath, "utf8")) as Record<string, PackageLock>;
    expect(Object.keys(lock).sort()).toEqual(["amd64", "arm64"]);
    for (const packages of Object.values(lock)) {
      expect(Object.keys(packages)).toEqual(expect.arrayContaining(["libc6", "iptables", "libnftnl11"]));
      for (const { version, sha256 } of Object.values(packages)) {
        expect(version).toMatch(/^\d/);
        expect(sha256).toMatch(/^[0-9a-f]{64}$/);
      }
    }
  });

  it("refuses an archive that serves anything but the lock, saying each difference", () => {
    const locked: PackageLock = {
      libc6: { version: "2.36-9+deb12u13", sha256: "a".repeat(64) },
      netbase: { version: "6.4", sha256: "b".repeat(64) },
    };
    expect(lockDifferences(locked, locked)).toEqual([]);
    expect(
      lockDifferences(locked, {
        libc6: { version: "2.36-9+deb12u14", sha256: "c".repeat(64) },
        libmnl0: { version: "1.0.4-3", sha256: "d".repeat(64) },
        netbase: { version: "6.4", sha256: "e".repeat(64) },
      }),
    ).toEqual([
      "libc6: 2.36-9+deb12u13 locked, 2.36-9+deb12u14 in the archive",
      "libmnl0 1.0.4-3: wanted, not in the lock",
      `netbase 6.4: another .deb than the locked one (sha256 ${"e".repeat(64)})`,
    ]);
    expect(lockDifferences(locked, { libc6: locked.libc6! })).toEqual(["netbase 6.4: locked, no longer wanted"]);
  });
});
