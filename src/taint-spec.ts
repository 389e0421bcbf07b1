/** The startup taint as kubectl writes it: the agent's --startup-taint, and what `meshcni manifests` renders for it. */
export interface TaintSpec {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
}

export const taintEffects = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;
/** kubectl's form `key[=value][:Effect]` as a pattern (key, value and effect captured), the effect matching `effect`. */
export const taintPattern = (effect: string) => `^([A-Za-z0-9./_-]+)(?:=([A-Za-z0-9._-]*))?(?::(${effect}))?$`;
/** The form with any word as its effect, checked against taintEffects to name the wrong one. */
const taintForm = new RegExp(taintPattern("[A-Za-z]+"));

/** Parses kubectl's form `key[=value][:Effect]`; the effect defaults to NoSchedule. */
export function parseTaint(text: string): TaintSpec {
  const match = taintForm.exec(text);
  const effect = (match?.[3] ?? "NoSchedule") as TaintSpec["effect"];
  if (!match || !taintEffects.includes(effect)) {
    throw new Error(`--startup-taint must look like key[=value][:${taintEffects.join("|")}], not ${JSON.stringify(text)}`);
  }
  return { key: match[1]!, ...(match[2] ? { value: match[2] } : {}), effect };
}
