import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { hasIpv6, podCidrs, primaryNodeIp, serviceCidrs } from "./families.js";
import { apiserverPort, etcdClientUrl, paths } from "./layout.js";
import { currentLeg } from "./leg.js";
import { identities, kubeconfigOf } from "./pki.js";
import type { DaemonSpec } from "./processes.js";

/** How a test wants the control plane: an older release emulated by all of it, extra kube-apiserver flags (feature gates). */
export interface ControlPlaneOptions {
  /** major.minor: the API server, controller manager and scheduler behave as that release (its APIs, RBAC and gates). */
  emulatedVersion?: string;
  apiserverArgs?: string[];
}

const emulation = (options: ControlPlaneOptions) => (options.emulatedVersion ? [`--emulated-version=${options.emulatedVersion}`] : []);

const issuer = "https://kubernetes.default.svc.cluster.local";

/** etcd on loopback, plain HTTP (a test's data: no fsync); its gRPC gateway answers compaction requests. */
export function etcdSpec(binary: string): DaemonSpec {
  return {
    name: "etcd",
    command: binary,
    args: [
      `--data-dir=${paths.etcdData}`,
      `--listen-client-urls=${etcdClientUrl}`,
      `--advertise-client-urls=${etcdClientUrl}`,
      "--listen-peer-urls=http://127.0.0.1:2380",
      "--initial-advertise-peer-urls=http://127.0.0.1:2380",
      "--initial-cluster=default=http://127.0.0.1:2380",
      "--listen-metrics-urls=http://127.0.0.1:2381",
      "--unsafe-no-fsync",
    ],
  };
}

/**
 * kube-apiserver as a real cluster runs it: Node and RBAC authorization, NodeRestriction,
 * its own service-account keys and issuer, the kubelet reached by its InternalIP with a
 * client certificate; every request written to an audit log (Metadata level), which is
 * how the tests count what the agent asks.
 */
export function apiserverSpec(binary: string, options: ControlPlaneOptions): DaemonSpec {
  const pki = paths.pki;
  const policy = join(paths.dir, "audit-policy.yaml");
  writeFileSync(policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n");
  const kubeletClient = identities.apiserverKubeletClient.stem;
  return {
    name: "kube-apiserver",
    command: binary,
    args: [
      `--etcd-servers=${etcdClientUrl}`,
      `--bind-address=${primaryNodeIp()}`,
      `--advertise-address=${primaryNodeIp()}`,
      `--secure-port=${apiserverPort}`,
      `--service-cluster-ip-range=${serviceCidrs().join(",")}`,
      `--client-ca-file=${pki}/ca.crt`,
      `--tls-cert-file=${pki}/apiserver.crt`,
      `--tls-private-key-file=${pki}/apiserver.key`,
      `--service-account-issuer=${issuer}`,
      `--api-audiences=${issuer}`,
      `--service-account-key-file=${pki}/sa.pub`,
      `--service-account-signing-key-file=${pki}/sa.key`,
      "--authorization-mode=Node,RBAC",
      "--enable-admission-plugins=NodeRestriction",
      "--allow-privileged=true",
      `--kubelet-client-certificate=${pki}/${kubeletClient}.crt`,
      `--kubelet-client-key=${pki}/${kubeletClient}.key`,
      `--kubelet-certificate-authority=${pki}/ca.crt`,
      "--kubelet-preferred-address-types=InternalIP",
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${paths.auditLog}`,
      "--audit-log-format=json",
      ...emulation(options),
      ...(options.apiserverArgs ?? []),
    ],
  };
}

/** The controller manager: the DaemonSet, token, namespace and garbage collector controllers among the defaults. */
export function controllerManagerSpec(binary: string, options: ControlPlaneOptions): DaemonSpec {
  const kubeconfig = kubeconfigOf(identities.controllerManager);
  return {
    name: "kube-controller-manager",
    command: binary,
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      "--bind-address=127.0.0.1",
      `--root-ca-file=${paths.pki}/ca.crt`,
      `--service-account-private-key-file=${paths.pki}/sa.key`,
      "--use-service-account-credentials",
      "--leader-elect=false",
      `--service-cluster-ip-range=${serviceCidrs().join(",")}`,
      `--cluster-cidr=${podCidrs().join(",")}`,
      // A node's IPv6 block within the /64 (at most 16 bits apart, as the allocator requires).
      ...(hasIpv6() ? ["--node-cidr-mask-size-ipv6=80"] : []),
      // Calico's host-local IPAM (usePodCidr) takes the Node's podCIDR, which this allocates.
      `--allocate-node-cidrs=${currentLeg().primary === "calico"}`,
      ...emulation(options),
    ],
  };
}

export function schedulerSpec(binary: string, options: ControlPlaneOptions): DaemonSpec {
  const kubeconfig = kubeconfigOf(identities.scheduler);
  const config = join(paths.dir, "kube-scheduler.yaml");
  writeFileSync(
    config,
    `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "${kubeconfig}"}
leaderElection: {leaderElect: false}
`,
  );
  return {
    name: "kube-scheduler",
    command: binary,
    args: [
      `--config=${config}`,
      "--bind-address=127.0.0.1",
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      ...emulation(options),
    ],
  };
}

/** Compacts etcd's history up to its current revision (its gRPC gateway): every older resourceVersion is gone. */
export async function compactEtcd(): Promise<number> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${etcdClientUrl}${path}`, { method: "POST", body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`etcd ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { header: { revision: string } };
  };
  const revision = Number((await post("/v3/kv/range", { key: "AA==" })).header.revision);
  await post("/v3/kv/compaction", { revision: String(revision), physical: true });
  return revision;
}
