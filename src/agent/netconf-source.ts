// Which netconf the agent runs with. kubelet hands it the ConfigMap's netconf in
// CNI_NETWORK_CONFIG from kubelet's own cache of the ConfigMap, which lags the API after an
// API server restart (its watch resumes after a back-off, and until then the cache answers
// with what it held): a pod started then gets the value from before a change. The soak
// found it (issue 56): a rollout to nftables whose new agent ran on with iptables. So the
// agent reads its ConfigMap through the API once it can, and runs with what the API holds.

import { errorMessage } from "../errors.js";
import type { Installation } from "../installer/install.js";
import type { Template } from "../installer/template.js";
import { isJsonObject } from "../json.js";
import type { NodeApi } from "../kube/node-api.js";
import type { Logger, StandingProblems } from "../log.js";
import { unknownLinkerdKeys } from "../mesh/unknown-keys.js";
import type { AgentOptions } from "./options.js";

/** The ConfigMap key the agent's netconf comes from (Linkerd's `linkerd-cni-config` has the same). */
/**
 * Says the netconf the agent runs with, and any linkerd setting in it meshcni does not read:
 * the plugin ignores such a key (as linkerd-cni does), so a typo would change nothing unsaid.
 */
export function sayNetconf(log: Logger, message: string, fields: Record<string, unknown>, entry: Record<string, unknown>): void {
  log.info(message, { ...fields, netconf: entry });
  const unknown = unknownLinkerdKeys(entry);
  if (unknown.length > 0)
    log.warn("the netconf holds linkerd settings meshcni does not read (the plugin ignores them)", { keys: unknown.join(", ") });
}

export const netconfKey = "cni_network_config";

/** What a read of the ConfigMap means for the netconf the agent runs with. */
export type NetconfVerdict =
  | { kind: "same" }
  /** The API holds another netconf: the agent takes it (`differs`: the keys, as `linkerd.iptables-mode`). */
  | { kind: "replace"; template: Template & { ok: true }; differs: string[] }
  /** No such key, or a netconf no agent could run with: the agent keeps its own, and says so. */
  | { kind: "unusable"; why: string };

/** The keys (one level into objects) whose values differ between two entries, sorted. */
export function differingKeys(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.flatMap((key) => {
    const [left, right] = [a[key], b[key]];
    if (isJsonObject(left) && isJsonObject(right)) {
      const inner = [...new Set([...Object.keys(left), ...Object.keys(right)])].sort();
      return inner.filter((name) => !sameJson(left[name], right[name])).map((name) => `${key}.${name}`);
    }
    return sameJson(left, right) ? [] : [key];
  });
}

/** Deep equality of parsed JSON, key order aside. */
function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, index) => sameJson(item, b[index]));
  if (isJsonObject(a) && isJsonObject(b)) return differingKeys(a, b).length === 0;
  return a === b;
}

/**
 * The netconf the agent should run with, from the one it runs with and the ConfigMap's text
 * as the API holds it (`render`: the installer's rendering for this host). One that cannot
 * be run is not taken: the node keeps what it has, and the operator is told why.
 */
export function judgeNetconf(running: Template, read: string | undefined, render: (text: string) => Template): NetconfVerdict {
  if (read === undefined) return { kind: "unusable", why: `the ConfigMap has no ${netconfKey}` };
  const template = render(read);
  if (!template.ok) return { kind: "unusable", why: `the ConfigMap's ${netconfKey} is invalid: ${template.reason}` };
  const differs = running.ok ? differingKeys(running.entry, template.entry) : ["(all: the one kubelet gave is invalid)"];
  return differs.length === 0 ? { kind: "same" } : { kind: "replace", template, differs };
}

export interface NetconfSourceConfig {
  /** The agent's ConfigMap (in its own namespace). */
  namespace: string;
  name: string;
  render(text: string): Template;
  running(): Template;
  /** Runs with another netconf from now on. */
  replace(template: Template & { ok: true }): void;
  log: Logger;
  problems: StandingProblems;
  /** 1 once the netconf the agent runs with is the API's; 0 before. */
  verified(value: 0 | 1): void;
  now(): number;
}

const firstRetryMs = 1000;
const lastRetryMs = 60_000;

/**
 * Reads the agent's ConfigMap through the API at the first reconcile that has a client, and
 * again after a failure (1 s doubling to a minute), until one answer: then the agent runs
 * with what it holds. Once per agent's life: a ConfigMap changed later rolls the agents out
 * (the pod template's `checksum/config`), and each new one reads it again.
 */
export class NetconfSource {
  private state: "unread" | "reading" | "read" = "unread";
  private nextTryAt = Number.NEGATIVE_INFINITY;
  private retryMs = firstRetryMs;

  constructor(private readonly config: NetconfSourceConfig) {
    config.verified(0);
  }

  follow(api: Pick<NodeApi, "readConfigMapKey"> | undefined): void {
    const { namespace, name, now } = this.config;
    if (!api || this.state !== "unread" || now() < this.nextTryAt) return;
    this.state = "reading";
    api.readConfigMapKey(namespace, name, netconfKey).then(
      ({ value, resourceVersion }) => this.judge(value, resourceVersion),
      (error) => {
        this.state = "unread";
        this.nextTryAt = now() + this.retryMs;
        this.retryMs = Math.min(this.retryMs * 2, lastRetryMs);
        this.config.problems.set(
          "netconf-source",
          `cannot read the ConfigMap ${namespace}/${name} to check the netconf against it (${errorMessage(error)}): running with kubelet's copy (CNI_NETWORK_CONFIG) meanwhile, which lags a change made while kubelet's watch was down`,
        );
      },
    );
  }

  private judge(value: string | undefined, resourceVersion: string): void {
    const { namespace, name, log, problems } = this.config;
    this.state = "read";
    problems.set("netconf-source", undefined);
    const configMap = `${namespace}/${name}`;
    const verdict = judgeNetconf(this.config.running(), value, this.config.render);
    if (verdict.kind === "unusable") {
      log.error(`${verdict.why}: running with kubelet's copy (CNI_NETWORK_CONFIG)`, { configMap, resourceVersion });
      return;
    }
    if (verdict.kind === "replace") {
      log.warn(
        "the netconf kubelet gave the agent is not its ConfigMap's as the API holds it (kubelet's cache lagged): running with the API's",
        {
          configMap,
          resourceVersion,
          differs: verdict.differs,
        },
      );
      this.config.replace(verdict.template);
    } else log.info("the netconf is its ConfigMap's as the API holds it", { configMap, resourceVersion });
    this.config.verified(1);
  }
}

/** The agent's NetconfSource: with --config-map, in a pod (its namespace is the ConfigMap's); undefined otherwise. */
export function netconfSourceOf(
  options: Pick<AgentOptions, "configMap" | "self">,
  installation: Pick<Installation, "render" | "template">,
  config: Omit<NetconfSourceConfig, "namespace" | "name" | "render" | "running">,
): NetconfSource | undefined {
  if (!options.configMap || !options.self) return undefined;
  return new NetconfSource({
    namespace: options.self.namespace,
    name: options.configMap,
    render: (text) => installation.render(text),
    running: () => installation.template,
    ...config,
  });
}
