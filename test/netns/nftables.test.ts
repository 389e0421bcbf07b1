import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { meshcniNetconf, podArgs, until } from "../kit/common.js";
import { expectCniError } from "../kit/netns/expect-cni.js";
import { TestNetwork } from "../kit/netns/network.js";
import { type CniOutcome, invokePlugin, natRules, pluginEnv, resultAddress } from "../kit/netns/plugin-process.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** `nft list table` of our table in a pod netns, one trimmed line each, or [] when there is none. */
async function nftTable(netns: string, family: "ip" | "ip6"): Promise<string[]> {
  const result = await execa("ip", ["netns", "exec", netns, "nft", "list", "table", family, "meshcni"], { reject: false });
  if (result.exitCode !== 0) return [];
  return String(result.stdout)
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
}

/** Runs `meshcni audit` or `rules` as an operator on node-a would, on this network's dirs; `wrap` prefixes the command. */
function onNode(net: TestNetwork, kubeconfig: string, args: string[], wrap: string[] = []) {
  const host = ["--node", "node-a", "--kubeconfig", kubeconfig, "--state-dir", net.stateDir, "--net-dir", net.confDir];
  const [command, ...rest] = [...wrap, meshcniBinary, ...args, ...host];
  return execa(command!, rest, { reject: false });
}

const nft = (netns: string, ...args: string[]) => execa("ip", ["netns", "exec", netns, "nft", ...args]);

const webAnnotations = { "config.linkerd.io/skip-outbound-ports": "9091,9200-9210" };

/** What `nft list table ip meshcni` shows after ADD: Linkerd's rules, comments and all. */
const expectedIpv4 = [
  "table ip meshcni {",
  "chain PROXY_INIT_REDIRECT {",
  'tcp dport { 4190, 4191 } return comment "proxy-init/ignore-port-4191,4190"',
  'ip saddr 10.251.81.0/24 return comment "proxy-init/ignore-subnet-10.251.81.0/24"',
  'meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"',
  "}",
  "chain PROXY_INIT_OUTPUT {",
  'meta skuid 2102 return comment "proxy-init/ignore-proxy-user-id"',
  'meta skgid 2103 return comment "proxy-init/ignore-proxy-group-id"',
  'oifname "lo" return comment "proxy-init/ignore-loopback"',
  'tcp dport { 9091, 9200-9210 } return comment "proxy-init/ignore-port-9091,9200:9210"',
  'meta l4proto tcp redirect to :4140 comment "proxy-init/redirect-all-outgoing-to-proxy-port"',
  "}",
  "chain PREROUTING {",
  "type nat hook prerouting priority dstnat; policy accept;",
  'jump PROXY_INIT_REDIRECT comment "proxy-init/install-proxy-init-prerouting"',
  "}",
  "chain OUTPUT {",
  "type nat hook output priority -100; policy accept;",
  'jump PROXY_INIT_OUTPUT comment "proxy-init/install-proxy-init-output"',
  "}",
  "}",
];

/**
 * `"iptables-mode": "nftables"`: the plugin writes, reads and removes the redirect over
 * netlink from its own process, in tables of its own (`ip meshcni`, `ip6 meshcni`). Pods
 * on a dual-stack bridge; a second client's /24 is a skip-subnet.
 */
describeAsRoot("the nftables backend, through cnitool", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(80, { ipv6: true });
  const skipped = new TestNetwork(81);
  const webArgs = podArgs("demo", "web");
  let kubeconfig = "";
  let client = "";
  let clientIp = "";
  let clientIp6 = "";
  let web = "";
  let webIp = "";
  let webIp6 = "";
  let linkerd: Record<string, unknown> = {};
  let prevResult: unknown;
  /** Runs the plugin alone on the web pod (cnitool would run the bridge plugin again), as the runtime would. */
  const plugin = (command: "ADD" | "CHECK"): Promise<CniOutcome> =>
    invokePlugin(
      pluginEnv(net.netnsPath(web), "web-direct", webArgs, { CNI_COMMAND: command }),
      meshcniNetconf({ stateDir: net.stateDir, kubeconfig, linkerd }, { prevResult }),
    );

  beforeAll(async () => {
    await api.start();
    kubeconfig = api.writeKubeconfig();
    api.addPod(podObject("demo", "web", { proxy: "container", annotations: webAnnotations }));
    api.addPod(podObject("demo", "plain"));
    linkerd = { "iptables-mode": "nftables", "proxy-gid": 2103, "subnets-to-ignore": [skipped.subnet] };
    net.writeConflist("mesh", { kubernetes: { kubeconfig }, linkerd });
    client = await net.addNetns("client");
    const added = await net.cnitool("add", "mesh", client);
    [clientIp, clientIp6] = [resultAddress(added), resultAddress(added, "ipv6")];
    await net.serve(client, { 9090: "real-server", 9091: "real-server-skipped", 9205: "real-server-range" });
    web = await net.addNetns("web");
    const webAdded = await net.cnitool("add", "mesh", web, webArgs);
    expect(webAdded.exitCode, webAdded.stdout + webAdded.stderr).toBe(0);
    [webIp, webIp6] = [resultAddress(webAdded), resultAddress(webAdded, "ipv6")];
    prevResult = webAdded.json;
    await net.serve(web, { 4143: "proxy-inbound", 4140: "proxy-outbound", 8080: "app", 4191: "proxy-admin" });
  });

  afterAll(async () => {
    await net.cleanup();
    await skipped.cleanup();
    await api.stop();
  });

  it("writes one table per family that nft lists as Linkerd's rules, and nothing in iptables' tables", async () => {
    const ipv4 = (await nftTable(web, "ip")).map((line) => line.replace(skipped.subnet.replace("/24", ""), "10.251.81.0"));
    expect(ipv4).toEqual(expectedIpv4);
    const ipv6 = await nftTable(web, "ip6");
    expect(ipv6).toContain('meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"');
    // The skip-subnet is IPv4: the IPv6 table has no subnet rule.
    expect(ipv6.some((line) => line.includes("saddr"))).toBe(false);
    expect(await natRules(web, "nft")).toEqual([]);
    expect(await natRules(web, "legacy")).toEqual([]);
  });

  it("redirects inbound TCP to the proxy, over IPv4 and IPv6", async () => {
    expect(await net.connect(client, webIp, 8080)).toBe("proxy-inbound");
    expect(await net.connect(client, webIp6, 8080)).toBe("proxy-inbound");
  });

  it("redirects the app's outbound TCP to the proxy, over IPv4 and IPv6", async () => {
    expect(await net.connect(web, clientIp, 9090, 1000)).toBe("proxy-outbound");
    expect(await net.connect(web, clientIp6, 9090, 1000)).toBe("proxy-outbound");
  });

  it("lets through: the proxy's UID and GID, loopback, ignored outbound ports and ranges, ignored inbound ports", async () => {
    expect(await net.connect(web, clientIp, 9090, 2102)).toBe("real-server");
    expect(await net.connect(web, clientIp6, 9090, 2102)).toBe("real-server");
    expect(await net.connect(web, clientIp, 9090, 1000, 2103)).toBe("real-server");
    expect(await net.connect(web, "127.0.0.1", 8080, 1000)).toBe("app");
    expect(await net.connect(web, "::1", 8080, 1000)).toBe("app");
    expect(await net.connect(web, clientIp, 9091, 1000)).toBe("real-server-skipped");
    expect(await net.connect(web, clientIp6, 9205, 1000)).toBe("real-server-range");
    expect(await net.connect(client, webIp, 4191)).toBe("proxy-admin");
    expect(await net.connect(client, webIp6, 4191)).toBe("proxy-admin");
  });

  it("lets a skip-subnet's inbound TCP reach the app", async () => {
    // A client on the same bridge with an address from the skipped /24.
    const outsider = await skipped.addNetns("outsider");
    await execa("ip", ["link", "add", `mcv${skipped.id}`, "type", "veth", "peer", "name", "eth0", "netns", outsider]);
    await execa("ip", ["link", "set", `mcv${skipped.id}`, "master", net.bridge, "up"]);
    const outsiderIp = skipped.subnet.replace("0/24", "9");
    await execa("ip", ["-n", outsider, "addr", "add", `${outsiderIp}/16`, "dev", "eth0"]);
    await execa("ip", ["-n", outsider, "link", "set", "eth0", "up"]);
    await execa("ip", ["-n", web, "route", "add", skipped.subnet, "dev", "eth0"]);
    expect(await skipped.connect(outsider, webIp, 8080)).toBe("app");
    expect(await net.connect(client, webIp, 8080)).toBe("proxy-inbound");
  });

  it("passes CHECK, and a second ADD changes nothing", async () => {
    const before = await nft(web, "-a", "list", "ruleset");
    expect((await net.cnitool("check", "mesh", web, webArgs)).exitCode).toBe(0);
    const again = await plugin("ADD");
    expect(again.exitCode, again.stdout).toBe(0);
    expect(again.stderr.match(/redirect already in place/g)).toHaveLength(2);
    // Handles included: not one rule was replaced.
    expect((await nft(web, "-a", "list", "ruleset")).stdout).toBe(before.stdout);
  });

  it("holds port ranges up to 65535 whole: CHECK and the audit pass after ADD, and the ports are let through", async () => {
    const topArgs = podArgs("demo", "top");
    const annotations = { "config.linkerd.io/skip-inbound-ports": "30000-65535", "config.linkerd.io/skip-outbound-ports": "65535" };
    api.addPod(podObject("demo", "top", { proxy: "container", annotations }));
    const top = await net.addNetns("top");
    const added = await net.cnitool("add", "mesh", top, topArgs);
    expect(added.exitCode, added.stdout + added.stderr).toBe(0);
    const topIp = resultAddress(added);
    const table = (await nftTable(top, "ip")).join("\n");
    expect(table).toContain("tcp dport { 4190-4191, 30000-65535 } return");
    expect(table).toContain("tcp dport { 65535 } return");
    const checked = await net.cnitool("check", "mesh", top, topArgs);
    expect(checked.exitCode, checked.stdout + checked.stderr).toBe(0);
    api.addPod(podObject("demo", "top", { proxy: "container", annotations, nodeName: "node-a", podIP: topIp }));
    const audit = await onNode(net, kubeconfig, ["audit", "--output", "json", "--pod", "demo/top"]);
    expect(JSON.parse(audit.stdout)).toMatchObject({ pods: [{ status: "protected" }] });
    await net.serve(top, { 4143: "proxy-inbound", 8080: "app", 65535: "app-65535", 40000: "app-40000", 4140: "proxy-outbound" });
    await net.serve(client, { 65535: "real-server-65535" });
    expect(await net.connect(client, topIp, 8080)).toBe("proxy-inbound");
    expect(await net.connect(client, topIp, 40000)).toBe("app-40000");
    expect(await net.connect(client, topIp, 65535)).toBe("app-65535");
    expect(await net.connect(top, clientIp, 65535, 1000)).toBe("real-server-65535");
    expect(await net.connect(top, clientIp, 9090, 1000)).toBe("proxy-outbound");
  });

  it.each([
    ["a rule deleted with nft", "PROXY_INIT_OUTPUT: missing rule: -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN"],
    ["a rule added with nft", "PROXY_INIT_OUTPUT: unexpected rule: -p tcp -m tcp --dport 22 -j RETURN"],
    [
      "a rule changed with nft",
      "PROXY_INIT_OUTPUT: unexpected rule: -m owner --uid-owner 0 -m comment --comment proxy-init/ignore-proxy-user-id -j RETURN",
    ],
  ])("fails CHECK after %s, naming the rule; ADD puts the plan back", async (change, difference) => {
    const handles = (await nft(web, "-a", "list", "chain", "ip", "meshcni", "PROXY_INIT_OUTPUT")).stdout;
    const handleOf = (comment: string) => new RegExp(`${comment}" # handle (\\d+)`).exec(handles)![1]!;
    if (change.includes("deleted"))
      await nft(web, "delete", "rule", "ip", "meshcni", "PROXY_INIT_OUTPUT", "handle", handleOf("ignore-loopback"));
    else if (change.includes("added")) await nft(web, "add", "rule", "ip", "meshcni", "PROXY_INIT_OUTPUT", "tcp", "dport", "22", "return");
    else
      await nft(
        web,
        "replace",
        "rule",
        "ip",
        "meshcni",
        "PROXY_INIT_OUTPUT",
        "handle",
        handleOf("ignore-proxy-user-id"),
        "meta",
        "skuid",
        "0",
        "return",
        "comment",
        '"proxy-init/ignore-proxy-user-id"',
      );
    const checked = await net.cnitool("check", "mesh", web, webArgs);
    expect(checked.exitCode).not.toBe(0);
    expect(checked.stdout + checked.stderr).toContain(difference);
    const added = await plugin("ADD");
    expect(added.exitCode, added.stdout).toBe(0);
    // Only the family that differed was replaced.
    expect(added.stderr).toMatch(/"redirect applied".*"family":"ipv4"/);
    expect(added.stderr).toMatch(/"redirect already in place".*"family":"ipv6"/);
    expect((await plugin("CHECK")).exitCode).toBe(0);
    expect(await net.connect(web, clientIp, 9090, 1000)).toBe("proxy-outbound");
  });

  it("fails CHECK when a rule in meshcni's own base chain lets a port bypass the proxy; ADD takes it out", async () => {
    await nft(web, "insert", "rule", "ip", "meshcni", "OUTPUT", "tcp", "dport", "9090", "return");
    expect(await net.connect(web, clientIp, 9090, 1000)).toBe("real-server");
    const checked = await plugin("CHECK");
    expect(checked.stdout).toContain('"code":100');
    expect(checked.stdout).toContain("ipv4: OUTPUT: unexpected rule: -p tcp -m tcp --dport 9090 -j RETURN");
    expect((await plugin("ADD")).exitCode).toBe(0);
    expect((await plugin("CHECK")).exitCode).toBe(0);
    expect(await net.connect(web, clientIp, 9090, 1000)).toBe("proxy-outbound");
  });

  it.each([
    ["ip", "-150", ["ipv4"]],
    ["inet", "-100", ["ipv4", "ipv6"]],
  ])(
    "fails CHECK, and the audit calls the pod drifted, when an %s table's nat chain at priority %s diverts TCP first",
    async (family, priority, families) => {
      const ruleset = `table ${family} bypass {\n chain out {\n  type nat hook output priority ${priority}; policy accept;\n  tcp dport 9090 redirect to :8080\n }\n}\n`;
      await execa("ip", ["netns", "exec", web, "nft", "-f", "-"], { input: ruleset });
      try {
        // The proxy never sees it: the app's own port answers.
        expect(await net.connect(web, clientIp, 9090, 1000)).toBe("app");
        const checked = await plugin("CHECK");
        expect(checked.stdout).toContain('"code":100');
        const offending = `NAT that runs before the redirect lets traffic bypass the proxy: table ${family} bypass, nat at output priority ${priority}, chain out: -p tcp -m tcp --dport 9090 -j REDIRECT --to-ports 8080`;
        for (const of of families) expect(checked.stdout).toContain(`${of}: ${offending}`);
        api.addPod(podObject("demo", "web", { proxy: "container", annotations: webAnnotations, nodeName: "node-a", podIP: webIp }));
        const audit = await onNode(net, kubeconfig, ["audit", "--output", "json", "--pod", "demo/web"]);
        expect(JSON.parse(audit.stdout).pods[0]).toMatchObject({
          status: "drifted",
          details: expect.arrayContaining([`ipv4: ${offending}`]),
        });
      } finally {
        await nft(web, "delete", "table", family, "bypass");
      }
      const checked = await plugin("CHECK");
      expect(checked.exitCode, checked.stdout).toBe(0);
    },
  );

  it("passes CHECK with another table's NAT that runs after meshcni's, or NATs only UDP", async () => {
    const ruleset =
      "table ip later {\n chain out {\n  type nat hook output priority 100; policy accept;\n  tcp dport 9090 redirect to :8080\n }\n}\n" +
      "table ip dns {\n chain out {\n  type nat hook output priority -150; policy accept;\n  udp dport 53 redirect to :5353\n }\n}\n";
    await execa("ip", ["netns", "exec", web, "nft", "-f", "-"], { input: ruleset });
    try {
      const checked = await plugin("CHECK");
      expect(checked.exitCode, checked.stdout).toBe(0);
      expect(await net.connect(web, clientIp, 9090, 1000)).toBe("proxy-outbound");
    } finally {
      await nft(web, "delete", "table", "ip", "later");
      await nft(web, "delete", "table", "ip", "dns");
    }
  });

  it("is judged by the audit: protected, then drifted with the rule named once one is deleted with nft", async () => {
    // As the API shows the pod ADD read: the annotations its plan was made from.
    api.addPod(podObject("demo", "web", { proxy: "container", annotations: webAnnotations, nodeName: "node-a", podIP: webIp }));
    const audit = async () => {
      const result = await onNode(net, kubeconfig, ["audit", "--output", "json", "--pod", "demo/web"]);
      return JSON.parse(result.stdout).pods[0] as { status: string; details: string[] };
    };
    expect(await audit()).toMatchObject({ status: "protected" });
    const rules = await onNode(net, kubeconfig, ["rules", "demo/web"]);
    expect(rules.exitCode, rules.stderr).toBe(0);
    expect(rules.stdout).toContain("backend nftables");
    expect(rules.stdout).toContain(
      "ipv4, in its netns:\n  -A PREROUTING -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT",
    );
    expect(rules.stdout).toContain("ipv4, meshcni's plan:\n  (the same)");
    const handles = (await nft(web, "-a", "list", "chain", "ip", "meshcni", "PROXY_INIT_OUTPUT")).stdout;
    await nft(web, "delete", "rule", "ip", "meshcni", "PROXY_INIT_OUTPUT", "handle", /ignore-loopback" # handle (\d+)/.exec(handles)![1]!);
    expect(await audit()).toEqual(
      expect.objectContaining({
        status: "drifted",
        details: ["ipv4: PROXY_INIT_OUTPUT: missing rule: -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN"],
      }),
    );
    expect((await plugin("ADD")).exitCode).toBe(0);
    expect(await audit()).toMatchObject({ status: "protected" });
  });

  it("fails ADD with code 5 naming the message and errno the kernel refused, and leaves nothing of its own", async () => {
    // A table of that name owned by another process (nft -i, still running): the kernel lets no one else change it.
    const owned = await net.addNetns("owned");
    const owner = spawn("ip", ["netns", "exec", owned, "nft", "-i"], { stdio: ["pipe", "ignore", "ignore"] });
    try {
      owner.stdin!.write("add table ip meshcni { flags owner; }\n");
      await until(async () => (await nftTable(owned, "ip")).includes("flags owner"));
      const env = pluginEnv(net.netnsPath(owned), "owned", webArgs);
      const result = await invokePlugin(env, meshcniNetconf({ stateDir: net.stateDir, kubeconfig, linkerd }));
      expectCniError(result, 5, "nftables: add table ip meshcni failed: EPERM (1)");
      expect(await nftTable(owned, "ip")).toEqual(["table ip meshcni { # progname nft", "flags owner", "}"]);
      expect(existsSync(join(net.stateDir, "attachments", "owned_eth0.json"))).toBe(false);
    } finally {
      owner.kill();
    }
  });

  it("gives an unmeshed pod no table, and CHECK fails if one appears", async () => {
    const plain = await net.addNetns("plain");
    expect((await net.cnitool("add", "mesh", plain, podArgs("demo", "plain"))).exitCode).toBe(0);
    expect(await nftTable(plain, "ip")).toEqual([]);
    await nft(plain, "add", "table", "ip", "meshcni");
    await nft(plain, "add", "chain", "ip", "meshcni", "PROXY_INIT_OUTPUT");
    const checked = await net.cnitool("check", "mesh", plain, podArgs("demo", "plain"));
    expect(checked.stdout + checked.stderr).toContain("redirect rules are present but the pod is not meshed");
  });

  it("DEL deletes both tables; DEL again, and DEL without the netns, succeed", async () => {
    expect((await net.cnitool("del", "mesh", web, webArgs)).exitCode).toBe(0);
    expect(await nftTable(web, "ip")).toEqual([]);
    expect(await nftTable(web, "ip6")).toEqual([]);
    expect((await net.cnitool("del", "mesh", web, webArgs)).exitCode).toBe(0);
    const gone = await net.addNetns("gone");
    expect((await net.cnitool("add", "mesh", gone, webArgs)).exitCode).toBe(0);
    await net.removeNetns(gone);
    expect((await net.cnitool("del", "mesh", gone, webArgs)).exitCode).toBe(0);
  });
});

/**
 * A host without iptables, nft or nsenter (as Bottlerocket or Talos): a private mount
 * namespace hides them, and `iptables-mode: auto` picks nftables. ADD, CHECK, DEL and
 * the audit still work.
 */
describeAsRoot("the nftables backend on a host without iptables, nft or nsenter", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(82);
  let kubeconfig = "";
  let hidden: string[] = [];

  beforeAll(async () => {
    await api.start();
    kubeconfig = api.writeKubeconfig();
    net.writeConflist("mesh", { kubernetes: { kubeconfig }, linkerd: { "iptables-mode": "auto" } });
    const empty = join(net.dir, "empty");
    mkdirSync(empty);
    writeFileSync(join(net.dir, "nothing"), "");
    // Runs the rest of the command line in a mount namespace where they are gone.
    const script = [
      `mount --bind ${empty} /usr/sbin`,
      `mount --bind ${join(net.dir, "nothing")} /usr/bin/nsenter`,
      'for tool in iptables iptables-nft-restore iptables-legacy-restore ip6tables-nft-restore nft nsenter; do if command -v $tool >/dev/null; then echo "$tool is still there" >&2; exit 97; fi; done',
      'exec "$@"',
    ].join(" && ");
    hidden = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "hide"];
  });

  afterAll(async () => {
    await net.cleanup();
    await api.stop();
  });

  it("ADD, CHECK, the audit and DEL work, nftables picked and said so; TCP is redirected", async () => {
    api.addPod(podObject("demo", "web", { proxy: "container" }));
    const pod = await net.addNetns("web");
    const args = podArgs("demo", "web");
    const added = await net.cnitool("add", "mesh", pod, args, undefined, hidden);
    expect(added.exitCode, added.stdout + added.stderr).toBe(0);
    expect(added.stderr).toContain("no iptables binaries on this host: using nftables over netlink");
    expect(await nftTable(pod, "ip")).toContain(
      'meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"',
    );
    await net.serve(pod, { 4143: "proxy-inbound" });
    const client = await net.addNetns("client");
    await net.cnitool("add", "mesh", client);
    expect(await net.connect(client, resultAddress(added), 8080)).toBe("proxy-inbound");
    const checked = await net.cnitool("check", "mesh", pod, args, undefined, hidden);
    expect(checked.exitCode, checked.stdout).toBe(0);
    api.addPod(podObject("demo", "web", { proxy: "container", nodeName: "node-a", podIP: resultAddress(added) }));
    const audit = await onNode(net, kubeconfig, ["audit", "--output", "json"], hidden);
    expect(audit.exitCode, audit.stderr).toBe(0);
    expect(JSON.parse(audit.stdout).pods).toEqual([expect.objectContaining({ name: "web", status: "protected" })]);
    const deleted = await net.cnitool("del", "mesh", pod, args, undefined, hidden);
    expect(deleted.exitCode, deleted.stdout).toBe(0);
    expect(await nftTable(pod, "ip")).toEqual([]);
  });
});
