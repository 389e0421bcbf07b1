import type { PodAudit, PodStatus } from "./classify.js";

export interface AuditReport {
  node: string;
  pods: PodAudit[];
  summary: Record<PodStatus, number>;
}

export function report(node: string, pods: PodAudit[]): AuditReport {
  const summary: Record<PodStatus, number> = { protected: 0, missing: 0, drifted: 0, unknown: 0 };
  for (const pod of pods) summary[pod.status]++;
  return { node, pods, summary };
}

/** One row per pod; a drifted pod's differences follow on indented lines. */
export function renderTable(audit: AuditReport): string {
  const rows = [
    ["NAMESPACE", "POD", "STATUS", "DETAIL"],
    ...audit.pods.map((pod) => [pod.namespace, pod.name, pod.status, pod.details[0] ?? ""]),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  const lines: string[] = [];
  rows.forEach((row, index) => {
    lines.push(
      row
        .map((cell, column) => (column < 3 ? cell.padEnd(widths[column]!) : cell))
        .join("  ")
        .trimEnd(),
    );
    for (const more of index === 0 ? [] : audit.pods[index - 1]!.details.slice(1))
      lines.push(`${" ".repeat(widths[0]! + widths[1]! + widths[2]! + 6)}${more}`);
  });
  const { summary } = audit;
  lines.push(
    "",
    `node ${audit.node}: ${audit.pods.length} meshed pods, ${summary.protected} protected, ${summary.missing} missing, ${summary.drifted} drifted, ${summary.unknown} unknown`,
  );
  return `${lines.join("\n")}\n`;
}
