import * as v from "valibot";
import { CniError, ErrorCode } from "../cni/errors.js";
import { type CniVersion, requireSupportedVersion } from "../cni/version.js";
import { errorMessage } from "../errors.js";
import { iptablesModes } from "../redirect/redirector.js";
import { describeIssuePath, issueMessage } from "../schema.js";
import { defaultStateDir } from "../state/records.js";
import { defaultKubeconfig, linkerdDefaults as defaults } from "./defaults.js";
import { type Parsed, parseIdToken, parsePortNumberToken, parsePortToken, parseSubnetToken } from "./tokens.js";

const stringOrNumber = v.union([v.string(), v.number()]);

/** A schema for one token that the parsers in tokens.ts accept, so netconf and annotations agree. */
function token<T>(parse: (input: string) => Parsed<T>, input: v.GenericSchema<unknown, string | number> = stringOrNumber) {
  return v.pipe(
    input,
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const parsed = parse(String(dataset.value));
      if (parsed.ok) return parsed.value;
      addIssue({ message: parsed.reason });
      return NEVER;
    }),
  );
}

const portOrRange = token(parsePortToken);
const port = token(parsePortNumberToken);
const id = token(parseIdToken);
const subnet = token(parseSubnetToken, v.string());
const positiveSeconds = v.pipe(v.number(), v.minValue(Number.MIN_VALUE, "must be above 0"), v.maxValue(300));

/** Linkerd's linkerd-cni netconf (linkerd2 charts/linkerd2-cni), so existing configs work unchanged. */
const linkerdSchema = v.looseObject({
  "incoming-proxy-port": v.optional(port, defaults["incoming-proxy-port"]),
  "outgoing-proxy-port": v.optional(port, defaults["outgoing-proxy-port"]),
  "proxy-uid": v.optional(id, defaults["proxy-uid"]),
  "proxy-gid": v.optional(id),
  "ports-to-redirect": v.optional(v.array(port), () => [...defaults["ports-to-redirect"]]),
  "inbound-ports-to-ignore": v.optional(v.array(portOrRange), () => [...defaults["inbound-ports-to-ignore"]]),
  "outbound-ports-to-ignore": v.optional(v.array(portOrRange), []),
  "subnets-to-ignore": v.optional(v.array(subnet), []),
  simulate: v.optional(v.boolean(), defaults.simulate),
  "use-wait-flag": v.optional(v.boolean(), defaults["use-wait-flag"]),
  "iptables-mode": v.optional(v.picklist(iptablesModes), defaults["iptables-mode"]),
  ipv6: v.optional(v.boolean(), defaults.ipv6),
});

/** The linkerd netconf keys meshcni reads: any other is unknown to it (linkerd-cni ignores such keys too). */
export const linkerdKeys = Object.keys(linkerdSchema.entries);

const netConfSchema = v.looseObject({
  cniVersion: v.string(),
  name: v.pipe(v.string(), v.minLength(1)),
  type: v.pipe(v.string(), v.minLength(1)),
  log_level: v.optional(v.picklist(["debug", "info", "warn", "warning", "error"]), "info"),
  log_file: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Where ADD records what it did for each meshed pod (read by `meshcni audit`). */
  state_dir: v.optional(v.pipe(v.string(), v.minLength(1)), defaultStateDir),
  /** The agent's unix socket: the plugin asks it for the pod first (the installer writes it). */
  agent_socket: v.optional(v.pipe(v.string(), v.startsWith("/", "must be an absolute path"))),
  kubernetes: v.optional(
    v.looseObject({
      kubeconfig: v.optional(v.pipe(v.string(), v.minLength(1)), defaultKubeconfig),
      /** Overall deadline for the API lookups of one ADD or CHECK, retries included. */
      timeout_seconds: v.optional(positiveSeconds, 30),
    }),
    {},
  ),
  linkerd: v.optional(linkerdSchema, {}),
  prevResult: v.optional(v.record(v.string(), v.unknown())),
  /** GC's list of attachments the runtime still knows. */
  "cni.dev/valid-attachments": v.optional(v.array(v.looseObject({ containerID: v.string(), ifname: v.string() }))),
});

export type NetConf = v.InferOutput<typeof netConfSchema> & { cniVersion: CniVersion };
export type LinkerdConf = v.InferOutput<typeof linkerdSchema>;

/** Decodes stdin: not JSON → code 6, unsupported cniVersion → code 1, bad field → code 7. */
export function parseNetConf(stdin: string): NetConf {
  let raw: unknown;
  try {
    raw = JSON.parse(stdin);
  } catch (error) {
    throw new CniError(ErrorCode.decodeFailure, `network config on stdin is not valid JSON: ${errorMessage(error)}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new CniError(ErrorCode.decodeFailure, "network config on stdin must be a JSON object");
  }
  const cniVersion = requireSupportedVersion((raw as Record<string, unknown>).cniVersion);
  const parsed = v.safeParse(netConfSchema, raw);
  if (!parsed.success) {
    const problems = parsed.issues.map(
      (issue) =>
        `${describeIssuePath(issue)}${issue.input === undefined ? " (missing)" : `=${JSON.stringify(issue.input)}`}: ${issueMessage(issue)}`,
    );
    throw new CniError(ErrorCode.invalidNetworkConfig, `invalid network config: ${problems.join("; ")}`);
  }
  return { ...parsed.output, cniVersion };
}

/** Plugin types whose entry plans a pod's redirect from this netconf: meshcni's, and linkerd-cni's (the same netconf). */
const redirectTypes = new Set(["meshcni", "linkerd-cni"]);

const typeOf = (plugin: unknown) => (plugin as { type?: unknown } | null)?.type;

/** Whether a conflist's plugin entry is a redirect plugin's, meshcni's or linkerd-cni's: what reads the netconf looks for. */
export function isRedirectEntry(plugin: unknown): boolean {
  const type = typeOf(plugin);
  return typeof type === "string" && redirectTypes.has(type);
}

/**
 * Whether an entry is the one meshcni writes, of its template's type (`meshcni`, or
 * `linkerd-cni` where it was installed under Linkerd's names): what it writes, replaces and
 * removes. Any other, linkerd-cni's own entry beside meshcni's included, is another plugin's.
 */
export const isEntryOfType = (type: string) => (plugin: unknown) => typeOf(plugin) === type;
