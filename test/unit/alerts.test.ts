import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { type AlertRule, alertRules } from "../../src/manifests/alerts.js";
import { promtoolBinary } from "../kit/paths.js";

const dir = mkdtempSync(join(tmpdir(), "meshcni-alerts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const promtool = (...args: string[]) => execFileSync(promtoolBinary, args, { cwd: dir, encoding: "utf8" });
const rule = (name: string) => alertRules.find((candidate) => candidate.alert === name)!;

/** An alert's annotations as Prometheus expands them for these labels (its templates use $labels only). */
const expanded = (alert: AlertRule, labels: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(alert.annotations).map(([key, text]) => [
      key,
      text.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, label: string) => labels[label] ?? ""),
    ]),
  );

/**
 * Per alert: input series (1-minute steps) where it must fire for `fires` and not for the
 * rest, and the time to look. promtool evaluates the rules as Prometheus does.
 */
const cases: Array<{ alert: string; series: Array<[string, string]>; at: string; fires: Array<Record<string, string>> }> = [
  {
    alert: "MeshcniMeshedPodUnprotected",
    series: [
      ['meshcni_unprotected_pod{node="n1",pod_namespace="shop",pod_name="web",status="missing"}', "1x20"],
      // Unprotected 3 minutes, then redirected in place: no page.
      ['meshcni_unprotected_pod{node="n2",pod_namespace="shop",pod_name="api",status="drifted"}', "1 1 1"],
    ],
    at: "10m",
    fires: [{ node: "n1", pod_namespace: "shop", pod_name: "web", status: "missing" }],
  },
  {
    alert: "MeshcniAgentNotReady",
    series: [
      ['meshcni_ready{node="n1"}', "0x20"],
      ['meshcni_ready{node="n2"}', "1x20"],
      // Not ready for 5 minutes at start-up, then ready.
      ['meshcni_ready{node="n3"}', "0x5 1x15"],
    ],
    at: "15m",
    fires: [{ node: "n1" }],
  },
  {
    alert: "MeshcniAgentMissing",
    series: [
      // Three nodes, one whose agent never got ready (an image it cannot pull, say): no series of the agent's at all.
      ['kube_daemonset_status_desired_number_scheduled{namespace="meshcni",daemonset="meshcni"}', "3x30"],
      ['kube_daemonset_status_number_ready{namespace="meshcni",daemonset="meshcni"}', "2x30"],
      // A rollout: one pod not ready for 5 minutes, then all.
      ['kube_daemonset_status_desired_number_scheduled{namespace="linkerd-cni",daemonset="linkerd-cni"}', "3x30"],
      ['kube_daemonset_status_number_ready{namespace="linkerd-cni",daemonset="linkerd-cni"}', "2x5 3x25"],
      // Another DaemonSet's: none of meshcni's business.
      ['kube_daemonset_status_desired_number_scheduled{namespace="kube-system",daemonset="calico-node"}', "3x30"],
      ['kube_daemonset_status_number_ready{namespace="kube-system",daemonset="calico-node"}', "0x30"],
    ],
    at: "20m",
    fires: [{ namespace: "meshcni", daemonset: "meshcni" }],
  },
  {
    alert: "MeshcniChainBroken",
    series: [
      ['meshcni_chain_missing_plugin{node="n1",type="portmap"}', "1x20"],
      // Missing for 3 minutes while the primary's installer copied it in: no page.
      ['meshcni_chain_missing_plugin{node="n2",type="bandwidth"}', "1 1 1"],
    ],
    at: "10m",
    fires: [{ node: "n1", type: "portmap" }],
  },
  {
    alert: "MeshcniConfigFight",
    series: [
      ['meshcni_fights_total{node="n1"}', "0 0 0 1x10"],
      ['meshcni_fights_total{node="n2"}', "0x13"],
    ],
    at: "6m",
    fires: [{ node: "n1" }],
  },
  {
    alert: "MeshcniCacheStale",
    series: [
      // Heard nothing since the start: its age grows a minute a minute.
      ['meshcni_cache_age_seconds{node="n1",cache="pods"}', "0+60x20"],
      ['meshcni_cache_age_seconds{node="n1",cache="node"}', "30x20"],
    ],
    at: "15m",
    fires: [{ node: "n1", cache: "pods" }],
  },
  {
    alert: "MeshcniRepairsFailing",
    series: [
      ['meshcni_repairs_total{node="n1",action="redirect",result="failed"}', "0 0 1x10"],
      ['meshcni_repairs_total{node="n2",action="redirect",result="done"}', "0+1x12"],
    ],
    at: "5m",
    fires: [{ node: "n1", action: "redirect" }],
  },
  {
    alert: "MeshcniEvictionsBlocked",
    series: [
      ['meshcni_repairs_total{node="n1",action="evict",result="blocked"}', "0+1x60"],
      ['meshcni_meshed_pods{node="n1",status="missing"}', "1x60"],
      // Blocked too, but nothing is unprotected any more.
      ['meshcni_repairs_total{node="n2",action="evict",result="blocked"}', "0+1x60"],
      ['meshcni_meshed_pods{node="n2",status="missing"}', "0x60"],
    ],
    at: "45m",
    fires: [{ node: "n1" }],
  },
  {
    alert: "MeshcniBackendSwitchPending",
    series: [
      ['meshcni_redirect_backend_records{node="n1",backend="nft",selected="false"}', "8x30"],
      // Moved within minutes of a switch: no alert.
      ['meshcni_redirect_backend_records{node="n2",backend="nft",selected="false"}', "8 8 8"],
      ['meshcni_redirect_backend_records{node="n2",backend="nftables",selected="true"}', "0 0 0 8x27"],
    ],
    at: "20m",
    fires: [{ node: "n1", backend: "nft" }],
  },
  {
    alert: "MeshcniMeshedPodsUnjudged",
    series: [
      ['meshcni_meshed_pods{node="n1",status="unknown"}', "1x30"],
      // Judged again within minutes (a pod's netns found once it started): no alert.
      ['meshcni_meshed_pods{node="n2",status="unknown"}', "1 1 1 0x27"],
      ['meshcni_meshed_pods{node="n3",status="protected"}', "5x30"],
    ],
    at: "20m",
    fires: [{ node: "n1" }],
  },
  {
    alert: "MeshcniPluginTokenFailing",
    series: [
      ['meshcni_plugin_token_requests_total{node="n1",result="failed"}', "0+1x40"],
      ['meshcni_plugin_token_remaining_seconds{node="n1"}', "3000-100x40"],
      // Failing too, but its token has long to live (the agent still retries).
      ['meshcni_plugin_token_requests_total{node="n2",result="failed"}', "0+1x40"],
      ['meshcni_plugin_token_remaining_seconds{node="n2"}', "3000x40"],
    ],
    at: "35m",
    fires: [{ node: "n1" }],
  },
];

describe("meshcni's alerts, as Prometheus evaluates them (promtool)", () => {
  it("pass promtool check rules", () => {
    writeFileSync(join(dir, "rules.yaml"), stringify({ groups: [{ name: "meshcni", rules: alertRules }] }));
    expect(promtool("check", "rules", "rules.yaml")).toContain(`SUCCESS: ${alertRules.length} rules found`);
  });

  it("each has a case, and each case's alert exists", () => {
    expect(cases.map((entry) => entry.alert).sort()).toEqual(alertRules.map((alert) => alert.alert).sort());
  });

  it.each(cases)("$alert fires for the series that should page, and not for the others", ({ alert, series, at, fires }) => {
    writeFileSync(join(dir, "rules.yaml"), stringify({ groups: [{ name: "meshcni", rules: alertRules }] }));
    const severity = rule(alert).labels.severity;
    const tests = {
      rule_files: ["rules.yaml"],
      evaluation_interval: "1m",
      tests: [
        {
          interval: "1m",
          input_series: series.map(([name, values]) => ({ series: name, values })),
          alert_rule_test: [
            {
              eval_time: at,
              alertname: alert,
              exp_alerts: fires.map((labels) => ({ exp_labels: { ...labels, severity }, exp_annotations: expanded(rule(alert), labels) })),
            },
            // Nothing before it has lasted long enough.
            ...(rule(alert).for ? [{ eval_time: "1m", alertname: alert, exp_alerts: [] }] : []),
          ],
        },
      ],
    };
    writeFileSync(join(dir, `${alert}.test.yaml`), stringify(tests));
    expect(promtool("test", "rules", `${alert}.test.yaml`)).toContain("SUCCESS");
  });

  it("link each to its runbook: an #### heading of docs/troubleshooting.md", async () => {
    const { readFileSync } = await import("node:fs");
    const runbooks = readFileSync(join(import.meta.dirname, "../../docs/troubleshooting.md"), "utf8");
    const headings = new Set(
      [...runbooks.matchAll(/^#### (.+)$/gm)].map((match) =>
        match[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, "")
          .replaceAll(" ", "-"),
      ),
    );
    for (const alert of alertRules) {
      const [page, anchor] = alert.annotations.runbook_url.split("#");
      expect(page, alert.alert).toMatch(/\/blob\/main\/docs\/troubleshooting\.md$/);
      expect(headings, alert.alert).toContain(anchor);
    }
  });
});
