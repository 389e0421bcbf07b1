/** One line of `meshcni check --pre`: every check, the node's and the access checks alike, says this. */
export type Level = "ok" | "warn" | "fail";
export interface CheckResult {
  check: string;
  level: Level;
  /** What was found and, when not ok, what to do. */
  message: string;
}
