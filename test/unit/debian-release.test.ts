import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { releaseDigest, verifiedRelease } from "../../build/debian.js";

const packagesPath = "main/binary-amd64/Packages.xz";
const real = "a".repeat(64);
const forged = "f".repeat(64);
const release = (extra = "") =>
  `Origin: Debian\nSuite: stable\nDate: Sat, 08 Nov 2026 10:00:00 UTC\n${extra}SHA256:\n ${real} 8787 ${packagesPath}\n`;

/**
 * The image build's trust in Debian's InRelease, against a throwaway key: only what gpgv
 * verified is read. A forged stanza placed before the signed block (gpgv still passes
 * such a file) must not choose the Packages digest.
 */
describe("reading a signed InRelease", () => {
  let dir = "";
  let keyring = "";
  const gpg = (args: string[], input = "") =>
    execa("gpg", ["--batch", "--homedir", join(dir, "home"), "--pinentry-mode", "loopback", "--passphrase", "", ...args], { input });
  const clearsign = async (text: string) => (await gpg(["--clearsign"], text)).stdout.concat("\n");

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-release-"));
    await execa("mkdir", ["-m", "700", join(dir, "home")]);
    await gpg(["--quick-gen-key", "throwaway@meshcni.test", "ed25519", "sign", "1d"]);
    keyring = join(dir, "keyring.gpg");
    await gpg(["--output", keyring, "--export", "throwaway@meshcni.test"]);
  }, 60_000);
  afterAll(async () => {
    // gpg started an agent for the throwaway home: it goes with it.
    await execa("gpgconf", ["--homedir", join(dir, "home"), "--kill", "gpg-agent"], { reject: false });
    rmSync(dir, { recursive: true, force: true });
  });

  it("returns the signed text, and its digest for the Packages index", async () => {
    const text = await verifiedRelease(Buffer.from(await clearsign(release())), keyring, join(dir, "ok"));
    expect(releaseDigest(text, packagesPath)).toBe(real);
  });

  it("refuses a forged stanza before the signed block, which gpgv alone lets through", async () => {
    const signed = await clearsign(release());
    const file = `SHA256:\n ${forged} 8787 ${packagesPath}\n\n${signed}`;
    // The finding: gpgv verifies such a file.
    await execa("gpgv", ["--keyring", keyring, "-"], { input: file });
    await expect(verifiedRelease(Buffer.from(file), keyring, join(dir, "before"))).rejects.toThrow(
      "text outside its one clearsigned block",
    );
    await expect(verifiedRelease(Buffer.from(`${signed}\nSHA256:\n ${forged} 1 x\n`), keyring, join(dir, "after"))).rejects.toThrow(
      "text outside",
    );
  });

  it("refuses a signature by another key, and a payload changed after signing", async () => {
    const signed = await clearsign(release());
    await expect(verifiedRelease(Buffer.from(signed.replace(real, forged)), keyring, join(dir, "changed"))).rejects.toThrow("gpgv");
    await expect(
      verifiedRelease(Buffer.from(signed), "/usr/share/keyrings/debian-archive-keyring.gpg", join(dir, "other")),
    ).rejects.toThrow("gpgv");
  });

  it("refuses an index past its Valid-Until (stale or replayed), and takes one still valid", async () => {
    const signed = await clearsign(release("Valid-Until: Sat, 15 Nov 2026 10:00:00 UTC\n"));
    await expect(verifiedRelease(Buffer.from(signed), keyring, join(dir, "stale"), new Date("2026-11-20T00:00:00Z"))).rejects.toThrow(
      "expired at 2026-11-15T10:00:00.000Z",
    );
    const text = await verifiedRelease(Buffer.from(signed), keyring, join(dir, "fresh"), new Date("2026-11-10T00:00:00Z"));
    expect(releaseDigest(text, packagesPath)).toBe(real);
  });
});
