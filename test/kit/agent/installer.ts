import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { afterEach } from "vitest";
import { meshcniBinary } from "../paths.js";
import { AgentHarness } from "./harness.js";
import { conflist } from "./host.js";

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
 * The agent an installer suite runs, one per test and cleaned after it (`host`; a test may
 * also make its own), and the helpers over it: `started` writes the net dir's files and
 * starts one; `chainedIn` says whether meshcni is last in a file; `ready` is `meshcni ready`
 * with the agent's own flags (its /readyz gives the verdict, the disk the reasons).
 */
export function installerSuite() {
  const suite = {
    host: undefined as unknown as AgentHarness,
    async started(files: Record<string, string>, extra: string[] = []): Promise<AgentHarness> {
      suite.host = new AgentHarness();
      for (const [name, text] of Object.entries(files)) writeFileSync(suite.host.path(name), text);
      await suite.host.start(extra);
      return suite.host;
    },
    chainedIn: (name: string) => () => suite.host.types(name).at(-1) === "meshcni",
    ready: () =>
      spawnSync(meshcniBinary, ["ready", ...suite.host.args(["--listen", suite.host.address])], { env: suite.host.env, encoding: "utf8" }),
  };
  afterEach(async () => suite.host?.cleanup());
  return suite;
}
