import { run } from "@bufbuild/cel";

/** An object as the API server holds it (JSON). */
type Json = Record<string, unknown>;

/** What admission sees of a request, as the API server builds it for a ValidatingAdmissionPolicy. */
export interface AdmissionRequest {
  userInfo: { username: string; groups: string[]; extra?: Record<string, string[]> };
  operation: "CREATE" | "UPDATE" | "DELETE";
  resource: { group: string; version: string; resource: string };
  subResource: string;
  namespace: string;
  name: string;
  object: Json | null;
  oldObject: Json | null;
}

/** CEL's values: JSON objects as maps, arrays as lists (what @bufbuild/cel takes). */
const toCel = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(toCel)
    : value && typeof value === "object"
      ? new Map(Object.entries(value).map(([key, entry]) => [key, toCel(entry)]))
      : value;

const evaluate = (expression: string, variables: Record<string, unknown>): unknown => {
  const result = run(expression, variables as never);
  if (result instanceof Error) throw new Error(`${expression}: ${result.message}`);
  return result;
};

type Policy = {
  metadata: { name: string };
  spec: {
    failurePolicy?: string;
    matchConstraints: { resourceRules: Array<{ apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[] }> };
    matchConditions?: Array<{ name: string; expression: string }>;
    variables?: Array<{ name: string; expression: string }>;
    validations: Array<{ expression: string; message?: string }>;
  };
};
type Binding = { metadata: { name: string }; spec: { policyName: string; validationActions: string[] } };

/**
 * ValidatingAdmissionPolicies as the API server applies them, with a real CEL evaluator:
 * a policy whose binding names it and whose resource rules and match conditions match
 * the request runs its variables and validations over `object`, `oldObject` and
 * `request`; the first false validation denies (422, as with the Invalid reason) with the
 * API server's words. An evaluation error fails the request (failurePolicy Fail).
 */
export function admit(objects: Json[], request: AdmissionRequest): { code: number; message: string } | undefined {
  const policies = objects.filter((object) => object.kind === "ValidatingAdmissionPolicy") as unknown as Policy[];
  const bindings = objects.filter((object) => object.kind === "ValidatingAdmissionPolicyBinding") as unknown as Binding[];
  const resource = request.subResource ? `${request.resource.resource}/${request.subResource}` : request.resource.resource;
  // As kube-apiserver builds it: an empty field (no subresource, no namespace) is absent, and reading it an error.
  const { object: _object, oldObject: _oldObject, ...fields } = request;
  const celRequest = toCel(Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== "")));
  for (const binding of bindings) {
    const policy = policies.find((candidate) => candidate.metadata.name === binding.spec.policyName);
    if (!policy || !binding.spec.validationActions.includes("Deny")) continue;
    const matches = policy.spec.matchConstraints.resourceRules.some(
      (rule) =>
        rule.apiGroups.includes(request.resource.group) &&
        (rule.apiVersions.includes("*") || rule.apiVersions.includes(request.resource.version)) &&
        (rule.operations.includes("*") || rule.operations.includes(request.operation)) &&
        rule.resources.includes(resource),
    );
    if (!matches) continue;
    const base = { request: celRequest, object: toCel(request.object), oldObject: toCel(request.oldObject), params: null };
    const denied = (message: string) => ({
      code: 422,
      message: `ValidatingAdmissionPolicy '${policy.metadata.name}' with binding '${binding.metadata.name}' denied request: ${message}`,
    });
    try {
      if (!(policy.spec.matchConditions ?? []).every((condition) => evaluate(condition.expression, base) === true)) continue;
      const variables = new Map<string, unknown>();
      for (const variable of policy.spec.variables ?? [])
        variables.set(variable.name, evaluate(variable.expression, { ...base, variables }));
      for (const validation of policy.spec.validations) {
        if (evaluate(validation.expression, { ...base, variables }) !== true)
          return denied(validation.message ?? `failed expression: ${validation.expression}`);
      }
    } catch (error) {
      return denied(`expression evaluation failed: ${(error as Error).message}`);
    }
  }
  return undefined;
}
