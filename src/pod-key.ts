/**
 * Which pod: as the runtime names it in CNI_ARGS, as the API returns it, as an ADD
 * record keeps it. The UID tells a pod from a later one of the same name.
 */
export interface PodKey {
  namespace: string;
  name: string;
  uid?: string;
}

type PodLike = { metadata?: { namespace?: string | undefined; name?: string | undefined; uid?: string | undefined } | undefined };

export function podKeyOf(pod: PodLike): PodKey {
  const { namespace = "", name = "", uid } = pod.metadata ?? {};
  return uid ? { namespace, name, uid } : { namespace, name };
}

/** `namespace/name`, as kubectl and the CLI's --pod write it. */
export function formatPodKey(key: PodKey): string {
  return `${key.namespace}/${key.name}`;
}

/** A pod object's `namespace/name`. */
export function podName(pod: PodLike): string {
  return formatPodKey(podKeyOf(pod));
}

/** Reads `namespace/name`; undefined when it is not that. */
export function parsePodKey(text: string): PodKey | undefined {
  const match = /^([^/\s]+)\/([^/\s]+)$/.exec(text);
  return match ? { namespace: match[1]!, name: match[2]! } : undefined;
}

export function isSamePod(a: PodKey, b: PodKey): boolean {
  return a.namespace === b.namespace && a.name === b.name;
}
