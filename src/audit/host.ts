import { existsSync, readdirSync } from "node:fs";
import { hostname, networkInterfaces } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import { readConfigFiles } from "../cni/config-dir.js";
import { createRedirector, hostBackend, hostPaths } from "../host.js";
import { loadApiAccess } from "../kube/kubeconfig.js";
import { createNodeApi } from "../kube/node-api.js";
import { inNetns } from "../netns/enter.js";
import { type Backend, inspectPlans } from "../redirect/redirector.js";
import { defaultStateDir, fileRecordStore } from "../state/records.js";
import type { SweepRequest } from "./contract.js";
import { activeNetconf } from "./expectation.js";
import { scanNetns } from "./scan.js";
import type { SweepIo } from "./sweep.js";

/** The flags of the commands that look at this host's pods (audit, rules), for parseArgs. */
export const hostFlags = {
  node: { type: "string" as const },
  kubeconfig: { type: "string" as const },
  "host-root": { type: "string" as const },
  "state-dir": { type: "string" as const, default: defaultStateDir },
  "net-dir": { type: "string" as const, default: "/etc/cni/net.d" },
  "netns-dir": { type: "string" as const, multiple: true as const, default: ["/var/run/netns"] },
  output: { type: "string" as const, default: "table" },
};

export const hostFlagsUsage = `  --node NAME               the node [NODE_NAME] (this host's name)
  --output FORMAT           table or json (table)
  --kubeconfig PATH         API access [KUBECONFIG] (else in-cluster; "-": read it from stdin)
  --host-root DIR           where the host's filesystem is mounted [CONTAINER_MOUNT_PREFIX] ("")
  --state-dir DIR           the plugin's state_dir on the host (${defaultStateDir})
  --net-dir DIR             the CNI config dir on the host, for pods without a record (/etc/cni/net.d)
  --netns-dir DIR           where the runtime keeps pod netns, on the host (repeatable; /var/run/netns)`;

/** What the host flags say: the node, its dirs as a sweep takes them, API access, the output format. */
export interface HostValues {
  node: string;
  dirs: SweepRequest["dirs"];
  kubeconfig: string | undefined;
  output: "table" | "json";
}

/** The host flags' values with their environment fallbacks; throws on a bad --output. */
export function hostValues(values: {
  node?: string;
  kubeconfig?: string;
  "host-root"?: string;
  "state-dir": string;
  "net-dir": string;
  "netns-dir": string[];
  output: string;
}): HostValues {
  if (values.output !== "table" && values.output !== "json")
    throw new Error(`--output must be table or json, not ${JSON.stringify(values.output)}`);
  return {
    node: values.node ?? process.env.NODE_NAME ?? hostname(),
    dirs: {
      hostRoot: values["host-root"] ?? process.env.CONTAINER_MOUNT_PREFIX ?? "",
      stateDir: values["state-dir"],
      netDir: values["net-dir"],
      netnsDirs: values["netns-dir"],
    },
    kubeconfig: values.kubeconfig ?? process.env.KUBECONFIG,
    output: values.output,
  };
}

/** The sweep's I/O on this host: the API (as `config` allows), the state dir, the runtime's netns, the redirect's backends. */
export function hostIo(node: string, dirs: SweepRequest["dirs"], config: KubeConfig): SweepIo {
  const { hostRoot } = dirs;
  const onHost = hostPaths(hostRoot);
  const stateDir = onHost(dirs.stateDir);
  const redirector = (backend: Backend) => createRedirector(backend, { stateDir });
  return {
    api: createNodeApi(config, node),
    records: fileRecordStore(stateDir),
    netconf: () => activeNetconf(readConfigFiles(onHost(dirs.netDir))),
    // The netconf's state_dir holds the backend ADD detected: the same answer, read where the plugin wrote it.
    backend: (conf) => hostBackend(conf, hostRoot),
    // Control-plane pods skip the API server's port, as the plugin reads it from its kubeconfig.
    apiServerPort: async (conf) =>
      loadApiAccess(onHost(conf.kubernetes.kubeconfig)).then(
        (access) => Number(access.server.port || (access.server.protocol === "https:" ? 443 : 80)),
        () => 443,
      ),
    scan: (targets) =>
      scanNetns(
        targets,
        { hostRoot, netnsDirs: dirs.netnsDirs },
        {
          inNetns,
          redirector,
          // getifaddrs in this thread, which is in the netns being looked into.
          addresses: () => Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((entry) => entry.address)),
          exists: existsSync,
          list: (dir) => (existsSync(dir) ? readdirSync(dir) : []),
          inspect: inspectPlans,
        },
      ),
    async redirect(netns, backend, plans) {
      const made = await redirector(backend);
      try {
        await inNetns(onHost(netns), () => made.apply(plans));
      } finally {
        made.close();
      }
    },
    netnsExists: (netns) => existsSync(onHost(netns)),
    now: () => Date.now(),
  };
}
