import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RealCluster } from "../kit/cluster/cluster.js";
import { hasIpv6 } from "../kit/cluster/families.js";
import { droppedForwards } from "../kit/cluster/host.js";
import { nodeIp6, nodeName } from "../kit/cluster/layout.js";
import { currentLeg } from "../kit/cluster/leg.js";
import { Meshcni } from "../kit/cluster/meshcni.js";
import { asList, meshedDeployment, plainPod, proxyInbound, proxyOutbound } from "../kit/cluster/workloads.js";
import { describeAsRoot } from "../kit/root-suites.js";

interface DualPod {
  metadata: { name: string };
  status: {
    podIPs?: Array<{ ip: string }>;
    containerStatuses?: Array<{ name: string; containerID?: string }>;
  };
}

/** A ULA no namespace of the test holds: a meshed pod's connection to it must reach its proxy, an unmeshed one's nothing. */
const outside6 = "fd00:ffff::10";
const leg = currentLeg();
const suite = hasIpv6(leg)
  ? describeAsRoot
  : (name: string, body: () => void) => describe.skip(`${name} (leg ${leg.name} has no IPv6: run the dual-stack leg)`, body);

/**
 * meshcni on a cluster with IPv6 (the dual-stack leg): the redirect proven with real TCP
 * over IPv6 between pods kubelet started, both ways, and its IPv6 rules read from a meshed
 * pod's netns with the host's own tools, not meshcni's.
 */
suite("meshcni on a cluster with IPv6", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);
  const annotations = { "config.linkerd.io/skip-inbound-ports": "9090", "config.linkerd.io/skip-outbound-ports": "443" };

  /** A pod's addresses, IPv4's and IPv6's. */
  const addresses = async (pod: string) => {
    const ips = ((await cluster.get<DualPod>("pod", pod)).status.podIPs ?? []).map((entry) => entry.ip);
    return { v4: ips.find((ip) => !ip.includes(":")), v6: ips.find((ip) => ip.includes(":"))! };
  };
  const at = (ip: string, port: number) => `[${ip}]:${port}`;

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy();
    await cluster.kubectl(
      ["apply", "-f", "-"],
      asList(
        plainPod("server"),
        plainPod("client"),
        meshedDeployment("native", { sidecar: "native", annotations }),
        meshedDeployment("plain", { sidecar: "container", annotations }),
      ),
    );
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod", "--all", "--timeout=120s"]);
  }, 400_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("gives the node and every pod an address of each family the leg has, IPv6 ones ULA", async () => {
    const node = await cluster.get<{ status: { addresses: Array<{ type: string; address: string }> } }>("node", nodeName);
    expect(node.status.addresses.filter((entry) => entry.type === "InternalIP").map((entry) => entry.address)).toContain(nodeIp6);
    for (const pod of ["server", "client", await cluster.podNameOf("app=native")]) {
      const { v4, v6 } = await addresses(pod);
      expect(v6).toMatch(/^fd00:252::/);
      if (leg.families === "dual") expect(v4).toMatch(/^10\.252\.0\./);
    }
  });

  it("redirects inbound TCP over IPv6 to the proxy's 4143, but the skipped port; leaves an unmeshed pod alone", async () => {
    const client = (await addresses("client")).v6;
    const server = (await addresses("server")).v6;
    for (const app of ["native", "plain"]) {
      const ip = (await addresses(await cluster.podNameOf(`app=${app}`))).v6;
      expect(await cluster.connect("client", at(ip, 8080))).toBe(`${proxyInbound} dst=${at(ip, 8080)} src=${client}`);
      expect(await cluster.connect("client", at(ip, 9090))).toBe(`${app}-9090 dst=${at(ip, 9090)} src=${client}`);
    }
    expect(await cluster.connect("client", at(server, 8080))).toBe(`server-8080 dst=${at(server, 8080)} src=${client}`);
    // Unmeshed, the outside address is unreachable: the host's inet forward drop stops what would leave the pods' bridge.
    const dropped = await droppedForwards();
    expect(await cluster.connect("client", at(outside6, 80))).toMatch(/^error: /);
    expect(await droppedForwards()).toBeGreaterThan(dropped);
  });

  it("redirects a meshed pod's outbound TCP over IPv6 to 4140, but the skipped port and the proxy's own (UID 2102)", async () => {
    const server = (await addresses("server")).v6;
    for (const app of ["native", "plain"]) {
      const pod = await cluster.podNameOf(`app=${app}`);
      const ip = (await addresses(pod)).v6;
      expect(await cluster.connect(pod, at(server, 8080))).toBe(`${proxyOutbound} dst=${at(server, 8080)} src=${ip}`);
      expect(await cluster.connect(pod, at(outside6, 80))).toBe(`${proxyOutbound} dst=${at(outside6, 80)} src=${ip}`);
      expect(await cluster.connect(pod, at(server, 443))).toBe(`server-443 dst=${at(server, 443)} src=${ip}`);
      expect(await cluster.connect(pod, at(server, 8080), { container: "linkerd-proxy" })).toBe(
        `server-8080 dst=${at(server, 8080)} src=${ip}`,
      );
    }
  });

  it("holds meshcni's IPv6 rules in a meshed pod's netns, as the host's ip6tables or nft lists them", async () => {
    const pod = await cluster.get<DualPod>("pod", await cluster.podNameOf("app=plain"));
    const id = pod.status.containerStatuses?.find((status) => status.name === "app")?.containerID?.replace(/^containerd:\/\//, "");
    const task = (await cluster.ctr("tasks", "ls")).split("\n").find((line) => line.startsWith(`${id} `));
    const pid = task?.trim().split(/\s+/)[1];
    expect(pid).toMatch(/^\d+$/);
    // Whichever backend `auto` chose: only its listing holds anything.
    const listings = await Promise.all(
      [
        ["ip6tables-nft-save", "-t", "nat"],
        ["ip6tables-legacy-save", "-t", "nat"],
        ["nft", "list", "table", "ip6", "meshcni"],
      ].map(async (command) => (await execa("nsenter", ["-t", pid!, "-n", ...command], { reject: false })).stdout),
    );
    const rules = listings.join("\n");
    // iptables-save and nft both keep the rules' comments, which name what each rule does.
    for (const comment of ["redirect-all-incoming-to-proxy-port", "redirect-all-outgoing-to-proxy-port", "ignore-proxy-user-id"])
      expect(rules).toContain(comment);
    expect(rules).toMatch(/(--to-ports |redirect to :)4143\b/);
    expect(rules).toMatch(/(--to-ports |redirect to :)4140\b/);
    expect(rules).toMatch(/ignore-port-[^"\s]*\b9090\b/);
  });
});
