import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeApiServer, type Fault, podObject } from "../kit/api/server.js";
import { meshcniNetconf, podArgs, until } from "../kit/common.js";
import { expectCniError } from "../kit/netns/expect-cni.js";
import { TestNetwork } from "../kit/netns/network.js";
import { invokePlugin, natRules, pluginEnv } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** Runs the binary directly so the CNI error object on stdout can be read whole. */
describeAsRoot("meshcni errors and the other verbs", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(20);
  let kubeconfig = "";
  let foreignCa = "";
  let pod = "";
  const env = (extra: Record<string, string> = {}) => pluginEnv(net.netnsPath(pod), "faults", podArgs("demo", "web"), extra);
  const conf = (overrides: Record<string, unknown> = {}, linkerd: Record<string, unknown> = {}) =>
    meshcniNetconf({ stateDir: net.stateDir, linkerd }, { kubernetes: { kubeconfig, timeout_seconds: 3 }, ...overrides });

  /** Makes the pod's GET fail that way; the valid kubeconfig. */
  const withFault = (fault: Fault) => {
    api.faults.set("/api/v1/namespaces/demo/pods/web", fault);
    return kubeconfig;
  };

  beforeAll(async () => {
    await api.start();
    kubeconfig = api.writeKubeconfig();
    const other = await new FakeApiServer().start();
    foreignCa = other.caPem;
    await other.stop();
    api.addPod(podObject("demo", "web", { proxy: "container" }));
    api.addPod(
      podObject("demo", "injected", {
        proxy: "container",
        annotations: { "config.linkerd.io/skip-inbound-ports": "80\n-A OUTPUT -j ACCEPT" },
      }),
    );
    api.addPod(podObject("demo", "badgid", { proxy: "container", annotations: { "config.linkerd.io/proxy-gid": "wheel" } }));
    api.addPod(podObject("demo", "v6", { proxy: "container" }));
    pod = await net.addNetns("pod");
  });

  afterAll(async () => {
    await net.cleanup();
    await api.stop();
  });

  describe.each([
    ["401 (a token the server refuses)", () => api.writeKubeconfig(`${api.dir}/stale`, "stale-token"), "401 Unauthorized"],
    ["404 (a pod the server does not know)", () => kubeconfig, "404 Not Found", "demo/ghost"],
    ["500 (a failing server)", () => withFault({ status: 500 }), "HTTP 500"],
    ["a server that never answers", () => withFault({ hang: true }), "timed out"],
    ["a missing kubeconfig", () => `${api.dir}/absent`, "cannot read kubeconfig"],
    ["a CA that did not sign the server's certificate", () => api.writeKubeconfig(`${api.dir}/foreign-ca`, api.token, foreignCa), "TLS"],
  ])("API fault: %s", (_title, setup, cause, podName = "demo/web") => {
    it("fails ADD closed with code 11 naming the pod and the cause, within the deadline, leaving no rules", async () => {
      api.faults.clear();
      const path = setup();
      const started = Date.now();
      const result = await invokePlugin(
        env({ CNI_ARGS: podArgs("demo", podName.split("/")[1]!) }),
        conf({ kubernetes: { kubeconfig: path, timeout_seconds: 2 } }),
      );
      const elapsed = Date.now() - started;
      api.faults.clear();
      expectCniError(result, 11, `pod ${podName}`, cause);
      expect(elapsed).toBeLessThan(2000 + 3000); // the deadline plus process start-up slack
      expect(await natRules(pod, "nft")).toEqual([]);
    });
  });

  it.each([500, 503])("retries a passing %i and then succeeds", async (code) => {
    let failures = 1;
    const path = "/api/v1/namespaces/demo/pods/web";
    api.faults.set(path, { status: code });
    const before = api.requests.length;
    const clear = setInterval(() => {
      if (api.requests.slice(before).some((r) => r.path === path) && failures-- > 0) api.faults.delete(path);
    }, 5);
    const result = await invokePlugin(env(), conf());
    clearInterval(clear);
    expect(result.exitCode, result.stdout).toBe(0);
    expect(api.requests.slice(before).filter((r) => r.path === path).length).toBeGreaterThanOrEqual(2);
    expect((await invokePlugin(env({ CNI_COMMAND: "DEL" }), conf())).exitCode).toBe(0);
  });

  it("refuses malformed JSON with code 6", async () => {
    expectCniError(await invokePlugin(env(), "{not json"), 6, "not valid JSON");
  });

  it("refuses missing environment with code 4 naming the variable", async () => {
    expectCniError(await invokePlugin(env({ CNI_NETNS: "" }), conf()), 4, "CNI_NETNS");
    expectCniError(await invokePlugin({ CNI_CONTAINERID: "x" }, conf()), 4, "CNI_COMMAND");
    expectCniError(await invokePlugin(env({ CNI_ARGS: "K8S_POD_NAME=web;FOO=bar" }), conf()), 4, "FOO");
  });

  it("refuses an unsupported cniVersion with code 1", async () => {
    expectCniError(await invokePlugin(env(), conf({ cniVersion: "0.2.0" })), 1, '"0.2.0"');
  });

  it("refuses bad ports and subnets with code 7 naming the field and value, and writes nothing", async () => {
    expectCniError(await invokePlugin(env(), conf({}, { "incoming-proxy-port": 70000 })), 7, "linkerd.incoming-proxy-port=70000");
    expectCniError(
      await invokePlugin(env(), conf({}, { "outbound-ports-to-ignore": ["80", " 443", "9000-8000"] })),
      7,
      'linkerd.outbound-ports-to-ignore[2]="9000-8000"',
    );
    expectCniError(await invokePlugin(env(), conf({}, { "subnets-to-ignore": ["10.0.0.0/33"] })), 7, "linkerd.subnets-to-ignore[0]");
    expectCniError(await invokePlugin(env(), conf({}, { "iptables-mode": "ebpf" })), 7, "linkerd.iptables-mode");
    expect(await natRules(pod, "nft")).toEqual([]);
  });

  it("refuses an annotation with a newline with code 7 naming pod, annotation and token, and writes nothing", async () => {
    const result = await invokePlugin(env({ CNI_ARGS: podArgs("demo", "injected") }), conf());
    expectCniError(result, 7, "pod demo/injected", "config.linkerd.io/skip-inbound-ports", JSON.stringify("80\n-A OUTPUT -j ACCEPT"));
    expect(await natRules(pod, "nft")).toEqual([]);
    expectCniError(await invokePlugin(env({ CNI_ARGS: podArgs("demo", "badgid") }), conf()), 7, "config.linkerd.io/proxy-gid", '"wheel"');
  });

  it("passes a container with no pod identity through unchanged, converting prevResult", async () => {
    const prevResult = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", sandbox: net.netnsPath(pod) }],
      ips: [{ address: "10.251.20.5/24", interface: 0 }],
    };
    const result = await invokePlugin(env({ CNI_ARGS: "" }), conf({ cniVersion: "0.4.0", prevResult }));
    expect(result.exitCode).toBe(0);
    expect(result.json).toEqual({ ...prevResult, cniVersion: "0.4.0", ips: [{ version: "4", address: "10.251.20.5/24", interface: 0 }] });
    expect(await natRules(pod, "nft")).toEqual([]);
  });

  it("logs the planned rules and applies nothing with simulate", async () => {
    const logFile = `${net.dir}/simulate.log`;
    const result = await invokePlugin(env(), conf({ log_file: logFile }, { simulate: true }));
    expect(result.exitCode).toBe(0);
    expect(await natRules(pod, "nft")).toEqual([]);
    const { stdout } = await execa("cat", [logFile]);
    expect(stdout).toContain("simulate: would apply");
    expect(stdout).toContain("-A PROXY_INIT_OUTPUT");
  });

  it("programs ip6tables too when the pod has an IPv6 address", async () => {
    const prevResult = { cniVersion: "1.0.0", ips: [{ address: "10.251.20.6/24" }, { address: "fd00:251::6/64" }] };
    const args = { CNI_ARGS: podArgs("demo", "v6") };
    expect((await invokePlugin(env(args), conf({ prevResult }))).exitCode).toBe(0);
    const v6 = await natRules(pod, "nft", "ipv6");
    expect(v6).toContain(
      '-A PROXY_INIT_OUTPUT -p tcp -m comment --comment "proxy-init/redirect-all-outgoing-to-proxy-port" -j REDIRECT --to-ports 4140',
    );
    expect(v6).toContain('-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT');
    expect((await invokePlugin(env({ ...args, CNI_COMMAND: "CHECK" }), conf({ prevResult }))).exitCode).toBe(0);
    expect((await invokePlugin(env({ ...args, CNI_COMMAND: "DEL" }), conf({ prevResult }))).exitCode).toBe(0);
    expect(await natRules(pod, "nft", "ipv6")).toEqual([]);
    expect(await natRules(pod, "nft")).toEqual([]);
  });

  it("fails ADD when ip6tables fails, and leaves no IPv4 rules behind", async () => {
    const fakeBin = `${net.dir}/fake-bin`;
    mkdirSync(fakeBin, { recursive: true });
    writeFileSync(`${fakeBin}/ip6tables-nft-restore`, "#!/bin/sh\necho 'ip6tables-restore: line 2 failed' >&2\nexit 1\n");
    chmodSync(`${fakeBin}/ip6tables-nft-restore`, 0o755);
    const result = await invokePlugin(env({ PATH: `${fakeBin}:${process.env.PATH}` }), conf({}, { ipv6: true }));
    expectCniError(result, 5, "ip6tables-nft-restore failed", "line 2 failed");
    expect(await natRules(pod, "nft")).toEqual([]);
    expect(await natRules(pod, "nft", "ipv6")).toEqual([]);
  });

  it("updates the rules in place when the pod's annotations changed, keeping one jump each", async () => {
    expect((await invokePlugin(env(), conf())).exitCode).toBe(0);
    api.addPod(podObject("demo", "web", { proxy: "container", annotations: { "config.linkerd.io/skip-outbound-ports": "9999" } }));
    expect((await invokePlugin(env(), conf())).exitCode).toBe(0);
    const rules = await natRules(pod, "nft");
    expect(rules.filter((rule) => rule.includes("ignore-port-9999"))).toHaveLength(1);
    expect(rules.filter((rule) => rule.startsWith("-A OUTPUT"))).toHaveLength(1);
    expect(rules.filter((rule) => rule.startsWith("-A PREROUTING"))).toHaveLength(1);
    expect((await invokePlugin(env({ CNI_COMMAND: "CHECK" }), conf())).exitCode).toBe(0);
    api.addPod(podObject("demo", "web", { proxy: "container" }));
    const checked = await invokePlugin(env({ CNI_COMMAND: "CHECK" }), conf());
    expectCniError(checked, 100, "pod demo/web", "differs from plan");
    expect(checked.json?.details).toMatch(/^ipv4: PROXY_INIT_OUTPUT: unexpected rule: .*ignore-port-9999/);
    expect((await invokePlugin(env({ CNI_COMMAND: "DEL" }), conf())).exitCode).toBe(0);
  });

  it("does not queue behind the host-wide xtables lock with the legacy backend", async () => {
    // Holds /run/xtables.lock as another iptables user on the node would.
    const holder = spawn("flock", ["/run/xtables.lock", "sleep", "30"], { stdio: "ignore" });
    try {
      await until(async () => (await execa("flock", ["-n", "/run/xtables.lock", "true"], { reject: false })).exitCode !== 0, 5000, 10);
      const legacy = conf({}, { "iptables-mode": "legacy" });
      const result = await invokePlugin(env(), legacy);
      expect(result.exitCode, result.stdout).toBe(0);
      // iptables-legacy-restore waits for the lock it uses: finishing first proves it used its own.
      expect(holder.exitCode).toBeNull();
      expect(await natRules(pod, "legacy")).toContain(":PROXY_INIT_OUTPUT - [0:0]");
      expect((await invokePlugin(env({ CNI_COMMAND: "DEL" }), legacy)).exitCode).toBe(0);
      expect(await natRules(pod, "legacy")).toEqual([]);
    } finally {
      holder.kill();
    }
  });

  it("records each meshed ADD on the host, without secrets; DEL and GC remove records", async () => {
    const records = () =>
      (readdirSync(`${net.stateDir}/attachments`, { withFileTypes: true }) as Array<{ name: string }>).map((entry) => entry.name);
    expect((await invokePlugin(env({ CNI_CONTAINERID: "rec-a" }), conf())).exitCode).toBe(0);
    expect((await invokePlugin(env({ CNI_CONTAINERID: "rec-b", CNI_IFNAME: "net1" }), conf())).exitCode).toBe(0);
    expect(records().sort()).toEqual(["rec-a_eth0.json", "rec-b_net1.json"]);
    const text = readFileSync(`${net.stateDir}/attachments/rec-a_eth0.json`, "utf8");
    expect(JSON.parse(text)).toMatchObject({
      version: 1,
      pod: { namespace: "demo", name: "web", uid: "uid-demo-web" },
      containerId: "rec-a",
      ifname: "eth0",
      netns: net.netnsPath(pod),
      backend: "nft",
      plans: [expect.objectContaining({ family: "ipv4" })],
    });
    expect(text).not.toContain(api.token);
    const gc = await invokePlugin(
      { CNI_COMMAND: "GC", CNI_PATH: net.binDir },
      conf({ cniVersion: "1.1.0", "cni.dev/valid-attachments": [{ containerID: "rec-b", ifname: "net1" }] }),
    );
    expect(gc.exitCode, gc.stdout).toBe(0);
    expect(records()).toEqual(["rec-b_net1.json"]);
    expect((await invokePlugin(env({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "rec-b", CNI_IFNAME: "net1" }), conf())).exitCode).toBe(0);
    expect(records()).toEqual([]);
    expect(await natRules(pod, "nft")).toEqual([]);
  });

  it("fails ADD, leaving no rules, when the record cannot be written", async () => {
    const result = await invokePlugin(env(), conf({ state_dir: "/dev/null/meshcni" }));
    expect(result.exitCode).toBe(1);
    expect(result.json?.msg).toContain("/dev/null/meshcni");
    expect(await natRules(pod, "nft")).toEqual([]);
  });

  it("fails CHECK for an unmeshed pod that carries our chains", async () => {
    api.addPod(podObject("demo", "plain"));
    await execa("ip", ["netns", "exec", pod, "iptables-nft", "-t", "nat", "-N", "PROXY_INIT_OUTPUT"]);
    const result = await invokePlugin(env({ CNI_COMMAND: "CHECK", CNI_ARGS: podArgs("demo", "plain") }), conf());
    expectCniError(result, 100, "pod demo/plain");
    expect(result.json?.details).toBe("ipv4: redirect rules are present but the pod is not meshed");
    expect((await invokePlugin(env({ CNI_COMMAND: "DEL" }), conf())).exitCode).toBe(0);
    expect(await natRules(pod, "nft")).toEqual([]);
  });

  it("fails CHECK with code 11 when the API is unreachable", async () => {
    const result = await invokePlugin(env({ CNI_COMMAND: "CHECK" }), conf({ kubernetes: { kubeconfig: `${api.dir}/absent` } }));
    expectCniError(result, 11, "pod demo/web");
  });

  it("DEL succeeds without a kubeconfig, after a failed ADD, with no netns, and with the netns path gone", async () => {
    const noKubeconfig = conf({ kubernetes: { kubeconfig: `${api.dir}/absent` } });
    expect((await invokePlugin(env(), noKubeconfig)).exitCode).toBe(1);
    expect((await invokePlugin(env({ CNI_COMMAND: "DEL" }), noKubeconfig)).exitCode).toBe(0);
    expect((await invokePlugin(env({ CNI_COMMAND: "DEL", CNI_NETNS: "" }), conf())).exitCode).toBe(0);
    expect((await invokePlugin(env({ CNI_COMMAND: "DEL", CNI_NETNS: "/var/run/netns/never-was" }), conf())).exitCode).toBe(0);
    expect(api.requests.filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("detects the backend in auto mode like iptables-wrappers (no kubelet chains: nft)", async () => {
    expect((await invokePlugin(env(), conf({}, { "iptables-mode": "auto" }))).exitCode).toBe(0);
    expect(await natRules(pod, "nft")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    expect(await natRules(pod, "legacy")).toEqual([]);
    expect((await invokePlugin(env({ CNI_COMMAND: "DEL" }), conf({}, { "iptables-mode": "auto" }))).exitCode).toBe(0);
    expect(await natRules(pod, "nft")).toEqual([]);
  });

  it("answers VERSION, STATUS and GC", async () => {
    const version = await invokePlugin({ CNI_COMMAND: "VERSION" }, { cniVersion: "1.1.0" });
    expect(version.json).toEqual({ cniVersion: "1.1.0", supportedVersions: ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] });
    const status = await invokePlugin({ CNI_COMMAND: "STATUS", CNI_PATH: net.binDir }, conf({ cniVersion: "1.1.0" }));
    expect(status.exitCode, status.stdout).toBe(0);
    expect(status.stdout).toBe("");
    const notReady = await invokePlugin(
      { CNI_COMMAND: "STATUS" },
      conf({ cniVersion: "1.1.0", kubernetes: { kubeconfig: `${api.dir}/absent` } }),
    );
    expectCniError(notReady, 50, "cannot read kubeconfig");
    const oldVersion = await invokePlugin({ CNI_COMMAND: "STATUS" }, conf());
    expectCniError(oldVersion, 1, "1.1.0");
    const gc = await invokePlugin(
      { CNI_COMMAND: "GC", CNI_PATH: net.binDir },
      conf({ cniVersion: "1.1.0", "cni.dev/valid-attachments": [{ containerID: "a", ifname: "eth0" }] }),
    );
    expect(gc.exitCode, gc.stdout).toBe(0);
    expect(api.requests.filter((r) => r.method !== "GET")).toEqual([]);
  });
});
