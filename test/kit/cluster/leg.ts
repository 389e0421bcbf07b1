import type { Backend } from "../../../src/redirect/redirector.js";

/**
 * One leg of the real-cluster matrix (`npm run test:matrix`): the primary CNI, the
 * Kubernetes and containerd releases (each built from its wrapper module in
 * build/cluster/<component>/<version>/), the backend meshcni's netconf asks for, and the
 * cluster's IP families.
 */
export interface Leg {
  /** bridge (+ host-local, portmap) written by the kit, or Calico's own plugin written by its own installer (calico.ts). */
  primary: "bridge" | "calico";
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
  calico: { primary: "calico", kubernetes: "v1.35.4", containerd: "v2.2.9", backend: "auto", families: "ipv4" },
  "dual-stack": { primary: "bridge", kubernetes: "v1.35.4", containerd: "v2.2.9", backend: "auto", families: "dual" },
  ipv6: { primary: "bridge", kubernetes: "v1.35.4", containerd: "v2.2.9", backend: "auto", families: "ipv6" },
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

/** Whether the leg's API server binds a token to a Node: ServiceAccountTokenNodeBinding is on by default from 1.31 (alpha, off, in 1.30). */
export const bindsTokensToNodes = (leg: Leg) => minorOf(leg.kubernetes) >= 31;

/** Whether the leg's runtime sends CNI STATUS to a 1.1.0 chain: containerd 2 does (libcni 1.2); 1.7 never calls it. */
export const sendsCniStatus = (leg: Leg) => Number(leg.containerd.slice(1).split(".")[0]) >= 2;

/** Whether the leg's runtime loads libcni's drop-ins: containerd 2.1 on (libcni 1.3); meshcni falls back to the conflist before. */
export const loadsDropIns = (leg: Leg) => {
  const [major, minor] = leg.containerd.slice(1).split(".").map(Number);
  return major! > 2 || (major === 2 && minor! >= 1);
};

/** The environment that makes components.sh build, and the suite run, this leg. */
export function legEnv(name: LegName): Record<string, string> {
  const leg = legs[name];
  return { MESHCNI_LEG: name, MESHCNI_KUBERNETES: leg.kubernetes, MESHCNI_CONTAINERD: leg.containerd, MESHCNI_PRIMARY: leg.primary };
}
