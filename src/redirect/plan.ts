import { subnetNetwork } from "./cidr.js";
import type { Family, FirewallSpec, PortRange } from "./spec.js";

/** Linkerd's chain names and comment prefix, so meshcni is a drop-in for linkerd-cni. */
const redirectChain = "PROXY_INIT_REDIRECT";
export const outputChain = "PROXY_INIT_OUTPUT";
export const ownChains = [redirectChain, outputChain] as const;
const commentPrefix = "proxy-init/";

/** iptables' multiport match takes at most 15 ports; a range counts as two. */
const multiportLimit = 15;

export interface Jump {
  /** The built-in chain that holds the jump. */
  from: "PREROUTING" | "OUTPUT";
  to: string;
  args: string[];
}

/**
 * The nat-table rules for one address family. Each rule is the argument list after
 * `-A CHAIN`, in the canonical order iptables-save prints it, so CHECK compares
 * planned and found rules token by token.
 */
export interface RulePlan {
  family: Family;
  chains: Record<string, string[][]>;
  jumps: Jump[];
}

function withComment(match: string[], what: string, target: string[]): string[] {
  return [...match, "-m", "comment", "--comment", `${commentPrefix}${what}`, ...target];
}

function renderPort({ from, to }: PortRange): string {
  return from === to ? String(from) : `${from}:${to}`;
}

/**
 * Splits ports into multiport lists of at most 15 ports each (a range counts 2), in order
 * and repeats kept, as linkerd-cni writes them (netconf `4191,4190` and annotation `4190`
 * make `4191,4190,4190`).
 */
export function chunkPorts(ports: PortRange[]): string[] {
  const chunks: string[][] = [];
  let weight = 0;
  for (const port of ports) {
    const cost = port.from === port.to ? 1 : 2;
    if (chunks.length === 0 || weight + cost > multiportLimit) {
      chunks.push([]);
      weight = 0;
    }
    chunks.at(-1)!.push(renderPort(port));
    weight += cost;
  }
  return chunks.map((chunk) => chunk.join(","));
}

function ignorePortRules(ports: PortRange[]): string[][] {
  return chunkPorts(ports).map((list) =>
    withComment(["-p", "tcp", "-m", "multiport", "--dports", list], `ignore-port-${list}`, ["-j", "RETURN"]),
  );
}

function inboundRules(spec: FirewallSpec, subnets: string[]): string[][] {
  const toProxy = ["-j", "REDIRECT", "--to-ports", String(spec.inboundProxyPort)];
  const redirects =
    spec.portsToRedirect.length === 0
      ? [withComment(["-p", "tcp"], "redirect-all-incoming-to-proxy-port", toProxy)]
      : spec.portsToRedirect.map((port) =>
          withComment(["-p", "tcp", "-m", "tcp", "--dport", String(port)], `redirect-port-${port}-to-proxy-port`, toProxy),
        );
  return [
    ...ignorePortRules(spec.inboundPortsToIgnore),
    // The comment names the subnet as given (host bits and all); iptables keeps only its network,
    // and no -s at all for a /0, which matches every source.
    ...subnets.map((cidr) => {
      const network = subnetNetwork(cidr);
      return withComment(network.endsWith("/0") ? [] : ["-s", network], `ignore-subnet-${cidr}`, ["-j", "RETURN"]);
    }),
    ...redirects,
  ];
}

function outboundRules(spec: FirewallSpec): string[][] {
  // As linkerd-cni: an owner rule only for an id above 0 (a rule for root would let every root process bypass the proxy).
  return [
    ...(spec.proxyUid > 0
      ? [withComment(["-m", "owner", "--uid-owner", String(spec.proxyUid)], "ignore-proxy-user-id", ["-j", "RETURN"])]
      : []),
    ...(spec.proxyGid !== undefined && spec.proxyGid > 0
      ? [withComment(["-m", "owner", "--gid-owner", String(spec.proxyGid)], "ignore-proxy-group-id", ["-j", "RETURN"])]
      : []),
    withComment(["-o", "lo"], "ignore-loopback", ["-j", "RETURN"]),
    ...ignorePortRules(spec.outboundPortsToIgnore),
    withComment(["-p", "tcp"], "redirect-all-outgoing-to-proxy-port", ["-j", "REDIRECT", "--to-ports", String(spec.outboundProxyPort)]),
  ];
}

/** Plans the redirect for one family; only that family's skip-subnets apply to it. */
export function planRules(spec: FirewallSpec, family: Family): RulePlan {
  const subnets = spec.subnetsToIgnore.filter((cidr) => cidr.includes(":") === (family === "ipv6"));
  return {
    family,
    chains: { [redirectChain]: inboundRules(spec, subnets), [outputChain]: outboundRules(spec) },
    jumps: [
      { from: "PREROUTING", to: redirectChain, args: withComment([], "install-proxy-init-prerouting", ["-j", redirectChain]) },
      { from: "OUTPUT", to: outputChain, args: withComment([], "install-proxy-init-output", ["-j", outputChain]) },
    ],
  };
}

/** A plan as rule lines (`-A CHAIN args`): the jumps, then each chain's rules, as `meshcni rules` shows it. */
export function planLines(plan: RulePlan): string[] {
  return [
    ...plan.jumps.map((jump) => `-A ${jump.from} ${jump.args.join(" ")}`),
    ...Object.entries(plan.chains).flatMap(([chain, rules]) => rules.map((args) => `-A ${chain} ${args.join(" ")}`)),
  ];
}
