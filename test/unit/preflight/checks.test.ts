import { describe, expect, it } from "vitest";
import { type NodeFacts, preflight } from "../../../src/preflight/checks.js";
import type { CheckResult } from "../../../src/preflight/result.js";
import { conflist } from "../../kit/agent/host.js";

/** A node ready for meshcni: containerd with the default dirs, Calico at cniVersion 1.1.0, both iptables. */
const healthy: NodeFacts = {
  runtime: {
    runtime: "containerd",
    file: "/etc/containerd/config.toml",
    confDir: "/etc/cni/net.d",
    binDirs: ["/opt/cni/bin"],
    netnsDir: "/var/run/netns",
  },
  explicit: {},
  netDir: "/etc/cni/net.d",
  configs: [{ name: "10-calico.conflist", text: conflist("k8s-pod-network", [{ type: "calico" }], { cniVersion: "1.1.0" }) }],
  binDir: "/opt/cni/bin",
  binaries: ["calico", "calico-ipam", "portmap"],
  plugins: { dirs: ["/opt/cni/bin"], executables: new Set(["calico", "calico-ipam", "portmap"]) },
  iptablesBackends: ["nft", "legacy"],
  detection: { backend: "nft", found: true },
  kernel: "6.1.0-27-amd64",
  nfTables: "loaded",
  netnsDirs: [{ dir: "/var/run/netns", entries: 12 }],
  stateDir: { path: "/var/run/meshcni", exists: true },
  cri: { flag: "auto", socket: "/run/containerd/containerd.sock", sandboxes: 12 },
  hostRoot: "",
};

const check = (facts: Partial<NodeFacts>) => preflight({ ...healthy, ...facts });
const levels = (results: CheckResult[]) => results.map((result) => `${result.level} ${result.check}`);
const about = (results: CheckResult[], name: string) => results.filter((result) => result.check === name);

describe("meshcni check --pre", () => {
  it("passes a ready node, naming the config the runtime loads, its primary CNI and cniVersion", () => {
    const results = check({});
    expect(results.every((result) => result.level === "ok")).toBe(true);
    expect(about(results, "runtime config")[0]!.message).toBe(
      "the runtime loads /etc/cni/net.d/10-calico.conflist (conflist): primary CNI calico, cniVersion 1.1.0",
    );
  });

  it("fails a chain the runtime cannot run: a plugin with no executable in any of its bin dirs, a list libcni refuses", () => {
    const configs = [
      {
        name: "10-k8s.conflist",
        text: conflist("k8s", [{ type: "bridge", ipam: { type: "host-local" } }, { type: "portmap" }, { type: "meshcni" }]),
      },
    ];
    const plugins = { dirs: ["/opt/cni/bin", "/usr/libexec/cni"], executables: new Set(["bridge", "portmap"]) };
    expect(about(check({ configs, plugins }), "chain")).toEqual([
      {
        check: "chain",
        level: "fail",
        message:
          "/etc/cni/net.d/10-k8s.conflist chains host-local, with no executable in /opt/cni/bin, /usr/libexec/cni: the runtime fails every pod's ADD and DEL on this node; install the plugin, or pass --bin-dir, the runtime's bin dir",
      },
    ]);
    const nameless = [{ name: "10-k8s.conflist", text: JSON.stringify({ cniVersion: "1.0.0", plugins: [{ type: "bridge" }] }) }];
    expect(about(check({ configs: nameless, plugins }), "chain")).toEqual([
      { check: "chain", level: "fail", message: `/etc/cni/net.d/10-k8s.conflist: it has no "name" (libcni refuses a list without one)` },
    ]);
    expect(about(check({}), "chain")).toEqual([
      { check: "chain", level: "ok", message: "every plugin the chain runs has its executable in /opt/cni/bin" },
    ]);
  });

  it("warns of two configs naming one network: CRI-O ignores the later one", () => {
    const configs = [
      { name: "10-calico.conflist", text: conflist("k8s-pod-network", [{ type: "calico" }], { cniVersion: "1.1.0" }) },
      { name: "20-old.conflist", text: conflist("k8s-pod-network", [{ type: "calico" }]) },
      { name: "30-other.conflist", text: conflist("other", [{ type: "calico" }]) },
    ];
    expect(about(check({ configs }), "network names")).toEqual([
      {
        check: "network names",
        level: "warn",
        message: "20-old.conflist names network k8s-pod-network, as 10-calico.conflist does: CRI-O ignores the later one",
      },
    ]);
    expect(about(check({}), "network names")).toEqual([]);
  });

  it("warns that STATUS and GC never come below cniVersion 1.1.0", () => {
    const results = check({ configs: [{ name: "10-calico.conflist", text: conflist("k8s-pod-network", [{ type: "calico" }]) }] });
    expect(about(results, "cniVersion")).toEqual([
      expect.objectContaining({ level: "warn", message: expect.stringContaining("only from cniVersion 1.1.0 (here 1.0.0)") }),
    ]);
  });

  it("fails without a primary CNI, and names a config the runtime cannot load", () => {
    expect(about(check({ configs: [] }), "runtime config")[0]).toMatchObject({
      level: "fail",
      message: expect.stringContaining("install the primary CNI first"),
    });
    expect(about(check({ configs: { unreadable: "ENOENT" } }), "runtime config")[0]).toMatchObject({
      level: "fail",
      message: expect.stringContaining("no /etc/cni/net.d"),
    });
    const broken = check({ configs: [{ name: "05-cilium.conflist", text: "{" }, ...(healthy.configs as [])] });
    expect(about(broken, "runtime config")[0]).toMatchObject({
      level: "fail",
      message: expect.stringContaining("05-cilium.conflist is not a valid CNI config"),
    });
  });

  it("finds a linkerd-cni already chained or installed, and says meshcni is already there", () => {
    const both = check({
      configs: [{ name: "10-calico.conflist", text: conflist("k8s-pod-network", [{ type: "calico" }, { type: "linkerd-cni" }]) }],
      binaries: ["calico", "linkerd-cni"],
    });
    expect(about(both, "linkerd-cni").map((result) => result.level)).toEqual(["warn", "warn"]);
    expect(about(both, "linkerd-cni")[0]!.message).toContain("migration");
    const ours = check({
      configs: [{ name: "10-calico.conflist", text: conflist("k8s-pod-network", [{ type: "calico" }, { type: "meshcni" }]) }],
    });
    expect(about(ours, "meshcni")).toEqual([expect.objectContaining({ level: "ok" })]);
  });

  it("without iptables binaries says auto picks nftables, unless the kernel has no nf_tables; fails without the binaries auto picks", () => {
    const none = check({ iptablesBackends: [] });
    expect(levels([...about(none, "iptables"), ...about(none, "backend")])).toEqual(["ok iptables", "ok backend"]);
    expect(about(none, "backend")[0]!.message).toBe("iptables-mode auto picks nftables (netlink, in-process)");
    expect(about(check({ iptablesBackends: [], nfTables: "absent" }), "iptables")[0]).toMatchObject({
      level: "fail",
      message: expect.stringContaining("install iptables"),
    });
    const legacyOnly = check({ iptablesBackends: ["legacy"] });
    expect(levels(about(legacyOnly, "backend"))).toEqual(["ok backend", "fail backend"]);
    expect(about(legacyOnly, "backend")[1]!.message).toContain("set linkerd.iptables-mode to legacy");
    expect(about(check({ detection: { backend: "nft", found: false } }), "backend")[0]!.level).toBe("warn");
  });

  it("judges nf_tables in the kernel", () => {
    expect(about(check({ nfTables: "built-in" }), "kernel")[0]!.level).toBe("ok");
    expect(about(check({ nfTables: "module" }), "kernel")[0]!.level).toBe("ok");
    expect(about(check({ nfTables: "absent" }), "kernel")[0]).toMatchObject({
      level: "warn",
      message: expect.stringContaining("iptables-mode legacy"),
    });
  });

  it("warns of a missing netns dir and fails a state dir it could not make a dir and a file in; one still to be created is fine", () => {
    expect(about(check({ netnsDirs: [{ dir: "/run/netns", entries: undefined }] }), "netns dir")[0]!.level).toBe("warn");
    expect(about(check({ stateDir: { path: "/var/run/meshcni", exists: false } }), "state dir")[0]).toMatchObject({
      level: "ok",
      message: "/var/run/meshcni can be created and hold ADD's records (a dir and a file made there, and removed)",
    });
    expect(
      about(check({ stateDir: { path: "/etc/hostname", exists: true, refused: "it is no directory" } }), "state dir")[0],
    ).toMatchObject({
      level: "fail",
      message: expect.stringMatching(/^\/etc\/hostname: it is no directory; ADD records each meshed pod there/),
    });
  });

  it("asks the CRI socket; one that does not answer is a warning naming the flag, for CRI-O its socket", () => {
    expect(about(check({}), "CRI socket")[0]!.message).toBe("/run/containerd/containerd.sock answers the CRI: 12 pod sandboxes");
    const crio = {
      runtime: "cri-o" as const,
      file: "/etc/crio/crio.conf",
      confDir: "/etc/cni/net.d",
      binDirs: ["/opt/cni/bin"],
      netnsDir: "/var/run/netns",
    };
    const silent = check({ runtime: crio, cri: { flag: "auto", problem: "no CRI socket found" } });
    expect(about(silent, "CRI socket")[0]).toMatchObject({
      level: "warn",
      message: expect.stringContaining(
        "give the runtime's with --cri-socket (CRI-O: /var/run/crio/crio.sock), and the same to meshcni manifests --cri-socket",
      ),
    });
    expect(about(silent, "install")[0]!.message).toBe(
      "this node's runtime uses non-default paths: install with `meshcni manifests --cri-socket /var/run/crio/crio.sock`",
    );
  });

  it("reads the runtime's dirs, warns when the given ones differ, and says how to install for non-default ones", () => {
    const runtime = {
      runtime: "containerd" as const,
      file: "/etc/containerd/config.toml",
      confDir: "/etc/cni/net.d",
      binDirs: ["/usr/lib/cni"],
      netnsDir: "/var/run/netns",
    };
    const results = check({ runtime, explicit: { binDir: "/opt/cni/bin" } });
    expect(about(results, "runtime").map((result) => `${result.level}: ${result.message}`)).toEqual([
      "ok: containerd (/etc/containerd/config.toml): CNI configs in /etc/cni/net.d, binaries in /usr/lib/cni, pod netns in /var/run/netns",
      "warn: --bin-dir /opt/cni/bin, but containerd uses /usr/lib/cni: meshcni must be installed where the runtime looks",
    ]);
    expect(about(results, "install")[0]!.message).toBe(
      "this node's runtime uses non-default paths: install with `meshcni manifests --bin-dir /usr/lib/cni`",
    );
    // CRI-O with two plugin_dirs: the install line names both, the second as --extra-bin-dir (the agent looks there for the chain's plugins).
    const twoDirs = { ...runtime, runtime: "cri-o" as const, binDirs: ["/opt/cni/bin", "/usr/libexec/cni"] };
    expect(about(check({ runtime: twoDirs, cri: { flag: "auto", socket: "/var/run/crio/crio.sock" } }), "install")[0]!.message).toBe(
      "this node's runtime uses non-default paths: install with `meshcni manifests --extra-bin-dir /usr/libexec/cni --cri-socket /var/run/crio/crio.sock`",
    );
    expect(about(check({ runtime: undefined }), "runtime")[0]!.level).toBe("warn");
    expect(about(check({ runtime: { file: "/etc/containerd/config.toml", invalid: "Invalid TOML" } }), "runtime")[0]!.level).toBe("fail");
  });
});
