import { readFileSync } from "node:fs";
import { errorMessage } from "../errors.js";
import { parseSweepInput, type SweepInput, type SweepRequest } from "./contract.js";
import { renderTable } from "./format.js";
import { hostIo } from "./host.js";
import { allProtected, type SweepIo, sweep } from "./sweep.js";

export const sweepUsage = `meshcni sweep   one audit and repair pass, as the node agent runs it (its child process)

Reads one JSON object on stdin: {"kubeconfig": "<the agent's kubeconfig>", "request": {...}},
the request holding the node, the pods, the repair policy and limits, the agent's own pod
and the host's dirs (what meshcni audit's flags say). Writes the sweep's report as JSON.
Exit codes as meshcni audit's; 2 when the input is not a request.
`;

/** `meshcni sweep`, the agent's child: a request and the agent's kubeconfig on stdin (checked), the report as JSON on stdout. */
export async function runSweep(argv: string[]): Promise<number> {
  let input: SweepInput;
  try {
    if (argv.length > 0) throw new Error(`takes no arguments, only its input on stdin, not ${JSON.stringify(argv.join(" "))}`);
    input = parseSweepInput(readFileSync(0, "utf8"));
  } catch (error) {
    process.stderr.write(`meshcni sweep: ${errorMessage(error)}\n`);
    return 2;
  }
  // The client loaded only when the sweep asks the API something: with the agent's view and nothing to act on, never.
  const config = async () => {
    const { KubeConfig } = await import("@kubernetes/client-node");
    const loaded = new KubeConfig();
    loaded.loadFromString(input.kubeconfig);
    return loaded;
  };
  return runSweepOf("sweep", input.request, () => hostIo(input.request, config), "json");
}

/** Runs one sweep on this host and prints its report. Exit 0 when the node ends it protected, 1 when not, 2 on an error. */
export async function runSweepOf(command: string, request: SweepRequest, io: () => SweepIo, output: "table" | "json"): Promise<number> {
  try {
    const report = await sweep(request, io());
    process.stdout.write(output === "json" ? `${JSON.stringify(report, null, 2)}\n` : renderTable(report));
    return allProtected(report) ? 0 : 1;
  } catch (error) {
    process.stderr.write(`meshcni ${command}: ${errorMessage(error)}\n`);
    return 2;
  }
}
