import { join } from "node:path";
import { parseArgs } from "node:util";
import { errorMessage } from "../errors.js";
import type { Backend } from "../iptables/backend.js";
import { createIptablesRunner } from "../iptables/exec.js";
import { planLines, type RulePlan } from "../iptables/plan.js";
import { ownLines, parseNatTable } from "../iptables/save.js";
import type { Family } from "../iptables/types.js";
import { inNetns } from "../netns/enter.js";
import { formatPodKey, parsePodKey, podName } from "../pod-key.js";
import { locksDir } from "../state/records.js";
import { classify } from "./classify.js";
import { hostFlags, hostFlagsUsage, hostIo, hostValues } from "./host.js";
import { expectations } from "./sweep.js";

export const rulesUsage = `meshcni rules NAMESPACE/POD [options]   a pod's redirect as its netns holds it, beside meshcni's plan

${hostFlagsUsage}

The pod's netns is the one its ADD recorded, else the one holding its IP; the plan is the
recorded one, else the one ADD would compute now from meshcni's entry in the active config.
Exit 0 when the netns holds the plan, 1 when it does not (or no netns is found), 2 on an error.
`;

/** The nat rules of our redirect in one netns, per family. */
async function readRules(
  netns: string,
  backend: Backend,
  families: Family[],
  stateDir: string,
): Promise<Partial<Record<Family, string[]>>> {
  const runner = await createIptablesRunner(backend, { wait: false, lockDir: locksDir(stateDir) });
  try {
    return await inNetns(netns, async () => {
      const found: Partial<Record<Family, string[]>> = {};
      for (const family of families) found[family] = ownLines(parseNatTable(await runner.save(family)));
      return found;
    });
  } finally {
    runner.close();
  }
}

function indent(lines: string[]): string {
  return lines.length === 0 ? "  (none)" : lines.map((line) => `  ${line}`).join("\n");
}

export async function runRules(argv: string[]): Promise<number> {
  let parsed: { key: NonNullable<ReturnType<typeof parsePodKey>>; host: ReturnType<typeof hostValues> };
  try {
    const { values, positionals } = parseArgs({ args: argv, options: hostFlags, allowPositionals: true });
    const key = positionals.length === 1 ? parsePodKey(positionals[0]!) : undefined;
    if (!key) throw new Error(`expected one NAMESPACE/POD, got ${JSON.stringify(positionals.join(" "))}`);
    parsed = { key, host: hostValues(values) };
  } catch (error) {
    process.stderr.write(`meshcni rules: ${errorMessage(error)} (see meshcni rules --help)\n`);
    return 2;
  }
  const { key, host } = parsed;
  try {
    const io = hostIo(host);
    const onHost = (path: string) => join(host.hostRoot || "/", path);
    const records = io.records.list();
    const pod = (await io.api.listPods()).find((candidate) => podName(candidate) === formatPodKey(key));
    if (!pod) throw new Error(`pod ${formatPodKey(key)} is not on node ${host.node}`);
    const [entry] = await expectations([pod], records, io);
    if (!entry?.target) throw new Error(entry?.problem ?? "no plan");
    const observation = (await io.scan([entry.target])).get(entry.target.uid) ?? { found: false as const, reason: "not looked into" };
    const audit = classify(pod, entry.record, observation);
    const plans: RulePlan[] = entry.target.plans;
    const found = observation.found
      ? await readRules(
          onHost(observation.netns),
          entry.target.backend,
          plans.map((plan) => plan.family),
          onHost(host["state-dir"]),
        )
      : {};
    const families = plans.map((plan) => ({ family: plan.family, planned: planLines(plan), found: found[plan.family] }));
    const planFrom = entry.record ? "its ADD record" : "meshcni's entry in the active config";
    if (host.output === "json") {
      const netns = observation.found ? observation.netns : undefined;
      process.stdout.write(`${JSON.stringify({ ...audit, netns, backend: entry.target.backend, planFrom, families }, null, 2)}\n`);
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
