import { selectedName } from "./rbac.js";
import { type ApiRequest, failure, jsonPatch, mergePatch, nodeStatusPatch, ok, type Reply } from "./replies.js";
import type { FakeApiServer, MintedToken } from "./server.js";
import type { KubeObject } from "./watch-hub.js";

/**
 * The rest of what meshcni asks of kube-apiserver: the `kubernetes` Service, discovery of
 * admissionregistration.k8s.io/v1, a ConfigMap (read), DaemonSets and ServiceAccounts (read, listed, watched), Nodes (read, watched, patched: the node
 * by merge or JSON patch, its status by strategic merge, conditional on a given
 * resourceVersion, through admission, dry runs answered and not stored), namespaces and
 * TokenRequest (bound to a Node where the server can).
 */
export function clusterRoutes(server: FakeApiServer, { method, path, query, body, res, who, contentType }: ApiRequest): Reply | undefined {
  const services = /^\/api\/v1\/namespaces\/([^/]+)\/services$/.exec(path);
  if (services && method === "GET") return namespacedCollection(server, { path, query, res }, services[1]!, "Service", server.services);
  const service = /^\/api\/v1\/namespaces\/([^/]+)\/services\/([^/]+)$/.exec(path);
  if (service && method === "GET") {
    const found = server.services.get(`${service[1]}/${service[2]}`);
    return found ? ok(found) : failure(404, "NotFound", `services "${service[2]}" not found`);
  }
  if (path === "/apis/admissionregistration.k8s.io/v1" && method === "GET") {
    // Discovery, as a 1.30+ server answers it (ValidatingAdmissionPolicy GA), or an older one.
    const resource = (name: string, kind: string) => ({
      name,
      singularName: "",
      namespaced: false,
      kind,
      verbs: ["get", "list", "watch"],
    });
    const resources = [resource("validatingwebhookconfigurations", "ValidatingWebhookConfiguration")];
    if (server.servesAdmissionPolicies ?? server.admissionPolicies.length > 0)
      resources.push(resource("validatingadmissionpolicies", "ValidatingAdmissionPolicy"));
    return ok({ kind: "APIResourceList", apiVersion: "v1", groupVersion: "admissionregistration.k8s.io/v1", resources });
  }
  const configMap = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps\/([^/]+)$/.exec(path);
  if (configMap && method === "GET") {
    const found = server.configMaps.get(`${configMap[1]}/${configMap[2]}`);
    return found ? ok(found) : failure(404, "NotFound", `configmaps "${configMap[2]}" not found`);
  }
  const daemonSets = /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/daemonsets$/.exec(path);
  if (daemonSets && method === "GET")
    return namespacedCollection(server, { path, query, res }, daemonSets[1]!, "DaemonSet", server.daemonSets);
  const daemonSet = /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/daemonsets\/([^/]+)$/.exec(path);
  if (daemonSet && method === "GET") {
    const found = server.daemonSets.get(`${daemonSet[1]}/${daemonSet[2]}`);
    return found ? ok(found) : failure(404, "NotFound", `daemonsets.apps "${daemonSet[2]}" not found`);
  }
  const serviceAccounts = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts$/.exec(path);
  if (serviceAccounts && method === "GET")
    return namespacedCollection(server, { path, query, res }, serviceAccounts[1]!, "ServiceAccount", server.serviceAccounts);
  const serviceAccount = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts\/([^/]+)$/.exec(path);
  if (serviceAccount && method === "GET") {
    const found = server.serviceAccounts.get(`${serviceAccount[1]}/${serviceAccount[2]}`);
    return found ? ok(found) : failure(404, "NotFound", `serviceaccounts "${serviceAccount[2]}" not found`);
  }
  const node = /^\/api\/v1\/nodes\/([^/]+)(\/status)?$/.exec(path);
  if (node) {
    const [, name = "", status] = node;
    const found = server.nodes.get(name);
    if (!found) return failure(404, "NotFound", `nodes "${name}" not found`);
    if (method === "GET" && !status) return ok(found);
    if (method !== "PATCH") return failure(405, "MethodNotAllowed", `${method} is not supported here`);
    // The node's status takes a strategic merge (conditions by type); the node itself a merge patch (or a JSON patch).
    if (status && !contentType.startsWith("application/strategic-merge-patch+json"))
      return failure(415, "UnsupportedMediaType", "the body of the request was in an unknown format");
    const asJsonPatch = contentType.startsWith("application/json-patch+json");
    // A patch naming metadata.resourceVersion is conditional on it, as in kube-apiserver.
    const expected = asJsonPatch ? undefined : (body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (expected !== undefined && expected !== found.metadata?.resourceVersion)
      return failure(
        409,
        "Conflict",
        `Operation cannot be fulfilled on nodes "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    const patched = status
      ? nodeStatusPatch(found, body as never)
      : asJsonPatch
        ? jsonPatch(found, body as never)
        : (mergePatch(found, body) as KubeObject);
    if (typeof patched === "string") return failure(422, "Invalid", patched);
    const denied = server.admission(who, "UPDATE", "nodes", status ? "status" : "", patched, found);
    if (denied) return denied;
    // A dry run goes through admission and is answered, never stored.
    if (query.dryRun === "All") return ok(patched);
    return ok(server.patchedNode(name, patched));
  }
  if (path === "/api/v1/namespaces" && method === "GET") {
    if (query.watch === "true") return server.watch("Namespace", path, query, res, () => true);
    return server.page("NamespaceList", [...server.namespaces.values()], query);
  }
  if (path === "/api/v1/nodes" && method === "GET") {
    const name = selectedName(query);
    const named = (node: KubeObject) => name === undefined || node.metadata?.name === name;
    if (query.watch === "true") return server.watch("Node", path, query, res, named);
    return server.page("NodeList", [...server.nodes.values()].filter(named), query);
  }
  const tokenRequest = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts\/([^/]+)\/token$/.exec(path);
  if (tokenRequest && method === "POST") {
    const spec = (body as { spec?: { expirationSeconds?: number; boundObjectRef?: { kind?: string; name?: string } } } | undefined)?.spec;
    const seconds = spec?.expirationSeconds ?? 3600;
    if (seconds < 600)
      return failure(
        422,
        "Invalid",
        `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: ${seconds}: may not specify a duration less than 10 minutes`,
      );
    // Admission after the request's validation, before the bound object is looked at (as TokenREST.Create).
    const request = { ...(body as KubeObject), metadata: { namespace: tokenRequest[1]! }, spec: { ...spec, expirationSeconds: seconds } };
    const denied = server.admission(who, "CREATE", "serviceaccounts", "token", request, null);
    if (denied) return denied;
    let boundNode: MintedToken["boundNode"];
    const bound = spec?.boundObjectRef;
    if (bound) {
      if (bound.kind !== "Node")
        return failure(
          422,
          "Invalid",
          `spec.boundObjectRef.kind: Unsupported value: "${bound.kind}": supported values: "Pod", "Secret", "Node"`,
        );
      // As kube-apiserver answers where the ServiceAccountTokenNodeBinding gate is off (its default before 1.31).
      if (!server.nodeBoundTokens)
        return failure(
          400,
          "BadRequest",
          'cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" feature-gate is disabled',
        );
      const node = server.nodes.get(bound.name ?? "");
      if (!node) return failure(404, "NotFound", `nodes "${bound.name}" not found`);
      boundNode = { name: bound.name!, uid: String(node.metadata?.uid) };
    }
    const token = `minted-${server.minted.size + 1}-${Math.random().toString(36).slice(2)}`;
    const expires = server.now() + Math.min(seconds, server.maxTokenSeconds) * 1000;
    server.minted.set(token, { serviceAccount: `${tokenRequest[1]}/${tokenRequest[2]}`, expires, ...(boundNode ? { boundNode } : {}) });
    return ok(
      {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        metadata: { name: tokenRequest[2], namespace: tokenRequest[1] },
        spec: { expirationSeconds: seconds },
        status: { token, expirationTimestamp: new Date(expires).toISOString().replace(/\.\d{3}Z$/, "Z") },
      },
      201,
    );
  }
  const namespace = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
  const found = method === "GET" && namespace ? server.namespaces.get(namespace[1]!) : undefined;
  return found ? ok(found) : failure(404, "NotFound", `${path} not found`);
}

/** A namespace's objects of one kind, listed (a page at a time) or watched, narrowed by a `metadata.name=` field selector. */
function namespacedCollection(
  server: FakeApiServer,
  { path, query, res }: Pick<ApiRequest, "path" | "query" | "res">,
  namespace: string,
  kind: "Service" | "DaemonSet" | "ServiceAccount",
  objects: Map<string, KubeObject>,
): Reply | undefined {
  const name = selectedName(query);
  const matches = (object: KubeObject) =>
    object.metadata?.namespace === namespace && (name === undefined || object.metadata?.name === name);
  if (query.watch === "true") return server.watch(kind, path, query, res, matches);
  return server.page(`${kind}List`, [...objects.values()].filter(matches), query);
}
