import { existsSync, readdirSync } from "node:fs";
import { hostname, networkInterfaces } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readConfigFiles } from "../cni/config-dir.js";
import { errorMessage } from "../errors.js";
import { applyPlan, inspectPlans } from "../iptables/apply.js";
import { resolveBackend } from "../iptables/backend.js";
import { fileDetectionCache } from "../iptables/detection-cache.js";
import { createIptablesRunner, hostSaveProbe } from "../iptables/exec.js";
import { loadApiAccess } from "../kube/kubeconfig.js";
import { createNodeApi, kubeConfigFrom } from "../kube/node-api.js";
import { inNetns } from "../netns/enter.js";
import { parsePodKey } from "../pod-key.js";
import { defaultStateDir, fileRecordStore, locksDir } from "../state/records.js";
import { activeNetconf } from "./expectation.js";
import { renderTable } from "./format.js";
import { type RepairPolicy, repairPolicies } from "./repair.js";
import { scanNetns } from "./scan.js";
import { allProtected, type SweepIo, sweep } from "./sweep.js";

export const auditUsage = `meshcni audit [options]   judge this node's meshed pods by what their netns hold; repair them

  --node NAME               the node [NODE_NAME] (this host's name)
  --output FORMAT           table or json (table)
  --kubeconfig PATH         API access [KUBECONFIG] (else in-cluster)
  --host-root DIR           where the host's filesystem is mounted [CONTAINER_MOUNT_PREFIX] ("")
  --state-dir DIR           the plugin's state_dir on the host (${defaultStateDir})
  --net-dir DIR             the CNI config dir on the host, for pods without a record (/etc/cni/net.d)
  --netns-dir DIR           where the runtime keeps pod netns, on the host (repeatable; /var/run/netns)
  --pod NAMESPACE/NAME      only this pod (repeatable); all of the node's by default
  --repair POLICY           also act, once: ${repairPolicies.join(", ")}; without it nothing is changed
  --max-evictions N         with --repair evict: at most N evictions in this sweep (2)
  --repair-exclude-namespaces NS,NS   never act on pods of these namespaces
  --skip-uid UID            leave this pod alone (repeatable; the agent passes pods it acted on recently)

Statuses: protected (the recorded plan is in its netns), adopted (the plan is there but no
meshcni record: linkerd-cni or an earlier install set it up; a sweep records it), missing
(netns found, no redirect), drifted (rules differ: listed), unknown (no netns found, or no
plan can be made). With --repair, a sweep also records adopted pods, acts on missing and
drifted ones (an Event on each), and removes records whose pod or netns is gone.
Exit 0 when every meshed pod is protected or adopted (or redirected by this sweep); 1
otherwise; 2 on a usage or API error.
`;

function parseAuditArgs(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      node: { type: "string" },
      output: { type: "string", default: "table" },
      kubeconfig: { type: "string" },
      "host-root": { type: "string" },
      "state-dir": { type: "string", default: defaultStateDir },
      "net-dir": { type: "string", default: "/etc/cni/net.d" },
      "netns-dir": { type: "string", multiple: true, default: ["/var/run/netns"] },
      pod: { type: "string", multiple: true, default: [] },
      repair: { type: "string" },
      "max-evictions": { type: "string", default: "2" },
      "repair-exclude-namespaces": { type: "string", default: "" },
      "skip-uid": { type: "string", multiple: true, default: [] },
      help: { type: "boolean" },
    },
  });
  if (values.output !== "table" && values.output !== "json")
    throw new Error(`--output must be table or json, not ${JSON.stringify(values.output)}`);
  if (values.repair !== undefined && !(repairPolicies as readonly string[]).includes(values.repair)) {
    throw new Error(`--repair must be one of ${repairPolicies.join(", ")}, not ${JSON.stringify(values.repair)}`);
  }
  const maxEvictions = Number(values["max-evictions"]);
  if (!Number.isInteger(maxEvictions) || maxEvictions < 0)
    throw new Error(`--max-evictions must be a whole number, not ${JSON.stringify(values["max-evictions"])}`);
  for (const pod of values.pod) if (!parsePodKey(pod)) throw new Error(`--pod must be NAMESPACE/NAME, not ${JSON.stringify(pod)}`);
  return { ...values, repair: values.repair as RepairPolicy | undefined, maxEvictions };
}

/** The sweep's I/O on this host: the API, the state dir, the runtime's netns, iptables. */
function hostIo(values: ReturnType<typeof parseAuditArgs>, node: string, hostRoot: string): SweepIo {
  const onHost = (path: string) => join(hostRoot || "/", path);
  const stateDir = onHost(values["state-dir"]);
  const runner = (backend: Parameters<typeof createIptablesRunner>[0]) =>
    createIptablesRunner(backend, { wait: false, lockDir: locksDir(stateDir) });
  return {
    api: createNodeApi(kubeConfigFrom(values.kubeconfig ?? process.env.KUBECONFIG), node),
    records: fileRecordStore(stateDir),
    netconf: () => activeNetconf(readConfigFiles(onHost(values["net-dir"]))),
    backend: (conf) => resolveBackend(conf.linkerd["iptables-mode"], hostSaveProbe, fileDetectionCache(stateDir)),
    // Control-plane pods skip the API server's port, as the plugin reads it from its kubeconfig.
    apiServerPort: async (conf) =>
      loadApiAccess(onHost(conf.kubernetes.kubeconfig)).then(
        (access) => Number(access.server.port || (access.server.protocol === "https:" ? 443 : 80)),
        () => 443,
      ),
    scan: (targets) =>
      scanNetns(
        targets,
        { hostRoot, netnsDirs: values["netns-dir"] },
        {
          inNetns,
          runner,
          // getifaddrs in this thread, which is in the netns being looked into.
          addresses: () => Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((entry) => entry.address)),
          exists: existsSync,
          list: (dir) => (existsSync(dir) ? readdirSync(dir) : []),
          inspect: inspectPlans,
        },
      ),
    async redirect(netns, backend, plans) {
      const made = await runner(backend);
      try {
        await inNetns(onHost(netns), async () => {
          for (const plan of plans) await applyPlan(made, plan);
        });
      } finally {
        made.close();
      }
    },
    netnsExists: (netns) => existsSync(onHost(netns)),
    now: () => Date.now(),
  };
}

export async function runAudit(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseAuditArgs>;
  try {
    values = parseAuditArgs(argv);
  } catch (error) {
    process.stderr.write(`meshcni audit: ${errorMessage(error)} (see meshcni audit --help)\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(auditUsage);
    return 0;
  }
  const node = values.node ?? process.env.NODE_NAME ?? hostname();
  const hostRoot = values["host-root"] ?? process.env.CONTAINER_MOUNT_PREFIX ?? "";
  try {
    const report = await sweep(
      {
        node,
        only: new Set(values.pod),
        policy: values.repair,
        limits: {
          self:
            process.env.POD_NAMESPACE && process.env.POD_NAME
              ? { namespace: process.env.POD_NAMESPACE, name: process.env.POD_NAME }
              : undefined,
          excludeNamespaces: new Set(values["repair-exclude-namespaces"].split(",").filter(Boolean)),
          skipUids: new Set(values["skip-uid"]),
          evictionsLeft: values.maxEvictions,
        },
      },
      hostIo(values, node, hostRoot),
    );
    process.stdout.write(values.output === "json" ? `${JSON.stringify(report, null, 2)}\n` : renderTable(report));
    return allProtected(report) ? 0 : 1;
  } catch (error) {
    process.stderr.write(`meshcni audit: ${errorMessage(error)}\n`);
    return 2;
  }
}
