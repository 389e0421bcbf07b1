import type { KubeObject } from "./watch-hub.js";

/** An RBAC rule, as a Role or ClusterRole holds it. */
export interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** A request as the API server's authorizer sees it (its RequestInfo). */
export interface AuthorizationRequest {
  verb: string;
  group: string;
  resource: string;
  name: string | undefined;
  /** undefined: a cluster-scoped request. */
  namespace: string | undefined;
}

/** The one object a `metadata.name=` field selector names (undefined: none named). */
export const selectedName = (query: Record<string, string>) => /(?:^|,)metadata\.name=([^,]+)/.exec(query.fieldSelector ?? "")?.[1];

/**
 * The RBAC attributes of a request, as k8s.io/apiserver's RequestInfoFactory makes them:
 * GET of a collection is list (watch with ?watch=true), of one object get; a list or watch
 * whose fieldSelector names one object (metadata.name=X) is asked for X, so a rule with
 * resourceNames allows it; a POST to a subresource (eviction, token) creates that.
 */
export function authorizationOf(method: string, path: string, query: Record<string, string>): AuthorizationRequest {
  const parts = path.split("/").filter(Boolean);
  const group = parts[0] === "apis" ? parts[1]! : "";
  let rest = parts.slice(parts[0] === "apis" ? 3 : 2);
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length > 2) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource = "", name, subresource] = rest;
  const verb =
    method === "GET"
      ? name === undefined
        ? query.watch === "true" || query.watch === "1"
          ? "watch"
          : "list"
        : "get"
      : ({ POST: "create", PATCH: "patch", PUT: "update", DELETE: "delete" }[method] ?? method.toLowerCase());
  const named = selectedName(query);
  return {
    verb,
    group,
    namespace,
    resource: subresource ? `${resource}/${subresource}` : resource,
    name: verb === "list" || verb === "watch" ? named : subresource || verb !== "create" ? name : undefined,
  };
}

/**
 * The message of kube-apiserver's 403 for a request RBAC denied (k8s.io/apiserver's
 * forbiddenMessage inside apierrors.NewForbidden): `pods "web" is forbidden: User "…" cannot
 * create resource "pods/eviction" in API group "" in the namespace "shop"`.
 */
export function forbiddenMessage(username: string, request: AuthorizationRequest): string {
  const [resource = ""] = request.resource.split("/");
  const qualified = request.group ? `${resource}.${request.group}` : resource;
  const scope = request.namespace ? `in the namespace ${JSON.stringify(request.namespace)}` : "at the cluster scope";
  const what = request.name ? `${qualified} ${JSON.stringify(request.name)}` : qualified;
  return `${what} is forbidden: User ${JSON.stringify(username)} cannot ${request.verb} resource ${JSON.stringify(request.resource)} in API group ${JSON.stringify(request.group)} ${scope}`;
}

/**
 * Discovery (/api, /apis, a group, a group version) and /version: every authenticated user
 * may GET them, by the system:discovery ClusterRole bound to system:authenticated.
 */
export const isDiscovery = (method: string, path: string) =>
  method === "GET" && (/^\/(api|apis)(\/[^/]+){0,2}\/?$/.test(path) || path === "/version") && !/^\/api\/v1\/.+/.test(path);

export function allowedBy(rules: RbacRule[], request: Omit<AuthorizationRequest, "namespace">): boolean {
  return rules.some(
    (rule) =>
      rule.apiGroups.includes(request.group) &&
      rule.resources.includes(request.resource) &&
      rule.verbs.includes(request.verb) &&
      (!rule.resourceNames || (request.name !== undefined && rule.resourceNames.includes(request.name))),
  );
}

type Subject = { kind: string; name: string; namespace?: string };
type Binding = KubeObject & { subjects?: Subject[]; roleRef: { kind: string; name: string } };
type Role = KubeObject & { rules?: RbacRule[] };

/** The role a binding refers to: a ClusterRole by name, or a Role by name in the binding's own namespace. */
function roleOf(objects: KubeObject[], binding: Binding): Role | undefined {
  const { kind, name } = binding.roleRef;
  return objects.find(
    (object) =>
      object.kind === kind &&
      object.metadata?.name === name &&
      (kind === "ClusterRole" || object.metadata?.namespace === binding.metadata?.namespace),
  ) as Role | undefined;
}

/** The rules of every role bound to a ServiceAccount (`namespace/name`) by the bindings `applies` keeps. */
function boundRules(objects: KubeObject[], serviceAccount: string, applies: (binding: Binding) => boolean): RbacRule[] {
  return (objects as Binding[])
    .filter(
      (binding) =>
        /^(Cluster)?RoleBinding$/.test(String(binding.kind)) &&
        applies(binding) &&
        (binding.subjects ?? []).some(
          (subject) => subject.kind === "ServiceAccount" && `${subject.namespace}/${subject.name}` === serviceAccount,
        ),
    )
    .flatMap((binding) => roleOf(objects, binding)?.rules ?? []);
}

/**
 * RBAC as kube-apiserver's authorizer applies it to a ServiceAccount (`namespace/name`),
 * from Roles, ClusterRoles and their bindings as manifests hold them: a ClusterRoleBinding
 * grants its ClusterRole everywhere, a RoleBinding its Role (or a ClusterRole) in its own
 * namespace only. Nothing else is allowed.
 */
export function rbacAuthorizer(objects: KubeObject[]): (serviceAccount: string, request: AuthorizationRequest) => boolean {
  return (serviceAccount, request) =>
    allowedBy(
      boundRules(
        objects,
        serviceAccount,
        (binding) =>
          binding.kind === "ClusterRoleBinding" || (request.namespace !== undefined && binding.metadata?.namespace === request.namespace),
      ),
      request,
    );
}

/** A permission as `verb resource` (`verb group/resource` outside the core group), for comparing what is granted with what is used. */
export const permissionOf = ({ verb, group, resource }: { verb: string; group: string; resource: string }) =>
  `${verb} ${group ? `${group}/` : ""}${resource}`;

/** Every permission these RBAC objects grant a ServiceAccount (`namespace/name`), in any namespace. */
export function grantsOf(objects: KubeObject[], serviceAccount: string): string[] {
  const rules = boundRules(objects, serviceAccount, () => true);
  const permissions = rules.flatMap((rule) =>
    rule.verbs.flatMap((verb) =>
      rule.apiGroups.flatMap((group) => rule.resources.map((resource) => permissionOf({ verb, group, resource }))),
    ),
  );
  return [...new Set(permissions)];
}

/** RBAC objects as kustomize's namePrefix leaves them: every name prefixed, and the references to them (roleRef, ServiceAccount subjects). */
export function withNamePrefix(objects: KubeObject[], prefix: string): KubeObject[] {
  if (!prefix) return objects;
  return objects.map((object) => {
    const binding = object as Binding;
    return {
      ...object,
      metadata: { ...object.metadata, name: `${prefix}${object.metadata?.name}` },
      ...(binding.roleRef ? { roleRef: { ...binding.roleRef, name: `${prefix}${binding.roleRef.name}` } } : {}),
      ...(binding.subjects
        ? {
            subjects: binding.subjects.map((subject) =>
              subject.kind === "ServiceAccount" ? { ...subject, name: `${prefix}${subject.name}` } : subject,
            ),
          }
        : {}),
    };
  });
}
