import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { decideForPlugin } from "../../../../src/agent/socket/decide.js";
import { NodeCache } from "../../../../src/agent/socket/node-cache.js";
import { answerAsk } from "../../../../src/agent/socket/plugin-server.js";
import { NothingWritten } from "../../../../src/agent/writers/nothing-written.js";
import { convertResult } from "../../../../src/cni/result.js";
import { parseNetConf } from "../../../../src/mesh/netconf.js";
import { firewallSpecFor } from "../../../../src/mesh/pod.js";
import { podName } from "../../../../src/pod-key.js";
import { planRules } from "../../../../src/redirect/plan.js";
import { podObject } from "../../../kit/api/server.js";
import { type LogEntry, memoryLogger } from "../../../kit/memory-logger.js";

const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0" }], ips: [{ address: "10.0.0.5/24", interface: 0 }] };
const netconf = (linkerd: Record<string, unknown> = {}) =>
  JSON.stringify({ cniVersion: "1.0.0", name: "k8s", type: "meshcni", state_dir: "/run/x", prevResult, linkerd });
const namespace = { metadata: { name: "shop", annotations: { "config.linkerd.io/skip-subnets": "10.9.0.0/16" } } } as V1Namespace;

/**
 * The agent's decision for shop/web, its cache holding `pods`; the API answers `fromApi` (or
 * fails), and the kubernetes Service unless `noService`; its log lines into `lines`.
 */
function decide(
  pods: V1Pod[],
  text: string,
  options: { uid?: string; fromApi?: V1Pod; notFound?: boolean; noService?: boolean; lines?: LogEntry[] } = {},
) {
  const store = <T>(entries: Array<[string, T]>) => ({ get: (key: string) => new Map(entries).get(key), fresh: () => true });
  const cache = new NodeCache(store(pods.map((pod) => [podName(pod), pod])), store([["shop", namespace]]));
  const lookup = {
    node: "n1",
    readPod: async () => {
      if (options.notFound) throw Object.assign(new Error('pods "web" not found'), { code: 404 });
      if (!options.fromApi) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      return options.fromApi;
    },
    readNamespace: async () => namespace,
    readService: async () => {
      if (options.noService) throw Object.assign(new Error('services "kubernetes" not found'), { code: 404 });
      return { metadata: { name: "kubernetes" }, spec: { ports: [{ port: 443 }] } };
    },
  };
  const log = memoryLogger(options.lines ?? []);
  return decideForPlugin(
    { get: "decision", netconf: text, namespace: "shop", name: "web", uid: options.uid ?? "uid-shop-web" },
    (ask) => answerAsk(ask, cache, lookup, log),
    log,
  );
}

describe("the agent's decision for the plugin's ADD", () => {
  it("plans what the plugin would: the same spec, families and result, with the namespace's overrides", async () => {
    const pod = podObject("shop", "web", { proxy: "container", annotations: { "config.linkerd.io/skip-outbound-ports": "5432" } }) as V1Pod;
    const answer = await decide([pod], netconf({ "proxy-uid": 2103 }));
    const conf = parseNetConf(netconf({ "proxy-uid": 2103 }));
    expect(answer).toEqual({
      decided: {
        result: convertResult(conf.prevResult!, "1.0.0"),
        pod: { namespace: "shop", name: "web", uid: "uid-shop-web" },
        plans: [planRules(firewallSpecFor(conf.linkerd, pod, namespace, []), "ipv4")],
        settings: { stateDir: "/run/x", mode: conf.linkerd["iptables-mode"], wait: false, simulate: false, logLevel: "info" },
      },
    });
    expect(JSON.stringify(answer)).toContain("10.9.0.0/16");
  });

  it("plans nothing for an unmeshed pod", async () => {
    const answer = await decide([podObject("shop", "web") as V1Pod], netconf());
    expect(answer).toMatchObject({ decided: { plans: [] } });
  });

  it("refuses with the plugin's CNI error: a netconf it would refuse, an annotation it would refuse, a pod recreated under another UID", async () => {
    expect(await decide([], netconf({ "proxy-uid": "root" }))).toMatchObject({
      refused: { code: 7, msg: expect.stringContaining("proxy-uid") },
    });
    const typo = podObject("shop", "web", { proxy: "container", annotations: { "config.linkerd.io/skip-inbound-ports": "80a" } }) as V1Pod;
    expect(await decide([typo], netconf())).toMatchObject({ refused: { code: 7, msg: expect.stringContaining('"80a"') } });
    const other = {
      ...podObject("shop", "web", { proxy: "container", nodeName: "n1" }),
      metadata: { ...podObject("shop", "web").metadata, uid: "uid-other" },
    };
    expect(await decide([], netconf(), { fromApi: other as V1Pod })).toEqual({
      refused: {
        code: 11,
        msg: "cannot decide the redirect for pod shop/web: the API server has pod UID uid-other, the runtime asked for uid-shop-web",
        details: "",
      },
    });
  });

  it("refuses a pod the API has not (404) with the plugin's CNI error for it, rather than send the plugin to read it again", async () => {
    expect(await decide([], netconf(), { notFound: true })).toEqual({
      refused: {
        code: 11,
        msg: "cannot decide the redirect for pod shop/web: reading pod shop/web: the API server has no such pod (404 Not Found)",
        details: "",
      },
    });
  });

  it("leaves the plugin to ask the API itself when it cannot read the pod", async () => {
    expect(await decide([], netconf())).toEqual({ error: expect.stringContaining("ECONNREFUSED") });
  });
});

describe("the agent carries out what it decides when asked to", () => {
  const store = <T>(entries: Array<[string, T]>) => ({ get: (key: string) => new Map(entries).get(key), fresh: () => true });
  const meshed = podObject("shop", "web", { proxy: "container" }) as V1Pod;
  const cache = new NodeCache(store([[podName(meshed), meshed]]), store([["shop", namespace]]));
  const lookup = {
    node: "n1",
    readPod: async () => meshed,
    readNamespace: async () => namespace,
    readService: async () => ({ metadata: { name: "kubernetes" }, spec: { ports: [{ port: 443 }] } }),
  };
  const apply = { containerId: "c1", ifname: "eth0", netns: "/run/netns/p" };
  /** The netns the caller passed with its question (its identity, as the agent took it from the descriptor). */
  const passed = { dev: 4, ino: 4026532999 };
  /** A writer that records what it is asked (and what is handed back before it) and answers `outcome`. */
  const writer = (outcome: { done: true } | { failed: string }) => {
    const asked: unknown[] = [];
    const handedBack: string[] = [];
    const noted: Array<[V1Pod, string[]]> = [];
    return {
      asked,
      handedBack,
      noted,
      writing: {
        written: { note: (pod: V1Pod, addresses: string[]) => void noted.push([pod, addresses]) },
        hostRoot: "/host",
        scope: { stateDir: "/run/x", logFile: undefined, netnsDirs: ["/run/netns"], linkerd: parseNetConf(netconf()).linkerd },
        write: async (ask: unknown) => {
          asked.push(ask);
          return outcome;
        },
        handBack: (verb: string, reason: string) => void handedBack.push(`${verb} ${reason}`),
      },
    };
  };
  const ask = (text = netconf()) => ({
    get: "decision" as const,
    netconf: text,
    namespace: "shop",
    name: "web",
    uid: "uid-shop-web",
    apply,
  });

  it("writes the decision into the plugin's attachment (the netns it passed) and answers the result", async () => {
    const { asked, writing } = writer({ done: true });
    const answer = await answerAsk(ask(), cache, lookup, memoryLogger([]), writing, passed);
    expect(answer).toEqual({ applied: { result: convertResult(prevResult, "1.0.0") } });
    expect(asked).toEqual([
      expect.objectContaining({
        verb: "ADD",
        hostRoot: "/host",
        target: { containerId: "c1", ifname: "eth0", netns: "/run/netns/p" },
        netnsId: passed,
        pod: { namespace: "shop", name: "web", uid: "uid-shop-web" },
        plans: [expect.objectContaining({ family: "ipv4" })],
      }),
    ]);
  });

  it("notes an ADD it wrote for a pod its cache held (that very object, and the addresses given) for the sweeps; not one read from the API, nor one not written", async () => {
    const { noted, writing } = writer({ done: true });
    await answerAsk(ask(), cache, lookup, memoryLogger([]), writing, passed);
    expect(noted).toEqual([[meshed, ["10.0.0.5/24"]]]);
    // Asked without its UID, the pod is read from the API: what the decision read is not the cache's.
    const { uid: _uid, ...withoutUid } = ask();
    const onNode = { ...lookup, readPod: async () => podObject("shop", "web", { proxy: "container", nodeName: "n1" }) as V1Pod };
    expect(await answerAsk(withoutUid, cache, onNode, memoryLogger([]), writing, passed)).toHaveProperty("applied");
    const failing = writer({ failed: "nftables said no" });
    await answerAsk(ask(), cache, lookup, memoryLogger([]), failing.writing, passed);
    expect([noted.length, failing.noted.length]).toEqual([1, 0]);
  });

  it("answers the DEL of an attachment whose ADD wrote nothing (an unmeshed pod) without a writer, once; any other DEL goes to one", async () => {
    const { asked, writing } = writer({ done: true });
    const nothingWritten = new NothingWritten();
    const counting = { ...writing, nothingWritten };
    const plain = podObject("shop", "web", {}) as V1Pod;
    const unmeshedCache = new NodeCache(store([[podName(plain), plain]]), store([["shop", namespace]]));
    expect(await answerAsk(ask(), unmeshedCache, lookup, memoryLogger([]), counting, passed)).toEqual({
      applied: { result: convertResult(prevResult, "1.0.0") },
    });
    const del = { get: "del" as const, netconf: netconf(), containerId: "c1", ifname: "eth0", netns: apply.netns };
    expect(await answerAsk(del, cache, lookup, memoryLogger([]), counting, passed)).toEqual({ applied: {} });
    expect(asked).toEqual([]);
    // Taken once; another attachment, or this one again, goes to a writer.
    await answerAsk(del, cache, lookup, memoryLogger([]), counting, passed);
    await answerAsk({ ...del, ifname: "net1" }, cache, lookup, memoryLogger([]), counting, passed);
    expect(asked).toHaveLength(2);
    // An ADD of the attachment that is written (the pod meshed) leaves its DEL to a writer.
    await answerAsk(ask(), unmeshedCache, lookup, memoryLogger([]), counting, passed);
    await answerAsk(ask(), cache, lookup, memoryLogger([]), counting, passed);
    await answerAsk(del, cache, lookup, memoryLogger([]), counting, passed);
    expect(asked.map((entry) => (entry as { verb: string }).verb)).toEqual(["DEL", "DEL", "ADD", "DEL"]);
  });

  it("hands the decision back when its writer cannot write, and never writes under simulate or a refusal", async () => {
    const lines: LogEntry[] = [];
    const failing = writer({ failed: "network namespace /run/netns/p is not the one the plugin opened" });
    const handedBack = await answerAsk(ask(), cache, lookup, memoryLogger(lines), failing.writing, passed);
    expect(handedBack).toMatchObject({ decided: { plans: [expect.objectContaining({ family: "ipv4" })] } });
    expect(lines.map((line) => line.message)).toContain("the plugin writes the redirect itself: the agent could not");
    const unused = writer({ done: true });
    expect(await answerAsk(ask(netconf({ simulate: true })), cache, lookup, memoryLogger([]), unused.writing, passed)).toHaveProperty(
      "decided",
    );
    expect(await answerAsk(ask(netconf({ "proxy-uid": "x" })), cache, lookup, memoryLogger([]), unused.writing, passed)).toHaveProperty(
      "refused",
    );
    expect(unused.asked).toEqual([]);
  });

  it("writes only its own entry's redirect, to its own state dir and log file, into a netns in the runtime's netns dirs that the caller passed: else the plugin writes", async () => {
    const { asked, handedBack, writing } = writer({ done: true });
    const withConf = (changes: Record<string, unknown>, netns = apply.netns) => ({
      ...ask(JSON.stringify({ ...JSON.parse(netconf()), ...changes })),
      apply: { ...apply, netns },
    });
    const lines: LogEntry[] = [];
    const answers = [
      await answerAsk(withConf({ log_file: "/opt/cni/bin/calico" }), cache, lookup, memoryLogger(lines), writing),
      await answerAsk(withConf({ state_dir: "/etc" }), cache, lookup, memoryLogger(lines), writing),
      await answerAsk(withConf({}, "/run/netns/../../proc/1/ns/net"), cache, lookup, memoryLogger(lines), writing),
      await answerAsk(withConf({}, "/proc/1/ns/net"), cache, lookup, memoryLogger(lines), writing),
      await answerAsk(ask(netconf({ "outbound-ports-to-ignore": ["1-65535"] })), cache, lookup, memoryLogger(lines), writing),
      // Its own entry, and a netns named that the caller did not pass: a caller asserting what it does not hold.
      await answerAsk(ask(), cache, lookup, memoryLogger(lines), writing),
    ];
    for (const answer of answers) expect(answer).toHaveProperty("decided");
    expect(asked).toEqual([]);
    expect(handedBack).toEqual([
      "ADD the log file /opt/cni/bin/calico is not the agent's own (none)",
      "ADD the state dir /etc is not the agent's own (/run/x)",
      "ADD the netns /run/netns/../../proc/1/ns/net is not in the runtime's netns dirs (/run/netns)",
      "ADD the netns /proc/1/ns/net is not in the runtime's netns dirs (/run/netns)",
      "ADD its outbound-ports-to-ignore differ from the agent's own entry",
      "ADD the caller passed no netns descriptor with its question",
    ]);
    const del = { get: "del" as const, containerId: "c1", ifname: "eth0", netns: apply.netns };
    const foreign = JSON.stringify({ ...JSON.parse(netconf()), log_file: "/opt/cni/bin/calico" });
    expect(await answerAsk({ ...del, netconf: foreign }, cache, lookup, memoryLogger([]), writing)).toEqual({
      error: "the agent does not remove it: the log file /opt/cni/bin/calico is not the agent's own (none)",
    });
    expect(asked).toEqual([]);
    expect(handedBack.at(-1)).toBe("DEL the log file /opt/cni/bin/calico is not the agent's own (none)");
  });

  it("DEL: written by its writer into the netns passed; refused for a netns named and not passed, or without a writer", async () => {
    const { asked, handedBack, writing } = writer({ done: true });
    const del = { get: "del" as const, netconf: netconf(), containerId: "c1", ifname: "eth0" };
    expect(await answerAsk({ ...del, netns: apply.netns }, cache, lookup, memoryLogger([]), writing, passed)).toEqual({ applied: {} });
    expect(asked.at(-1)).toMatchObject({ verb: "DEL", netnsId: passed });
    expect(await answerAsk({ ...del, netns: "" }, cache, lookup, memoryLogger([]), writing)).toEqual({ applied: {} });
    expect(await answerAsk({ ...del, netns: apply.netns }, cache, lookup, memoryLogger([]), writing)).toEqual({
      error: "the agent does not remove it: the caller passed no netns descriptor with its question",
    });
    expect(handedBack).toEqual(["DEL the caller passed no netns descriptor with its question"]);
    expect(asked).toHaveLength(2);
    expect(await answerAsk({ ...del, netns: "" }, cache, lookup, memoryLogger([]))).toEqual({ error: "this agent does not write" });
    const failing = writer({ failed: "nftables said no" });
    expect(await answerAsk({ ...del, netns: "" }, cache, lookup, memoryLogger([]), failing.writing)).toEqual({
      error: "the agent could not remove it: nftables said no",
    });
  });
});

describe("the agent's decision for a control-plane pod", () => {
  it("without the kubernetes Service to read, skips linkerd-cni's fallback ports, as the plugin does, instead of sending the plugin to the API", async () => {
    const pod = podObject("shop", "web", { proxy: "container", labels: { "linkerd.io/control-plane-component": "destination" } }) as V1Pod;
    const lines: LogEntry[] = [];
    const answer = await decide([pod], netconf(), { noService: true, lines });
    expect(answer).toHaveProperty("decided");
    const plan = (answer as { decided: { plans: Array<{ chains: Record<string, string[][]> }> } }).decided.plans[0]!;
    expect(plan.chains.PROXY_INIT_OUTPUT!.map((rule) => rule.join(" "))).toContain(
      "-p tcp -m multiport --dports 443,6443 -m comment --comment proxy-init/ignore-port-443,6443 -j RETURN",
    );
    expect(lines.map((line) => line.message)).toContain("cannot read the kubernetes Service: skipping 443 and 6443, as linkerd-cni does");
  });
});
