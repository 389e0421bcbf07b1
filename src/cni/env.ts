import { CniError, ErrorCode } from "./errors.js";

export const verbs = ["ADD", "DEL", "CHECK", "STATUS", "GC", "VERSION"] as const;
export type Verb = (typeof verbs)[number];

/** What the runtime passed in the environment (SPEC.md, "Parameters"). */
export interface CniEnv {
  command: Verb;
  containerId: string;
  netns: string;
  ifname: string;
  args: string;
  path: string;
}

/** Variables each verb cannot do without (SPEC.md's table; DEL may lack CNI_NETNS). */
const requiredByVerb: Record<Verb, readonly string[]> = {
  ADD: ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"],
  CHECK: ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"],
  DEL: ["CNI_CONTAINERID", "CNI_IFNAME"],
  STATUS: [],
  GC: [],
  VERSION: [],
};

function isVerb(value: string): value is Verb {
  return (verbs as readonly string[]).includes(value);
}

export function readCniEnv(env: NodeJS.ProcessEnv): CniEnv {
  const command = env.CNI_COMMAND ?? "";
  if (!isVerb(command)) {
    throw new CniError(ErrorCode.invalidEnvironment, `invalid CNI_COMMAND ${JSON.stringify(command)}: expected one of ${verbs.join(", ")}`);
  }
  const missing = requiredByVerb[command].filter((name) => !env[name]);
  if (missing.length > 0) {
    throw new CniError(ErrorCode.invalidEnvironment, `${command} needs ${missing.join(", ")} in the environment`);
  }
  return {
    command,
    containerId: env.CNI_CONTAINERID ?? "",
    netns: env.CNI_NETNS ?? "",
    ifname: env.CNI_IFNAME ?? "",
    args: env.CNI_ARGS ?? "",
    path: env.CNI_PATH ?? "",
  };
}
