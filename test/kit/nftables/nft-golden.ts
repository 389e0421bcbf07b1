// Records what Debian's nft and the kernel say over netlink, as golden bytes for
// test/unit/nftables/:   bun test/kit/nftables/nft-golden.ts > test/unit/nftables/golden.json
// - golden: for each of cases.ts's goldenCases, the messages `nft -f` sends in its batch
//   (meshcni's encoder must send the same bytes for the same objects);
// - dumps: for each of dumpCases, the messages the kernel answers `nft list table` with
//   once the ruleset is loaded (meshcni's decoder must read the rules back from them).
// Each runs under strace in a throwaway netns; messages keep type, flags and the bytes
// after the netlink header.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dumpCases, goldenCases, refusedCase } from "../../unit/nftables/cases.js";

type Recorded = Array<{ type: number; flags: number; body: string }>;

/** The netlink messages in strace's hex dumps of a descriptor's data, by call (sendmsg, recvmsg), batch markers left out. */
function parseDump(stderr: string, call?: string): Recorded {
  const hex: string[] = [];
  let current = "";
  for (const line of stderr.split("\n")) {
    const started = /^(\w+)\(/.exec(line);
    if (started) current = started[1]!;
    // strace's dump lines: " | 00010  xx xx … (16 bytes, 8 and 8)  ascii |".
    const dumped = /^ \| [0-9a-f]{5} {2}(.{49})/.exec(line);
    if (dumped && (call === undefined || current === call)) hex.push(...(dumped[1]!.match(/[0-9a-f]{2}/g) ?? []));
  }
  const bytes = Uint8Array.from(hex.map((byte) => Number.parseInt(byte, 16)));
  const view = new DataView(bytes.buffer);
  const messages: Recorded = [];
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

/**
 * In a fresh netns: loads `ruleset` first when `load` is set, then runs nft with `args`
 * (RULES: the ruleset's file) under strace with `trace`, and returns what strace dumped.
 */
function traced(ruleset: string, load: boolean, trace: string[], args: string[], fails = false): string {
  const dir = mkdtempSync(join(tmpdir(), "nft-golden-"));
  const netns = `nft-golden-${process.pid}`;
  const file = join(dir, "rules.nft");
  try {
    writeFileSync(file, ruleset);
    execFileSync("ip", ["netns", "add", netns]);
    if (load) execFileSync("ip", ["netns", "exec", netns, "nft", "-f", file]);
    const result = spawnSync(
      "ip",
      ["netns", "exec", netns, "strace", ...trace, "nft", ...args.map((arg) => (arg === "RULES" ? file : arg))],
      {
        encoding: "utf8",
      },
    );
    if ((result.status !== 0) !== fails) throw new Error(`nft ${args.join(" ")} ${fails ? "did not fail" : "failed"}: ${result.stderr}`);
    return result.stderr;
  } finally {
    execFileSync("ip", ["netns", "del", netns]);
    rmSync(dir, { recursive: true, force: true });
  }
}

const sent = ["-e", "trace=sendmsg", "-e", "write=3"];
const received = ["-e", "trace=recvmsg", "-e", "read=3"];
const golden = Object.fromEntries(
  Object.entries(goldenCases).map(([name, ruleset]) => [name, parseDump(traced(ruleset, false, sent, ["-f", "RULES"]))]),
);
const dumps = Object.fromEntries(
  Object.entries(dumpCases).map(([name, { ruleset, table }]) => [
    name,
    parseDump(traced(ruleset, true, received, ["list", "table", ...table.split(" ")])),
  ]),
);
// A batch the kernel refuses: what nft sent, and the error (with its extended ack) it got back.
const refusedTrace = traced(refusedCase, false, ["-e", "trace=sendmsg,recvmsg", "-e", "write=3", "-e", "read=3"], ["-f", "RULES"], true);
const refused = { sent: parseDump(refusedTrace, "sendmsg"), received: parseDump(refusedTrace, "recvmsg") };

process.stdout.write(
  `${JSON.stringify({ nft: execFileSync("nft", ["--version"], { encoding: "utf8" }).trim(), kernel: execFileSync("uname", ["-r"], { encoding: "utf8" }).trim(), golden, dumps, refused }, null, 2)}\n`,
);
