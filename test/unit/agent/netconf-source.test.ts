import { describe, expect, it } from "vitest";
import { differingKeys, judgeNetconf, NetconfSource, netconfKey, sayNetconf } from "../../../src/agent/netconf-source.js";
import { renderTemplate, type Template } from "../../../src/installer/template.js";
import { StandingProblems } from "../../../src/log.js";
import { type LogEntry, memoryLogger } from "../../kit/memory-logger.js";

const render = (text: string) => renderTemplate(text, "/etc/cni/net.d/ZZZ-meshcni-kubeconfig", "/var/run/meshcni/agent/plugin.sock");
const netconf = (mode: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify(
    {
      name: "meshcni",
      type: "meshcni",
      kubernetes: { kubeconfig: "__KUBECONFIG_FILEPATH__" },
      linkerd: { "iptables-mode": mode },
      ...extra,
    },
    null,
    2,
  );

describe("the agent's netconf against its ConfigMap", () => {
  it("names the keys that differ, one level into objects, whatever their order", () => {
    expect(differingKeys({ a: 1, l: { x: [1, 2], y: "s" } }, { l: { y: "s", x: [1, 2] }, a: 1 })).toEqual([]);
    expect(differingKeys({ a: 1, l: { x: [1, 2], y: "s" } }, { a: 2, l: { x: [2, 1] }, b: true })).toEqual(["a", "b", "l.x", "l.y"]);
  });

  it("takes the API's netconf where kubelet's copy differs, and nothing where they are the same but for spacing", () => {
    const running = render(netconf("auto"));
    expect(judgeNetconf(running, JSON.stringify(JSON.parse(netconf("auto"))), render)).toEqual({ kind: "same" });
    const verdict = judgeNetconf(running, netconf("nftables"), render);
    expect(verdict).toMatchObject({ kind: "replace", differs: ["linkerd.iptables-mode"] });
    expect(verdict.kind === "replace" && verdict.template.entry).toMatchObject({
      linkerd: { "iptables-mode": "nftables" },
      kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" },
      agent_socket: "/var/run/meshcni/agent/plugin.sock",
    });
  });

  it("never takes a netconf no agent could run with: no key, or an invalid one, and says which", () => {
    const running = render(netconf("auto"));
    expect(judgeNetconf(running, undefined, render)).toEqual({ kind: "unusable", why: `the ConfigMap has no ${netconfKey}` });
    const invalid = judgeNetconf(running, "{", render);
    expect(invalid.kind === "unusable" && invalid.why).toMatch(
      /^the ConfigMap's cni_network_config is invalid: the netconf template is not valid JSON/,
    );
    expect(judgeNetconf(running, netconf("auto", { type: "bridge" }), render).kind).toBe("unusable");
  });

  it("replaces an invalid netconf kubelet gave with a valid one the API holds", () => {
    const verdict = judgeNetconf({ ok: false, reason: "not JSON" }, netconf("nftables"), render);
    expect(verdict.kind).toBe("replace");
  });
});

describe("the agent's ConfigMap, read through the API", () => {
  const setup = (answers: Array<string | undefined | Error>) => {
    let clock = 0;
    const logs: LogEntry[] = [];
    const log = memoryLogger(logs);
    let running: Template = render(netconf("auto"));
    const verified: number[] = [];
    const reads: string[] = [];
    const source = new NetconfSource({
      namespace: "meshcni",
      name: "meshcni-config",
      render,
      running: () => running,
      replace: (template) => {
        running = template;
      },
      log,
      problems: new StandingProblems(log),
      verified: (value) => verified.push(value),
      now: () => clock,
    });
    const api = {
      readConfigMapKey: async (namespace: string, name: string, key: string) => {
        reads.push(`${namespace}/${name} ${key}`);
        const answer = answers.shift();
        if (answer instanceof Error) throw answer;
        return { value: answer, resourceVersion: "42" };
      },
    };
    const tick = async (ms: number) => {
      clock += ms;
      source.follow(api);
      await new Promise((resolve) => setTimeout(resolve, 0));
    };
    return { source, api, logs, verified, reads, tick, running: () => running };
  };

  it("runs with the API's once it can read it: retried after a failure (1 s, then 2 s), then never read again", async () => {
    const { logs, verified, reads, tick, running } = setup([new Error("connect ECONNREFUSED"), new Error("503"), netconf("nftables")]);
    await tick(0);
    expect(reads).toEqual(["meshcni/meshcni-config cni_network_config"]);
    expect(logs.at(-1)?.message).toMatch(
      /^cannot read the ConfigMap meshcni\/meshcni-config to check the netconf against it \(connect ECONNREFUSED\)/,
    );
    await tick(500); // within the first back-off: not asked
    expect(reads).toHaveLength(1);
    await tick(600);
    expect(reads).toHaveLength(2);
    await tick(1500); // the second back-off is 2 s
    expect(reads).toHaveLength(2);
    await tick(600);
    expect(reads).toHaveLength(3);
    expect(running()).toMatchObject({ ok: true, entry: { linkerd: { "iptables-mode": "nftables" } } });
    expect(logs.find((line) => line.level === "warn" && /kubelet's cache lagged/.test(line.message))?.fields).toMatchObject({
      configMap: "meshcni/meshcni-config",
      resourceVersion: "42",
      differs: ["linkerd.iptables-mode"],
    });
    expect(verified).toEqual([0, 1]);
    for (let i = 0; i < 5; i++) await tick(120_000);
    expect(reads).toHaveLength(3);
  });

  it("keeps kubelet's netconf when the ConfigMap has none it could run with, and does not call it verified", async () => {
    const { logs, verified, tick, running } = setup(["not json"]);
    const before = running();
    await tick(0);
    expect(running()).toBe(before);
    expect(verified).toEqual([0]);
    expect(logs.at(-1)).toMatchObject({ level: "error", message: expect.stringMatching(/invalid.*running with kubelet's copy/) });
  });

  it("asks once at a time: a reconcile while the read is in flight asks nothing", async () => {
    const { source, api, reads } = setup([netconf("auto")]);
    source.follow(api);
    source.follow(api);
    expect(reads).toHaveLength(1);
  });

  it("says the netconf it runs with, and warns of linkerd settings meshcni does not read, naming the likely one meant", () => {
    const lines: LogEntry[] = [];
    const entry = { type: "meshcni", linkerd: { "proxy-uidd": 2102, "iptables-mode": "nft", colour: "blue" } };
    sayNetconf(memoryLogger(lines), "starting with this netconf", { from: "flags" }, entry);
    expect(lines).toEqual([
      { level: "info", message: "starting with this netconf", fields: { from: "flags", netconf: entry } },
      {
        level: "warn",
        message: "the netconf holds linkerd settings meshcni does not read (the plugin ignores them)",
        fields: { keys: "proxy-uidd (did you mean proxy-uid?), colour" },
      },
    ]);
    sayNetconf(memoryLogger(lines), "running with this netconf", {}, { type: "meshcni", linkerd: { "proxy-uid": 2102 } });
    expect(lines).toHaveLength(3);
  });
});
