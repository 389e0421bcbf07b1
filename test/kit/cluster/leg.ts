import type { Backend } from "../../../src/redirect/redirector.js";

/**
 * One leg of the real-cluster matrix (`npm run test:matrix`): the primary CNI, the
 * Kubernetes and containerd releases (each built from its wrapper module in
 * build/cluster/<component>/<version>/), the backend meshcni's netconf asks for, and the
 * cluster's IP families.
 */
export interface Leg {
  primary: "bridge";
  kubernetes: string;
  containerd: string;
  /** meshcni's `iptables-mode`: auto (what `meshcni manifests` renders) or a backend. */
  backend: Backend | "auto";
  /** The cluster's IP families: IPv4 alone, dual-stack (IPv4 the primary), or IPv6 alone. */
  families: "ipv4" | "dual" | "ipv6";
}

/** The legs, by name; `npm test` runs `default`. Kubernetes 1.36 on refuses containerd 1.x (1.35 is the last to take it). */
export const legs = {
  default: { primary: "bridge", kubernetes: "v1.35.4", containerd: "v2.2.9", backend: "auto", families: "ipv4" },
  newest: { primary: "bridge", kubernetes: "v1.37.2", containerd: "v2.4.2", backend: "nft", families: "ipv4" },
  oldest: { primary: "bridge", kubernetes: "v1.30.14", containerd: "v1.7.35", backend: "legacy", families: "ipv4" },
  "containerd-1.7": { primary: "bridge", kubernetes: "v1.35.4", containerd: "v1.7.35", backend: "nftables", families: "ipv4" },
  "dual-stack": { primary: "bridge", kubernetes: "v1.35.4", containerd: "v2.2.9", backend: "auto", families: "dual" },
} as const satisfies Record<string, Leg>;

export type LegName = keyof typeof legs;

/** The leg this run is: MESHCNI_LEG names one (the matrix sets it and the versions components.sh builds); else `default`. */
export function currentLeg(env: NodeJS.ProcessEnv = process.env): Leg & { name: LegName } {
  const name = (env.MESHCNI_LEG ?? "default") as LegName;
  if (!(name in legs)) throw new Error(`MESHCNI_LEG=${name}: no such leg; the legs are ${Object.keys(legs).join(", ")}`);
  return { name, ...legs[name] };
}

/** A release's minor version: 35 for v1.35.4. */
export const minorOf = (version: string) => Number(version.split(".")[1]);

/** The environment that makes components.sh build, and the suite run, this leg. */
export function legEnv(name: LegName): Record<string, string> {
  const leg = legs[name];
  return { MESHCNI_LEG: name, MESHCNI_KUBERNETES: leg.kubernetes, MESHCNI_CONTAINERD: leg.containerd };
}
