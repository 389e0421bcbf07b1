// The soak's load: pods created and deleted all along, whatever the fault (a request the
// API cannot answer now is counted and left), meshed (the proxy a native sidecar or a plain
// container) and unmeshed, in two namespaces.
import type { RealCluster } from "../cluster/cluster.js";
import { asList, meshedPod, plainPod } from "../cluster/workloads.js";
import { sleep } from "../common.js";
import { between } from "./draw.js";

export const soakNamespaces = ["soak-a", "soak-b"];
export const soakLabel = "meshcni.test/soak";
export type PodKind = "meshed-native" | "meshed-container" | "unmeshed";

/** A pod of the soak: its kind is its label's value, what the checks expect of it. */
export function soakPod(name: string, namespace: string, kind: PodKind): Record<string, unknown> {
  const labels = { [soakLabel]: kind };
  return kind === "unmeshed"
    ? plainPod(name, { namespace, ports: [8080], labels })
    : meshedPod(name, { namespace, labels, sidecar: kind === "meshed-native" ? "native" : "container" });
}

export class SoakWorkload {
  created = 0;
  deleted = 0;
  /** Requests the API did not answer (it was down, frozen, or the pod was gone). */
  refused = 0;
  private readonly live: Array<{ name: string; namespace: string }> = [];
  private stopping = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly cluster: RealCluster,
    private readonly random: () => number,
    /** Pods kept alive at once: past this, the oldest goes as the next comes. */
    private readonly size = 8,
  ) {}

  async prepare(): Promise<void> {
    for (const namespace of soakNamespaces) await this.cluster.kubectl(["create", "namespace", namespace]);
  }

  /** The load's namespaces deleted with their pods, awaited: the next run starts on a node without them. */
  async remove(): Promise<void> {
    await this.cluster.kubectl(["delete", "namespace", ...soakNamespaces, "--wait", "--timeout=180s"]);
  }

  start(): void {
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }

  private async loop(): Promise<void> {
    const kinds: PodKind[] = ["meshed-native", "meshed-container", "unmeshed"];
    for (let index = 0; !this.stopping; index++) {
      const namespace = soakNamespaces[between(this.random, 0, soakNamespaces.length - 1)]!;
      const kind = kinds[between(this.random, 0, kinds.length - 1)]!;
      const name = `soak-${index}`;
      await this.request(["apply", "-f", "-"], asList(soakPod(name, namespace, kind)), () => {
        this.created++;
        this.live.push({ name, namespace });
      });
      if (this.live.length > this.size) {
        const oldest = this.live[0]!;
        await this.request(["-n", oldest.namespace, "delete", "pod", oldest.name, "--wait=false", "--grace-period=1"], undefined, () => {
          this.live.shift();
          this.deleted++;
        });
      }
      await sleep(between(this.random, 1000, 4000));
    }
  }

  private async request(args: string[], input: string | undefined, done: () => void): Promise<void> {
    try {
      await this.cluster.kubectl(["--request-timeout=10s", ...args], input);
      done();
    } catch {
      this.refused++;
    }
  }
}
