import { PodMonitor, PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import { ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding } from "kubernetes-models/admissionregistration.k8s.io/v1";
import { DaemonSet } from "kubernetes-models/apps/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { ConfigMap, Namespace, ServiceAccount } from "kubernetes-models/v1";
import { expect } from "vitest";

const models: Record<string, new (data: never) => { validate(): void }> = {
  DaemonSet: DaemonSet as never,
  ClusterRole: ClusterRole as never,
  ClusterRoleBinding: ClusterRoleBinding as never,
  Role: Role as never,
  RoleBinding: RoleBinding as never,
  ConfigMap: ConfigMap as never,
  Namespace: Namespace as never,
  ServiceAccount: ServiceAccount as never,
  PodMonitor: PodMonitor as never,
  PrometheusRule: PrometheusRule as never,
  ValidatingAdmissionPolicy: ValidatingAdmissionPolicy as never,
  ValidatingAdmissionPolicyBinding: ValidatingAdmissionPolicyBinding as never,
};

/** Each object against the Kubernetes OpenAPI schema (and the Prometheus Operator's CRD schema), offline. */
export function expectValid(manifests: Array<{ kind: string; metadata: { name: string } }>): void {
  for (const manifest of manifests) {
    const Model = models[manifest.kind];
    expect(Model, `no schema for ${manifest.kind}`).toBeDefined();
    expect(() => new Model!(manifest as never).validate(), `${manifest.kind}/${manifest.metadata.name}`).not.toThrow();
  }
}
