import { existsSync } from "node:fs";
import { join } from "node:path";
import { dropInName } from "../cni/drop-ins.js";
import { type LoadedChain, loadedDefaultChain } from "../cri/loaded-config.js";
import { connectRuntime, type PodRuntime } from "../cri/runtime.js";
import { criSocketOf } from "../cri/sockets.js";
import { errorMessage } from "../errors.js";
import { hostPaths } from "../host.js";
import { type ChainMode, isProbe } from "../installer/dropin.js";
import type { Installation, NetDirSync } from "../installer/install.js";
import type { Logger } from "../log.js";
import type { AgentMetrics } from "./metrics.js";
import type { AgentOptions } from "./options.js";

/** How long the runtime has to show a drop-in loaded after it was written (containerd reloads within milliseconds). */
export const proofMs = 3000;
const pollMs = 100;
/** A proven drop-in is asked about again this often: a runtime may reload without meshcni (a downgrade, a restart). */
export const reproveMs = 60_000;

/**
 * Whether the runtime's loaded chain for new pods holds meshcni's drop-in, in the network
 * expected: once, and the probe or the entry as written. Pure; undefined when it does, else why not.
 */
export function notLoaded(chain: LoadedChain, network: string, type: string, probe: boolean): string | undefined {
  if ("unknown" in chain) return chain.unknown;
  const listed = `it runs network ${chain.network}: ${chain.plugins.map((plugin) => plugin.type).join(", ")}`;
  if (chain.network !== network) return `the container runtime has not loaded network ${network}; ${listed}`;
  const ours = chain.plugins.filter((plugin) => plugin.type === type && isProbe(plugin.config) === probe);
  if (ours.length === 1) return undefined;
  return ours.length === 0
    ? `the container runtime did not load meshcni's ${probe ? "probe" : "drop-in"}; ${listed}`
    : `the container runtime loaded meshcni's ${probe ? "probe" : "drop-in"} ${ours.length} times; ${listed}`;
}

/**
 * Decides the chain mode from what the container runtime says it loaded (its verbose CRI
 * Status): asked at the start, it moves an agent from `asking` to the probe (or to the
 * drop-in already there), then to the drop-in once the runtime shows the probe loaded, or to
 * the conflist when it does not within proofMs (containerd before 2.1, CRI-O: no drop-ins, or
 * no word of them). The drop-in is asked about after each change and every reproveMs.
 */
export class ChainProof {
  private runtime: Promise<PodRuntime> | undefined;
  private proving = false;
  private provenAt = Number.NEGATIVE_INFINITY;
  /** What the last look at the net dir left for the runtime to load: a proof under way follows it (a new network mid-proof). */
  private expected: { network: string; probe: boolean } | undefined;
  /** The mode last said (log, metric): the installer moves to the conflist itself when the active config forbids drop-ins. */
  private said: ChainMode | undefined;

  constructor(
    private readonly installation: Installation,
    private readonly options: Pick<AgentOptions, "chainBy" | "sweep" | "install">,
    private readonly schedule: () => void,
    private readonly log: Logger,
    private readonly metrics: AgentMetrics,
    private readonly now: () => number,
  ) {}

  /** Asks the runtime once and leaves `asking`: at once (before its first await) when there is no runtime to ask, or no need. */
  async start(): Promise<void> {
    if (this.options.chainBy === "conflist") return this.become({ kind: "conflist", why: "--chain-by conflist" });
    const onHost = hostPaths(this.options.install.hostRoot);
    const socket = criSocketOf(this.options.sweep.criSocket, (path) => existsSync(onHost(path)));
    if (socket === undefined) return this.become({ kind: "conflist", why: "no container runtime socket to ask what it loaded" });
    this.runtime = connectRuntime(onHost(socket));
    const chain = await this.loaded().catch((error: unknown) => ({
      unknown: `the container runtime did not answer: ${errorMessage(error)}`,
    }));
    if ("unknown" in chain) return this.become({ kind: "conflist", why: chain.unknown });
    // An agent restarted where its drop-in is already loaded keeps it: no probe in between. An entry loaded from a
    // conflist (an older meshcni's) proves nothing of drop-ins: the probe first.
    const type = this.installation.template.ok ? this.installation.template.entry.type : "meshcni";
    const loaded = notLoaded(chain, chain.network, type as string, false) === undefined;
    return this.become(loaded && this.installation.chainedByDropInOnly() ? { kind: "dropin", proven: false } : { kind: "probe" });
  }

  /** After a look at the net dir: proves what it wrote, or what was proven a while ago. */
  afterSync(sync: NetDirSync): void {
    const mode = this.installation.mode;
    if (mode !== this.said) this.say(mode);
    if (sync.kind !== "dropin" || mode.kind === "asking" || mode.kind === "conflist") return;
    if (this.expected?.network !== sync.network || this.expected.probe !== sync.probe)
      this.expected = { network: sync.network, probe: sync.probe };
    const changed = sync.write !== undefined || sync.removals.length > 0 || sync.stale.length > 0;
    const due = mode.kind === "probe" || !mode.proven || changed || this.now() - this.provenAt >= reproveMs;
    if (due && !this.proving) void this.prove();
  }

  close(): void {
    void this.runtime?.then((runtime) => runtime.close()).catch(() => undefined);
  }

  private async loaded(): Promise<LoadedChain> {
    if (!this.runtime) throw new Error("no container runtime to ask");
    return loadedDefaultChain(await (await this.runtime).statusInfo(Date.now() + proofMs));
  }

  /** Asks until the runtime shows the drop-in, or proofMs pass: the drop-in proven, the probe followed by the entry, or the conflist. */
  private async prove(): Promise<void> {
    this.proving = true;
    const asked = this.installation.mode;
    const type = this.installation.template.ok ? (this.installation.template.entry.type as string) : "meshcni";
    let expected = this.expected!;
    let until = this.now() + proofMs;
    let why: string | undefined;
    let answered = false;
    try {
      for (;;) {
        // A look since (another network active, its drop-in written) restarts the clock for what it wrote.
        if (this.expected !== expected) [expected, until] = [this.expected!, this.now() + proofMs];
        const { network, probe } = expected;
        [why, answered] = await this.loaded().then(
          (chain) => [notLoaded(chain, network, type, probe), true] as const,
          (error: unknown) => [`the container runtime did not answer: ${errorMessage(error)}`, false] as const,
        );
        if (why === undefined || this.now() >= until) break;
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    } finally {
      this.proving = false;
    }
    // The mode changed meanwhile (a fallback on the disk's word, say): this answer is of no use.
    if (this.installation.mode !== asked) return;
    const dropIn = join(expected.network, dropInName);
    if (why === undefined) {
      this.provenAt = this.now();
      if (asked.kind === "probe") {
        this.log.info("the container runtime loads drop-ins: chaining meshcni by its drop-in", { dropIn });
        this.become({ kind: "dropin", proven: false });
      } else if (asked.kind === "dropin" && !asked.proven) this.become({ kind: "dropin", proven: true });
      return;
    }
    // A proven drop-in stays while the runtime is silent (restarting: no pod starts then); only its answer without it moves it.
    if (asked.kind === "dropin" && asked.proven && !answered) return;
    this.log.warn("chaining meshcni in the active config instead of a drop-in", { dropIn, why });
    this.become({ kind: "conflist", why: `${dropIn} was not loaded within ${proofMs / 1000} s: ${why}` });
  }

  private become(mode: ChainMode): void {
    this.installation.mode = mode;
    this.say(mode);
    this.schedule();
  }

  private say(mode: ChainMode): void {
    this.said = mode;
    this.metrics.chainMode.reset();
    this.metrics.chainMode.set({ mode: mode.kind }, 1);
    if (mode.kind === "conflist") this.log.info("chain mode: meshcni's entry in the active config", { why: mode.why });
    else if (mode.kind === "dropin" && mode.proven) this.log.info("chain mode: meshcni's drop-in, loaded by the container runtime");
  }
}
