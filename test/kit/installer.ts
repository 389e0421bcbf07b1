import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { AgentHarness, conflist } from "./agent.js";
import { meshcniBinary } from "./network.js";

/** Calico's conflist as it writes it (a revision to tell rewrites apart). */
export const calico = (revision = 1) =>
  conflist(
    "k8s-pod-network",
    [
      { type: "calico", revision, ipam: { type: "calico-ipam" } },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
    { disableCheck: false },
  );

/**
 * The installer suites' helpers over the agent a suite runs (it holds it, and cleans it after
 * each test): `started` writes the net dir's files and starts one; `chainedIn` says whether
 * meshcni is last in a file; `ready` is `meshcni ready` with the agent's own flags (its
 * /readyz gives the verdict, the disk the reasons).
 */
export function installerHelpers(current: () => AgentHarness, made: (host: AgentHarness) => void) {
  async function started(files: Record<string, string>, extra: string[] = []): Promise<AgentHarness> {
    const host = new AgentHarness();
    made(host);
    for (const [name, text] of Object.entries(files)) writeFileSync(host.path(name), text);
    await host.start(extra);
    return host;
  }
  const chainedIn = (name: string) => () => current().types(name).at(-1) === "meshcni";
  const ready = () =>
    spawnSync(meshcniBinary, ["ready", ...current().args(["--listen", current().address])], { env: current().env, encoding: "utf8" });
  return { started, chainedIn, ready };
}
