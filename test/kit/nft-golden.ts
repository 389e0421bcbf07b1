// Captures the netlink messages Debian's nft sends for small rulesets, as golden bytes for
// test/unit/nftables/ (meshcni's encoder must send the same bytes for the same rules):
//   bun test/kit/nft-golden.ts > test/unit/nftables/golden.json
// Runs `nft -f` under strace in a throwaway netns and keeps the batch's messages between
// BATCH_BEGIN and BATCH_END: type, flags and the bytes after the netlink header.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { goldenCases } from "../unit/nftables/cases.js";

function parseDump(stderr: string): Array<{ type: number; flags: number; body: string }> {
  // strace's dump lines: " | 00010  xx xx … (16 bytes, 8 and 8)  ascii |".
  const hex = [...stderr.matchAll(/^ \| [0-9a-f]{5} {2}(.{49})/gm)].flatMap((line) => line[1]!.match(/[0-9a-f]{2}/g) ?? []);
  const bytes = Uint8Array.from(hex.map((byte) => Number.parseInt(byte, 16)));
  const view = new DataView(bytes.buffer);
  const messages: Array<{ type: number; flags: number; body: string }> = [];
  for (let offset = 0; offset + 16 <= bytes.length; ) {
    const length = view.getUint32(offset, true);
    const type = view.getUint16(offset + 4, true);
    const flags = view.getUint16(offset + 6, true);
    if (type !== 0x10 && type !== 0x11)
      messages.push({ type, flags, body: Buffer.from(bytes.subarray(offset + 16, offset + length)).toString("hex") });
    offset += (length + 3) & ~3;
  }
  return messages;
}

const golden: Record<string, Array<{ type: number; flags: number; body: string }>> = {};
for (const [name, ruleset] of Object.entries(goldenCases)) {
  const dir = mkdtempSync(join(tmpdir(), "nft-golden-"));
  const netns = `nft-golden-${process.pid}`;
  try {
    writeFileSync(join(dir, "rules.nft"), ruleset);
    execFileSync("ip", ["netns", "add", netns]);
    const result = Bun.spawnSync([
      "ip",
      "netns",
      "exec",
      netns,
      "strace",
      "-e",
      "trace=sendmsg",
      "-e",
      "write=3",
      "nft",
      "-f",
      join(dir, "rules.nft"),
    ]);
    if (result.exitCode !== 0) throw new Error(`${name}: nft failed: ${result.stderr.toString()}`);
    golden[name] = parseDump(result.stderr.toString());
  } finally {
    execFileSync("ip", ["netns", "del", netns]);
    rmSync(dir, { recursive: true, force: true });
  }
}
process.stdout.write(`${JSON.stringify({ nft: execFileSync("nft", ["--version"], { encoding: "utf8" }).trim(), golden }, null, 2)}\n`);
