import { existsSync, readdirSync } from "node:fs";
import { hostname, networkInterfaces } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import { readConfigFiles } from "../cni/config-dir.js";
import { readDropIns } from "../cni/drop-ins.js";
import { connectRuntime, type PodRuntime } from "../cri/runtime.js";
import { criSocketOf, criSockets } from "../cri/sockets.js";
import { timeoutFlag } from "../flags.js";
import { createRedirector, hostBackend, hostPaths } from "../host.js";
import { legacyBypasses } from "../iptables/legacy-around.js";
import type { JsonObject } from "../json.js";
import type { ApiChoice } from "../kube/cli-access.js";
import { inNetns } from "../netns/enter.js";
import { nftBypasses } from "../nftables/around.js";
import { type Backend, inspectPlans } from "../redirect/redirector.js";
import { defaultStateDir, fileRecordStore } from "../state/records.js";
import type { SweepRequest } from "./contract.js";
import { activeNetconf, entryNetconf } from "./expectation.js";
import { moveRules } from "./move.js";
import { coveredGeneration, netnsIdentity } from "./netns-look.js";
import { scanNetns } from "./scan.js";
import type { SweepIo } from "./sweep.js";

/** The flags of the commands that look at this host's pods (audit, rules), for parseArgs. */
export const hostFlags = {
  node: { type: "string" as const },
  kubeconfig: { type: "string" as const },
  context: { type: "string" as const },
  "host-root": { type: "string" as const },
  "state-dir": { type: "string" as const, default: defaultStateDir },
  "net-dir": { type: "string" as const, default: "/etc/cni/net.d" },
  "netns-dir": { type: "string" as const, multiple: true as const, default: ["/var/run/netns"] },
  "cri-socket": { type: "string" as const, default: "auto" },
  output: { type: "string" as const, default: "table" },
  timeout: { type: "string" as const, default: "30" },
};

export const hostFlagsUsage = `  --node NAME               the node [NODE_NAME] (this host's name)
  --output FORMAT           table or json (table)
  --kubeconfig PATH         API access [KUBECONFIG, files kubectl merges] (else ~/.kube/config, else
                            in-cluster; "-": stdin)
  --context NAME            the kubeconfig's context to use (its current one)
  --timeout SECONDS         give up on the API server after this long (30)
  --host-root DIR           where the host's filesystem is mounted [CONTAINER_MOUNT_PREFIX] ("")
  --state-dir DIR           the plugin's state_dir on the host (${defaultStateDir})
  --net-dir DIR             the CNI config dir on the host, for pods without a record (/etc/cni/net.d)
  --netns-dir DIR           where the runtime keeps pod netns, on the host (repeatable; /var/run/netns)
  --cri-socket PATH         the container runtime's CRI socket on the host, asked for each pod's netns
                            (auto: ${criSockets.join(" or ")}, the first there; "": none, pods
                            without an ADD record are then placed by IP only and never acted on)`;

/** What the host flags say: the node, its dirs as a sweep takes them, API access, the output format. */
export interface HostValues {
  node: string;
  dirs: SweepRequest["dirs"];
  access: ApiChoice;
  output: "table" | "json";
  timeoutSeconds: number;
}

/** The host flags' values with their environment fallbacks; throws on a bad --output. */
export function hostValues(values: {
  node?: string;
  kubeconfig?: string;
  context?: string;
  "host-root"?: string;
  "state-dir": string;
  "net-dir": string;
  "netns-dir": string[];
  "cri-socket": string;
  output: string;
  timeout: string;
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
      criSocket: values["cri-socket"],
    },
    access: { kubeconfig: values.kubeconfig, context: values.context },
    output: values.output,
    timeoutSeconds: timeoutFlag(values.timeout),
  };
}

/** What a sweep may spend asking the container runtime where pods' netns are, all pods together. */
const runtimeSweepMs = 15_000;
/**
 * From a scan's start, when it starts no more netns visits: with the runtime's 15 s and a
 * last visit's iptables processes (10 s each at most), the sweep still reports and repairs
 * within its 60 s (agent/sweeps/sweep-child.ts).
 */
const scanVisitsMs = 30_000;

/** The API's client made at its first use: a sweep that asks the API nothing (the agent's view, nothing to act on) never loads it. */
function lazyApi(make: () => Promise<SweepIo["api"]>): SweepIo["api"] {
  let made: Promise<SweepIo["api"]> | undefined;
  const api = () => {
    made ??= make();
    return made;
  };
  return {
    listPods: async () => (await api()).listPods(),
    readNamespace: async (name) => (await api()).readNamespace(name),
    readService: async (namespace, name) => (await api()).readService(namespace, name),
    createPodEvent: async (pod, event) => (await api()).createPodEvent(pod, event),
    labelPod: async (pod, key, value) => (await api()).labelPod(pod, key, value),
    evictPod: async (pod) => (await api()).evictPod(pod),
  };
}

/**
 * The sweep's I/O on this host: the API (as `config` allows), the state dir, meshcni's
 * netconf (the agent's own entry, else the active config's), the runtime's netns, the
 * redirect's backends.
 */
export function hostIo(
  { node, dirs, entry, seen }: Pick<SweepRequest, "node" | "dirs" | "entry" | "seen">,
  config: () => Promise<KubeConfig>,
  explain?: (error: unknown) => unknown,
): SweepIo {
  const { hostRoot } = dirs;
  const onHost = hostPaths(hostRoot);
  const stateDir = onHost(dirs.stateDir);
  const redirector = (backend: Backend) => createRedirector(backend, { stateDir });
  const socket = criSocketOf(dirs.criSocket, (path) => existsSync(onHost(path)));
  /** One question to the container runtime, on a connection made for it (only when asked) and closed after. */
  const askRuntime = async <T>(ask: (runtime: PodRuntime) => Promise<T>): Promise<T> => {
    const runtime = await connectRuntime(onHost(socket!));
    try {
      return await ask(runtime);
    } finally {
      runtime.close();
    }
  };
  const podNetns =
    socket === undefined ? undefined : (uids: string[]) => askRuntime((runtime) => runtime.netnsOfPods(uids, Date.now() + runtimeSweepMs));
  return {
    api: lazyApi(async () => {
      const { createNodeApi } = await import("../kube/node-api.js");
      return createNodeApi(await config(), node, undefined, explain);
    }),
    records: fileRecordStore(stateDir),
    netconf: () =>
      entry ? entryNetconf(entry as JsonObject) : activeNetconf(readConfigFiles(onHost(dirs.netDir)), readDropIns(onHost(dirs.netDir))),
    // The netconf's state_dir holds the backend ADD detected: the same answer, read where the plugin wrote it.
    backend: (conf) => hostBackend(conf, hostRoot),
    scan: (targets) =>
      scanNetns(
        targets,
        {
          hostRoot,
          netnsDirs: dirs.netnsDirs,
          time: { deadline: Date.now() + scanVisitsMs, turn: Math.floor(Date.now() / 60_000), now: Date.now },
          seen: new Map((seen ?? []).map(({ uid, ...reading }) => [uid, reading])),
        },
        {
          inNetns,
          redirector,
          // getifaddrs in this thread, which is in the netns being looked into.
          addresses: () =>
            Object.entries(networkInterfaces()).flatMap(([ifname, list]) =>
              (list ?? []).map((entry) => ({ ifname, address: entry.address })),
            ),
          identity: netnsIdentity,
          list: (dir) => (existsSync(dir) ? readdirSync(dir) : []),
          inspect: inspectPlans,
          around: async (backend, families) => [...(await nftBypasses(backend, families)), ...(await legacyBypasses(backend, families))],
          // No generation (every rule read again) where iptables-legacy has a table or nf_tables cannot say.
          generation: coveredGeneration,
          locate: podNetns,
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
    async move(netns, from, to, plans) {
      const writer = await redirector(to);
      try {
        const old = await redirector(from);
        try {
          await inNetns(onHost(netns), () => moveRules(plans, writer, old));
        } finally {
          old.close();
        }
      } finally {
        writer.close();
      }
    },
    netnsExists: (netns) => existsSync(onHost(netns)),
    podNetns,
    async sandboxIds() {
      if (socket === undefined) return undefined;
      // A runtime that cannot answer keeps every record: none is taken as gone on its silence.
      return askRuntime((runtime) => runtime.sandboxIds(Date.now() + runtimeSweepMs)).catch(() => undefined);
    },
    now: () => Date.now(),
  };
}
