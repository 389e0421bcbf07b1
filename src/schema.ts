import type { BaseIssue } from "valibot";

/** Where a schema issue is, as a reader writes it: `linkerd.inbound-ports-to-ignore[1]`. */
export function describeIssuePath(issue: BaseIssue<unknown>): string {
  return (issue.path ?? []).reduce<string>(
    (text, item) => (typeof item.key === "number" ? `${text}[${item.key}]` : text ? `${text}.${String(item.key)}` : String(item.key)),
    "",
  );
}
