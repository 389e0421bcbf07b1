import { z } from "zod";
import { CniError, ErrorCode } from "../cni/errors.js";
import { requireSupportedVersion, type CniVersion } from "../cni/version.js";
import { iptablesModes } from "../iptables/backend.js";
import { defaultStateDir } from "./records.js";
import { parseIdToken, parsePortNumberToken, parsePortToken, parseSubnetToken, type Parsed } from "./tokens.js";

export const defaultKubeconfig = "/etc/cni/net.d/ZZZ-meshcni-kubeconfig";

/** A schema for one token that the parsers in tokens.ts accept, so netconf and annotations agree. */
function token<T>(parse: (input: never) => Parsed<T>, input: z.ZodType<string | number>) {
  return input.transform((value, ctx) => {
    const parsed = parse(value as never);
    if (parsed.ok) return parsed.value;
    ctx.issues.push({ code: "custom", message: parsed.reason, input: value });
    return z.NEVER;
  });
}

const portOrRange = token(parsePortToken, z.union([z.string(), z.number()]));
const port = token(parsePortNumberToken, z.union([z.string(), z.number()]));
const id = token(parseIdToken, z.union([z.string(), z.number()]));
const subnet = token(parseSubnetToken, z.string());

/** Linkerd's linkerd-cni netconf (linkerd2 charts/linkerd2-cni), so existing configs work unchanged. */
const linkerdSchema = z.looseObject({
  "incoming-proxy-port": port.default(4143),
  "outgoing-proxy-port": port.default(4140),
  "proxy-uid": id.default(2102),
  "proxy-gid": id.optional(),
  "ports-to-redirect": z.array(port).default([]),
  "inbound-ports-to-ignore": z.array(portOrRange).default([{ from: 4190, to: 4190 }, { from: 4191, to: 4191 }]),
  "outbound-ports-to-ignore": z.array(portOrRange).default([]),
  "subnets-to-ignore": z.array(subnet).default([]),
  simulate: z.boolean().default(false),
  "use-wait-flag": z.boolean().default(false),
  "iptables-mode": z.enum(iptablesModes).default("auto"),
  ipv6: z.boolean().default(false),
});

const netConfSchema = z.looseObject({
  cniVersion: z.string(),
  name: z.string().min(1),
  type: z.string().min(1),
  log_level: z.enum(["debug", "info", "warn", "warning", "error"]).default("info"),
  log_file: z.string().min(1).optional(),
  /** Where ADD records what it did for each meshed pod (read by `meshcni audit`). */
  state_dir: z.string().min(1).default(defaultStateDir),
  kubernetes: z
    .looseObject({
      kubeconfig: z.string().min(1).default(defaultKubeconfig),
      /** Overall deadline for the API lookups of one ADD or CHECK, retries included. */
      timeout_seconds: z.number().positive().max(300).default(30),
    })
    .prefault({}),
  linkerd: linkerdSchema.prefault({}),
  prevResult: z.record(z.string(), z.unknown()).optional(),
  /** GC's list of attachments the runtime still knows. */
  "cni.dev/valid-attachments": z.array(z.looseObject({ containerID: z.string(), ifname: z.string() })).optional(),
});

export type NetConf = z.output<typeof netConfSchema> & { cniVersion: CniVersion };
export type LinkerdConf = z.output<typeof linkerdSchema>;

function describePath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, key) => (typeof key === "number" ? `${text}[${key}]` : text ? `${text}.${String(key)}` : String(key)), "");
}

/** Decodes stdin: not JSON → code 6, unsupported cniVersion → code 1, bad field → code 7. */
export function parseNetConf(stdin: string): NetConf {
  let raw: unknown;
  try {
    raw = JSON.parse(stdin);
  } catch (error) {
    throw new CniError(ErrorCode.decodeFailure, `network config on stdin is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new CniError(ErrorCode.decodeFailure, "network config on stdin must be a JSON object");
  }
  const cniVersion = requireSupportedVersion((raw as Record<string, unknown>).cniVersion);
  const parsed = netConfSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) =>
        `${describePath(issue.path)}${issue.input === undefined ? " (missing)" : `=${JSON.stringify(issue.input)}`}: ${issue.message}`,
    );
    throw new CniError(ErrorCode.invalidNetworkConfig, `invalid network config: ${problems.join("; ")}`);
  }
  return { ...parsed.data, cniVersion };
}
