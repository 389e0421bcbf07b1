import { describe, expect, it } from "vitest";
import { decodeTarget } from "../../../src/nftables/expr/target.js";

/** NFTA_TARGET_NAME and NFTA_TARGET_INFO as iptables-nft writes a target it has no native expression for. */
const attrs = (name: string, flags?: number) => {
  const info = new Uint8Array(8);
  if (flags !== undefined) new DataView(info.buffer).setUint16(0, flags, true);
  return new Map([[1, new TextEncoder().encode(`${name}\0`)], ...(flags === undefined ? [] : [[3, info] as [number, Uint8Array]])]);
};

describe("an xtables target read back", () => {
  it("leaves the packet untracked for NOTRACK, and for CT with its notrack flag alone", () => {
    expect(decodeTarget(attrs("NOTRACK"))).toEqual({ kind: "other", name: "target-NOTRACK", untracks: true });
    expect(decodeTarget(attrs("CT", 1))).toEqual({ kind: "other", name: "target-CT", untracks: true });
    // CT --zone 3, or --helper ftp: tracked still.
    expect(decodeTarget(attrs("CT", 0))).toEqual({ kind: "other", name: "target-CT" });
    expect(decodeTarget(attrs("CT"))).toEqual({ kind: "other", name: "target-CT" });
    expect(decodeTarget(attrs("MARK", 1))).toEqual({ kind: "other", name: "target-MARK" });
  });
});
