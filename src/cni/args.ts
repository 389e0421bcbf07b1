import type { PodKey } from "../pod-key.js";
import { CniError, ErrorCode } from "./errors.js";

/** The CNI_ARGS keys Kubernetes runtimes pass; any other key needs IgnoreUnknown. */
const knownKeys = new Set(["IgnoreUnknown", "K8S_POD_NAMESPACE", "K8S_POD_NAME", "K8S_POD_INFRA_CONTAINER_ID", "K8S_POD_UID"]);

/**
 * Parses CNI_ARGS (`k=v;k=v`). Like libcni's LoadArgs, an unknown key is an error
 * unless IgnoreUnknown is 1/true, and a value holding `=` is invalid.
 */
export function parseCniArgs(raw: string | undefined): Map<string, string> {
  const args = new Map<string, string>();
  if (!raw) return args;
  for (const pair of raw.split(";")) {
    if (pair === "") continue;
    const parts = pair.split("=");
    if (parts.length !== 2 || parts[0] === "") {
      throw new CniError(ErrorCode.invalidEnvironment, `invalid CNI_ARGS pair ${JSON.stringify(pair)}: expected KEY=VALUE`);
    }
    args.set(parts[0]!, parts[1]!);
  }
  const ignoreUnknown = /^(1|true)$/i.test(args.get("IgnoreUnknown") ?? "");
  if (!ignoreUnknown) {
    for (const key of args.keys()) {
      if (!knownKeys.has(key)) {
        throw new CniError(ErrorCode.invalidEnvironment, `unknown CNI_ARGS key ${JSON.stringify(key)} (set IgnoreUnknown=1 to allow it)`);
      }
    }
  }
  return args;
}

/** The pod the attachment belongs to, or undefined when the runtime named none. */
export function podIdentity(args: Map<string, string>): PodKey | undefined {
  const namespace = args.get("K8S_POD_NAMESPACE") ?? "";
  const name = args.get("K8S_POD_NAME") ?? "";
  if (namespace === "" && name === "") return undefined;
  if (namespace === "" || name === "") {
    throw new CniError(
      ErrorCode.invalidEnvironment,
      `CNI_ARGS names half a pod: K8S_POD_NAMESPACE=${JSON.stringify(namespace)} K8S_POD_NAME=${JSON.stringify(name)}`,
    );
  }
  const uid = args.get("K8S_POD_UID");
  return uid ? { namespace, name, uid } : { namespace, name };
}
