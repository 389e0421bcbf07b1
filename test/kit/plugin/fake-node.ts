import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import { AgentUnavailableError } from "../../../src/agent-socket.js";
import type { NetnsAddress } from "../../../src/audit/scan.js";
import type { Verb } from "../../../src/cni/env.js";
import type { SandboxLookup } from "../../../src/cri/runtime.js";
import { errorMessage } from "../../../src/errors.js";
import { resolveBackend } from "../../../src/host.js";
import { binaryName } from "../../../src/iptables/binaries.js";
import { IptablesError, type IptablesRunner } from "../../../src/iptables/exec.js";
import { iptablesRedirector } from "../../../src/iptables/redirector.js";
import { tokenize } from "../../../src/iptables/save.js";
import { ApiRequestError, type KubeReader } from "../../../src/kube/pod-reader.js";
import type { Logger } from "../../../src/log.js";
import type { NetConf } from "../../../src/mesh/netconf.js";
import { parseNetConf } from "../../../src/mesh/netconf.js";
import { NetnsGoneError, OwnNetnsError } from "../../../src/netns/enter.js";
import type { PluginDeps, PluginRequest } from "../../../src/plugin/request.js";
import type { Backend, IptablesBackend, IptablesMode, Redirector } from "../../../src/redirect/redirector.js";
import type { Family } from "../../../src/redirect/spec.js";
import { emptyTable } from "../../../src/redirect/table.js";
import type { AttachmentRecord, RecordStore } from "../../../src/state/records.js";
import { podObject } from "../api/server.js";
import { podArgs } from "../common.js";

const builtinChains = ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"];

/**
 * One family's nat table in memory, read and written as iptables-save and
 * iptables-restore --noflush do: a declared chain is created or flushed, -N fails on an
 * existing chain, -D on a missing rule, -X on a used or non-empty chain, and a commit
 * applies all of its lines or none.
 */
export class FakeNatTable {
  chains = new Map<string, string[][]>(builtinChains.map((chain) => [chain, []]));

  save(): string {
    const lines = ["*nat"];
    for (const chain of this.chains.keys()) lines.push(`:${chain} ${builtinChains.includes(chain) ? "ACCEPT" : "-"} [0:0]`);
    for (const [chain, rules] of this.chains) {
      for (const rule of rules)
        lines.push(`-A ${chain} ${rule.map((token, i) => (rule[i - 1] === "--comment" ? `"${token}"` : token)).join(" ")}`);
    }
    return `${[...lines, "COMMIT", ""].join("\n")}`;
  }

  restore(text: string): void {
    const next = new Map([...this.chains].map(([chain, rules]) => [chain, rules.map((rule) => [...rule])]));
    const need = (chain: string, line: string) => {
      const rules = next.get(chain);
      if (!rules) throw new Error(`${line}: no chain ${chain}`);
      return rules;
    };
    for (const line of text.split("\n")) {
      if (line === "" || line === "*nat" || line === "COMMIT" || line.startsWith("#")) continue;
      const [verb, chain = "", ...args] = line.startsWith(":") ? [":", line.slice(1).split(" ")[0]!] : tokenize(line);
      const same = (rule: string[]) => rule.length === args.length && rule.every((token, i) => token === args[i]);
      if (verb === ":") next.set(chain, []);
      else if (verb === "-N") {
        if (next.has(chain)) throw new Error(`${line}: chain already exists`);
        next.set(chain, []);
      } else if (verb === "-A") need(chain, line).push(args);
      else if (verb === "-D") {
        const rules = need(chain, line);
        const index = rules.findIndex(same);
        if (index < 0) throw new Error(`${line}: no such rule`);
        rules.splice(index, 1);
      } else if (verb === "-F") need(chain, line).length = 0;
      else if (verb === "-X") {
        if (need(chain, line).length > 0) throw new Error(`${line}: chain is not empty`);
        if ([...next.values()].some((rules) => rules.some((rule) => rule.at(-1) === chain))) throw new Error(`${line}: chain is in use`);
        next.delete(chain);
      } else throw new Error(`fake iptables-restore does not know ${JSON.stringify(line)}`);
    }
    this.chains = next;
  }
}

export interface LogEntry {
  level: string;
  message: string;
  fields: Record<string, unknown> | undefined;
}

/** A logger that keeps its lines in `logs`. */
export function memoryLogger(logs: LogEntry[]): Logger {
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void logs.push({ level, message, fields });
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/**
 * A node in memory for the plugin's verbs: network namespaces with nat tables, the API's
 * pods and namespaces, the state dir's records, and a log. `deps()` gives the verbs
 * PluginDeps over it; faults are set on its fields.
 */
export class FakeNode {
  readonly netns = new Map<string, Record<Family, FakeNatTable>>();
  readonly pods = new Map<string, V1Pod>();
  readonly namespaces = new Map<string, V1Namespace>();
  /** Services by `namespace/name` (the `kubernetes` one, for control-plane pods). */
  readonly services = new Map<string, V1Service>();
  readonly records = new Map<string, AttachmentRecord>();
  /** The attachments' locks: each the promise its last taker resolves on release. */
  private readonly locks = new Map<string, Promise<void>>();
  readonly logs: LogEntry[] = [];
  /** Each API read, as `pod ns/name` or `namespace name`. */
  readonly apiReads: string[] = [];
  /** What the agent was asked (with an agent_socket in the netconf); "down": it does not answer. */
  readonly agentReads: string[] = [];
  agent: "up" | "down" = "up";
  /** Restores of a family fail with this stderr. */
  readonly failRestore: Partial<Record<Family, string>> = {};
  failRecordWrites = false;
  /** Record removals fail with this errno name. */
  failRecordRemoves: string | undefined;
  /** What the verbs did, in order: record writes and removals, restores. */
  readonly events: string[] = [];
  /** Made unusable: the kubeconfig's problem, for STATUS and lookups. */
  kubeconfigProblem: string | undefined;
  missingBinaries = new Set<string>();
  /** What nf_tables answers a read with, when it fails (see redirector). */
  nftablesProblem: Error | undefined;
  /** Runners handed out and not closed yet. */
  openRunners = 0;
  private current: string | undefined;

  /** How many times each netns was entered. */
  readonly entries = new Map<string, number>();
  /** The addresses of each netns, as getifaddrs there would list them. */
  readonly addresses = new Map<string, NetnsAddress[]>();
  /** What the container runtime knows: each pod's (by UID) sandbox netns. */
  readonly sandboxes = new Map<string, string>();

  /** A netns with `addresses` on `ifname` (eth0, as CNI names the pod's interface), and 127.0.0.1 on lo. */
  addNetns(path: string, addresses: string[] = [], ifname = "eth0"): void {
    this.netns.set(path, { ipv4: new FakeNatTable(), ipv6: new FakeNatTable() });
    this.addresses.set(path, [{ ifname: "lo", address: "127.0.0.1" }, ...addresses.map((address) => ({ ifname, address }))]);
  }

  /** Sandboxes the runtime has removed (by container id); it has every other a record names. */
  readonly removedSandboxes = new Set<string>();

  /** The runtime's sandbox ids, as connectRuntime's sandboxIds gives them. */
  sandboxIds(): Set<string> {
    return new Set([...this.records.values()].map((record) => record.containerId).filter((id) => !this.removedSandboxes.has(id)));
  }

  /** Runtime calls made: one list per locate, as connectRuntime's netnsOfPods asks. */
  runtimeLists = 0;

  /** The runtime's answers for pods, as connectRuntime's netnsOfPods gives them. */
  async locate(uids: string[]): Promise<Map<string, SandboxLookup>> {
    this.runtimeLists++;
    return new Map(
      uids.map((uid) => {
        const netns = this.sandboxes.get(uid);
        return [uid, netns ? { netns, sandbox: `sandbox-${uid}` } : { problem: "the container runtime has no ready sandbox for the pod" }];
      }),
    );
  }

  /** Runs `action` "inside" a netns: runners and addresses() then see that one. */
  async enter<T>(path: string, action: () => Promise<T>): Promise<T> {
    this.checkNetns(path);
    this.entries.set(path, (this.entries.get(path) ?? 0) + 1);
    const outside = this.current;
    this.current = path;
    try {
      return await action();
    } finally {
      this.current = outside;
    }
  }

  /** The addresses of the netns entered. */
  currentAddresses(): NetnsAddress[] {
    return this.current === undefined ? [] : (this.addresses.get(this.current) ?? []);
  }

  table(path: string, family: Family = "ipv4"): FakeNatTable {
    const tables = this.netns.get(path);
    if (!tables) throw new Error(`no netns ${path}`);
    return tables[family];
  }

  /** The rules of a netns's family, as `CHAIN args` lines. */
  rules(path: string, family: Family = "ipv4"): string[] {
    return [...this.table(path, family).chains].flatMap(([chain, rules]) => rules.map((rule) => `${chain} ${rule.join(" ")}`));
  }

  /** Adds a pod, and its namespace as the API server has it. */
  addPod(pod: V1Pod): void {
    const namespace = pod.metadata?.namespace ?? "";
    this.pods.set(`${namespace}/${pod.metadata?.name}`, pod);
    if (!this.namespaces.has(namespace)) this.namespaces.set(namespace, { metadata: { name: namespace } });
  }

  /**
   * The real iptables redirector over this node's fake iptables. nftables is only a kernel
   * that answers reads (empty) or, with nftablesProblem, fails them: what STATUS asks; the
   * netns tests cover the rest.
   */
  redirector(backend: Backend): Redirector {
    if (backend !== "nftables") return iptablesRedirector(this.runner(backend));
    const unavailable = async (): Promise<never> => {
      throw new Error("the fake node's nftables only answers reads");
    };
    return {
      backend,
      read: async () => {
        if (this.nftablesProblem) throw this.nftablesProblem;
        return emptyTable(true);
      },
      apply: unavailable,
      remove: unavailable,
      expected: (plan) => plan,
      close: () => undefined,
    };
  }

  /** A runner over the nat tables of the netns the caller is in (see enter). */
  runner(backend: IptablesBackend): IptablesRunner {
    const here = (family: Family) => {
      if (this.current === undefined) throw new Error("fake iptables used outside a pod netns");
      return this.table(this.current, family);
    };
    this.openRunners++;
    return {
      backend,
      save: async (family) => here(family).save(),
      restore: async (family, text) => {
        const stderr = this.failRestore[family];
        const refused = (message: string) =>
          new IptablesError(binaryName(backend, family, "restore"), ["--noflush"], 1, message, undefined);
        if (stderr !== undefined) throw refused(stderr);
        try {
          here(family).restore(text);
        } catch (error) {
          throw refused(errorMessage(error));
        }
        this.events.push(`restore ${family}`);
      },
      close: () => void this.openRunners--,
    };
  }

  /** The host's netns, as the plugin would see its own: refused like the real check does. */
  static readonly ownNetns = "/proc/self/ns/net";

  private checkNetns(path: string): void {
    if (path === FakeNode.ownNetns) throw new OwnNetnsError(path);
    if (!this.netns.has(path)) throw new NetnsGoneError(path, "ENOENT");
  }

  private reader(reads = this.apiReads): KubeReader {
    const read = <T>(what: string, path: string, found: T | undefined): Promise<T> => {
      reads.push(what);
      return found ? Promise.resolve(structuredClone(found)) : Promise.reject(new ApiRequestError(path, "404 Not Found"));
    };
    return {
      readPod: (namespace, name) =>
        read(`pod ${namespace}/${name}`, `/api/v1/namespaces/${namespace}/pods/${name}`, this.pods.get(`${namespace}/${name}`)),
      readNamespace: (name) => read(`namespace ${name}`, `/api/v1/namespaces/${name}`, this.namespaces.get(name)),
      readService: (namespace, name) =>
        read(`service ${namespace}/${name}`, `/api/v1/namespaces/${namespace}/services/${name}`, this.services.get(`${namespace}/${name}`)),
      close: () => undefined,
    };
  }

  recordStore(stateDir: string): RecordStore {
    const key = (containerId: string, ifname: string) => `${stateDir}:${containerId}_${ifname}`;
    const mine = () => [...this.records].filter(([name]) => name.startsWith(`${stateDir}:`));
    return {
      write: (record) => {
        if (this.failRecordWrites) throw new Error(`EACCES: permission denied, open '${stateDir}/attachments'`);
        this.records.set(key(record.containerId, record.ifname), { version: 1, ...record, time: new Date().toISOString() });
        this.events.push(`record ${record.ifname} ${record.state}`);
      },
      remove: ({ containerID, ifname }) => {
        if (this.failRecordRemoves)
          throw Object.assign(new Error(`${this.failRecordRemoves}: cannot unlink ${ifname}`), { code: this.failRecordRemoves });
        if (this.records.delete(key(containerID, ifname))) this.events.push(`remove record ${ifname}`);
      },
      list: () => mine().map(([, record]) => record),
      forContainer: (containerID) => mine().flatMap(([, record]) => (record.containerId === containerID ? [record] : [])),
      sweep: () => [],
      read: ({ containerID, ifname }) => this.records.get(key(containerID, ifname)),
      lock: async ({ containerID, ifname }) => {
        // One holder per attachment, the next waiting for it: the flock of the state dir's lock files.
        const name = key(containerID, ifname);
        const held = this.locks.get(name) ?? Promise.resolve();
        let release!: () => void;
        const mine = held.then(() => new Promise<void>((resolve) => (release = resolve)));
        this.locks.set(name, mine);
        await held;
        return () => release();
      },
      collect: (valid) => {
        const keep = new Set(valid.map(({ containerID, ifname }) => key(containerID, ifname)));
        const stale = mine().filter(([name]) => !keep.has(name));
        for (const [name] of stale) this.records.delete(name);
        return stale.length;
      },
    };
  }

  deps(): PluginDeps {
    // As on a host: auto finds no kubelet chains here (nft), or no iptables binaries at all (nftables).
    const backend = (mode: IptablesMode) =>
      resolveBackend(
        mode,
        async () => "",
        undefined,
        (name) => !this.missingBinaries.has(name),
      );
    return {
      log: memoryLogger(this.logs),
      kubeReader: async () => {
        if (this.kubeconfigProblem) throw new Error(this.kubeconfigProblem);
        return this.reader();
      },
      agentReader: async (socket) => {
        if (this.agent === "down") throw new AgentUnavailableError(socket, "ECONNREFUSED");
        return this.reader(this.agentReads);
      },
      checkKubeconfig: async () => {
        if (this.kubeconfigProblem) throw new Error(this.kubeconfigProblem);
      },
      backend: (conf: NetConf) => backend(conf.linkerd["iptables-mode"]),
      redirector: async (settings) => this.redirector(await backend(settings.mode)),
      binaryAvailable: (name) => !this.missingBinaries.has(name),
      checkNetns: (path) => this.checkNetns(path),
      inNetns: (path, action) => this.enter(path, action),
      records: (stateDir) => this.recordStore(stateDir),
    };
  }
}

/** A request as the runtime would make it: a netconf through the real parser, CNI_ARGS naming `pod`. */
export function pluginRequest(
  command: Verb,
  options: {
    pod?: [namespace: string, name: string];
    netns?: string;
    containerId?: string;
    ifname?: string;
    conf?: Record<string, unknown>;
  } = {},
): PluginRequest {
  const { pod, netns = "/var/run/netns/pod", containerId = "c1", ifname = "eth0", conf = {} } = options;
  return {
    env: { command, containerId, netns, ifname, args: pod ? podArgs(...pod) : "", path: "" },
    conf: parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "mesh", type: "meshcni", state_dir: "/state", ...conf })),
  };
}

/** The pod netns the verb tests work in. */
export const podNetns = "/var/run/netns/pod";

/** A node with one pod netns and, in the API, shop/web (meshed) and shop/batch (no proxy). */
export function nodeWithPods(): FakeNode {
  const node = new FakeNode();
  node.addNetns(podNetns);
  node.addPod(podObject("shop", "web", { proxy: "container" }) as V1Pod);
  node.addPod(podObject("shop", "batch") as V1Pod);
  return node;
}
