import { KubeConfig } from "@kubernetes/client-node";
import { execa } from "execa";
import { kubeconfigPlaceholder } from "../../src/installer/template.js";

/** The netns, CRI and cluster suites need root. */
export const isRoot = process.getuid?.() === 0;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls (every `everyMs`) until the condition holds; throws after `timeoutMs`. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  everyMs = 10,
  /** What the failure adds to its message (the log of what was waited on). */
  context?: () => string,
): Promise<void> {
  const started = performance.now();
  while (!(await condition())) {
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met in ${timeoutMs} ms${context ? `; ${context()}` : ""}`);
    await sleep(everyMs);
  }
}

/** A loop beside a test's main work: `round` repeated every `everyMs` until it returns false or the work ends. */
export interface Background {
  round: () => Promise<boolean | undefined>;
  everyMs: number;
}

/**
 * Runs `work` with `loops` going on beside it; the loops stop when the work ends, however it
 * ends (or they would outlive the test, and the cluster), after their round under way.
 */
export async function withBackground<T>(loops: Background[], work: () => Promise<T>): Promise<T> {
  let working = true;
  const running = loops.map(async ({ round, everyMs }) => {
    while (working && (await round()) !== false) await sleep(everyMs);
  });
  try {
    return await work();
  } finally {
    working = false;
    await Promise.all(running);
  }
}

/** CNI_ARGS naming a pod, as a runtime passes them. */
export const podArgs = (namespace: string, name: string) => `K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name}`;

/**
 * The command prefix that runs a command in a netns: a name `ip netns` knows, or a path
 * (a runtime's netns mount, /proc/<pid>/ns/net) entered with nsenter.
 */
export function inNetnsCommand(netns: string): string[] {
  return netns.startsWith("/") ? ["nsenter", `--net=${netns}`] : ["ip", "netns", "exec", netns];
}

/** The loopback bypass meshcni writes, as CHECK and the audit name it when it is missing. */
export const loopbackRule = "-o lo -m comment --comment proxy-init/ignore-loopback -j RETURN";

/** Deletes the loopback bypass from a pod netns by hand, so its redirect drifts from the plan. */
export async function deleteLoopbackRule(netns: string, backend: "nft" | "legacy" = "nft"): Promise<void> {
  await iptables(netns, backend, "-D", "PROXY_INIT_OUTPUT", ...loopbackRule.split(" "));
}

/** Runs one backend's iptables on the nat table of a netns, as an operator (or a pod with NET_ADMIN) would. */
export async function iptables(netns: string, backend: "nft" | "legacy", ...args: string[]): Promise<void> {
  const [command, ...prefix] = inNetnsCommand(netns);
  await execa(command!, [...prefix, `iptables-${backend}`, "-t", "nat", ...args]);
}

/** meshcni's netconf as a test writes it: its own state dir and kubeconfig, the nft backend unless said. */
export function meshcniNetconf(
  options: { stateDir: string; kubeconfig?: string; linkerd?: Record<string, unknown>; name?: string; cniVersion?: string },
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    cniVersion: options.cniVersion ?? "1.0.0",
    name: options.name ?? "mesh",
    type: "meshcni",
    state_dir: options.stateDir,
    ...(options.kubeconfig ? { kubernetes: { kubeconfig: options.kubeconfig } } : {}),
    linkerd: { "iptables-mode": "nft", ...options.linkerd },
    ...extra,
  };
}

/** The agent's template as a test gives it: meshcni with the test's state dir (and whatever else it adds). */
export const agentTemplate = (stateDir: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ type: "meshcni", state_dir: stateDir, kubernetes: { kubeconfig: kubeconfigPlaceholder }, ...extra });

/** client-node's config from a kubeconfig file (the in-test server's). */
export function kubeConfigOf(path: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromFile(path);
  return config;
}
