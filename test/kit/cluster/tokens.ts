import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { paths } from "./layout.js";

/** A JWT's claims, read without checking its signature (the API server checks it when it is used). */
export function jwtClaims(token: string): Record<string, unknown> & { sub?: string; exp?: number; iat?: number } {
  const payload = token.split(".")[1] ?? "";
  return JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<string, unknown>;
}

/** The plugin's token, as the agent wrote it into the kubeconfig in the node's CNI config dir. */
export function pluginToken(): string {
  const kubeconfig = parse(readFileSync(join(paths.cniConfDir, "ZZZ-meshcni-kubeconfig"), "utf8")) as {
    users: Array<{ user: { token: string } }>;
  };
  return kubeconfig.users[0]!.user.token;
}

export const pluginTokenClaims = () => jwtClaims(pluginToken());
