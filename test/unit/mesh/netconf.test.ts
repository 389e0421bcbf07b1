import { describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors.js";
import { linkerdDefaults } from "../../../src/mesh/defaults.js";
import { isEntryOfType, isRedirectEntry, parseNetConf } from "../../../src/mesh/netconf.js";

function failure(conf: unknown): { code: number; msg: string } {
  try {
    parseNetConf(typeof conf === "string" ? conf : JSON.stringify(conf));
  } catch (error) {
    if (error instanceof CniError) return { code: error.code, msg: error.message };
    throw error;
  }
  throw new Error("expected the netconf to be refused");
}

const base = { cniVersion: "1.0.0", name: "k8s-pod-network", type: "meshcni" };

describe("netconf", () => {
  it("reads the linkerd2-cni chart's config unchanged", () => {
    const conf = parseNetConf(
      JSON.stringify({
        ...base,
        type: "linkerd-cni",
        log_level: "info",
        kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig" },
        // The chart's settings are meshcni's defaults, but for its fixed iptables mode.
        linkerd: { ...linkerdDefaults, "iptables-mode": "nft" },
      }),
    );
    expect(conf.kubernetes.kubeconfig).toBe("/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig");
    expect(conf.linkerd["inbound-ports-to-ignore"]).toEqual([
      { from: 4191, to: 4191 },
      { from: 4190, to: 4190 },
    ]);
    expect(conf.linkerd["iptables-mode"]).toBe("nft");
  });

  it("fills Linkerd's defaults and ours", () => {
    const conf = parseNetConf(JSON.stringify(base));
    expect(conf.linkerd).toMatchObject({
      "incoming-proxy-port": 4143,
      "outgoing-proxy-port": 4140,
      "proxy-uid": 2102,
      "inbound-ports-to-ignore": [
        { from: 4191, to: 4191 },
        { from: 4190, to: 4190 },
      ],
      "outbound-ports-to-ignore": [],
      "iptables-mode": "auto",
      ipv6: false,
      simulate: false,
    });
    expect(conf.linkerd["proxy-gid"]).toBeUndefined();
    expect(conf.kubernetes.timeout_seconds).toBe(30);
    expect(conf.log_level).toBe("info");
  });

  it("keeps keys it does not know (runtimeConfig, other tools' settings)", () => {
    const conf = parseNetConf(JSON.stringify({ ...base, runtimeConfig: { portMappings: [] }, linkerd: { future: 1 } }));
    expect(conf.runtimeConfig).toEqual({ portMappings: [] });
  });

  it("takes ports as numbers or strings, ranges as a-b, trimmed", () => {
    const conf = parseNetConf(JSON.stringify({ ...base, linkerd: { "outbound-ports-to-ignore": [25, " 443 ", "8000-8010"] } }));
    expect(conf.linkerd["outbound-ports-to-ignore"]).toEqual([
      { from: 25, to: 25 },
      { from: 443, to: 443 },
      { from: 8000, to: 8010 },
    ]);
  });

  it.each([
    [{ "incoming-proxy-port": 0 }, "linkerd.incoming-proxy-port=0"],
    [{ "outgoing-proxy-port": 65536 }, "linkerd.outgoing-proxy-port=65536"],
    [{ "outgoing-proxy-port": "41 40" }, 'linkerd.outgoing-proxy-port="41 40"'],
    [{ "inbound-ports-to-ignore": ["4191", "80, 443"] }, 'linkerd.inbound-ports-to-ignore[1]="80, 443"'],
    [{ "outbound-ports-to-ignore": ["9000-8000"] }, 'linkerd.outbound-ports-to-ignore[0]="9000-8000"'],
    [{ "ports-to-redirect": [8080, "8000-8010"] }, 'linkerd.ports-to-redirect[1]="8000-8010"'],
    [{ "subnets-to-ignore": ["10.0.0.0/8", "10.1"] }, 'linkerd.subnets-to-ignore[1]="10.1"'],
    [{ "subnets-to-ignore": ["fd00::/129"] }, 'linkerd.subnets-to-ignore[0]="fd00::/129"'],
    [{ "subnets-to-ignore": ["10.0.0.0/08"] }, 'linkerd.subnets-to-ignore[0]="10.0.0.0/08"'],
    [{ "subnets-to-ignore": ["010.0.0.0/8"] }, 'linkerd.subnets-to-ignore[0]="010.0.0.0/8"'],
    [{ "proxy-uid": "linkerd" }, 'linkerd.proxy-uid="linkerd"'],
    [{ "proxy-gid": -1 }, "linkerd.proxy-gid=-1"],
    [{ "iptables-mode": "ebpf" }, 'linkerd.iptables-mode="ebpf": must be one of "legacy", "nft", "plain", "nftables", "auto", not "ebpf"'],
    [{ ipv6: "yes" }, 'linkerd.ipv6="yes": must be true or false, not "yes"'],
    [{ "ports-to-redirect": "8080" }, 'linkerd.ports-to-redirect="8080": must be a list, not "8080"'],
  ])("refuses %j with code 7 naming field and value", (linkerd, fragment) => {
    const { code, msg } = failure({ ...base, linkerd });
    expect(code).toBe(7);
    expect(msg).toContain(fragment);
  });

  it("refuses a config without a name or type, and a bad log level or timeout", () => {
    expect(failure({ cniVersion: "1.0.0", type: "meshcni" }).msg).toContain("name (missing)");
    expect(failure({ ...base, log_level: "loud" }).msg).toContain('log_level="loud": must be one of');
    expect(failure({ ...base, kubernetes: { timeout_seconds: 0 } }).msg).toContain("kubernetes.timeout_seconds=0");
  });

  it("gives code 6 for what is not a JSON object and code 1 for an unsupported version", () => {
    expect(failure("{").code).toBe(6);
    expect(failure("[]").code).toBe(6);
    expect(failure({ ...base, cniVersion: "0.1.0" }).code).toBe(1);
  });

  it("says what is wrong with stdin that is no network config", () => {
    expect(failure("{x")).toEqual({ code: 6, msg: expect.stringMatching(/^network config on stdin is not valid JSON: \S/) });
    for (const text of ["null", "5", "[]"])
      expect(failure(text)).toEqual({ code: 6, msg: "network config on stdin must be a JSON object" });
  });

  it("lists every problem at once, each with its field and value", () => {
    expect(failure({ ...base, name: "", log_file: "", agent_socket: "run/meshcni.sock" })).toEqual({
      code: 7,
      msg:
        'invalid network config: name="": Invalid length: Expected >=1 but received 0; log_file="": Invalid length: Expected >=1 but received 0; ' +
        'agent_socket="run/meshcni.sock": must be an absolute path',
    });
    expect(failure({ ...base, state_dir: "", kubernetes: { kubeconfig: "" } }).msg).toBe(
      'invalid network config: state_dir="": Invalid length: Expected >=1 but received 0; kubernetes.kubeconfig="": Invalid length: Expected >=1 but received 0',
    );
  });

  it("says why a port, subnet or id is refused", () => {
    expect(failure({ ...base, linkerd: { "incoming-proxy-port": 0, "subnets-to-ignore": ["10.1"], "proxy-uid": "x" } }).msg).toBe(
      "invalid network config: linkerd.incoming-proxy-port=0: ports are whole numbers from 1 to 65535; " +
        'linkerd.proxy-uid="x": expected a numeric id from 0 to 4294967294; ' +
        'linkerd.subnets-to-ignore[0]="10.1": expected a CIDR like 10.0.0.0/8 or fd00::/64 (a prefix length is required)',
    );
  });

  it("refuses GC's list of attachments when one lacks its container ID or interface", () => {
    const attachments = (list: unknown[]) => failure({ ...base, cniVersion: "1.1.0", "cni.dev/valid-attachments": list });
    expect(attachments([{ containerID: "c1" }])).toMatchObject({
      code: 7,
      msg: expect.stringContaining("cni.dev/valid-attachments[0].ifname (missing)"),
    });
    expect(attachments([{ containerID: 5, ifname: "eth0" }]).msg).toContain("cni.dev/valid-attachments[0].containerID=5: must be a string");
  });

  it("bounds the API deadline above 0 and at 300 s", () => {
    expect(failure({ ...base, kubernetes: { timeout_seconds: 0 } }).msg).toBe(
      "invalid network config: kubernetes.timeout_seconds=0: must be above 0",
    );
    expect(failure({ ...base, kubernetes: { timeout_seconds: 301 } }).msg).toContain("kubernetes.timeout_seconds=301");
    for (const seconds of [0.5, 300])
      expect(parseNetConf(JSON.stringify({ ...base, kubernetes: { timeout_seconds: seconds } })).kubernetes.timeout_seconds).toBe(seconds);
  });

  it("reads every log level, where to log and keep state, the agent's socket, GC's attachments and the prevResult", () => {
    for (const level of ["debug", "info", "warn", "warning", "error"])
      expect(parseNetConf(JSON.stringify({ ...base, log_level: level })).log_level).toBe(level);
    const conf = parseNetConf(
      JSON.stringify({
        ...base,
        cniVersion: "1.1.0",
        log_file: "/var/log/meshcni.log",
        state_dir: "/run/meshcni",
        agent_socket: "/run/meshcni/agent/plugin.sock",
        prevResult: { cniVersion: "1.1.0", ips: [] },
        "cni.dev/valid-attachments": [{ containerID: "c1", ifname: "eth0" }],
        linkerd: {
          "proxy-gid": 2103,
          "use-wait-flag": true,
          simulate: true,
          ipv6: true,
          "ports-to-redirect": [8080],
          "subnets-to-ignore": ["fd00::/8"],
        },
      }),
    );
    expect(conf).toMatchObject({
      cniVersion: "1.1.0",
      log_file: "/var/log/meshcni.log",
      state_dir: "/run/meshcni",
      agent_socket: "/run/meshcni/agent/plugin.sock",
      prevResult: { cniVersion: "1.1.0", ips: [] },
      "cni.dev/valid-attachments": [{ containerID: "c1", ifname: "eth0" }],
      linkerd: {
        "proxy-gid": 2103,
        "use-wait-flag": true,
        simulate: true,
        ipv6: true,
        "ports-to-redirect": [8080],
        "subnets-to-ignore": ["fd00::/8"],
      },
    });
    const defaults = parseNetConf(JSON.stringify(base));
    expect(defaults).toMatchObject({ state_dir: "/var/run/meshcni", kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } });
    expect(defaults.linkerd).toMatchObject({ "ports-to-redirect": [], "subnets-to-ignore": [], "use-wait-flag": false });
  });

  it("knows a redirect plugin's entry in a chain (meshcni's or linkerd-cni's), and its own by its template's type alone", () => {
    expect(["meshcni", "linkerd-cni", "calico", "", undefined].map((type) => isRedirectEntry({ type }))).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(isRedirectEntry(null)).toBe(false);
    expect(isRedirectEntry("meshcni")).toBe(false);
    expect(["meshcni", "linkerd-cni", undefined].map((type) => isEntryOfType("meshcni")({ type }))).toEqual([true, false, false]);
    expect(isEntryOfType("linkerd-cni")({ type: "linkerd-cni" })).toBe(true);
    expect(isEntryOfType("meshcni")(null)).toBe(false);
  });
});
