import { beforeEach, describe, expect, it } from "vitest";
import { nftablesRedirector } from "../../../src/nftables/redirector.js";
import { NftablesError, NftSocket } from "../../../src/nftables/socket.js";
import { planRules } from "../../../src/redirect/plan.js";
import { inspectPlans, type Redirector } from "../../../src/redirect/redirector.js";
import type { FirewallSpec } from "../../../src/redirect/spec.js";
import { ownLines } from "../../../src/redirect/table.js";
import { testSpec } from "../../kit/fixtures.js";
import { FakeKernel } from "../../kit/nftables/fake-kernel.js";

/** Every kind of rule: port sets with a range, a redirected port, both owners, subnets of both families. */
const spec: FirewallSpec = {
  ...testSpec,
  proxyGid: 2103,
  portsToRedirect: [8080],
  outboundPortsToIgnore: [
    { from: 5432, to: 5432 },
    { from: 6000, to: 6010 },
  ],
  subnetsToIgnore: ["10.16.0.0/12", "fd00::/8"],
};
const plans = (of: FirewallSpec = spec) => [planRules(of, "ipv4"), planRules(of, "ipv6")];

describe("the nftables redirector, against a kernel that answers as nf_tables does", () => {
  let kernel: FakeKernel;
  let redirector: Redirector;
  beforeEach(() => {
    kernel = new FakeKernel();
    redirector = nftablesRedirector(() => NftSocket.open(kernel.libc()));
  });

  it("writes a fresh netns's tables in one exclusive batch, every family, and reads back exactly the plans", async () => {
    expect(await redirector.apply(plans())).toEqual(["ipv4", "ipv6"]);
    expect(kernel.batches).toHaveLength(1);
    expect(kernel.batches[0]!.filter((type) => type === "newTable")).toHaveLength(2);
    expect(kernel.dumps).toEqual([]);
    expect(await inspectPlans(redirector, plans())).toEqual({ differences: [], hasRedirect: true });
    expect(ownLines(await redirector.read("ipv4"))).toContain(
      "-A PROXY_INIT_OUTPUT -p tcp -m multiport --dports 5432,6000:6010 -m comment --comment proxy-init/ignore-port-5432,6000:6010 -j RETURN",
    );
  });

  it("on EEXIST (a repeated ADD) reads the tables back and writes nothing when they match", async () => {
    await redirector.apply(plans());
    expect(await redirector.apply(plans())).toEqual([]);
    // The refused create, and no replacement.
    expect(kernel.batches).toHaveLength(2);
    expect(kernel.dumps).toContain("getRule ipv6");
  });

  it("replaces only the family that differs, atomically: created if missing, deleted, created anew", async () => {
    await redirector.apply(plans());
    const ipv4Before = ownLines(await redirector.read("ipv4"));
    const changed = { ...spec, subnetsToIgnore: [...spec.subnetsToIgnore, "fd00:1::/64"] };
    expect(await redirector.apply(plans(changed))).toEqual(["ipv6"]);
    expect(kernel.batches.at(-1)!.slice(0, 3)).toEqual(["newTable", "delTable", "newTable"]);
    expect(kernel.batches.at(-1)!.filter((type) => type === "delTable")).toHaveLength(1);
    expect(await inspectPlans(redirector, plans(changed))).toEqual({ differences: [], hasRedirect: true });
    expect(ownLines(await redirector.read("ipv4"))).toEqual(ipv4Before);
  });

  it("passes on any other refusal, and the kernel keeps nothing of the batch", async () => {
    kernel.refuse = 1;
    await expect(redirector.apply(plans())).rejects.toThrow(new NftablesError("add table ip meshcni", 1, undefined));
    expect(kernel.tables.size).toBe(0);
    expect(kernel.dumps).toEqual([]);
  });

  it("removes only the families that hold the table, in one batch; nothing there is no batch", async () => {
    await redirector.apply([planRules(spec, "ipv4")]);
    expect(await redirector.remove(["ipv4", "ipv6"])).toEqual(["ipv4"]);
    expect(kernel.batches.at(-1)).toEqual(["delTable"]);
    expect(kernel.tables.size).toBe(0);
    const batches = kernel.batches.length;
    expect(await redirector.remove(["ipv4", "ipv6"])).toEqual([]);
    expect(kernel.batches).toHaveLength(batches);
    expect((await inspectPlans(redirector, plans())).hasRedirect).toBe(false);
  });

  it("opens its socket once, at first use, and closes it; closing an unused one does nothing", async () => {
    nftablesRedirector(() => NftSocket.open(kernel.libc())).close();
    expect(kernel.opened).toBe(0);
    await redirector.apply(plans());
    await redirector.read("ipv4");
    await redirector.remove(["ipv6"]);
    redirector.close();
    expect([kernel.opened, kernel.closed]).toEqual([1, 1]);
  });
});
