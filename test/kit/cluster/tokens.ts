import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import { join } from "node:path";
import { execa } from "execa";
import { parse, stringify } from "yaml";
import type { RealCluster } from "./cluster.js";
import { apiserverUrl } from "./families.js";
import { paths } from "./layout.js";
import type { Meshcni } from "./meshcni.js";
import type { NodeLayout } from "./node-layout.js";
import { asNodeSees } from "./nodes.js";

/** A kubeconfig (as an object) reaching the cluster's API server as `user`, with `token`. */
export function tokenKubeconfig(user: string, token: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: apiserverUrl(), "certificate-authority": join(paths.pki, "ca.crt") } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: "c", context: { cluster: "c", user } }],
    "current-context": "c",
  };
}

const jwtPart = (token: string, index: number) =>
  JSON.parse(Buffer.from(token.split(".")[index] ?? "", "base64url").toString("utf8")) as Record<string, unknown>;

/** A JWT's claims, read without checking its signature (the API server checks it when it is used). */
export const jwtClaims = (token: string): Record<string, unknown> & { sub?: string; exp?: number; iat?: number } => jwtPart(token, 1);

/** A JWT's header: `kid` names the key that signed it. */
export const jwtHeader = (token: string): { kid?: string; alg?: string } => jwtPart(token, 0);

/** The plugin's token, as the agent wrote it into the kubeconfig in the node's CNI config dir. */
export function pluginToken(): string {
  const kubeconfig = parse(readFileSync(join(paths.cniConfDir, "ZZZ-meshcni-kubeconfig"), "utf8")) as {
    users: Array<{ user: { token: string } }>;
  };
  return kubeconfig.users[0]!.user.token;
}

export const pluginTokenClaims = () => jwtClaims(pluginToken());

/**
 * The agent as the API server sees it: the projected ServiceAccount token kubelet wrote
 * into its pod's volume (read from the node's disk, as root), in a kubeconfig of its own.
 */
export class AgentIdentity {
  private constructor(
    readonly cluster: RealCluster,
    readonly kubeconfig: string,
    readonly token: string,
  ) {}

  /** The agent of the node (or, with several, of the node `layout` says). */
  static async of(cluster: RealCluster, meshcni: Meshcni, layout?: NodeLayout): Promise<AgentIdentity> {
    const pod = await meshcni.agentPod(layout?.name);
    // A projected volume is a tmpfs kubelet mounted inside the node: seen only from there.
    const kubeletRoot = layout ? asNodeSees(layout, "/var/lib/kubelet") : paths.kubeletRoot;
    const volumes = join(kubeletRoot, "pods", pod.metadata.uid, "volumes/kubernetes.io~projected");
    const volume = readdirSync(volumes).find((name) => name.startsWith("kube-api-access-"));
    const token = readFileSync(join(volumes, volume!, "token"), "utf8");
    const kubeconfig = join(paths.dir, `agent-${pod.metadata.uid}.kubeconfig`);
    writeFileSync(kubeconfig, stringify(tokenKubeconfig("agent", token)));
    return new AgentIdentity(cluster, kubeconfig, token);
  }

  /** One request as the agent makes it (kubectl would GET first, which its RBAC may not allow): the status code and body. */
  request(method: string, path: string, body: unknown, contentType: string): Promise<{ code: number; body: string }> {
    return new Promise((resolve, reject) => {
      const url = new URL(path, apiserverUrl());
      const sent = https.request(
        url,
        {
          method,
          ca: readFileSync(join(paths.pki, "ca.crt")),
          headers: { authorization: `Bearer ${this.token}`, "content-type": contentType },
        },
        (response) => {
          let text = "";
          response.on("data", (chunk: Buffer) => (text += chunk.toString()));
          response.on("end", () => resolve({ code: response.statusCode ?? 0, body: text }));
        },
      );
      sent.on("error", reject);
      sent.end(JSON.stringify(body));
    });
  }

  /** kubectl with the agent's token: what it printed, or the server's refusal (never throws). */
  async kubectl(...args: string[]): Promise<string> {
    const result = await execa(join(this.cluster.bin.kubernetes, "kubectl"), ["--kubeconfig", this.kubeconfig, ...args], { reject: false });
    return `${result.stdout}${result.stderr}`.trim();
  }
}
