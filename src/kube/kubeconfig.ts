import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { z } from "zod";

/**
 * The part of a kubeconfig a CNI plugin uses: one cluster, a token or a client
 * certificate, a CA. The plugin reads it without @kubernetes/client-node, whose load
 * alone costs ~17 ms and ~25 MB per pod start (bench/README.md); the agent and the
 * audit, long-lived or run by hand, use the client.
 */
export interface ApiAccess {
  server: URL;
  ca: string | undefined;
  insecure: boolean;
  serverName: string | undefined;
  token: string | undefined;
  cert: string | undefined;
  key: string | undefined;
}

/** A kubeconfig that cannot be used, before any request is sent. */
export class KubeconfigError extends Error {}

const kubeconfigSchema = z.object({
  "current-context": z.string().optional(),
  clusters: z
    .array(
      z.object({
        name: z.string(),
        cluster: z.object({
          server: z.string(),
          "certificate-authority-data": z.string().optional(),
          "certificate-authority": z.string().optional(),
          "insecure-skip-tls-verify": z.boolean().optional(),
          "tls-server-name": z.string().optional(),
        }),
      }),
    )
    .default([]),
  users: z
    .array(
      z.object({
        name: z.string(),
        user: z.looseObject({
          token: z.string().optional(),
          tokenFile: z.string().optional(),
          "client-certificate-data": z.string().optional(),
          "client-certificate": z.string().optional(),
          "client-key-data": z.string().optional(),
          "client-key": z.string().optional(),
        }),
      }),
    )
    .default([]),
  contexts: z.array(z.object({ name: z.string(), context: z.object({ cluster: z.string(), user: z.string() }) })).default([]),
});

/** JSON is YAML too; the YAML parser (~8 MB of a plugin process) loads only for real YAML. */
async function parseKubeconfigText(text: string): Promise<unknown> {
  try {
    return JSON.parse(text);
  } catch {
    return (await import("yaml")).parse(text);
  }
}

export async function loadApiAccess(path: string): Promise<ApiAccess> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new KubeconfigError(`cannot read kubeconfig ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let parsed;
  try {
    parsed = kubeconfigSchema.safeParse(await parseKubeconfigText(text));
  } catch (error) {
    throw new KubeconfigError(`cannot parse kubeconfig ${path}: ${(error as Error).message}`);
  }
  if (!parsed.success) throw new KubeconfigError(`cannot parse kubeconfig ${path}: ${parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ")}`);
  const config = parsed.data;
  const contextName = config["current-context"];
  const context = config.contexts.find((entry) => entry.name === contextName)?.context;
  if (!context) throw new KubeconfigError(`kubeconfig ${path} names no current context (current-context ${JSON.stringify(contextName)})`);
  const cluster = config.clusters.find((entry) => entry.name === context.cluster)?.cluster;
  if (!cluster) throw new KubeconfigError(`kubeconfig ${path}: context ${contextName} names no known cluster ${JSON.stringify(context.cluster)}`);
  const user = config.users.find((entry) => entry.name === context.user)?.user;
  if (!user) throw new KubeconfigError(`kubeconfig ${path}: context ${contextName} names no known user ${JSON.stringify(context.user)}`);

  // Relative paths in a kubeconfig are relative to the kubeconfig itself.
  const file = (name: string, what: string) => {
    const full = isAbsolute(name) ? name : join(dirname(path), name);
    try {
      return readFileSync(full, "utf8");
    } catch (error) {
      throw new KubeconfigError(`kubeconfig ${path}: cannot read ${what} ${full}: ${(error as NodeJS.ErrnoException).code}`);
    }
  };
  const data = (inline: string | undefined, name: string | undefined, what: string) =>
    inline !== undefined ? Buffer.from(inline, "base64").toString("utf8") : name !== undefined ? file(name, what) : undefined;
  const token = user.token ?? (user.tokenFile ? file(user.tokenFile, "tokenFile").trim() : undefined);
  const cert = data(user["client-certificate-data"], user["client-certificate"], "client certificate");
  const key = data(user["client-key-data"], user["client-key"], "client key");
  if (!token && !(cert && key)) {
    const plugin = user.exec ? "exec" : user["auth-provider"] ? "auth-provider" : undefined;
    throw new KubeconfigError(
      plugin
        ? `kubeconfig ${path}: user ${context.user} uses ${plugin} credentials, which meshcni does not run; give it a token or a client certificate`
        : `kubeconfig ${path} has no credentials (token, tokenFile or client certificate) for user ${context.user}`,
    );
  }
  let server: URL;
  try {
    // Linkerd's installer brackets every host, IPv4 too ("https://[10.96.0.1]:443"); Go
    // accepts that, the URL standard does not.
    server = new URL(cluster.server.replace(/^([a-z]+:\/\/)\[(\d{1,3}(?:\.\d{1,3}){3})\]/i, "$1$2"));
  } catch {
    throw new KubeconfigError(`kubeconfig ${path}: cluster server ${JSON.stringify(cluster.server)} is not a URL`);
  }
  return {
    server,
    ca: data(cluster["certificate-authority-data"], cluster["certificate-authority"], "certificate authority"),
    insecure: cluster["insecure-skip-tls-verify"] ?? false,
    serverName: cluster["tls-server-name"],
    token,
    cert,
    key,
  };
}
