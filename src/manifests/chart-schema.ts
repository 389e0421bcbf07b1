import { repairPolicies } from "../audit/repair.js";
import { chainByChoices } from "../installer/dropin.js";
import { agentLogLevels } from "../log.js";
import { iptablesModes } from "../redirect/redirector.js";
import { taintEffects, taintPattern } from "../taint-spec.js";
import { dnsLabel, quantityPattern } from "./checks.js";

type Schema = Record<string, unknown>;

const string = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
const boolean: Schema = { type: "boolean" };
const port: Schema = { type: "integer", minimum: 1, maximum: 65535 };
const id: Schema = { type: "integer", minimum: 0, maximum: 4294967295 };
const object = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: "object",
  additionalProperties: false,
  properties,
  ...extra,
});
const stringMap: Schema = { type: "object", additionalProperties: { type: "string" } };
const list = (items: Schema): Schema => ({ type: "array", items });
const absolutePath = string({ pattern: "^/" });
/** Kubernetes' quantity (resource.Quantity's form), or "" for none. */
const quantity: Schema = { type: ["string", "number"], pattern: `^$|${quantityPattern}` };
/** linkerd2-cni's port lists: "25,587,8000-9000" (ranges where a range means something), or one number. */
const portList = (ranges: boolean): Schema => ({
  type: ["string", "integer"],
  pattern: ranges ? "^\\s*([0-9]+(-[0-9]+)?\\s*(,\\s*[0-9]+(-[0-9]+)?\\s*)*)?$" : "^\\s*([0-9]+\\s*(,\\s*[0-9]+\\s*)*)?$",
});
const resources = object(
  Object.fromEntries(["cpu", "memory", "ephemeral-storage"].map((resource) => [resource, object({ limit: quantity, request: quantity })])),
);
const enabled = object({ enabled: boolean }, { required: ["enabled"] });
/** A Kubernetes object passed through as it is (the API server checks it). */
const kubernetesObject: Schema = { type: "object" };
/** The netconf keys meshcni reads (Linkerd's): any other is a typo, refused. */
const netconfKeys: Record<string, Schema> = {
  "incoming-proxy-port": port,
  "outgoing-proxy-port": port,
  "proxy-uid": id,
  "proxy-gid": id,
  "ports-to-redirect": list({ type: ["integer", "string"] }),
  "inbound-ports-to-ignore": list({ type: ["integer", "string"] }),
  "outbound-ports-to-ignore": list({ type: ["integer", "string"] }),
  "subnets-to-ignore": list(string()),
  simulate: boolean,
  "use-wait-flag": boolean,
  "iptables-mode": { enum: [...iptablesModes] },
  ipv6: boolean,
};

/**
 * The chart's values.schema.json: every linkerd2-cni key with the type that chart gives it,
 * and meshcni's own, each with the values meshcni's code accepts (its enums from here). A
 * key not listed is an error (a typo never passes silently). Pure.
 */
export function chartValuesSchema(): Schema {
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "meshcni's chart values (linkerd2-cni's values accepted unchanged)",
    ...object({
      // linkerd2-cni's keys.
      inboundProxyPort: port,
      outboundProxyPort: port,
      ignoreInboundPorts: portList(true),
      ignoreOutboundPorts: portList(true),
      proxyAdminPort: port,
      proxyControlPort: port,
      podLabels: stringMap,
      commonLabels: stringMap,
      logLevel: { enum: ["trace", ...agentLogLevels] },
      portsToRedirect: portList(false),
      proxyUID: id,
      proxyGID: { type: "integer", minimum: -1, maximum: 4294967295 },
      destCNINetDir: absolutePath,
      destCNIBinDir: absolutePath,
      useWaitFlag: boolean,
      iptablesMode: { enum: [...iptablesModes] },
      disableIPv6: boolean,
      priorityClassName: string(),
      revisionHistoryLimit: { type: "integer", minimum: 0 },
      updateStrategy: kubernetesObject,
      enablePSP: boolean,
      privileged: boolean,
      tolerations: list(kubernetesObject),
      nodeAffinity: { type: ["object", "null"] },
      image: object({
        name: string({ minLength: 1 }),
        version: string(),
        digest: string({ pattern: "^(sha256:[0-9a-f]{64})?$" }),
        pullPolicy: { enum: ["Always", "IfNotPresent", "Never"] },
      }),
      imagePullSecrets: list(object({ name: string({ minLength: 1 }) }, { required: ["name"] })),
      extraInitContainers: list(kubernetesObject),
      repairController: object({
        enabled: boolean,
        logLevel: string(),
        logFormat: string(),
        enableSecurityContext: boolean,
        resources,
      }),
      resources,
      // meshcni's own.
      repair: { enum: [...repairPolicies] },
      evictNamespaces: list(string({ pattern: `^(\\*|${dnsLabel})$` })),
      startupTaint: string({ pattern: `^$|${taintPattern(taintEffects.join("|"))}` }),
      extraCNIBinDirs: list(absolutePath),
      netnsDir: absolutePath,
      criSocket: string({ pattern: "^$|^/" }),
      nodeSelector: stringMap,
      netconf: object(netconfKeys),
      metricsPort: port,
      podMonitor: enabled,
      prometheusRule: enabled,
      grafanaDashboard: enabled,
      linkerdNames: boolean,
      chainBy: { enum: [...chainByChoices] },
      // Set by a parent chart when meshcni is a dependency.
      global: kubernetesObject,
    }),
  };
}
