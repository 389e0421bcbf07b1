// `npm run bench scale`'s arithmetic, pure: what one node's agent (meshcni's, or kube-proxy
// for comparison) adds to the API server, per node, from readings taken with and without N
// of them running; the slope per node over N; the projection to 5,000 nodes; and whether
// meshcni's agent costs the API server no more than kube-proxy does per node.

/** The API server over one window. */
export interface Reading {
  /** Its CPU (user and system), in thousandths of a core. */
  millicores: number;
  /** Its resident memory, mean over the window, MB. */
  rssMb: number;
  /** Its Go heap in use (go_memstats_heap_inuse_bytes), mean over the window, MB: what it holds, without what Go keeps from before. */
  heapMb: number;
  /** Its live heap at the window's end, after a collection forced for it, MB: what it holds, without its garbage of the moment. */
  liveHeapMb: number;
  /** WATCH requests open at the window's end. */
  watches: number;
  /** Requests but WATCHes, per minute. */
  requestsPerMinute: number;
  /** Watch events sent to watchers, per second. */
  watchEventsPerSecond: number;
  /** The simulated components' own resident memory, mean per process, MB (none in a baseline). */
  ownRssMb?: number;
  /** The share of the host's CPU left idle over the window (under about 0.2 the host, not the API server, set the pace). */
  hostIdle?: number;
  /** The churn's calls the API server answered in the window (the same in every window when the host keeps up). */
  churnCalls?: number;
  /** Watch events sent per second, by resource (where they go, which the total does not say). */
  watchEventsByResource?: Record<string, number>;
}

/** Idle; `churn`: the bench's first mix (namespaces made and deleted often); `podChurn`: one closer to clusters' (pods and EndpointSlices far more often than namespaces). */
export type Mode = "idle" | "churn" | "podChurn";
export type Component = "meshcni" | "kube-proxy";
export const components: Component[] = ["meshcni", "kube-proxy"];
export const modes: Mode[] = ["idle", "churn", "podChurn"];
const churnModes = modes.filter((mode) => mode !== "idle");

/** One N: the readings with none of them running, and with N meshcni agents, then N kube-proxies. */
export interface ScaleRun {
  nodes: number;
  readings: Record<"baseline" | Component, Record<Mode, Reading>>;
  /** Watch events one change to meshcni's DaemonSet sent, with N agents running (a rollout changes it a few times per node). */
  daemonSetEventsPerChange?: number;
}

export const apiMetrics = ["millicores", "rssMb", "heapMb", "liveHeapMb", "watches", "requestsPerMinute", "watchEventsPerSecond"] as const;
export type ApiMetric = (typeof apiMetrics)[number];

/** What N of a component added to the API server beside the baseline, in total. */
export function added(run: ScaleRun, component: Component, mode: Mode): Record<ApiMetric, number> {
  const [withIt, without] = [run.readings[component][mode], run.readings.baseline[mode]];
  return Object.fromEntries(apiMetrics.map((metric) => [metric, withIt[metric] - without[metric]])) as Record<ApiMetric, number>;
}

/** The watch events per second N of a component added beside the baseline, by resource, largest first (those over 0.05/s). */
export function addedEventsByResource(run: ScaleRun, component: Component, mode: Mode): Array<[string, number]> {
  const [withIt, without] = [
    run.readings[component][mode].watchEventsByResource ?? {},
    run.readings.baseline[mode].watchEventsByResource ?? {},
  ];
  return Object.entries(withIt)
    .map(([resource, rate]): [string, number] => [resource, rate - (without[resource] ?? 0)])
    .filter(([, rate]) => rate > 0.05)
    .sort(([, a], [, b]) => b - a);
}

/** Least squares over (x, y): the slope and the intercept (a single point: slope through the origin). */
export function fitLine(points: Array<[number, number]>): { slope: number; intercept: number } {
  if (points.length === 0) return { slope: 0, intercept: 0 };
  if (points.length === 1) return { slope: points[0]![1] / points[0]![0], intercept: 0 };
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  const [mx, my] = [mean(points.map(([x]) => x)), mean(points.map(([, y]) => y))];
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0);
  const sxy = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0);
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: my - slope * mx };
}

export interface CostLine {
  component: Component;
  mode: Mode;
  metric: ApiMetric;
  /** Added per node at each measured N. */
  perNode: Array<{ nodes: number; value: number }>;
  /** The fitted cost per node added, and the total it projects at 5,000 nodes. */
  slope: number;
  at5000: number;
}

export const projectedNodes = 5000;

/** Every component's, mode's and metric's added cost per node, over the runs. */
export function costLines(runs: ScaleRun[]): CostLine[] {
  return components.flatMap((component) =>
    modes.flatMap((mode) =>
      apiMetrics.map((metric) => {
        const points = runs.map((run): [number, number] => [run.nodes, added(run, component, mode)[metric]]);
        const { slope, intercept } = fitLine(points);
        return {
          component,
          mode,
          metric,
          perNode: points.map(([nodes, total]) => ({ nodes, value: total / nodes })),
          slope,
          at5000: intercept + slope * projectedNodes,
        };
      }),
    ),
  );
}

/** The target: per node, meshcni's agent costs the API server's CPU and memory no more than kube-proxy does (by the fitted slopes). */
export function targetHolds(lines: CostLine[]): { holds: boolean; compared: string[] } {
  const slopeOf = (component: Component, mode: Mode, metric: ApiMetric) =>
    lines.find((line) => line.component === component && line.mode === mode && line.metric === metric)?.slope ?? Number.NaN;
  const compared = modes.flatMap((mode) =>
    (["millicores", "rssMb"] as const).map((metric) => {
      const [ours, theirs] = [slopeOf("meshcni", mode, metric), slopeOf("kube-proxy", mode, metric)];
      return { mode, metric, ours, theirs, ok: ours <= theirs };
    }),
  );
  return {
    holds: compared.every((item) => item.ok),
    compared: compared.map(
      ({ mode, metric, ours, theirs, ok }) =>
        `${mode} ${metric}: meshcni ${ours.toFixed(2)} per node, kube-proxy ${theirs.toFixed(2)}: ${ok ? "holds" : "exceeds"}`,
    ),
  };
}

/** The share of the baseline's churn calls a window must answer for its CPU figure to be the API server's and not the host's. */
const answeredFloor = 0.95;

/** The churn windows where the API server answered fewer of the churn's calls than in the baseline: the host set the pace, and their CPU figures say nothing of the API server. */
export function starvedWindows(runs: ScaleRun[]): string[] {
  return runs.flatMap((run) =>
    components.flatMap((component) =>
      churnModes.flatMap((mode) => {
        const [calls, baseline] = [run.readings[component][mode]?.churnCalls, run.readings.baseline[mode]?.churnCalls];
        return calls !== undefined && baseline !== undefined && calls < answeredFloor * baseline
          ? [`${component} ${mode} at N=${run.nodes}: ${calls} of the baseline's ${baseline} calls answered`]
          : [];
      }),
    ),
  );
}

const units: Record<ApiMetric, string> = {
  millicores: "API mCPU",
  rssMb: "API MB",
  heapMb: "API heap MB",
  liveHeapMb: "API live heap MB",
  watches: "watches",
  requestsPerMinute: "req/min",
  watchEventsPerSecond: "events/s",
};

/** The report: per node at each N, the slope, the projection to 5,000 nodes, and the verdict. */
export function formatScale(runs: ScaleRun[]): string {
  const lines = costLines(runs);
  const ns = runs.map((run) => run.nodes);
  const header = `${"added to the API server, per node".padEnd(44)}${ns.map((n) => `N=${n}`.padStart(10)).join("")}${"slope".padStart(10)}${`at ${projectedNodes}`.padStart(12)}`;
  const rows = lines.map((line) => {
    const label = `${line.component} ${line.mode} ${units[line.metric]}`.padEnd(44);
    const values = line.perNode.map((point) => point.value.toFixed(2).padStart(10)).join("");
    return `${label}${values}${line.slope.toFixed(2).padStart(10)}${line.at5000.toFixed(0).padStart(12)}`;
  });
  const own = components.flatMap((component) =>
    runs.map(
      (run) => `${component} at N=${run.nodes}: ${run.readings[component].idle.ownRssMb?.toFixed(1) ?? "?"} MB resident each (idle)`,
    ),
  );
  const largest = runs.at(-1);
  const byResource = largest
    ? components.flatMap((component) =>
        churnModes
          .filter((mode) => largest.readings[component][mode])
          .map((mode) => {
            const rates = addedEventsByResource(largest, component, mode).map(([resource, rate]) => `${resource} ${rate.toFixed(1)}`);
            return `${component} at N=${largest.nodes} under ${mode}, watch events/s added by resource: ${rates.join(", ") || "none"}`;
          }),
      )
    : [];
  const phases = ["baseline", ...components] as const;
  const conditions = runs.map(
    (run) =>
      `N=${run.nodes}, host idle (${modes.join(" / ")} windows) and calls answered (${churnModes.join(" / ")}): ${phases
        .map((phase) => {
          const readings = modes.map((mode) => run.readings[phase][mode]);
          const share = (reading?: Reading) => (reading?.hostIdle === undefined ? "?" : `${Math.round(reading.hostIdle * 100)}%`);
          const calls = churnModes.map((mode) => run.readings[phase][mode]?.churnCalls ?? "?").join("/");
          return `${phase} ${readings.map(share).join("/")} ${calls}`;
        })
        .join(", ")}`,
  );
  const fanout = runs.map((run) => `${run.daemonSetEventsPerChange?.toFixed(0) ?? "?"} at N=${run.nodes}`).join(", ");
  const verdict = targetHolds(lines);
  const starved = starvedWindows(runs);
  const said = starved.length > 0 ? "cannot tell (the host set the pace)" : verdict.holds ? "holds" : "does not hold";
  return [
    header,
    ...rows,
    "",
    ...own,
    ...byResource,
    ...conditions,
    `watch events one change to meshcni's DaemonSet sends (no agent watches it; a rollout changes it a few times per node): ${fanout}`,
    "",
    `target (per node, meshcni's agent costs the API server's CPU and memory no more than kube-proxy): ${said}`,
    ...verdict.compared.map((line) => `  ${line}`),
    ...starved.map((line) => `  not comparable: ${line}`),
  ].join("\n");
}
