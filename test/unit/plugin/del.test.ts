import { beforeEach, describe, expect, it } from "vitest";
import { add } from "../../../src/plugin/add.js";
import { check } from "../../../src/plugin/check.js";
import { del } from "../../../src/plugin/del.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";
import { depsNotingModes, nodeWithPods, pluginRequest, podNetns, recordBackend } from "../../kit/plugin/requests.js";

const netns = podNetns;

describe("DEL", () => {
  let node: FakeNode;
  beforeEach(async () => {
    node = nodeWithPods();
    await add(pluginRequest("ADD", { pod: ["shop", "web"], conf: { linkerd: { ipv6: true } } }), node.deps());
    node.apiReads.length = 0;
  });

  it("removes every rule of ours in each family and the record, without the API", async () => {
    node.table(netns).restore("*nat\n-A OUTPUT -p udp -j ACCEPT\nCOMMIT\n");
    await del(pluginRequest("DEL", { pod: ["shop", "web"], conf: { linkerd: { ipv6: true } } }), node.deps());
    expect(node.rules(netns)).toEqual(["OUTPUT -p udp -j ACCEPT"]);
    expect(node.rules(netns, "ipv6")).toEqual([]);
    expect(node.table(netns).chains.has("PROXY_INIT_REDIRECT")).toBe(false);
    expect(node.records.size).toBe(0);
    expect(node.apiReads).toEqual([]);
  });

  it("succeeds again, and when there was nothing", async () => {
    const request = pluginRequest("DEL", { pod: ["shop", "web"] });
    await del(request, node.deps());
    await expect(del(request, node.deps())).resolves.toBeUndefined();
  });

  it("succeeds when the netns is gone, removing the record", async () => {
    node.netns.delete(netns);
    await expect(del(pluginRequest("DEL", { pod: ["shop", "web"] }), node.deps())).resolves.toBeUndefined();
    expect(node.records.size).toBe(0);
    expect(node.logs.some((entry) => entry.message === "netns is gone, nothing to remove")).toBe(true);
  });

  it("succeeds with no CNI_NETNS (the runtime's second DEL), touching no netns", async () => {
    await del(pluginRequest("DEL", { pod: ["shop", "web"], netns: "" }), node.deps());
    expect(node.records.size).toBe(0);
    expect(node.table(netns).chains.has("PROXY_INIT_REDIRECT")).toBe(true);
    expect(node.openRunners).toBe(0);
  });

  it("removes the redirect from the backend ADD recorded too where the node's changed since (a pod not moved yet); failing there only warns", async () => {
    recordBackend(node, "legacy");
    const { deps, modes } = depsNotingModes(node, { legacy: "iptables-legacy-restore is not on the host" });
    await del(pluginRequest("DEL", { pod: ["shop", "web"], conf: { linkerd: { ipv6: true } } }), deps);
    expect(modes).toEqual(["auto", "legacy"]);
    expect(node.table(netns).chains.has("PROXY_INIT_REDIRECT")).toBe(false);
    expect(node.records.size).toBe(0);
    expect(node.logs.find((entry) => entry.message === "could not remove the redirect from the backend ADD recorded")?.fields).toEqual({
      backend: "legacy",
      reason: "iptables-legacy-restore is not on the host",
    });
  });

  it("writes nothing in the state dir of its own accord: no detection cache or locks dir for its redirectors, no locks dir without a record", async () => {
    recordBackend(node, "legacy");
    const { deps, settings } = depsNotingModes(node);
    await del(pluginRequest("DEL", { pod: ["shop", "web"] }), deps);
    expect(settings.map((asked) => asked.leaveStateDir)).toEqual([true, true]);
    // Its record was there: the lock may make the dir (a state dir from before it had one); a second DEL finds none.
    await del(pluginRequest("DEL", { pod: ["shop", "web"] }), deps);
    expect(node.lockMakesDir.slice(-2)).toEqual([true, false]);
    // ADD and CHECK keep the cache and the locks as before.
    const added = depsNotingModes(node);
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), added.deps);
    await check(pluginRequest("CHECK", { pod: ["shop", "web"] }), added.deps);
    expect(added.settings.map((asked) => asked.leaveStateDir ?? false)).toEqual([false, false]);
  });

  it("fails when iptables does, so the runtime retries", async () => {
    node.failRestore.ipv4 = "iptables-restore: line 3 failed";
    await expect(del(pluginRequest("DEL", { pod: ["shop", "web"] }), node.deps())).rejects.toThrow("line 3 failed");
  });
});

describe("DEL of one of several attachments (Multus)", () => {
  const request = (command: "ADD" | "DEL" | "CHECK", ifname: string) => pluginRequest(command, { pod: ["shop", "web"], ifname });

  it("keeps the redirect while another attachment of the netns is recorded, and removes it with the last", async () => {
    const node = nodeWithPods();
    await add(request("ADD", "eth0"), node.deps());
    await add(request("ADD", "net1"), node.deps());
    const rules = node.rules(podNetns);
    await del(request("DEL", "net1"), node.deps());
    expect(node.rules(podNetns)).toEqual(rules);
    await expect(check(request("CHECK", "eth0"), node.deps())).resolves.toBeUndefined();
    expect([...node.records.values()].map((record) => record.ifname)).toEqual(["eth0"]);
    await del(request("DEL", "eth0"), node.deps());
    expect(node.rules(podNetns)).toEqual([]);
    expect(node.records.size).toBe(0);
  });

  it("removes the rules before the record, and reports a record it cannot remove with its errno", async () => {
    const node = nodeWithPods();
    await add(request("ADD", "eth0"), node.deps());
    node.events.length = 0;
    node.failRecordRemoves = "EPERM";
    await expect(del(request("DEL", "eth0"), node.deps())).rejects.toThrow("EPERM");
    expect(node.rules(podNetns)).toEqual([]);
    expect(node.events).toEqual(["restore ipv4"]);
  });

  it("never touches the host's netns, and does not fail for it", async () => {
    const node = nodeWithPods();
    await expect(del(pluginRequest("DEL", { pod: ["shop", "web"], netns: FakeNode.ownNetns }), node.deps())).resolves.toBeUndefined();
    expect(node.logs.find((entry) => entry.level === "warn")?.fields?.reason).toContain("meshcni's own");
  });
});
