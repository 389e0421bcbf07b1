import { podStatuses } from "./classify.js";
import type { PodReport, SweepReport } from "./contract.js";
import { resultKind } from "./repair.js";

function actionText(pod: PodReport): string {
  if (pod.skipped) return "left alone";
  if (!pod.action) return "";
  const kind = resultKind(pod.result);
  return kind === "done" ? pod.action : `${pod.action} (${kind})`;
}

/** What a pod's row says beyond its status: the differences, why it was left alone, what failed. */
function notes(pod: PodReport): string[] {
  return [
    ...pod.details,
    ...(pod.skipped ? [`left alone: ${pod.skipped}`] : []),
    ...(typeof pod.result === "object" && "failed" in pod.result
      ? [`${pod.action} failed${pod.result.permanent ? " for good" : ""}: ${pod.result.failed}`]
      : []),
    ...(typeof pod.result === "object" && "throttledMs" in pod.result
      ? [`the API server is throttling: tried again in ${Math.ceil(pod.result.throttledMs / 1000)} s`]
      : []),
    ...(pod.result === "blocked" ? ["eviction blocked by a PodDisruptionBudget: tried again at the next sweep"] : []),
    ...(pod.eventFailed ? [`no Event: ${pod.eventFailed}`] : []),
  ];
}

/** One row per pod (with an ACTION column in a sweep); further notes follow on indented lines. */
export function renderTable(report: SweepReport): string {
  const withActions = report.pods.some((pod) => pod.action || pod.skipped);
  const header = ["NAMESPACE", "POD", "STATUS", ...(withActions ? ["ACTION"] : []), "DETAIL"];
  const rows = report.pods.map((pod) => [
    pod.namespace,
    pod.name,
    pod.status,
    ...(withActions ? [actionText(pod)] : []),
    notes(pod)[0] ?? "",
  ]);
  const padded = header.length - 1;
  const widths = header.slice(0, padded).map((_, column) => Math.max(...[header, ...rows].map((row) => row[column]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, column) => (column < padded ? cell.padEnd(widths[column]!) : cell))
      .join("  ")
      .trimEnd();
  const indent = " ".repeat(widths.reduce((sum, width) => sum + width + 2, 0));
  const lines = [line(header)];
  report.pods.forEach((pod, index) => {
    lines.push(line(rows[index]!));
    for (const more of notes(pod).slice(1)) lines.push(`${indent}${more}`);
  });
  const counts = podStatuses.map((status) => `${report.summary[status]} ${status}`).join(", ");
  const removed = report.recordsRemoved.podGone + report.recordsRemoved.netnsGone;
  lines.push(
    "",
    `node ${report.node}: ${report.pods.length} meshed pods, ${counts}${removed > 0 ? `; ${removed} stale records removed` : ""}`,
  );
  return `${lines.join("\n")}\n`;
}
