import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeApiServer } from "../kit/api/server.js";
import { agentTemplate } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "node-e";

/**
 * The agent's sweep (`meshcni sweep`, as the agent runs it) on a node whose active config
 * holds no meshcni entry: another installer keeps it so (Cilium's cni-exclusive), and a pod
 * started meanwhile went through a chain without meshcni. The agent hands the sweep its own
 * entry: the pod is judged and repaired by it, not left unknown for want of a plan.
 */
describeAsRoot("the agent's sweep, its own entry given", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(88);
  let kubeconfig = "";
  let criSocket = "";
  let netns = "";
  // The entry the agent chains, with a port of its own let through: the plan written shows where it came from.
  const entry = { ...JSON.parse(agentTemplate(net.stateDir)), linkerd: { "iptables-mode": "nft", "inbound-ports-to-ignore": ["9999"] } };

  const sweep = async (extra: Record<string, unknown>) => {
    const request = {
      node,
      pods: [],
      policy: "redirect",
      limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 0 },
      dirs: { hostRoot: "", stateDir: net.stateDir, netDir: net.confDir, netnsDirs: ["/var/run/netns"], criSocket },
      ...extra,
    };
    const input = JSON.stringify({ kubeconfig: readFileSync(kubeconfig, "utf8"), request });
    const result = await execa(meshcniBinary, ["sweep"], { input, reject: false });
    expect(result.exitCode, result.stderr).not.toBe(2);
    return JSON.parse(result.stdout) as { pods: Array<{ name: string; status: string; details: string[]; result?: string }> };
  };

  beforeAll(async () => {
    await api.start();
    kubeconfig = api.writeKubeconfig();
    criSocket = await net.criSocket();
    // The only config: the primary's, without meshcni.
    writeFileSync(join(net.confDir, "05-primary.conflist"), JSON.stringify(net.primaryConflist("plain")));
    ({ netns } = await net.startPod(api, { namespace: "shop", name: "cart", network: "plain", node, options: { owned: true } }));
  });

  afterAll(async () => {
    await net.cleanup();
    await api.stop();
  });

  it("without it (a sweep by hand) cannot judge the pod: the active config has no plan to give", async () => {
    const [cart] = (await sweep({})).pods;
    expect(cart).toMatchObject({ name: "cart", status: "unknown" });
    expect(cart!.details.join()).toContain("the active CNI config 05-primary.conflist holds no meshcni entry");
    expect(await natRules(netns, "nft")).toEqual([]);
  });

  it("with it finds the pod missing its redirect and writes the entry's plan into its netns", async () => {
    const [cart] = (await sweep({ entry })).pods;
    expect(cart).toMatchObject({ name: "cart", status: "missing" });
    const rules = await natRules(netns, "nft");
    expect(rules).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    expect(rules.filter((rule) => rule.includes("9999"))).toHaveLength(1);
  });
});
