import { join } from "node:path";
import type { SandboxLookup } from "../cri/runtime.js";
import { errorMessage } from "../errors.js";
import { hostPaths } from "../host.js";
import { inNetnsDirs } from "../netns/paths.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Backend, Redirector } from "../redirect/redirector.js";
import type { Identified, Observation } from "./classify.js";
import { type NetnsReader, readPodNetns, type SeenNetns } from "./netns-reading.js";

/** One pod to look for: its netns as ADD recorded it (host path), else its IPs; what to compare it with. */
export interface ScanTarget {
  uid: string;
  recordedNetns: string | undefined;
  ips: string[];
  plans: RulePlan[];
  /** The record's plans, where they differ from `plans`: whether the netns holds them is looked at too. */
  recordPlans?: RulePlan[] | undefined;
  backend: Backend;
}

/** An address in a netns and the interface holding it. */
export interface NetnsAddress {
  ifname: string;
  address: string;
}

/** The scan's I/O, passed in: netns, the redirect's backends, the host's dirs, the container runtime. */
export interface ScanIo extends NetnsReader {
  inNetns<T>(path: string, action: () => Promise<T>): Promise<T>;
  redirector(backend: Backend): Promise<Redirector>;
  /** The addresses of the netns this thread is in. */
  addresses(): NetnsAddress[];
  /** What names the netns a path leads to (device and inode: two paths to one netns share it); undefined when there is none. */
  identity(path: string): string | undefined;
  list(dir: string): string[];
  /** Asks the container runtime for these pods' netns, once for all; undefined when there is no runtime to ask (no CRI socket). */
  locate: ((podUids: string[]) => Promise<Map<string, SandboxLookup>>) | undefined;
}

/** The interface CNI gives a pod's network (CNI_IFNAME): the only one a pod's IP may be found on by address. */
const podInterface = "eth0";

/**
 * Where a pod's IP is, among the netns the runtime keeps, pure: its one netns when exactly
 * one holds the IP, on eth0; otherwise why none is taken. A pod with NET_ADMIN in its own
 * netns can add any address to its interfaces, so an IP seen twice, or on `lo` or another
 * interface, names no netns.
 */
export function placeByIp(ips: string[], held: Map<string, NetnsAddress[]>, dirs: string[]): { netns: string } | { reason: string } {
  const places = [...held].flatMap(([netns, addresses]) =>
    addresses.filter((entry) => ips.includes(entry.address)).map((entry) => ({ netns, ...entry })),
  );
  const netnses = [...new Set(places.map((place) => place.netns))];
  if (netnses.length === 0) return { reason: `no netns in ${dirs.join(", ")} holds the pod's IP ${ips.join(", ")}` };
  if (netnses.length > 1)
    return {
      reason: `the pod's IP ${ips.join(", ")} is in ${netnses.length} netns (${netnses.join(", ")}): any pod can claim an address, so none is taken as the pod's`,
    };
  const elsewhere = places.find((place) => place.ifname !== podInterface);
  if (elsewhere)
    return { reason: `the pod's IP ${elsewhere.address} is on ${elsewhere.ifname} in ${elsewhere.netns}, not on ${podInterface}` };
  return { netns: netnses[0]! };
}

/**
 * The time a scan may spend in netns: visits start at the `turn`th (of the sweeps: each
 * starts elsewhere, so a pod whose netns is slow to read cannot keep the same others unread
 * sweep after sweep), and none starts past `deadline` (`now`'s clock), so the sweep still
 * reports, and repairs, within its own deadline.
 */
export interface ScanTime {
  deadline: number;
  turn: number;
  now(): number;
}

/** The list from its `turn`th entry round to the one before it, pure. */
export function rotated<T>(list: T[], turn: number): T[] {
  const start = list.length === 0 ? 0 : ((turn % list.length) + list.length) % list.length;
  return [...list.slice(start), ...list.slice(0, start)];
}

/**
 * Looks into each pod's netns: a recorded one by its path (ADD wrote it, as the runtime
 * passed it); else the one the container runtime says its sandbox has; only without a
 * runtime to ask, the one netns holding the pod's IP (a hint: see placeByIp, and
 * classify, which never takes it for proof). Each netns is entered once to inspect it, and
 * once more to read its addresses when pods are placed by IP. `hostRoot` prefixes every
 * host path.
 */
export async function scanNetns(
  targets: ScanTarget[],
  options: { hostRoot: string; netnsDirs: string[]; time?: ScanTime; seen?: ReadonlyMap<string, SeenNetns> },
  io: ScanIo,
): Promise<Map<string, Observation>> {
  const observations = new Map<string, Observation>();
  const onHost = hostPaths(options.hostRoot);
  // By the netns's identity, so two paths to one netns are seen as one.
  const toVisit = new Map<string, { netns: string; identity: string; visitors: Array<{ target: ScanTarget; identifiedBy: Identified }> }>();
  const place = (target: ScanTarget, netns: string, identifiedBy: Identified) => {
    const identity = io.identity(onHost(netns));
    if (identity === undefined) observations.set(target.uid, { found: false, reason: `netns ${netns} is gone` });
    else {
      const visit = toVisit.get(identity) ?? { netns, identity, visitors: [] };
      visit.visitors.push({ target, identifiedBy });
      toVisit.set(identity, visit);
    }
  };
  const byIp: ScanTarget[] = [];
  const unrecorded = targets.filter((target) => target.recordedNetns === undefined);
  const located =
    io.locate && unrecorded.length > 0
      ? await io.locate(unrecorded.map((target) => target.uid)).catch((error: unknown) => errorMessage(error))
      : undefined;
  for (const target of targets) {
    // A record is a file on the node's disk: the path it names is entered only in the runtime's netns dirs.
    if (target.recordedNetns !== undefined && !inNetnsDirs(target.recordedNetns, options.netnsDirs))
      observations.set(target.uid, {
        found: false,
        reason: `its ADD record names netns ${target.recordedNetns}, which is not in ${options.netnsDirs.join(", ")}: not entered`,
      });
    else if (target.recordedNetns !== undefined) place(target, target.recordedNetns, "record");
    else if (located === undefined) byIp.push(target);
    else {
      const found: SandboxLookup =
        typeof located === "string"
          ? { problem: `cannot ask the container runtime: ${located}` }
          : (located.get(target.uid) ?? { problem: "the container runtime did not say" });
      if ("problem" in found) observations.set(target.uid, { found: false, reason: found.problem });
      // The runtime's word is a path to enter: only one in the netns dirs, in plain form.
      else if (!inNetnsDirs(found.netns, options.netnsDirs))
        observations.set(target.uid, {
          found: false,
          reason: `the container runtime names netns ${found.netns}, which is not in ${options.netnsDirs.join(", ")}`,
        });
      else place(target, found.netns, "runtime");
    }
  }
  if (byIp.length > 0) {
    const held = new Map<string, NetnsAddress[]>();
    for (const dir of options.netnsDirs) {
      for (const name of io.list(onHost(dir))) {
        const netns = join(dir, name);
        // A bind mount that went away, or is no netns: not a pod's.
        const addresses = await io.inNetns(onHost(netns), async () => io.addresses()).catch(() => undefined);
        if (addresses) held.set(netns, addresses);
      }
    }
    for (const target of byIp) {
      const placed = placeByIp(target.ips, held, options.netnsDirs);
      if ("reason" in placed) observations.set(target.uid, { found: false, reason: placed.reason });
      else place(target, placed.netns, "ip");
    }
  }
  for (const { netns, identity, visitors } of rotated([...toVisit.values()], options.time?.turn ?? 0)) {
    if (options.time && options.time.now() >= options.time.deadline) {
      const reason = `not looked into: this sweep's time for netns ran out on other pods (it starts elsewhere next time)`;
      for (const { target } of visitors) observations.set(target.uid, { found: false, reason });
      continue;
    }
    if (visitors.length > 1) {
      // One netns is one pod's: claimed by several, it is judged (and written) as none's.
      const claimants = visitors.map(({ target }) => target.uid).join(", ");
      const reason = `netns ${netns} is claimed by ${visitors.length} pods (${claimants}): it is taken as none's`;
      for (const { target } of visitors) observations.set(target.uid, { found: false, reason });
      continue;
    }
    // Per netns: an nftables socket belongs to the netns it is opened in.
    const made = new Map<Backend, Promise<Redirector>>();
    const redirector = (backend: Backend) => {
      const existing = made.get(backend) ?? io.redirector(backend);
      made.set(backend, existing);
      return existing;
    };
    try {
      await io.inNetns(onHost(netns), async () => {
        for (const { target, identifiedBy } of visitors) {
          try {
            // Named by path and inode: a sandbox's netns path is its own, and an inode number is reused once a netns is gone.
            const which = `${netns} ${identity}`;
            const reading = await readPodNetns(target, which, options.seen?.get(target.uid), io, redirector);
            observations.set(target.uid, { found: true, netns, identifiedBy, ...reading });
          } catch (error) {
            // The pod's netns, entered, whose rules could not be read (more than a dump takes, a save killed): never protected.
            const unreadable = errorMessage(error);
            observations.set(target.uid, { found: true, netns, identifiedBy, differences: [unreadable], hasRedirect: true, unreadable });
          }
        }
      });
    } catch (error) {
      for (const { target } of visitors) observations.set(target.uid, { found: false, reason: `netns ${netns}: ${errorMessage(error)}` });
    } finally {
      for (const opened of made.values()) (await opened.catch(() => undefined))?.close();
    }
  }
  return observations;
}
