import { describe, expect, it } from "vitest";
import { decodeGeneration, generationRequest, rulesetGeneration } from "../../../src/nftables/generation.js";
import { parseMessages } from "../../../src/nftables/netlink.js";
import { nftablesRedirector } from "../../../src/nftables/redirector.js";
import { NftablesError, NftSocket } from "../../../src/nftables/socket.js";
import { planRules } from "../../../src/redirect/plan.js";
import { testSpec } from "../../kit/fixtures.js";
import { FakeKernel } from "../../kit/nftables/fake-kernel.js";

describe("the ruleset's generation (NFT_MSG_GETGEN)", () => {
  it("is the kernel's count of changes committed: the same until a batch is applied", async () => {
    const kernel = new FakeKernel();
    const generation = () => rulesetGeneration(() => NftSocket.open(kernel.libc()));
    expect(await generation()).toBe(1);
    expect(await generation()).toBe(1);
    const redirector = nftablesRedirector(() => NftSocket.open(kernel.libc()));
    await redirector.apply([planRules(testSpec, "ipv4")]);
    redirector.close();
    expect(await generation()).toBe(2);
    // Reading it opens and closes its own socket.
    expect(kernel.opened).toBe(kernel.closed);
  });

  it("reads NFTA_GEN_ID big-endian; an answer without it is an error, never a generation", () => {
    const kernel = new FakeKernel();
    kernel.generation = 0x01020304;
    const libc = kernel.libc();
    libc.sendToKernel(3, generationRequest(7));
    const buffer = new Uint8Array(64);
    const [answer] = parseMessages(buffer.slice(0, libc.receive(3, buffer)));
    expect(decodeGeneration(answer!)).toBe(0x01020304);
    const [request] = parseMessages(generationRequest(1));
    expect(() => decodeGeneration(request!)).toThrow("no NFTA_GEN_ID");
  });

  it("a refusal is an error naming the request", async () => {
    const kernel = new FakeKernel();
    kernel.refuse = 1;
    await expect(rulesetGeneration(() => NftSocket.open(kernel.libc()))).rejects.toThrow(new NftablesError("get generation", 1, undefined));
  });
});
