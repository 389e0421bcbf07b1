import { apiserverPort, nodeIp, nodeIp6, podCidr, podCidr6, serviceCidr, serviceCidr6 } from "./layout.js";
import { currentLeg, type Leg } from "./leg.js";

/** Whether the leg's cluster has IPv6 (dual-stack or IPv6 alone). */
export const hasIpv6 = (leg: Pick<Leg, "families"> = currentLeg()) => leg.families !== "ipv4";

/**
 * One value per family the leg has, primary family first (Kubernetes takes the first of a
 * dual-stack flag as the cluster's primary family): [v4], [v4, v6] or [v6].
 */
export function perFamily(v4: string, v6: string, leg: Pick<Leg, "families"> = currentLeg()): string[] {
  return { ipv4: [v4], dual: [v4, v6], ipv6: [v6] }[leg.families];
}

/** The node's addresses, pod ranges and Service ranges of the leg, as the components' comma-separated flags take them. */
export const nodeIps = () => perFamily(nodeIp, nodeIp6);
export const podCidrs = () => perFamily(podCidr, podCidr6);
export const serviceCidrs = () => perFamily(serviceCidr, serviceCidr6);

/** The node's address of the cluster's primary family: where the API server listens and kubelet serves. */
export const primaryNodeIp = () => nodeIps()[0]!;

/** HOST:PORT, an IPv6 host in brackets (as a URL and the pods' probe write it). */
export const hostPort = (ip: string, port: number) => (ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`);

/** The API server's URL, at the node's primary address. */
export const apiserverUrl = () => `https://${hostPort(primaryNodeIp(), apiserverPort)}`;
