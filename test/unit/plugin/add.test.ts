import { beforeEach, describe, expect, it } from "vitest";
import { IptablesError } from "../../../src/iptables/exec.js";
import { OwnNetnsError } from "../../../src/netns/enter.js";
import { add } from "../../../src/plugin/add.js";
import { toCniError } from "../../../src/plugin/failure.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";
import { nodeWithPods, pluginRequest, podNetns } from "../../kit/plugin/requests.js";

const netns = podNetns;
const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0" }], ips: [{ address: "10.1.0.5/24", interface: 0 }] };

describe("ADD", () => {
  let node: FakeNode;
  beforeEach(() => {
    node = nodeWithPods();
  });

  it("writes the meshed pod's chains and jumps, records the attachment, and passes prevResult through", async () => {
    const result = await add(pluginRequest("ADD", { pod: ["shop", "web"], conf: { prevResult } }), node.deps());
    expect(result).toEqual(prevResult);
    expect(node.rules(netns)).toEqual([
      "PREROUTING -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT",
      "OUTPUT -m comment --comment proxy-init/install-proxy-init-output -j PROXY_INIT_OUTPUT",
      "PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4191,4190 -m comment --comment proxy-init/ignore-port-4191,4190 -j RETURN",
      "PROXY_INIT_REDIRECT -p tcp -m comment --comment proxy-init/redirect-all-incoming-to-proxy-port -j REDIRECT --to-ports 4143",
      "PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment proxy-init/ignore-proxy-user-id -j RETURN",
      "PROXY_INIT_OUTPUT -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN",
      "PROXY_INIT_OUTPUT -p tcp -m comment --comment proxy-init/redirect-all-outgoing-to-proxy-port -j REDIRECT --to-ports 4140",
    ]);
    expect(node.rules(netns, "ipv6")).toEqual([]);
    expect([...node.records.values()]).toMatchObject([
      { pod: { namespace: "shop", name: "web", uid: "uid-shop-web" }, containerId: "c1", ifname: "eth0", netns, backend: "nft" },
    ]);
    expect(node.openRunners).toBe(0);
  });

  it("asks the agent on its socket, not the API; when the agent does not answer, the API, with the same rules", async () => {
    const conf = { agent_socket: "/var/run/meshcni/agent/plugin.sock" };
    await add(pluginRequest("ADD", { pod: ["shop", "web"], conf }), node.deps());
    expect(node.agentReads).toEqual(["pod shop/web", "namespace shop"]);
    expect(node.apiReads).toEqual([]);
    const viaAgent = node.table(netns).save();
    const other = new FakeNode();
    Object.assign(other, { pods: node.pods, namespaces: node.namespaces });
    other.addNetns(netns, ["10.1.0.5"]);
    other.agent = "down";
    await add(pluginRequest("ADD", { pod: ["shop", "web"], conf }), other.deps());
    expect(other.agentReads).toEqual([]);
    expect(other.apiReads).toEqual(["pod shop/web", "namespace shop"]);
    expect(other.table(netns).save()).toBe(viaAgent);
    expect(other.logs).toContainEqual(
      expect.objectContaining({
        level: "warn",
        message: "asking the API server instead of the agent",
        fields: expect.objectContaining({ reason: expect.stringContaining("ECONNREFUSED") }),
      }),
    );
  });

  it("changes nothing on a repeated ADD", async () => {
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), node.deps());
    const before = node.table(netns).save();
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), node.deps());
    expect(node.table(netns).save()).toBe(before);
    expect(node.logs.filter((entry) => entry.message === "redirect already in place")).toHaveLength(1);
  });

  it("passes a container the runtime names no pod for through, without asking the API", async () => {
    const result = await add(pluginRequest("ADD", { conf: { cniVersion: "0.4.0", prevResult } }), node.deps());
    expect(result).toMatchObject({ cniVersion: "0.4.0", ips: [{ version: "4", address: "10.1.0.5/24" }] });
    expect(node.apiReads).toEqual([]);
    expect(node.rules(netns)).toEqual([]);
    expect(node.openRunners).toBe(0);
  });

  it("writes nothing for an unmeshed pod, and prints the version alone without a prevResult", async () => {
    expect(await add(pluginRequest("ADD", { pod: ["shop", "batch"] }), node.deps())).toEqual({ cniVersion: "1.0.0" });
    expect(node.rules(netns)).toEqual([]);
    expect(node.records.size).toBe(0);
    expect(node.openRunners).toBe(0);
  });

  it("with simulate, logs the planned rules and writes nothing", async () => {
    await add(pluginRequest("ADD", { pod: ["shop", "web"], conf: { linkerd: { simulate: true } } }), node.deps());
    expect(node.rules(netns)).toEqual([]);
    expect(node.records.size).toBe(0);
    const logged = node.logs.find((entry) => entry.message === "simulate: would apply");
    expect(logged?.fields?.rules).toContain("-A PROXY_INIT_OUTPUT -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN");
  });

  it("rolls the IPv4 rules back when ip6tables fails, so IPv6 never bypasses the proxy", async () => {
    node.failRestore.ipv6 = "ip6tables-restore: line 2 failed";
    const adding = add(pluginRequest("ADD", { pod: ["shop", "web"], conf: { linkerd: { ipv6: true } } }), node.deps());
    await expect(adding).rejects.toThrow(IptablesError);
    await expect(adding).rejects.toThrow("ip6tables-nft-restore failed: ip6tables-restore: line 2 failed");
    expect(node.rules(netns)).toEqual([]);
    expect(node.table(netns).chains.has("PROXY_INIT_OUTPUT")).toBe(false);
    expect(node.records.size).toBe(0);
  });

  it("a failed ADD of an attachment already written undoes only its own write: the earlier rules and record stay", async () => {
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), node.deps());
    const [before] = [...node.records.values()];
    const rules = node.rules(netns);
    node.failRestore.ipv6 = "ip6tables-restore: line 2 failed";
    await expect(add(pluginRequest("ADD", { pod: ["shop", "web"], conf: { linkerd: { ipv6: true } } }), node.deps())).rejects.toThrow(
      IptablesError,
    );
    expect(node.rules(netns)).toEqual(rules);
    expect([...node.records.values()]).toEqual([expect.objectContaining({ state: "added", plans: before!.plans })]);
  });

  it("rolls every family back when the record cannot be written", async () => {
    node.failRecordWrites = true;
    await expect(add(pluginRequest("ADD", { pod: ["shop", "web"], conf: { linkerd: { ipv6: true } } }), node.deps())).rejects.toThrow(
      "EACCES",
    );
    expect(node.rules(netns)).toEqual([]);
    expect(node.rules(netns, "ipv6")).toEqual([]);
    expect(node.openRunners).toBe(0);
  });

  it("programs IPv6 too when the pod got an IPv6 address", async () => {
    const dualStack = { ...prevResult, ips: [...prevResult.ips, { address: "fd00::5/64", interface: 0 }] };
    await add(pluginRequest("ADD", { pod: ["shop", "web"], conf: { prevResult: dualStack } }), node.deps());
    // The same rules in both families, and the redirect among them (two empty tables are equal too).
    expect(node.rules(netns, "ipv6")).toEqual(node.rules(netns));
    expect(node.rules(netns, "ipv6")).toContain(
      "PROXY_INIT_REDIRECT -p tcp -m comment --comment proxy-init/redirect-all-incoming-to-proxy-port -j REDIRECT --to-ports 4143",
    );
  });

  it("fails when the pod cannot be looked up, writing nothing", async () => {
    await expect(add(pluginRequest("ADD", { pod: ["shop", "ghost"] }), node.deps())).rejects.toThrow(
      "cannot decide the redirect for pod shop/ghost: reading pod shop/ghost: 404 Not Found",
    );
    expect(node.rules(netns)).toEqual([]);
    expect(node.openRunners).toBe(0);
  });
});

describe("ADD's order and its guards", () => {
  it("records the ADD as begun before touching the netns, and as done after every family", async () => {
    const node = nodeWithPods();
    await add(pluginRequest("ADD", { pod: ["shop", "web"], conf: { linkerd: { ipv6: true } } }), node.deps());
    expect(node.events).toEqual(["record eth0 adding", "restore ipv4", "restore ipv6", "record eth0 added"]);
  });

  it("refuses the plugin's own netns (the host's) before asking the API, with code 4", async () => {
    const node = nodeWithPods();
    const error = await add(pluginRequest("ADD", { pod: ["shop", "web"], netns: FakeNode.ownNetns }), node.deps()).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(OwnNetnsError);
    expect(toCniError(error)).toMatchObject({ code: 4, message: expect.stringContaining("CNI_NETNS") });
    expect(node.apiReads).toEqual([]);
    expect(node.openRunners).toBe(0);
  });
});
