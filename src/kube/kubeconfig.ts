import { dirname, isAbsolute, join } from "node:path";
import * as v from "valibot";
import { errnoCode, errorMessage } from "../errors.js";
import { readRegularFile } from "../file-open.js";
import { describeIssuePath, issueMessage } from "../schema.js";

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
class KubeconfigError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = "KubeconfigError";
  }
}

const kubeconfigSchema = v.looseObject({
  "current-context": v.optional(v.string()),
  clusters: v.optional(
    v.array(
      v.object({
        name: v.string(),
        cluster: v.looseObject({
          server: v.string(),
          "certificate-authority-data": v.optional(v.string()),
          "certificate-authority": v.optional(v.string()),
          "insecure-skip-tls-verify": v.optional(v.boolean()),
          "tls-server-name": v.optional(v.string()),
        }),
      }),
    ),
    [],
  ),
  users: v.optional(
    v.array(
      v.object({
        name: v.string(),
        user: v.looseObject({
          token: v.optional(v.string()),
          tokenFile: v.optional(v.string()),
          "client-certificate-data": v.optional(v.string()),
          "client-certificate": v.optional(v.string()),
          "client-key-data": v.optional(v.string()),
          "client-key": v.optional(v.string()),
        }),
      }),
    ),
    [],
  ),
  contexts: v.optional(v.array(v.object({ name: v.string(), context: v.looseObject({ cluster: v.string(), user: v.string() }) })), []),
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
    text = readRegularFile(path, 1 << 20);
  } catch (error) {
    throw new KubeconfigError(path, `cannot read kubeconfig ${path}: ${errnoCode(error) ?? errorMessage(error)}`);
  }
  let parsed: v.SafeParseResult<typeof kubeconfigSchema>;
  try {
    parsed = v.safeParse(kubeconfigSchema, await parseKubeconfigText(text));
  } catch (error) {
    throw new KubeconfigError(path, `cannot parse kubeconfig ${path}: ${errorMessage(error)}`);
  }
  if (!parsed.success) {
    throw new KubeconfigError(
      path,
      `cannot parse kubeconfig ${path}: ${parsed.issues.map((issue) => `${describeIssuePath(issue)}: ${issueMessage(issue)}`).join("; ")}`,
    );
  }
  const config = parsed.output;
  const contextName = config["current-context"];
  const context = config.contexts.find((entry) => entry.name === contextName)?.context;
  if (!context)
    throw new KubeconfigError(path, `kubeconfig ${path} names no current context (current-context ${JSON.stringify(contextName)})`);
  const cluster = config.clusters.find((entry) => entry.name === context.cluster)?.cluster;
  if (!cluster)
    throw new KubeconfigError(path, `kubeconfig ${path}: context ${contextName} names no known cluster ${JSON.stringify(context.cluster)}`);
  const user = config.users.find((entry) => entry.name === context.user)?.user;
  if (!user)
    throw new KubeconfigError(path, `kubeconfig ${path}: context ${contextName} names no known user ${JSON.stringify(context.user)}`);

  // Relative paths in a kubeconfig are relative to the kubeconfig itself.
  const file = (name: string, what: string) => {
    const full = isAbsolute(name) ? name : join(dirname(path), name);
    try {
      return readRegularFile(full, 1 << 20);
    } catch (error) {
      throw new KubeconfigError(path, `kubeconfig ${path}: cannot read ${what} ${full}: ${errnoCode(error)}`);
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
      path,
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
    throw new KubeconfigError(path, `kubeconfig ${path}: cluster server ${JSON.stringify(cluster.server)} is not a URL`);
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
