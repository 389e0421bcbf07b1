import type { BaseIssue } from "valibot";
import * as v from "valibot";

/** A whole number, zero or more: counts, generations, inodes. */
export const nonNegativeInteger = v.pipe(v.number(), v.integer(), v.minValue(0));

/** Where a schema issue is, as a reader writes it: `linkerd.inbound-ports-to-ignore[1]`. */
export function describeIssuePath(issue: BaseIssue<unknown>): string {
  return (issue.path ?? []).reduce<string>(
    (text, item) => (typeof item.key === "number" ? `${text}[${item.key}]` : text ? `${text}.${String(item.key)}` : String(item.key)),
    "",
  );
}

/** valibot's type names, as a reader says them. */
const typeWords: Record<string, string> = {
  Array: "a list",
  boolean: "true or false",
  number: "a number",
  string: "a string",
  Object: "an object",
};

/**
 * A schema issue in our words: valibot's own for a wrong type read "Invalid type: Expected
 * Array but received "x""; ours, "must be a list, not "x"". Our schemas' own messages pass as they are.
 */
export function issueMessage(issue: BaseIssue<unknown>): string {
  if (issue.kind !== "schema" || !issue.message.startsWith("Invalid ")) return issue.message;
  const choices = /^\((.*)\)$/.exec(issue.expected ?? "")?.[1];
  const expected = choices
    ? `one of ${choices.split(" | ").join(", ")}`
    : (typeWords[issue.expected ?? ""] ?? (issue.expected === "never" ? "absent" : issue.expected));
  return `must be ${expected}, not ${issue.received}`;
}
