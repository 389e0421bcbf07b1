/**
 * A port of linkerd-cni's rule generation, to compare meshcni with: what linkerd2-proxy-init
 * at commit 183e791 (github.com/linkerd/linkerd2-proxy-init) does for a pod, step for step —
 * cni-plugin/main.go (the annotation overrides, the control-plane ports), proxy-init/cmd/root.go
 * (BuildFirewallConfiguration's checks), pkg/util/portrange.go (ParsePortRange) and
 * pkg/iptables/iptables.go (the iptables commands, for a netns with none of its chains yet).
 * Nothing of meshcni's is used here: a test that compared meshcni with itself could not fail.
 */

/** linkerd-cni's netconf `linkerd` section (its ProxyInit struct; Go's zero values when absent). */
export interface LinkerdNetconf {
  "incoming-proxy-port": number;
  "outgoing-proxy-port": number;
  "proxy-uid": number;
  "proxy-gid"?: number;
  "ports-to-redirect"?: number[];
  "inbound-ports-to-ignore"?: string[];
  "outbound-ports-to-ignore"?: string[];
  "subnets-to-ignore"?: string[];
}

export interface LinkerdPod {
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  namespaceAnnotations?: Record<string, string>;
  /** The `kubernetes` Service's ports and int targetPorts, as getAPIServerPorts lists them; undefined: it cannot be read. */
  apiServerPorts?: string[];
}

/** Go's strconv.Atoi: an optional sign and decimal digits, nothing else (no spaces). */
const atoi = (text: string): number | undefined => (/^[+-]?\d+$/.test(text) ? Number.parseInt(text, 10) : undefined);
const isValidPort = (port: number) => port >= 0 && port <= 65535;

/** pkg/util/portrange.go ParsePortRange, and iptables.go asDestination. */
function destination(portRange: string): string | undefined {
  const bounds = portRange.split("-");
  if (bounds.length > 2) return undefined;
  const [lower, upper] = [atoi(bounds[0]!), atoi(bounds[1] ?? bounds[0]!)];
  if (lower === undefined || !isValidPort(lower) || upper === undefined || !isValidPort(upper) || upper < lower) return undefined;
  return lower === upper ? String(lower) : `${lower}:${upper}`;
}

/** iptables.go makeMultiportDestinations: invalid entries are logged and dropped; 15 ports a list, a range counting 2. */
export function multiportDestinations(ports: string[]): string[][] {
  if (ports.length < 1) return [];
  const slices: string[][] = [];
  let destinations: string[] = [];
  let count = 0;
  for (const port of ports) {
    const parsed = destination(port);
    if (parsed === undefined) continue;
    const cost = parsed.includes(":") ? 2 : 1;
    if (count + cost > 15) {
      slices.push(destinations);
      count = 0;
      destinations = [];
    }
    destinations.push(parsed);
    count += cost;
  }
  return [...slices, destinations];
}

/** Go's net.ParseCIDR, enough for what the annotations hold: an address and a prefix length. */
function isCidr(text: string): boolean {
  const [address = "", prefix, ...rest] = text.split("/");
  if (prefix === undefined || rest.length > 0 || !/^\d+$/.test(prefix)) return false;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (v4) return v4.slice(1).every((part) => Number(part) <= 255) && Number(prefix) <= 32;
  return address.includes(":") && /^[0-9a-fA-F:.]+$/.test(address) && Number(prefix) <= 128;
}

/**
 * The iptables commands (arguments after the binary) linkerd-cni runs for a pod's IPv4 nat
 * table in a fresh netns; throws Linkerd's error where it refuses the pod.
 */
export function linkerdCommands(netconf: LinkerdNetconf, pod: LinkerdPod): string[][] {
  // main.go getAnnotationOverride: the pod's value unless empty, else the namespace's unless empty.
  const override = (key: string) => pod.annotations?.[key] || pod.namespaceAnnotations?.[key] || "";
  let outbound = netconf["outbound-ports-to-ignore"] ?? [];
  let inbound = netconf["inbound-ports-to-ignore"] ?? [];
  let subnets = netconf["subnets-to-ignore"] ?? [];
  let uid = netconf["proxy-uid"];
  let gid = netconf["proxy-gid"] ?? 0;
  const outboundOverride = override("config.linkerd.io/skip-outbound-ports");
  if (outboundOverride) outbound = outboundOverride.split(",");
  const inboundOverride = override("config.linkerd.io/skip-inbound-ports");
  if (inboundOverride) inbound = [...inbound, ...inboundOverride.split(",")];
  const subnetOverride = override("config.linkerd.io/skip-subnets");
  if (subnetOverride) subnets = subnetOverride.split(",");
  for (const [key, set] of [
    ["config.linkerd.io/proxy-uid", (id: number) => (uid = id)],
    ["config.linkerd.io/proxy-gid", (id: number) => (gid = id)],
  ] as const) {
    const value = override(key);
    if (!value) continue;
    const parsed = atoi(value);
    if (parsed === undefined) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(value)}: invalid syntax`);
    set(parsed);
  }
  if (pod.labels?.["linkerd.io/control-plane-component"]) outbound = [...outbound, ...(pod.apiServerPorts ?? ["443", "6443"])];
  // root.go BuildFirewallConfiguration.
  const sanitized = subnets.map((subnet) => {
    const trimmed = subnet.trim();
    if (!isCidr(trimmed)) throw new Error(`${trimmed} is not a valid CIDR address`);
    return trimmed;
  });
  const comment = (text: string) => ["-m", "comment", "--comment", `proxy-init/${text}`];
  const ignorePorts = (chain: string, ports: string[]) =>
    multiportDestinations(ports).map((list) => [
      "-A",
      chain,
      "-p",
      "tcp",
      "--match",
      "multiport",
      "--dports",
      list.join(","),
      "-j",
      "RETURN",
      ...comment(`ignore-port-${list.join(",")}`),
    ]);
  const toRedirect = netconf["ports-to-redirect"] ?? [];
  const incoming = [
    ["-N", "PROXY_INIT_REDIRECT"],
    ...ignorePorts("PROXY_INIT_REDIRECT", inbound),
    ...sanitized.map((subnet) => [
      "-A",
      "PROXY_INIT_REDIRECT",
      "-p",
      "all",
      "-j",
      "RETURN",
      "-s",
      subnet,
      ...comment(`ignore-subnet-${subnet}`),
    ]),
    ...(toRedirect.length === 0
      ? [
          [
            "-A",
            "PROXY_INIT_REDIRECT",
            "-p",
            "tcp",
            "-j",
            "REDIRECT",
            "--to-port",
            String(netconf["incoming-proxy-port"]),
            ...comment("redirect-all-incoming-to-proxy-port"),
          ],
        ]
      : toRedirect.map((port) => [
          "-A",
          "PROXY_INIT_REDIRECT",
          "-p",
          "tcp",
          "--destination-port",
          String(port),
          "-j",
          "REDIRECT",
          "--to-port",
          String(netconf["incoming-proxy-port"]),
          ...comment(`redirect-port-${port}-to-proxy-port`),
        ])),
    ["-A", "PREROUTING", "-j", "PROXY_INIT_REDIRECT", ...comment("install-proxy-init-prerouting")],
  ];
  const outgoing = [
    ["-N", "PROXY_INIT_OUTPUT"],
    ...(uid > 0
      ? [["-A", "PROXY_INIT_OUTPUT", "-m", "owner", "--uid-owner", String(uid), "-j", "RETURN", ...comment("ignore-proxy-user-id")]]
      : []),
    ...(gid > 0
      ? [["-A", "PROXY_INIT_OUTPUT", "-m", "owner", "--gid-owner", String(gid), "-j", "RETURN", ...comment("ignore-proxy-group-id")]]
      : []),
    ["-A", "PROXY_INIT_OUTPUT", "-o", "lo", "-j", "RETURN", ...comment("ignore-loopback")],
    ...ignorePorts("PROXY_INIT_OUTPUT", outbound),
    [
      "-A",
      "PROXY_INIT_OUTPUT",
      "-p",
      "tcp",
      "-j",
      "REDIRECT",
      "--to-port",
      String(netconf["outgoing-proxy-port"]),
      ...comment("redirect-all-outgoing-to-proxy-port"),
    ],
    ["-A", "OUTPUT", "-j", "PROXY_INIT_OUTPUT", ...comment("install-proxy-init-output")],
  ];
  return [...incoming, ...outgoing];
}
