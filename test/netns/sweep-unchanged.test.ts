import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeApiServer } from "../kit/api/server.js";
import { agentTemplate } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "node-u";

interface SeenPod {
  uid: string;
  name: string;
  status: string;
  details: string[];
  seen?: { netns: string; generation: number; plans: string; hasRedirect: boolean };
}

/**
 * The agent's sweep handed what its last sweep read of each pod's netns: a netns whose
 * nf_tables generation did not move is not read again (no iptables-nft-save run for it),
 * and one whose rules changed, by anyone, is.
 */
describeAsRoot("the agent's sweep, an unchanged netns not read again", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(89);
  let kubeconfig = "";
  let criSocket = "";
  let netns = "";
  const entry = { ...JSON.parse(agentTemplate(net.stateDir)), linkerd: { "iptables-mode": "nft" } };

  /** One sweep as the agent runs it (audit only), `env` its environment. */
  const sweep = async (seen: SeenPod[], env: NodeJS.ProcessEnv = process.env) => {
    const request = {
      node,
      pods: [],
      limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 0 },
      entry,
      seen: seen.flatMap((pod) => (pod.seen ? [{ uid: pod.uid, ...pod.seen }] : [])),
      dirs: { hostRoot: "", stateDir: net.stateDir, netDir: net.confDir, netnsDirs: ["/var/run/netns"], criSocket },
    };
    const input = JSON.stringify({ kubeconfig: readFileSync(kubeconfig, "utf8"), request });
    const result = await execa(meshcniBinary, ["sweep"], { input, reject: false, env, extendEnv: false });
    expect(result.exitCode, result.stderr).not.toBe(2);
    return (JSON.parse(result.stdout) as { pods: SeenPod[] }).pods;
  };
  /** An iptables-nft-save first on the PATH that fails: a sweep that reads the pod's rules cannot. */
  const failingSave = mkdtempSync(join(tmpdir(), "meshcni-failing-save-"));
  const noIptables = { PATH: failingSave };

  beforeAll(async () => {
    for (const name of ["iptables-nft-save", "ip6tables-nft-save"])
      writeFileSync(join(failingSave, name), "#!/bin/sh\necho 'no rules read here' >&2\nexit 3\n", { mode: 0o755 });
    await api.start();
    kubeconfig = api.writeKubeconfig();
    criSocket = await net.criSocket();
    writeFileSync(join(net.confDir, "05-primary.conflist"), JSON.stringify(net.primaryConflist("plain")));
    ({ netns } = await net.startPod(api, { namespace: "shop", name: "cart", network: "plain", node, options: { owned: true } }));
    // Its redirect as ADD writes it, by a sweep that repairs.
    const input = JSON.stringify({
      kubeconfig: readFileSync(kubeconfig, "utf8"),
      request: {
        node,
        pods: [],
        policy: "redirect",
        limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 0 },
        entry,
        dirs: { hostRoot: "", stateDir: net.stateDir, netDir: net.confDir, netnsDirs: ["/var/run/netns"], criSocket },
      },
    });
    await execa(meshcniBinary, ["sweep"], { input });
  });

  afterAll(async () => {
    await net.cleanup();
    await api.stop();
    rmSync(failingSave, { recursive: true, force: true });
  });

  it("reads a netns it is given nothing of, and says what it saw", async () => {
    const [cart] = await sweep([]);
    expect(cart).toMatchObject({ name: "cart", status: "protected", seen: { hasRedirect: true } });
    // Without iptables the same sweep cannot read it: what the next test leans on.
    const [blind] = await sweep([], noIptables);
    expect(blind!.status).not.toBe("protected");
    expect(blind!.details.join()).toContain("no rules read here");
    expect(blind!.seen).toBeUndefined();
  });

  it("takes the earlier reading while the netns's generation has not moved: no rule read", async () => {
    const [first] = await sweep([]);
    const [again] = await sweep([first!], noIptables);
    expect(again).toMatchObject({ name: "cart", status: "protected", seen: first!.seen });
  });

  it("reads it again once anything changed its rules, and finds the change", async () => {
    const [first] = await sweep([]);
    const ns = netns.split("/").at(-1)!;
    execFileSync("ip", ["netns", "exec", ns, "iptables-nft", "-t", "nat", "-F", "PROXY_INIT_OUTPUT"]);
    const [after] = await sweep([first!]);
    expect(after).toMatchObject({ name: "cart", status: "drifted" });
    expect(after!.seen).toBeUndefined();
  });
});
