import { errorMessage } from "../errors.js";
import { parseFlags } from "../flags.js";
import { createRedirector, hostPaths } from "../host.js";
import { cliKubeConfig, operatorError, withDeadline } from "../kube/cli-access.js";
import { inNetns } from "../netns/enter.js";
import { formatPodKey, parsePodKey, podName } from "../pod-key.js";
import { planLines, type RulePlan } from "../redirect/plan.js";
import type { Backend } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { ownLines } from "../redirect/table.js";
import { classify } from "./classify.js";
import { expectations } from "./expectation.js";
import { type HostValues, hostFlags, hostFlagsUsage, hostIo, hostValues } from "./host.js";

export const rulesUsage = `meshcni rules NAMESPACE/POD [options]   a pod's redirect as its netns holds it, beside meshcni's plan

${hostFlagsUsage}

The pod's netns is the one its ADD recorded, else the one the container runtime names for its
sandbox (--cri-socket); the plan is the recorded one, else the one ADD would compute now from
meshcni's entry in the active config.
Exit 0 when the netns holds the plan, 1 when it does not (or no netns is found), 2 on an error.
`;

/** Per family: meshcni's plan as the backend reads it back, and (with a netns) what the netns holds, as rule lines. */
async function ruleLines(netns: string | undefined, backend: Backend, plans: RulePlan[], stateDir: string) {
  const redirector = await createRedirector(backend, { stateDir });
  try {
    const found = new Map<Family, string[]>();
    if (netns !== undefined)
      await inNetns(netns, async () => {
        for (const plan of plans) found.set(plan.family, ownLines(await redirector.read(plan.family)));
      });
    return plans.map((plan) => ({ family: plan.family, planned: planLines(redirector.expected(plan)), found: found.get(plan.family) }));
  } finally {
    redirector.close();
  }
}

function indent(lines: string[]): string {
  return lines.length === 0 ? "  (none)" : lines.map((line) => `  ${line}`).join("\n");
}

export async function runRules(argv: string[]): Promise<number> {
  let parsed: { key: NonNullable<ReturnType<typeof parsePodKey>>; host: HostValues };
  try {
    const { values, positionals } = parseFlags({ args: argv, options: hostFlags, allowPositionals: true });
    const key = positionals.length === 1 ? parsePodKey(positionals[0]!) : undefined;
    if (!key) throw new Error(`expected one NAMESPACE/POD, got ${JSON.stringify(positionals.join(" "))}`);
    parsed = { key, host: hostValues(values) };
  } catch (error) {
    process.stderr.write(`meshcni rules: ${errorMessage(error)} (see meshcni rules --help)\n`);
    return 2;
  }
  const { key, host } = parsed;
  return withDeadline(host.timeoutSeconds, (signal) => printRules(key, host, signal));
}

async function printRules(key: NonNullable<ReturnType<typeof parsePodKey>>, host: HostValues, signal: AbortSignal): Promise<number> {
  try {
    const { config, target } = cliKubeConfig(host.access, process.env, signal);
    const explain = operatorError(target, host.timeoutSeconds, "list on pods, get on namespaces and services");
    const io = hostIo(host, async () => config, explain);
    const onHost = hostPaths(host.dirs.hostRoot);
    const records = io.records.list();
    const pod = (await io.api.listPods()).find((candidate) => podName(candidate) === formatPodKey(key));
    if (!pod) throw new Error(`pod ${formatPodKey(key)} is not on node ${host.node}`);
    const [entry] = await expectations([pod], records, io);
    if (!entry?.target) throw new Error(entry?.problem ?? "no plan");
    const observation = (await io.scan([entry.target])).get(entry.target.uid) ?? { found: false as const, reason: "not looked into" };
    const audit = classify(pod, entry.record, observation);
    const netns = observation.found ? onHost(observation.netns) : undefined;
    const families = await ruleLines(netns, entry.target.backend, entry.target.plans, onHost(host.dirs.stateDir));
    const planFrom = entry.record ? "its ADD record" : "meshcni's entry in the active config";
    if (host.output === "json") {
      process.stdout.write(
        `${JSON.stringify({ ...audit, netns: observation.found ? observation.netns : undefined, backend: entry.target.backend, planFrom, families }, null, 2)}\n`,
      );
    } else {
      const lines = [
        `pod ${formatPodKey(audit)} (${audit.uid}) on ${host.node}: ${audit.status}`,
        observation.found
          ? `netns ${observation.netns}, backend ${entry.target.backend}, plan from ${planFrom}`
          : `no netns: ${observation.reason}`,
      ];
      for (const { family, planned, found: held } of families) {
        if (held) lines.push("", `${family}, in its netns:`, indent(held));
        lines.push("", `${family}, meshcni's plan:`, held && held.join("\n") === planned.join("\n") ? "  (the same)" : indent(planned));
      }
      if (audit.details.length > 0) lines.push("", audit.status === "drifted" ? "differences:" : "detail:", indent(audit.details));
      process.stdout.write(`${lines.join("\n")}\n`);
    }
    return audit.status === "protected" || audit.status === "adopted" ? 0 : 1;
  } catch (error) {
    process.stderr.write(`meshcni rules: ${errorMessage(error)}\n`);
    return 2;
  }
}
