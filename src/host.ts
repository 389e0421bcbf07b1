import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { readRegularFile } from "./file-open.js";
import { writeAtomic } from "./files.js";
import { binaryName, namedBinaries } from "./iptables/binaries.js";
import { type Detection, detectBackend, type SaveProbe } from "./iptables/detect.js";
import { binaryAvailable, binaryOnHost, createIptablesRunner, hostSaveProbe } from "./iptables/exec.js";
import type { Logger } from "./log.js";
import type { NetConf } from "./mesh/netconf.js";
import type { Backend, IptablesBackend, IptablesMode, Redirector } from "./redirect/redirector.js";
import type { Family } from "./redirect/spec.js";
import { locksDir } from "./state/records.js";

/**
 * How meshcni meets the host it runs on: host paths seen from a container, which
 * redirect backend the node uses, and the redirector for it. The one place outside
 * src/iptables/ and src/nftables/ that knows either: the plugin's verbs, the audit and
 * the preflight checks all resolve and create backends here, so they agree.
 */

export { binaryAvailable, type Detection };

/** Host paths as meshcni sees them: under hostRoot when it runs in a container with the host's / mounted there. */
export function hostPaths(hostRoot: string): (path: string) => string {
  return (path) => join(hostRoot || "/", path);
}

/** Where a detection that kubelet's chains decided is kept: it holds until the node reboots. */
export interface DetectionCache {
  read(): "legacy" | "nft" | undefined;
  write(backend: "legacy" | "nft"): void;
}

/** The auto-detected backend, kept in the plugin's state dir (tmpfs: gone at reboot); read alone where nothing may be written there. */
function fileDetectionCache(stateDir: string, writes = true): DetectionCache {
  const path = join(stateDir, "iptables-backend");
  return {
    read() {
      try {
        const backend = readRegularFile(path, 64).trim();
        return backend === "legacy" || backend === "nft" ? backend : undefined;
      } catch {
        return undefined;
      }
    },
    write(backend) {
      if (!writes) return;
      try {
        mkdirSync(stateDir, { recursive: true, mode: 0o755 });
        writeAtomic(path, `${backend}\n`);
      } catch {
        // Only a cache: detection runs again next time.
      }
    },
  };
}

/**
 * The backend for a mode: auto detects the node's iptables backend (cached once kubelet's
 * chains decided it), or picks nftables when the host has no iptables restore binary at all.
 */
export async function resolveBackend(
  mode: IptablesMode,
  probe: SaveProbe,
  cache?: DetectionCache,
  available: (binary: string) => boolean = () => true,
): Promise<Backend> {
  if (mode !== "auto") return mode;
  const cached = cache?.read();
  if (cached) return cached;
  if (!namedBinaries(["restore"]).some(available)) return "nftables";
  const detection = await detectBackend(probe);
  // Without kubelet's chains the answer is a default that may change once kubelet runs.
  if (detection.found) cache?.write(detection.backend);
  return detection.backend;
}

/**
 * The backend ADD uses for this netconf on this host. The detection cache is the
 * netconf's state_dir, seen under hostRoot: the audit in the agent's container reads the
 * file the plugin wrote, so both pick the same backend.
 */
export function hostBackend(conf: NetConf, hostRoot = ""): Promise<Backend> {
  return backendFor(conf.linkerd["iptables-mode"], conf.state_dir, hostRoot);
}

/** The backend for an iptables-mode and a state dir (what the netconf says), on this host. */
export function backendFor(mode: IptablesMode, stateDir: string, hostRoot = "", cacheWrites = true): Promise<Backend> {
  return resolveBackend(mode, hostSaveProbe, fileDetectionCache(hostPaths(hostRoot)(stateDir), cacheWrites), binaryAvailable);
}

/** The redirector a plugin writes with, for what its netconf says; says so when auto finds no iptables. */
export async function pluginRedirector(
  settings: { mode: IptablesMode; stateDir: string; wait: boolean; leaveStateDir?: boolean },
  log: Logger,
): Promise<Redirector> {
  const writes = !settings.leaveStateDir;
  const backend = await backendFor(settings.mode, settings.stateDir, "", writes);
  if (backend === "nftables" && settings.mode === "auto") log.info("no iptables binaries on this host: using nftables over netlink");
  return createRedirector(backend, { stateDir: settings.stateDir, wait: settings.wait, makeLocksDir: writes });
}

/** The node's iptables backend as kubelet's chains tell it (what auto would pick where iptables is installed). */
export function detectNodeBackend(): Promise<Detection> {
  return detectBackend(hostSaveProbe);
}

/** The iptables front ends whose save and restore binaries, IPv4 and IPv6, are all on the search path (the host's, under a host root). */
export function installedIptablesBackends(hostRoot = ""): Array<"nft" | "legacy"> {
  const available = hostRoot ? binaryOnHost(hostRoot) : binaryAvailable;
  return (["nft", "legacy"] as const).filter((backend) =>
    (["ipv4", "ipv6"] as const).every((family) =>
      (["save", "restore"] as const).every((tool) => available(binaryName(backend, family, tool))),
    ),
  );
}

/** The restore binaries a backend needs for these families (what STATUS checks are there). */
export function restoreBinaries(backend: IptablesBackend, families: Family[]): string[] {
  return families.map((family) => binaryName(backend, family, "restore"));
}

/**
 * A redirector for the backend, loading only that backend's code. Legacy iptables' private
 * lock files go in the state dir's locks dir, where a sweep finds those a killed process left.
 * iptables-nft writes and reads with its binaries, and removes over netlink.
 */
export async function createRedirector(
  backend: Backend,
  options: { stateDir: string; wait?: boolean; makeLocksDir?: boolean },
): Promise<Redirector> {
  if (backend === "nftables") return (await import("./nftables/redirector.js")).nftablesRedirector();
  const { iptablesRedirector } = await import("./iptables/redirector.js");
  const redirector = iptablesRedirector(
    await createIptablesRunner(backend, {
      wait: options.wait ?? false,
      locksDir: locksDir(options.stateDir),
      makeLocksDir: options.makeLocksDir ?? true,
    }),
  );
  if (backend !== "nft") return redirector;
  // iptables-nft's chains are nf_tables objects: removed in one netlink batch, not a save and a restore (two processes).
  const remover = (await import("./nftables/xtables.js")).xtablesRemover();
  return {
    ...redirector,
    remove: (families) => remover.remove(families),
    close() {
      remover.close();
      redirector.close();
    },
  };
}
