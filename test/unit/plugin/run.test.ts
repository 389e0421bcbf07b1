import { describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors.js";
import { IptablesError } from "../../../src/iptables/exec.js";
import { NetnsGoneError } from "../../../src/netns/enter.js";
import { NftablesError } from "../../../src/nftables/socket.js";
import { toCniError } from "../../../src/plugin/failure.js";
import { PodLookupError } from "../../../src/plugin/lookup.js";
import { runVerb } from "../../../src/plugin/run.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";
import { pluginRequest } from "../../kit/plugin/requests.js";

describe("running a verb", () => {
  it("refuses STATUS and GC below cniVersion 1.1.0 with code 1", async () => {
    for (const command of ["STATUS", "GC"] as const) {
      const error = await runVerb(pluginRequest(command), new FakeNode().deps()).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 1, message: `${command} needs cniVersion 1.1.0 or later, config has 1.0.0` });
    }
  });
});

describe("CNI error codes", () => {
  it("maps what the layers below throw to one code each, keeping their messages", () => {
    expect(toCniError(new PodLookupError({ namespace: "a", name: "b" }, "401 Unauthorized"))).toMatchObject({
      code: 11,
      message: "cannot decide the redirect for pod a/b: 401 Unauthorized",
    });
    expect(toCniError(new IptablesError("iptables-nft-restore", ["--noflush"], 2, "line 1 failed", undefined))).toMatchObject({
      code: 5,
      message: "iptables-nft-restore failed: line 1 failed",
    });
    expect(toCniError(Object.assign(new Error("spawn"), { code: "ENOENT" })).code).toBe(5);
    expect(toCniError(new NetnsGoneError("/var/run/netns/x", "ENOENT"))).toMatchObject({
      code: 5,
      message: expect.stringContaining("/var/run/netns/x"),
    });
    expect(toCniError(new NftablesError("add table ip meshcni", 1, undefined))).toMatchObject({
      code: 5,
      message: "nftables: add table ip meshcni failed: EPERM (1)",
    });
    const own = new CniError(7, "bad field");
    expect(toCniError(own)).toBe(own);
    expect(toCniError("a string").message).toBe("a string");
  });

  it("says when an iptables binary is missing, and where it was looked for", () => {
    const missing = new IptablesError("iptables-nft-restore", [], undefined, "", "notFound");
    expect(missing.notFound).toBe(true);
    expect(missing.message).toMatch(
      /^iptables-nft-restore not found \(searched .*\/usr\/sbin.*\); install iptables or set linkerd\.iptables-mode$/,
    );
  });
});
