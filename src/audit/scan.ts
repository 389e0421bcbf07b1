import { join } from "node:path";
import { errorMessage } from "../errors.js";
import { hostPaths } from "../host.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Backend, Redirector } from "../redirect/redirector.js";
import type { Observation } from "./classify.js";

/** One pod to look for: its netns as ADD recorded it (host path), else its IPs; what to compare it with. */
export interface ScanTarget {
  uid: string;
  recordedNetns: string | undefined;
  ips: string[];
  plans: RulePlan[];
  backend: Backend;
}

/** The scan's I/O, passed in: netns, the redirect's backends, the host's dirs. */
export interface ScanIo {
  inNetns<T>(path: string, action: () => Promise<T>): Promise<T>;
  redirector(backend: Backend): Promise<Redirector>;
  /** The addresses of the netns this thread is in. */
  addresses(): string[];
  exists(path: string): boolean;
  list(dir: string): string[];
  inspect(redirector: Redirector, plans: RulePlan[]): Promise<{ differences: string[]; hasRedirect: boolean }>;
}

/**
 * Looks into each pod's netns, entering each netns at most once: a recorded one by its
 * path; the others found by the pod's IP among the runtime's netns dirs (only while a
 * pod without a record is still unmatched). `hostRoot` prefixes every host path.
 */
export async function scanNetns(
  targets: ScanTarget[],
  options: { hostRoot: string; netnsDirs: string[] },
  io: ScanIo,
): Promise<Map<string, Observation>> {
  const observations = new Map<string, Observation>();
  const onHost = hostPaths(options.hostRoot);
  const recorded = new Map<string, ScanTarget[]>();
  for (const target of targets) {
    if (target.recordedNetns === undefined) continue;
    if (!io.exists(onHost(target.recordedNetns)))
      observations.set(target.uid, { found: false, reason: `netns ${target.recordedNetns} is gone` });
    else recorded.set(target.recordedNetns, [...(recorded.get(target.recordedNetns) ?? []), target]);
  }
  const unmatched = new Set(targets.filter((target) => target.recordedNetns === undefined));
  const visit = async (netns: string, known: ScanTarget[]) => {
    const matched = [...known];
    // Per netns: an nftables socket belongs to the netns it is opened in.
    const made = new Map<Backend, Promise<Redirector>>();
    const redirector = (backend: Backend) => {
      const existing = made.get(backend) ?? io.redirector(backend);
      made.set(backend, existing);
      return existing;
    };
    try {
      await io.inNetns(onHost(netns), async () => {
        if (unmatched.size > 0) {
          const here = new Set(io.addresses());
          for (const target of unmatched) {
            if (target.ips.some((ip) => here.has(ip))) {
              matched.push(target);
              unmatched.delete(target);
            }
          }
        }
        for (const target of matched) {
          const found = await io.inspect(await redirector(target.backend), target.plans);
          observations.set(target.uid, { found: true, netns, ...found });
        }
      });
    } finally {
      for (const opened of made.values()) (await opened.catch(() => undefined))?.close();
    }
  };
  for (const [netns, known] of recorded) {
    await visit(netns, known).catch((error: unknown) => {
      for (const target of known) observations.set(target.uid, { found: false, reason: `netns ${netns}: ${errorMessage(error)}` });
    });
  }
  for (const dir of options.netnsDirs) {
    for (const name of unmatched.size > 0 ? io.list(onHost(dir)) : []) {
      const netns = join(dir, name);
      // A bind mount that went away, or is no netns: not a pod's.
      if (!recorded.has(netns)) await visit(netns, []).catch(() => undefined);
      if (unmatched.size === 0) break;
    }
  }
  for (const target of unmatched) {
    observations.set(target.uid, {
      found: false,
      reason: `no netns in ${options.netnsDirs.join(", ")} holds the pod's IP ${target.ips.join(", ")}`,
    });
  }
  return observations;
}
