import { describe, expect, it } from "vitest";
import { parseAgentOptions, parseListen } from "../../../src/agent/options.js";

const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseAgentOptions(argv, env, "/meshcni");

describe("the agent's flags", () => {
  it("has safe defaults: redirect repair, a small eviction rate, auto stop, loopback probes", () => {
    expect(parse([])).toMatchObject({
      sweep: { repair: "redirect", maxEvictionsPerMinute: 2, netnsDirs: ["/var/run/netns"], excludeNamespaces: [] },
      onStop: "auto",
      listen: { host: "127.0.0.1", port: 9911 },
    });
  });

  it("reads HOST:PORT, an IPv6 host in brackets, no host (every address), or nothing", () => {
    expect(parseListen("[::1]:9911")).toEqual({ host: "::1", port: 9911 });
    expect(parseListen(":0")).toEqual({ host: "", port: 0 });
    expect(parseListen("")).toBeUndefined();
  });

  it.each([
    [["--listen", "localhost"], '--listen must be HOST:PORT, not "localhost"'],
    [["--listen", "1.2.3.4:99999"], "--listen must be HOST:PORT"],
    [["--repair", "delete"], '--repair must be one of redirect, evict, label, none, not "delete"'],
    [["--on-stop", "maybe"], "--on-stop must be one of auto, keep, uninstall"],
    [["--max-evictions-per-minute=-1"], "--max-evictions-per-minute must be a whole number"],
    [["--audit-seconds", "0"], "--audit-seconds must be a positive number"],
    [["--log-level", "warning"], '--log-level must be one of debug, info, warn, error, not "warning"'],
    [["--resync-seconds", ""], "--resync-seconds must be a positive number"],
  ])("refuses %j, naming the flag and the value", (argv, message) => {
    expect(() => parse(argv)).toThrow(message);
  });

  it('reads --startup-taint "" as none, as `meshcni manifests` does', () => {
    expect(parse(["--startup-taint", ""]).startupTaint).toBeUndefined();
    expect(parse(["--startup-taint", "meshcni.io/not-ready"]).startupTaint).toEqual({
      spec: { key: "meshcni.io/not-ready", effect: "NoSchedule" },
      restore: false,
    });
  });

  it("takes the log level from --log-level, else LOG_LEVEL, else info", () => {
    expect(parse([]).logLevel).toBe("info");
    expect(parse([], { LOG_LEVEL: "warn" }).logLevel).toBe("warn");
    expect(parse(["--log-level", "error"], { LOG_LEVEL: "debug" }).logLevel).toBe("error");
    expect(() => parse([], { LOG_LEVEL: "verbose" })).toThrow('--log-level must be one of debug, info, warn, error, not "verbose"');
  });

  it("takes Linkerd's installer's environment where no flag is given, the flag over it where both are", () => {
    const env = {
      KUBECONFIG_FILE_NAME: "ZZZ-linkerd-cni-kubeconfig",
      CNI_NETWORK_CONFIG_FILE: "/etc/meshcni/template.json",
      MESHCNI_LISTEN: ":9400",
      KUBERNETES_SERVICE_HOST: "10.96.0.1",
      KUBERNETES_SERVICE_PORT: "443",
      KUBERNETES_SERVICE_PROTOCOL: "http",
      KUBE_CA_FILE: "/etc/kubernetes/ca.pem",
      SKIP_TLS_VERIFY: "true",
    };
    expect(parse([], env)).toMatchObject({
      install: { kubeconfigName: "ZZZ-linkerd-cni-kubeconfig", templateFile: "/etc/meshcni/template.json" },
      listen: { host: "", port: 9400 },
      api: { host: "10.96.0.1", port: "443", protocol: "http", caFile: "/etc/kubernetes/ca.pem", skipTlsVerify: true },
    });
    expect(parse(["--kubeconfig-name", "k", "--template-file", "/t.json", "--listen", "127.0.0.1:1"], env)).toMatchObject({
      install: { kubeconfigName: "k", templateFile: "/t.json" },
      listen: { host: "127.0.0.1", port: 1 },
    });
    // Unset: https, the projected CA, TLS verified.
    expect(parse([]).api).toMatchObject({
      protocol: "https",
      caFile: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
      skipTlsVerify: false,
    });
    expect(parse([], { SKIP_TLS_VERIFY: "yes" }).api.skipTlsVerify).toBe(false);
  });

  it("takes lists and repeats", () => {
    expect(
      parse([
        "--repair-exclude-namespaces",
        "kube-system, linkerd",
        "--netns-dir",
        "/run/netns",
        "--netns-dir",
        "/var/lib/containerd/netns",
      ]),
    ).toMatchObject({ sweep: { excludeNamespaces: ["kube-system", "linkerd"], netnsDirs: ["/run/netns", "/var/lib/containerd/netns"] } });
    expect(parse(["--repair", "evict", "--evict-namespaces", "shop, web"]).sweep.evictNamespaces).toEqual(["shop", "web"]);
    expect(parse(["--repair", "evict", "--evict-namespaces", "*"]).sweep.evictNamespaces).toBeUndefined();
    expect(() => parse(["--repair", "evict"])).toThrow("--repair evict needs --evict-namespaces NS,NS");
    expect(() => parse(["--repair", "evict", "--evict-namespaces", ""])).toThrow("--repair evict needs --evict-namespaces NS,NS");
  });
});
