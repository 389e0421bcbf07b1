import { describe, expect, it } from "vitest";
import type { RealCluster } from "../../kit/cluster/cluster.js";
import { RedirectWatch } from "../../kit/soak/check.js";
import { soakLabel } from "../../kit/soak/workload.js";

interface FakePod {
  name: string;
  kind: "meshed" | "unmeshed";
  ip: string;
}

/** A cluster that lists `pods` (all Ready) and answers each address with `answers[ip]`. */
function fakeCluster(pods: FakePod[], answers: Record<string, string>): RealCluster {
  return {
    get: async () => ({
      items: pods.map((pod) => ({
        metadata: { name: pod.name, namespace: "soak-a", uid: pod.name, creationTimestamp: "", labels: { [soakLabel]: pod.kind } },
        status: { podIP: pod.ip, phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
      })),
    }),
    connect: async (_pod: string, target: string) => answers[target.split(":")[0]!] ?? "error: no route",
  } as unknown as RealCluster;
}

function watch(cluster: RealCluster) {
  let now = 0;
  const violations: string[] = [];
  const redirects = new RedirectWatch(
    cluster,
    (what) => violations.push(what),
    () => now,
  );
  return { redirects, violations, advance: (ms: number) => (now += ms) };
}

describe("the soak's redirect watch", () => {
  it("reports a meshed pod answered by its own app at once, and once only", async () => {
    const { redirects, violations } = watch(fakeCluster([{ name: "m", kind: "meshed", ip: "10.0.0.5" }], { "10.0.0.5": "m app" }));
    await redirects.check();
    await redirects.check();
    expect(violations).toEqual(["meshed pod soak-a/m Ready, answered by its app: m app"]);
  });

  it("does not blame a meshed pod for another pod's app at its stale address", async () => {
    const { redirects, violations } = watch(fakeCluster([{ name: "m", kind: "meshed", ip: "10.0.0.5" }], { "10.0.0.5": "other app" }));
    await redirects.check();
    expect(violations).toEqual([]);
    expect(redirects.connections).toBe(1);
  });

  it("reports an unmeshed pod redirected only once it still is 5 s on", async () => {
    const { redirects, violations, advance } = watch(
      fakeCluster([{ name: "u", kind: "unmeshed", ip: "10.0.0.6" }], { "10.0.0.6": "proxy-inbound dst=10.0.0.6:8080" }),
    );
    await redirects.check();
    advance(4000);
    await redirects.check();
    expect(violations).toEqual([]);
    advance(1000);
    await redirects.check();
    expect(violations).toEqual(["unmeshed pod soak-a/u redirected: proxy-inbound dst=10.0.0.6:8080"]);
  });

  it("takes nothing from an address two pods hold (an IPAM fault answers for either)", async () => {
    const pods: FakePod[] = [
      { name: "u", kind: "unmeshed", ip: "10.0.0.7" },
      { name: "m", kind: "meshed", ip: "10.0.0.7" },
    ];
    const { redirects, violations, advance } = watch(fakeCluster(pods, { "10.0.0.7": "proxy-inbound dst=10.0.0.7:8080" }));
    for (let pass = 0; pass < 3; pass++, advance(5000)) await redirects.check();
    expect(violations).toEqual([]);
    expect(redirects.connections).toBe(0);
  });
});
