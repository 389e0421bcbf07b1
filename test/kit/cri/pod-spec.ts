import type { IDaemonSet } from "kubernetes-models/apps/v1";
import type { ContainerConfig } from "./client.js";

/** What kubelet adds to a pod's spec when it asks the runtime for a container. */
export interface KubeletSide {
  pod: { name: string; namespace: string; nodeName: string };
  /** The ConfigMaps the env refers to, by name: their data. */
  configMaps: Record<string, Record<string, string>>;
  /** The API server's address as kubelet puts it in every container's env (KUBERNETES_SERVICE_HOST, _PORT). */
  serviceEnv: Record<string, string>;
  /** The projected ServiceAccount token and CA, on the host. */
  serviceAccountDir: string;
  /** Where this host keeps a hostPath (identity on a real node; a test's temp dir where it must not touch the host's). */
  hostPath: (path: string) => string;
  logPath: string;
}

const propagations = {
  HostToContainer: "PROPAGATION_HOST_TO_CONTAINER",
  Bidirectional: "PROPAGATION_BIDIRECTIONAL",
  None: "PROPAGATION_PRIVATE",
} as const;

/** The downward API's fields a container's env may name. */
const fieldOf = (path: string, pod: KubeletSide["pod"]) =>
  ({ "metadata.name": pod.name, "metadata.namespace": pod.namespace, "spec.nodeName": pod.nodeName })[path];

/**
 * A DaemonSet's container as kubelet hands it to the runtime (CRI CreateContainer): its
 * command and args, its env with the downward API's values and the ConfigMap keys filled
 * in, its hostPath mounts, the projected token, and its security context (capabilities,
 * privilege, user, read-only root, no_new_privs, the pod's or its own seccomp profile).
 * What the spec holds that this cannot carry out is an error, not left out.
 */
export function containerOf(daemonSet: IDaemonSet, name: string, kubelet: KubeletSide): ContainerConfig {
  const podSpec = daemonSet.spec!.template.spec!;
  const container = podSpec.containers.find((candidate) => candidate.name === name);
  if (!container) throw new Error(`no container ${name} in DaemonSet ${daemonSet.metadata?.name}`);
  const envs = (container.env ?? []).map(({ name, value, valueFrom }) => {
    const resolved =
      value ??
      (valueFrom?.fieldRef ? fieldOf(valueFrom.fieldRef.fieldPath, kubelet.pod) : undefined) ??
      (valueFrom?.configMapKeyRef ? kubelet.configMaps[valueFrom.configMapKeyRef.name ?? ""]?.[valueFrom.configMapKeyRef.key] : undefined);
    if (resolved === undefined) throw new Error(`env ${name}: kubelet here cannot fill ${JSON.stringify(valueFrom)}`);
    return { key: name, value: resolved };
  });
  const mounts = (container.volumeMounts ?? []).map((mount) => {
    const volume = podSpec.volumes?.find((candidate) => candidate.name === mount.name);
    if (!volume?.hostPath) throw new Error(`volume ${mount.name}: only hostPath volumes are carried out here`);
    return {
      containerPath: mount.mountPath,
      hostPath: kubelet.hostPath(volume.hostPath.path),
      readonly: mount.readOnly ?? false,
      propagation: propagations[(mount.mountPropagation ?? "None") as keyof typeof propagations],
    };
  });
  const security = container.securityContext ?? {};
  const seccomp = security.seccompProfile ?? podSpec.securityContext?.seccompProfile;
  return {
    metadata: { name },
    image: { image: container.image! },
    command: container.command ?? [],
    args: container.args ?? [],
    envs: [...envs, ...Object.entries(kubelet.serviceEnv).map(([key, value]) => ({ key, value }))],
    mounts: [
      ...mounts,
      { containerPath: "/var/run/secrets/kubernetes.io/serviceaccount", hostPath: kubelet.serviceAccountDir, readonly: true },
    ],
    logPath: kubelet.logPath,
    linux: {
      securityContext: {
        capabilities: { addCapabilities: security.capabilities?.add ?? [], dropCapabilities: security.capabilities?.drop ?? [] },
        privileged: security.privileged ?? false,
        ...(security.runAsUser === undefined ? {} : { runAsUser: { value: security.runAsUser } }),
        readonlyRootfs: security.readOnlyRootFilesystem ?? false,
        noNewPrivs: security.allowPrivilegeEscalation === false,
        ...(seccomp ? { seccomp: { profileType: seccomp.type as "RuntimeDefault" | "Unconfined" | "Localhost" } } : {}),
      },
    },
  };
}
