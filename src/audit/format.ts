import { columns } from "../columns.js";
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
  const table = columns([header, ...rows]);
  const indent = " ".repeat(table.lastColumnAt);
  const lines = [table.lines[0]!];
  report.pods.forEach((pod, index) => {
    lines.push(table.lines[index + 1]!);
    for (const more of notes(pod).slice(1)) lines.push(`${indent}${more}`);
  });
  const counts = podStatuses.map((status) => `${report.summary[status]} ${status}`).join(", ");
  const removed = Object.values(report.recordsRemoved).reduce((sum, count) => sum + count, 0);
  lines.push(
    "",
    `node ${report.node}: ${report.pods.length} meshed pods, ${counts}${removed > 0 ? `; ${removed} stale records removed` : ""}`,
  );
  return `${lines.join("\n")}\n`;
}
