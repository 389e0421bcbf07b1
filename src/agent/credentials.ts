import { existsSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { errnoCode, errorMessage } from "../errors.js";
import { readRegularFile } from "../file-open.js";
import { type ApiEndpoint, renderKubeconfig, syncKubeconfig } from "../installer/kubeconfig.js";
import { createNodeApi, type NodeApi } from "../kube/node-api.js";
import type { Logger, StandingProblems } from "../log.js";
import type { AgentOptions } from "./options.js";
import { PluginTokens } from "./plugin-token.js";

/** The agent's API client and the credentials it was made from (as text for its sweeps, and loaded). */
export interface AgentClient {
  api: NodeApi;
  config: KubeConfig;
  kubeconfig: string;
}

/**
 * The projected service-account token, or why there is none usable: a kubeconfig with an
 * empty token would make every pod start fail with 401.
 */
export function serviceAccountToken(serviceAccountDir: string): { ok: true; token: string } | { ok: false; problem: string } {
  const path = join(serviceAccountDir, "token");
  try {
    const token = readRegularFile(path).trim();
    return token ? { ok: true, token } : { ok: false, problem: `the service account token ${path} is empty` };
  } catch (error) {
    return { ok: false, problem: `no service account token at ${path} (${errnoCode(error) ?? errorMessage(error)})` };
  }
}

/** The API's CA, when the file is there. */
function caPem(caFile: string | undefined): string | undefined {
  return caFile && existsSync(caFile) ? readRegularFile(caFile) : undefined;
}

/**
 * The agent's own credentials: its projected ServiceAccount token (kubelet rotates it),
 * the CA and the API's address, as a kubeconfig kept in memory and handed to its child
 * processes on stdin. It is never written to the host: the plugin's kubeconfig there holds
 * a token minted for a narrower ServiceAccount (PluginTokens).
 */
function agentKubeconfig(serviceAccountDir: string, caFile: string | undefined, api: ApiEndpoint | undefined): string {
  if (!api) throw new Error("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are needed to reach the API");
  const token = serviceAccountToken(serviceAccountDir);
  if (!token.ok) throw new Error(token.problem);
  return renderKubeconfig({ token: token.token, caPem: caPem(caFile) }, api);
}

/**
 * Keeps both sets of credentials current at each sync: the agent's client (rebuilt when
 * kubelet rotates its token), and the plugin's kubeconfig on the host with a token minted
 * for the plugin's ServiceAccount, renewed before it expires. A mint's end, and a renewal
 * falling due, call `wake` for another sync, which writes the token. Problems are standing
 * ones: logged once, and when they clear.
 */
export class Credentials {
  client: AgentClient | undefined;
  private readonly tokens: PluginTokens;
  private readonly endpoint: ApiEndpoint | undefined;
  private renewal: NodeJS.Timeout | undefined;
  private skewSaid = false;
  private saidUnbound = false;

  constructor(
    private readonly options: Pick<AgentOptions, "api" | "serviceAccountDir" | "node" | "pluginToken">,
    /** Where the plugin's kubeconfig goes, inside the agent's container. */
    private readonly kubeconfigPath: string,
    private readonly log: Logger,
    private readonly problems: StandingProblems,
    private readonly wake: () => void,
    /** Hears of each TokenRequest's end. */
    private readonly minted: (ok: boolean) => void = () => {},
  ) {
    const { host, port, protocol, skipTlsVerify } = options.api;
    this.endpoint = host && port ? { protocol, host, port, skipTlsVerify } : undefined;
    this.tokens = new PluginTokens(options.pluginToken.serviceAccount, options.pluginToken.seconds, () => Date.now());
  }

  sync(): void {
    try {
      const kubeconfig = agentKubeconfig(this.options.serviceAccountDir, this.options.api.caFile, this.endpoint);
      if (this.client?.kubeconfig !== kubeconfig) {
        // kubelet renewed the agent's token: the plugin's too (a signing key rotated without the old one kept refuses both).
        if (this.client) {
          this.tokens.renewNow();
          // The timer set for the old renewal would wake the next sync too late.
          clearTimeout(this.renewal);
          this.renewal = undefined;
        }
        const config = new KubeConfig();
        config.loadFromString(kubeconfig);
        this.client = { api: createNodeApi(config, this.options.node ?? ""), config, kubeconfig };
      }
      this.problems.set("credentials", undefined);
    } catch (error) {
      this.problems.set("credentials", errorMessage(error));
    }
    if (this.client) this.mint(this.client.api);
    this.writePluginKubeconfig();
  }

  stop(): void {
    clearTimeout(this.renewal);
  }

  /** Seconds the plugin's token has left (undefined: none minted yet). */
  pluginTokenSecondsLeft(): number | undefined {
    const left = this.tokens.leftMs();
    return left === undefined ? undefined : left / 1000;
  }

  /** Mints the plugin's token when due, and wakes a sync when the next mint will be. */
  private mint(api: NodeApi): void {
    const { namespace, name } = this.options.pluginToken.serviceAccount;
    this.tokens.refresh(api.mintToken, (error) => {
      this.minted(error === undefined);
      this.sayClockSkew();
      if (error === undefined && this.tokens.boundToNode === false && this.options.node && !this.saidUnbound) {
        this.saidUnbound = true;
        this.log.info(
          "the plugin's token is not bound to the Node: the API server binds tokens to pods and secrets only (before 1.33), or does not know this Node",
        );
      }
      this.problems.set(
        "plugin token",
        error === undefined
          ? undefined
          : `cannot mint a token for ServiceAccount ${namespace}/${name} (TokenRequest), retrying: ${errorMessage(error)}`,
      );
      // The next sync writes the token and times the next mint from it.
      clearTimeout(this.renewal);
      this.renewal = undefined;
      this.wake();
    });
    // Looked at again when the next mint is due (renewal, or a retry), with a margin: timers may fire a little early.
    this.renewal ??= setTimeout(() => {
      this.renewal = undefined;
      this.wake();
    }, this.tokens.dueInMs() + 50);
  }

  /** Once: an API server whose clock is off this node's by more than a minute (token lives are counted here, from its grant). */
  private sayClockSkew(): void {
    const skewMs = this.tokens.skewMs;
    if (this.skewSaid || skewMs === undefined || Math.abs(skewMs) < 60_000) return;
    this.skewSaid = true;
    this.log.warn(
      `the API server's clock is ${Math.round(Math.abs(skewMs) / 1000)} s ${skewMs < 0 ? "behind" : "ahead of"} this node's: ` +
        "the plugin's token lives are counted from what the server granted, on this node's clock",
      { skewSeconds: Math.round(skewMs / 1000) },
    );
  }

  private writePluginKubeconfig(): void {
    const token = this.tokens.token();
    if (!token) return;
    const { namespace, name } = this.options.pluginToken.serviceAccount;
    try {
      const written = syncKubeconfig({ path: this.kubeconfigPath, token, caPem: caPem(this.options.api.caFile), api: this.endpoint });
      if (written !== "unchanged") {
        this.log.info(written === "written" ? "kubeconfig written" : "kubeconfig rewritten (a renewed token, or the CA changed)", {
          path: this.kubeconfigPath,
          serviceAccount: `${namespace}/${name}`,
        });
      }
      this.problems.set("kubeconfig", undefined);
    } catch (error) {
      this.problems.set("kubeconfig", errorMessage(error));
    }
  }
}
