import { chainProblems, checkChain } from "../cni/chain.js";
import type { ConfigFile } from "../cni/config-dir.js";
import { activeConfig, brokenConfigReason, loadOrder, parseConfig } from "../cni/config-dir.js";
import { compareVersions } from "../cni/version.js";
import type { Detection } from "../host.js";
import { isRedirectEntry } from "../mesh/netconf.js";
import { accessChecks, type CriFact, type StateDirFact } from "./access.js";
import type { CheckResult, Level } from "./result.js";
import type { RuntimeCni } from "./runtime.js";

/** What the preflight learnt of a node, gathered by main.ts. */
export interface NodeFacts {
  /** The runtime's CNI settings from its config file; undefined when none was found. */
  runtime: RuntimeCni | { file: string; invalid: string } | undefined;
  /** Dirs given on the command line, which win over the runtime's. */
  explicit: { netDir?: string; binDir?: string; netnsDir?: string };
  netDir: string;
  /** Or why the net dir cannot be read. */
  configs: ConfigFile[] | { unreadable: string };
  binDir: string;
  binaries: string[] | { unreadable: string };
  /** The executables the runtime can run as plugins, from every bin dir it looks in. */
  plugins: { dirs: string[]; executables: ReadonlySet<string> };
  /** iptables front ends whose save and restore binaries (IPv4 and IPv6) are all on the search path. */
  iptablesBackends: Array<"nft" | "legacy">;
  detection: Detection;
  kernel: string;
  /** nf_tables in this kernel: built in, loaded as a module, a module not loaded yet, absent, or not known. */
  nfTables: "built-in" | "loaded" | "module" | "absent" | "unknown";
  netnsDirs: Array<{ dir: string; entries: number | undefined }>;
  stateDir: StateDirFact;
  cri: CriFact;
  /** Where the host's files were read (--host-root; "" for this host). */
  hostRoot: string;
}

/** Judges a node from its facts: one line per check, ok, warn or fail, each saying what to do. */
export function preflight(facts: NodeFacts): CheckResult[] {
  const results: CheckResult[] = [];
  const add = (check: string, level: Level, message: string) => results.push({ check, level, message });

  const runtime = facts.runtime;
  if (!runtime)
    add(
      "runtime",
      "warn",
      "no /etc/containerd/config.toml or /etc/crio/crio.conf: looking at the default dirs; pass --net-dir and --bin-dir if the runtime uses others",
    );
  else if ("invalid" in runtime)
    add("runtime", "fail", `${runtime.file} is not valid TOML (${runtime.invalid}): the runtime cannot start with it`);
  else {
    add(
      "runtime",
      "ok",
      `${runtime.runtime} (${runtime.file}): CNI configs in ${runtime.confDir}, binaries in ${runtime.binDirs.join(", ")}, pod netns in ${runtime.netnsDir}`,
    );
    const differs = [
      ["--net-dir", facts.explicit.netDir, runtime.confDir],
      ["--bin-dir", facts.explicit.binDir, runtime.binDirs[0]],
      ["--netns-dir", facts.explicit.netnsDir, runtime.netnsDir],
    ].filter(([, given, theirs]) => given !== undefined && given !== theirs);
    for (const [flag, given, theirs] of differs)
      add("runtime", "warn", `${flag} ${given}, but ${runtime.runtime} uses ${theirs}: meshcni must be installed where the runtime looks`);
    const defaults = { "--net-dir": "/etc/cni/net.d", "--bin-dir": "/opt/cni/bin", "--netns-dir": "/var/run/netns" };
    const flags = Object.entries({ "--net-dir": runtime.confDir, "--bin-dir": runtime.binDirs[0], "--netns-dir": runtime.netnsDir })
      .filter(([flag, value]) => value !== defaults[flag as keyof typeof defaults])
      .map(([flag, value]) => `${flag} ${value}`);
    // Its other plugin dirs: the agent must see every one, or a chain whose plugin lives there is ChainBroken.
    flags.push(...runtime.binDirs.slice(1).map((dir) => `--extra-bin-dir ${dir}`));
    // manifests' default CRI socket is containerd's.
    if (runtime.runtime === "cri-o") flags.push(`--cri-socket ${facts.cri.socket ?? "/var/run/crio/crio.sock"}`);
    if (flags.length > 0)
      add("install", "warn", `this node's runtime uses non-default paths: install with \`meshcni manifests ${flags.join(" ")}\``);
  }

  if ("unreadable" in facts.configs)
    add(
      "runtime config",
      "fail",
      facts.configs.unreadable === "ENOENT"
        ? `no ${facts.netDir}: install the primary CNI first (meshcni chains after it), or pass --net-dir, the runtime's CNI conf_dir`
        : `cannot read ${facts.netDir}: ${facts.configs.unreadable}; pass --net-dir, the runtime's CNI conf_dir`,
    );
  else {
    const active = activeConfig(facts.configs);
    if (!active) add("runtime config", "fail", `no CNI config in ${facts.netDir}: install the primary CNI first; meshcni chains after it`);
    else if (!active.config.valid) add("runtime config", "fail", `${brokenConfigReason(active.file.name, active.config.reason)}`);
    else {
      const { json, kind } = active.config;
      const plugins = kind === "conflist" ? (json.plugins as Array<{ type: string }>) : [json as { type: string }];
      const primary = plugins.find((plugin) => !isRedirectEntry(plugin))?.type ?? "(none)";
      const version = String(json.cniVersion ?? "(none)");
      add(
        "runtime config",
        "ok",
        `the runtime loads ${facts.netDir}/${active.file.name} (${kind}): primary CNI ${primary}, cniVersion ${version}`,
      );
      add(
        "cniVersion",
        compareVersions(version, "1.1.0") >= 0 ? "ok" : "warn",
        compareVersions(version, "1.1.0") >= 0
          ? "STATUS and GC reach meshcni (cniVersion 1.1.0 or later)"
          : `runtimes send STATUS and GC only from cniVersion 1.1.0 (here ${version}): the node's readiness does not wait for meshcni; its agent cleans stale state itself`,
      );
      const file = `${facts.netDir}/${active.file.name}`;
      // meshcni's own binary is what the install puts there.
      const chain = checkChain(active.config, facts.plugins.executables, new Set(["meshcni"]));
      const dirs = facts.plugins.dirs.join(", ");
      const problems = chainProblems(file, chain, dirs);
      const fix = "; install the plugin, or pass --bin-dir, the runtime's bin dir";
      // The first line names the missing plugins, when there are any: the fix goes with it.
      for (const [index, problem] of problems.entries())
        add("chain", "fail", index === 0 && chain.missing.length > 0 ? `${problem}${fix}` : problem);
      if (problems.length === 0) add("chain", "ok", `every plugin the chain runs has its executable in ${dirs}`);
      const linkerd = plugins.filter((plugin) => plugin.type === "linkerd-cni");
      const ours = plugins.filter((plugin) => plugin.type === "meshcni");
      if (linkerd.length > 0)
        add(
          "linkerd-cni",
          "warn",
          "linkerd-cni is chained in the active config: see the README's migration (meshcni replaces its entry and adopts its pods)",
        );
      if (ours.length > 0) add("meshcni", "ok", "meshcni is already chained in the active config");
    }
  }

  if (!("unreadable" in facts.configs)) {
    // CRI-O keeps the first config of each network name and ignores the rest (ocicni's loadNetworks).
    const named = new Map<string, string>();
    for (const file of loadOrder(facts.configs)) {
      const config = parseConfig(file);
      const network = config.valid ? config.json.name : undefined;
      if (typeof network !== "string") continue;
      const first = named.get(network);
      if (first === undefined) named.set(network, file.name);
      else add("network names", "warn", `${file.name} names network ${network}, as ${first} does: CRI-O ignores the later one`);
    }
  }

  if ("unreadable" in facts.binaries)
    add("CNI bin dir", "fail", `cannot read ${facts.binDir}: ${facts.binaries.unreadable}; pass --bin-dir, the runtime's CNI bin_dir`);
  else {
    const binaries = facts.binaries;
    add(
      "CNI bin dir",
      binaries.length > 0 ? "ok" : "warn",
      `${facts.binDir}: ${binaries.length > 0 ? binaries.join(", ") : "empty (is it the runtime's bin_dir?)"}`,
    );
    if (binaries.includes("linkerd-cni"))
      add("linkerd-cni", "warn", `${facts.binDir}/linkerd-cni is installed: remove linkerd-cni first (see the README's migration)`);
  }

  const backends = facts.iptablesBackends;
  if (backends.length === 0) {
    const usable = facts.nfTables !== "absent";
    add(
      "iptables",
      usable ? "ok" : "fail",
      usable
        ? "no iptables binaries: meshcni writes the redirect over netlink itself (nftables), with no binary"
        : "no iptables binaries and no nf_tables in the kernel: install iptables (legacy) or boot a kernel with nf_tables",
    );
    add("backend", usable ? "ok" : "fail", "iptables-mode auto picks nftables (netlink, in-process)");
  } else {
    add(
      "iptables",
      "ok",
      `backends with their binaries${facts.hostRoot ? ` (the node's, under ${facts.hostRoot})` : ""}: ${backends.join(", ")}`,
    );
    const auto = `iptables-mode auto picks ${facts.detection.backend}`;
    add(
      "backend",
      facts.detection.found ? "ok" : "warn",
      facts.detection.found
        ? `${auto}: kubelet's chains are in ${facts.detection.backend}'s tables`
        : `${auto}: no kubelet chains found (is kubelet running here?); it uses nft until they appear; set linkerd.iptables-mode to be sure`,
    );
    if (!backends.includes(facts.detection.backend))
      add(
        "backend",
        "fail",
        `${facts.detection.backend}'s binaries are missing: install them or set linkerd.iptables-mode to ${backends[0]}`,
      );
  }

  const nfTables = {
    "built-in": ["ok", "built in"],
    loaded: ["ok", "loaded"],
    module: ["ok", "a module, loaded on first use"],
    absent: ["warn", "absent from this kernel: only iptables-legacy works (set linkerd.iptables-mode legacy)"],
    unknown: ["warn", "not loaded, and no kernel config to tell whether it can be (iptables-nft and nftables fail if it cannot)"],
  } as const;
  const [nfLevel, nfText] = nfTables[facts.nfTables];
  add("kernel", nfLevel, `${facts.kernel}; nf_tables ${nfText}`);

  for (const { dir, entries } of facts.netnsDirs) {
    add(
      "netns dir",
      entries === undefined ? "warn" : "ok",
      entries === undefined
        ? `${dir} does not exist: the audit finds pods without a record by their IP there; pass the runtime's (--netns-dir; containerd with netns_mounts_under_state_dir uses its state dir)`
        : `${dir}: ${entries} netns`,
    );
  }
  results.push(...accessChecks(facts.stateDir, facts.cri, runtime && !("invalid" in runtime) ? runtime.runtime : undefined));
  return results;
}
