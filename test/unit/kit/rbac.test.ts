import { describe, expect, it } from "vitest";
import { defaultManifestOptions, type ManifestOptions } from "../../../src/manifests/options.js";
import { renderManifests } from "../../../src/manifests/render.js";
import { authorizationOf, forbiddenMessage, isDiscovery, rbacAuthorizer, withNamePrefix } from "../../kit/api/rbac.js";
import type { KubeObject } from "../../kit/api/watch-hub.js";

const rbac = (options: Partial<ManifestOptions> = {}) =>
  renderManifests({ ...defaultManifestOptions, ...options }).filter((object) => /Role/.test(object.kind)) as KubeObject[];

/** `METHOD path?query` as a ServiceAccount sends it: allowed by these RBAC objects? */
const allows = (objects: KubeObject[], serviceAccount: string) => (request: string) => {
  const [method, target] = request.split(" ") as [string, string];
  const url = new URL(target, "https://api");
  return rbacAuthorizer(objects)(serviceAccount, authorizationOf(method, url.pathname, Object.fromEntries(url.searchParams)));
};

/**
 * The in-test API server's authorizer, on the RBAC `meshcni manifests` renders: what the
 * agent and the plugin may do, and what they may not, as kube-apiserver's RBAC would judge.
 */
describe("the in-test API server's RBAC, on the manifests' roles", () => {
  it("lets the agent watch its node's pods, the kubernetes Service, its Node and its ServiceAccount, get a namespace, report and mint the plugin's token in its namespace", () => {
    const agent = allows(rbac(), "meshcni/meshcni");
    for (const request of [
      "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1&watch=true",
      "GET /api/v1/namespaces/shop",
      "GET /api/v1/namespaces/meshcni/serviceaccounts?fieldSelector=metadata.name%3Dmeshcni&watch=true",
      "GET /api/v1/namespaces/default/services?fieldSelector=metadata.name%3Dkubernetes",
      "GET /api/v1/nodes?fieldSelector=metadata.name%3Dn1&watch=true",
      "PATCH /api/v1/nodes/n1/status",
      "PATCH /api/v1/nodes/n1",
      "POST /api/v1/namespaces/shop/events",
      "GET /apis/apps/v1/namespaces/meshcni/daemonsets/meshcni",
      "POST /api/v1/namespaces/meshcni/serviceaccounts/meshcni-plugin/token",
    ])
      expect(agent(request), request).toBe(true);
  });

  it("refuses the agent what the roles do not grant: any namespace or DaemonSet watch, other Services and accounts, other namespaces' DaemonSets and tokens, deletes, secrets, and what repair and the taint turn off", () => {
    const agent = allows(rbac({ repair: "redirect", startupTaint: undefined }), "meshcni/meshcni");
    for (const request of [
      "GET /api/v1/namespaces?watch=1",
      "GET /api/v1/namespaces",
      "GET /apis/apps/v1/namespaces/meshcni/daemonsets?watch=1",
      "GET /api/v1/namespaces/meshcni/serviceaccounts?watch=1",
      "GET /api/v1/namespaces/meshcni/serviceaccounts?fieldSelector=metadata.name%3Dmeshcni-plugin&watch=true",
      "GET /api/v1/namespaces/default/services",
      "GET /api/v1/namespaces/shop/services/web",
      "GET /apis/apps/v1/namespaces/shop/daemonsets/web",
      "POST /api/v1/namespaces/meshcni/serviceaccounts/meshcni/token",
      "POST /api/v1/namespaces/shop/serviceaccounts/meshcni-plugin/token",
      "DELETE /api/v1/namespaces/shop/pods/web",
      "GET /api/v1/namespaces/shop/secrets",
      "PATCH /api/v1/namespaces/shop/pods/web",
      "POST /api/v1/namespaces/shop/pods/web/eviction",
      "PATCH /api/v1/nodes/n1",
    ])
      expect(agent(request), request).toBe(false);
    const evicting = allows(rbac({ repair: "evict" }), "meshcni/meshcni");
    expect(evicting("POST /api/v1/namespaces/shop/pods/web/eviction")).toBe(true);
    expect(evicting("PATCH /api/v1/namespaces/shop/pods/web")).toBe(true);
  });

  it("lets the plugin's token get a pod, its namespace and the kubernetes Service, and nothing else; others' tokens nothing", () => {
    const plugin = allows(rbac(), "meshcni/meshcni-plugin");
    expect(plugin("GET /api/v1/namespaces/shop/pods/web")).toBe(true);
    expect(plugin("GET /api/v1/namespaces/shop")).toBe(true);
    expect(plugin("GET /api/v1/namespaces/default/services/kubernetes")).toBe(true);
    for (const request of [
      "GET /api/v1/pods",
      "GET /api/v1/namespaces/shop/pods",
      "PATCH /api/v1/nodes/n1/status",
      "GET /api/v1/namespaces/default/services/web",
    ])
      expect(plugin(request), request).toBe(false);
    expect(allows(rbac(), "other/meshcni")("GET /api/v1/namespaces/shop/pods/web")).toBe(false);
  });

  it("follows a kustomize namePrefix: the renamed ServiceAccount gets the roles, the old name nothing", () => {
    const renamed = withNamePrefix(rbac(), "staging-");
    expect(allows(renamed, "meshcni/staging-meshcni")("GET /api/v1/pods?watch=true")).toBe(true);
    expect(allows(renamed, "meshcni/meshcni")("GET /api/v1/pods?watch=true")).toBe(false);
  });

  it("lets anyone authenticated read discovery, and nothing under it", () => {
    for (const path of ["/api", "/api/v1", "/apis", "/apis/admissionregistration.k8s.io/v1", "/version"])
      expect(isDiscovery("GET", path), path).toBe(true);
    for (const path of ["/api/v1/namespaces", "/api/v1/pods", "/apis/apps/v1/daemonsets"])
      expect(isDiscovery("GET", path), path).toBe(false);
    expect(isDiscovery("POST", "/api")).toBe(false);
  });

  it("words a refusal as kube-apiserver does: the resource and name, the user, the verb, the group and the scope", () => {
    const user = "system:serviceaccount:meshcni:meshcni";
    expect(forbiddenMessage(user, authorizationOf("GET", "/api/v1/events", {}))).toBe(
      'events is forbidden: User "system:serviceaccount:meshcni:meshcni" cannot list resource "events" in API group "" at the cluster scope',
    );
    expect(forbiddenMessage(user, authorizationOf("POST", "/api/v1/namespaces/shop/pods/web/eviction", {}))).toBe(
      'pods "web" is forbidden: User "system:serviceaccount:meshcni:meshcni" cannot create resource "pods/eviction" in API group "" in the namespace "shop"',
    );
    expect(forbiddenMessage(user, authorizationOf("GET", "/apis/apps/v1/namespaces/kube-system/daemonsets/x", {}))).toBe(
      'daemonsets.apps "x" is forbidden: User "system:serviceaccount:meshcni:meshcni" cannot get resource "daemonsets" in API group "apps" in the namespace "kube-system"',
    );
  });
});
