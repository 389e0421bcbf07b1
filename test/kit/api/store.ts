import type { ServerResponse } from "node:http";
import type { Reply } from "./replies.js";
import { type KubeObject, type WatchFault, WatchHub, type WatchKind } from "./watch-hub.js";

/**
 * The in-test API server's objects and their changes as kube-apiserver makes them: each
 * change stamped with a new resourceVersion and recorded for watches, pods deleted
 * gracefully, lists paged. The server (api-server.ts) answers requests from it.
 */
export class ApiStore {
  readonly pods = new Map<string, KubeObject>();
  readonly namespaces = new Map<string, KubeObject>();
  readonly nodes = new Map<string, KubeObject>();
  /** Services by `namespace/name` (the `kubernetes` one, whose ports control-plane pods skip). */
  readonly services = new Map<string, KubeObject>();
  /** DaemonSets by `namespace/name`. */
  readonly daemonSets = new Map<string, KubeObject>();
  readonly configMaps = new Map<string, KubeObject>();
  /** ServiceAccounts by `namespace/name`: a token of one not here is refused (401), as kube-apiserver's authenticator does. */
  readonly serviceAccounts = new Map<string, KubeObject>();
  readonly events: KubeObject[] = [];
  /** How long a pod deleted with a grace period stays terminating before its kubelet removes it; undefined: until deletePod. */
  terminatingMs: number | undefined = 0;
  protected readonly kubeletTimers = new Set<NodeJS.Timeout>();
  /** What watches of a path get instead of events (see WatchFault). */
  readonly watchFaults = new Map<string, WatchFault>();
  /** The watch cache: windows, timeouts, bookmarks. */
  readonly watches = new WatchHub();
  /** The server's clock (ms since the epoch): token expiry, deletion timestamps, its answers' Date. */
  now: () => number = () => Date.now();
  protected version = 1;

  /** Adds or replaces a pod; pod watchers see ADDED or MODIFIED (unless `quietly`: a watch that missed it). */
  addPod(pod: KubeObject, options: { quietly?: boolean } = {}): void {
    const { namespace = "default", name = "" } = pod.metadata ?? {};
    const key = `${namespace}/${name}`;
    const existed = this.pods.has(key);
    if (!this.namespaces.has(namespace)) this.addNamespace({ metadata: { name: namespace } });
    const stored = this.stamp({ apiVersion: "v1", kind: "Pod", ...pod });
    this.pods.set(key, stored);
    if (!options.quietly) this.notify(existed ? "MODIFIED" : "ADDED", stored);
  }

  /**
   * Removes a pod at once, as its kubelet's final delete (or a force delete) does: pod
   * watchers see DELETED, stamped with the deletion's own resourceVersion.
   */
  deletePod(namespace: string, name: string): void {
    const found = this.pods.get(`${namespace}/${name}`);
    if (!found || !this.pods.delete(`${namespace}/${name}`)) return;
    this.notify("DELETED", this.stamp(found));
  }

  /**
   * A DELETE or an eviction, as kube-apiserver carries it out: a pod bound to a node is
   * marked (deletionTimestamp, deletionGracePeriodSeconds: MODIFIED) and stays until its
   * kubelet removes it, here `terminatingMs` later (undefined: until deletePod); an
   * unscheduled pod, or a grace period of 0, goes at once. A pod already terminating is
   * left as it is.
   */
  deleteGracefully(namespace: string, name: string, gracePeriodSeconds: number | undefined): KubeObject | undefined {
    const found = this.pods.get(`${namespace}/${name}`);
    if (!found || found.metadata?.deletionTimestamp) return found;
    const spec = found.spec as { nodeName?: string; terminationGracePeriodSeconds?: number } | undefined;
    const grace = gracePeriodSeconds ?? spec?.terminationGracePeriodSeconds ?? 30;
    if (!spec?.nodeName || grace === 0) {
      this.deletePod(namespace, name);
      return found;
    }
    const deletionTimestamp = new Date(this.now() + grace * 1000).toISOString().replace(/\.\d+Z$/, "Z");
    const terminating = this.stamp({ ...found, metadata: { ...found.metadata, deletionTimestamp, deletionGracePeriodSeconds: grace } });
    this.pods.set(`${namespace}/${name}`, terminating);
    this.notify("MODIFIED", terminating);
    if (this.terminatingMs !== undefined) {
      const timer = setTimeout(() => {
        this.kubeletTimers.delete(timer);
        this.deletePod(namespace, name);
      }, this.terminatingMs);
      this.kubeletTimers.add(timer);
    }
    return terminating;
  }

  /** Whether a pod is being deleted or gone: a DELETE or an eviction went through. */
  deleting(namespace: string, name: string): boolean {
    return this.pods.get(`${namespace}/${name}`)?.metadata?.deletionTimestamp !== undefined || !this.pods.has(`${namespace}/${name}`);
  }

  /** Adds or replaces a namespace; namespace watchers see ADDED or MODIFIED. */
  addNamespace(namespace: KubeObject): void {
    const name = namespace.metadata?.name ?? "";
    const existed = this.namespaces.has(name);
    const stored = this.stamp({ apiVersion: "v1", kind: "Namespace", ...namespace });
    this.namespaces.set(name, stored);
    this.watches.record({ version: this.version, kind: "Namespace", type: existed ? "MODIFIED" : "ADDED", object: stored });
  }

  /** Deletes a namespace; watchers see DELETED, at the deletion's resourceVersion. */
  deleteNamespace(name: string): void {
    const found = this.namespaces.get(name);
    if (!found || !this.namespaces.delete(name)) return;
    const deleted = this.stamp(found);
    this.watches.record({ version: this.version, kind: "Namespace", type: "DELETED", object: deleted });
  }

  /** Sets a ConfigMap's data (what the agent reads its netconf from); no watcher asks for ConfigMaps. */
  setConfigMap(namespace: string, name: string, data: Record<string, string>): void {
    const stored = this.stamp({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace, name, uid: `uid-cm-${name}` }, data });
    this.configMaps.set(`${namespace}/${name}`, stored);
  }

  /** Adds a DaemonSet (its watchers see ADDED, MODIFIED if it was there); deleteDaemonSet: DELETED. */
  addDaemonSet(namespace: string, name: string): void {
    this.putNamed(this.daemonSets, { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { namespace, name, uid: `uid-ds-${name}` } });
  }

  deleteDaemonSet(namespace: string, name: string): void {
    this.removeNamed(this.daemonSets, "DaemonSet", `${namespace}/${name}`);
  }

  /** Adds a ServiceAccount (ADDED, or MODIFIED); deleted, its tokens are refused from the next request on (open watches stay). */
  addServiceAccount(namespace: string, name: string): void {
    this.putNamed(this.serviceAccounts, { apiVersion: "v1", kind: "ServiceAccount", metadata: { namespace, name, uid: `uid-sa-${name}` } });
  }

  deleteServiceAccount(namespace: string, name: string): void {
    this.removeNamed(this.serviceAccounts, "ServiceAccount", `${namespace}/${name}`);
  }

  /** Stores (its kind's watchers see ADDED, MODIFIED if it was there) or removes (DELETED) one by `namespace/name`. */
  private putNamed(objects: Map<string, KubeObject>, object: KubeObject & { kind: WatchKind }): void {
    const [key, stored] = [`${object.metadata?.namespace}/${object.metadata?.name}`, this.stamp(object)];
    this.watches.record({ version: this.version, kind: object.kind, type: objects.has(key) ? "MODIFIED" : "ADDED", object: stored });
    objects.set(key, stored);
  }

  private removeNamed(objects: Map<string, KubeObject>, kind: WatchKind, key: string): void {
    const found = objects.get(key);
    if (!found || !objects.delete(key)) return;
    this.watches.record({ version: this.version, kind, type: "DELETED", object: this.stamp(found) });
  }

  /** The `kubernetes` Service as a cluster's API server keeps it: port 443 to `targetPort` on the API servers. */
  addKubernetesService(targetPort: number | string): void {
    const existed = this.services.has("default/kubernetes");
    const stored = this.stamp({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "kubernetes", namespace: "default", uid: "uid-svc-kubernetes" },
      spec: { ports: [{ name: "https", port: 443, protocol: "TCP", targetPort }], clusterIP: "10.96.0.1" },
    });
    this.services.set("default/kubernetes", stored);
    this.watches.record({ version: this.version, kind: "Service", type: existed ? "MODIFIED" : "ADDED", object: stored });
  }

  /** Adds (registers) or replaces a node; node watchers see ADDED or MODIFIED. */
  addNode(node: KubeObject): void {
    const name = node.metadata?.name ?? "";
    const existed = this.nodes.has(name);
    // A Node registered anew is a new object: a new UID (what a token bound to the old one names).
    const uid = existed ? this.nodes.get(name)?.metadata?.uid : `uid-node-${name}-${Math.random().toString(36).slice(2, 8)}`;
    const stored = this.stamp({ apiVersion: "v1", kind: "Node", ...node, metadata: { uid, ...node.metadata } });
    this.nodes.set(name, stored);
    this.watches.record({ version: this.version, kind: "Node", type: existed ? "MODIFIED" : "ADDED", object: stored });
  }

  /** Stores a node as a patch left it; node watchers see MODIFIED. */
  patchedNode(name: string, patched: KubeObject): KubeObject {
    const stored = this.stamp(patched);
    this.nodes.set(name, stored);
    this.watches.record({ version: this.version, kind: "Node", type: "MODIFIED", object: stored });
    return stored;
  }

  /** Deletes a node (kubelet may register it again); node watchers see DELETED. */
  deleteNode(name: string): void {
    const found = this.nodes.get(name);
    if (!found || !this.nodes.delete(name)) return;
    const deleted = this.stamp(found);
    this.watches.record({ version: this.version, kind: "Node", type: "DELETED", object: deleted });
  }

  /** The conditions a Node's status holds (none when the Node is not there). */
  nodeConditions(name: string): Array<Record<string, string>> {
    return ((this.nodes.get(name)?.status ?? {}) as { conditions?: Array<Record<string, string>> }).conditions ?? [];
  }

  stamp(object: KubeObject): KubeObject {
    return { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.version) } };
  }

  /** Pod watchers see this change, at the version it was stamped with. */
  notify(type: "ADDED" | "MODIFIED" | "DELETED", pod: KubeObject): void {
    this.watches.record({ version: Number(pod.metadata?.resourceVersion), kind: "Pod", type, object: pod });
  }

  /** Takes a watch request over (undefined: nothing more to answer), with what watchFaults says for its path. */
  watch(
    kind: WatchKind,
    path: string,
    query: Record<string, string>,
    res: ServerResponse,
    matches: (object: KubeObject) => boolean,
  ): undefined {
    this.watches.open(kind, res, query, matches, () => this.version, this.watchFaults.get(path));
    return undefined;
  }

  /** A list's answer, a page at a time when asked (`limit`, `continue`), as the API server pages. */
  page(kind: string, items: KubeObject[], query: Record<string, string>): Reply {
    const offset = query.continue ? Number(Buffer.from(query.continue, "base64url").toString()) : 0;
    const limit = Number(query.limit) > 0 ? Number(query.limit) : items.length;
    const rest = items.length - offset - limit;
    const metadata = {
      resourceVersion: String(this.version),
      ...(rest > 0 ? { continue: Buffer.from(String(offset + limit)).toString("base64url"), remainingItemCount: rest } : {}),
    };
    return { code: 200, body: { apiVersion: "v1", kind, metadata, items: items.slice(offset, offset + limit) } };
  }
}
