import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import { AgentUnavailableError } from "../../../src/agent-socket.js";
import type { NetnsAddress } from "../../../src/audit/scan.js";
import type { SandboxLookup } from "../../../src/cri/runtime.js";
import { resolveBackend } from "../../../src/host.js";
import type { IptablesRunner } from "../../../src/iptables/exec.js";
import { ApiRequestError, type KubeReader } from "../../../src/kube/pod-reader.js";
import type { NetConf } from "../../../src/mesh/netconf.js";
import { NetnsGoneError, OwnNetnsError } from "../../../src/netns/enter.js";
import type { PluginDeps } from "../../../src/plugin/request.js";
import type { Backend, IptablesBackend, IptablesMode, Redirector } from "../../../src/redirect/redirector.js";
import type { Family } from "../../../src/redirect/spec.js";
import type { AttachmentRecord, RecordStore } from "../../../src/state/records.js";
import { type LogEntry, memoryLogger } from "../memory-logger.js";
import { fakeRedirector, fakeRunner } from "./fake-iptables.js";
import { fakeRecordStore } from "./fake-records.js";
import { FakeNatTable } from "./nat-table.js";

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
  readonly locks = new Map<string, Promise<void>>();
  readonly lockMakesDir: boolean[] = [];
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

  /** The real iptables redirector over this node's fake iptables (fake-iptables.ts). */
  redirector(backend: Backend): Redirector {
    return fakeRedirector(this, backend);
  }

  /** A runner over the nat tables of the netns the caller is in (see enter). */
  runner(backend: IptablesBackend): IptablesRunner {
    return fakeRunner(this, backend);
  }

  /** The nat table of a family in the netns entered (see enter): what a runner reads and writes. */
  tableHere(family: Family): FakeNatTable {
    if (this.current === undefined) throw new Error("fake iptables used outside a pod netns");
    return this.table(this.current, family);
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
    return fakeRecordStore(this, stateDir);
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
