import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { KubeConfig, type RequestContext } from "@kubernetes/client-node";
import { errnoCode, errorMessage } from "../errors.js";
import { ApiStatusError, apiError, describeApiFailure } from "./errors.js";

/** Where a hand-run command's requests go, as each of its errors names it. */
export interface ApiTarget {
  server: string;
  context: string;
  user: string;
  /** Where the credentials came from: a file, KUBECONFIG, stdin, or the pod's ServiceAccount. */
  source: string;
}

/** The ServiceAccount token a pod is given: client-node's in-cluster config reads it. */
const serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/** A KubeConfig whose every request gives up at `signal`: a server that accepts and never answers cannot hold a command. */
class DeadlineKubeConfig extends KubeConfig {
  constructor(private readonly signal: AbortSignal) {
    super();
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    context.setSignal(this.signal);
  }
}

/** What a hand-run command is told of its credentials: --kubeconfig ("-": stdin) and --context, as kubectl takes them. */
export interface ApiChoice {
  kubeconfig?: string | undefined;
  context?: string | undefined;
}

/**
 * KUBECONFIG's files merged as kubectl merges them: a file that does not exist is skipped,
 * and the first file to name a cluster, a user or a context (or to set the current context)
 * wins. client-node's own merge throws on a missing file or a name given twice, and lets the
 * last current context win.
 */
function loadKubeconfigList(config: KubeConfig, files: string[]): void {
  const merged = { clusters: [] as Named[], users: [] as Named[], contexts: [] as Named[], currentContext: "" };
  const found = files.filter((file) => existsSync(file));
  if (found.length === 0) throw new Error(`none of the files it lists exists`);
  for (const file of found) {
    const one = new KubeConfig();
    one.loadFromFile(file);
    for (const kind of ["clusters", "users", "contexts"] as const)
      for (const item of one[kind] as Named[]) if (!merged[kind].some((held) => held.name === item.name)) merged[kind].push(item);
    merged.currentContext ||= one.currentContext;
  }
  config.loadFromOptions(merged);
}
type Named = { name: string };

/**
 * The credentials of a command run by hand, as kubectl finds them: `--kubeconfig` ("-":
 * stdin), else KUBECONFIG's files, else ~/.kube/config, else the pod's ServiceAccount; none
 * of them is an error saying so (client-node would quietly try http://localhost:8080).
 * `--context` chooses another context than the current one.
 */
export function cliKubeConfig(
  { kubeconfig: path, context: chosen }: ApiChoice,
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
): { config: KubeConfig; target: ApiTarget } {
  const config = new DeadlineKubeConfig(signal);
  const home = join(env.HOME || homedir(), ".kube", "config");
  const kubeconfigs = (env.KUBECONFIG ?? "").split(delimiter).filter(Boolean);
  let source: string;
  try {
    if (path === "-") {
      source = "the kubeconfig on stdin";
      config.loadFromString(readFileSync(0, "utf8"));
    } else if (path) {
      source = path;
      config.loadFromFile(path);
    } else if (kubeconfigs.length > 0) {
      source = `KUBECONFIG=${env.KUBECONFIG}`;
      loadKubeconfigList(config, kubeconfigs);
    } else if (existsSync(home)) {
      source = home;
      config.loadFromFile(home);
    } else if (env.KUBERNETES_SERVICE_HOST && existsSync(serviceAccountToken)) {
      source = "this pod's ServiceAccount";
      config.loadFromCluster();
    } else {
      throw new Error(`no kubeconfig: give --kubeconfig FILE or set KUBECONFIG (there is no ${home}, and this is no pod)`);
    }
  } catch (error) {
    if (error instanceof Error && error.message.startsWith("no kubeconfig")) throw error;
    // As the plugin says it: the errno alone when there is one (the runtime's message repeats the path).
    const why = errnoCode(error) ?? errorMessage(error);
    throw new Error(`cannot read kubeconfig ${path === "-" ? "on stdin" : (path ?? env.KUBECONFIG ?? home)}: ${why}`);
  }
  if (chosen !== undefined) {
    const contexts = config.getContexts().map((known) => known.name);
    if (!contexts.includes(chosen))
      throw new Error(`--context ${chosen}: ${source} has no such context${contexts.length ? ` (it has ${contexts.join(", ")})` : ""}`);
    config.setCurrentContext(chosen);
  }
  const context = config.getCurrentContext();
  const cluster = config.getCurrentCluster();
  if (!context || !cluster) {
    const contexts = config.getContexts().map((known) => known.name);
    throw new Error(
      !context
        ? `${source} sets no current context: choose one with kubectl config use-context NAME${contexts.length ? ` (${contexts.join(", ")})` : ""}, or give --kubeconfig`
        : `${source}: its current context ${JSON.stringify(context)} names no cluster it defines: fix it, or choose another with kubectl config use-context NAME`,
    );
  }
  return { config, target: { server: cluster.server, context, user: config.getCurrentUser()?.name ?? "(none)", source } };
}

/**
 * What a failed request (as apiError leaves it) means to the person who ran the command: the
 * server and context it went to, what happened, and what to do. `needs` says what the command
 * reads, for a 403.
 */
function operatorMessage(error: unknown, target: ApiTarget, timeoutSeconds: number, needs: string): string {
  const where = `the API server ${target.server} (context ${target.context}, from ${target.source})`;
  const failure = error as { code?: unknown; message?: string; name?: string };
  if (failure?.name === "AbortError" || failure?.name === "TimeoutError")
    return `no answer from ${where} within ${timeoutSeconds} s: check that it runs and is reachable from here (kubectl --context ${target.context} get --raw /readyz), or give it longer with --timeout`;
  if (failure?.code === 401)
    return `${where} refused the credentials of user ${target.user} (401 Unauthorized): they are wrong or expired; get new ones for context ${target.context}`;
  if (failure?.code === 403)
    return `${where} forbids user ${target.user} what this command reads (403: ${failure.message}); it needs ${needs}`;
  if (typeof failure?.code === "number") return `${where} answered ${failure.code}: ${failure.message}`;
  const { cause } = describeApiFailure(error);
  if (cause.startsWith("TLS: ")) return `cannot trust ${where}: ${cause}; check the cluster's certificate-authority in ${target.source}`;
  const code = Object.keys(networkFailures).find((known) => cause.includes(known));
  return `cannot reach ${where}: ${code ? `${networkFailures[code]} (${code})` : cause}; check the server address in ${target.source}, and that the API server runs`;
}

/** The socket errors a wrong address or a stopped server gives, in words (the runtime's own say "Is the computer able to access the url?"). */
const networkFailures: Record<string, string> = {
  ECONNREFUSED: "the connection was refused",
  ENOTFOUND: "no such host",
  EAI_AGAIN: "the host's name did not resolve",
  EHOSTUNREACH: "no route to the host",
  ENETUNREACH: "no route to the network",
  ECONNRESET: "the connection was reset",
  ETIMEDOUT: "the connection timed out",
};

/**
 * `operatorMessage` as an error: an answer's status stays an ApiStatusError (its code, causes
 * and Retry-After still decide, as a repair's 500 from a refused eviction does), in these words.
 */
export const operatorError = (target: ApiTarget, timeoutSeconds: number, needs: string) => (error: unknown) => {
  const status = apiError(error);
  const message = operatorMessage(status, target, timeoutSeconds, needs);
  return status instanceof ApiStatusError
    ? new ApiStatusError(status.code, message, status.retryAfterMs, status.causes)
    : new Error(message);
};

/**
 * Runs `work` with a signal that aborts it `seconds` from now: a command run by hand ends,
 * whatever the server does. The timer is cleared when the work ends, so the process can exit.
 */
export async function withDeadline<T>(seconds: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), seconds * 1000);
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}
