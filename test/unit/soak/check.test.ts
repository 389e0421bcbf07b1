import { describe, expect, it } from "vitest";
import type { RealCluster } from "../../kit/cluster/cluster.js";
import { AuditAgreement, RedirectWatch } from "../../kit/soak/check.js";
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
    // `probe connect-each` in the client pod: a line per target.
    kubectl: async (args: string[]) =>
      args
        .slice(args.indexOf("connect-each") + 1)
        .map((target) => `${target}\t${answers[target.split(":")[0]!] ?? "error: no route"}\n`)
        .join(""),
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

describe("the soak's audit agreement", () => {
  const audited = (status: string) => [{ namespace: "soak-a", name: "m", uid: "m", status, details: ["why"] }];
  const heard = (who: "proxy" | "app") => new Map([["m", who]]);

  it("a pod said protected (or adopted) while its app answered, at two audits in a row, is a violation, said once", () => {
    const agreement = new AuditAgreement();
    expect(agreement.compare(audited("protected"), heard("app"))).toEqual([]);
    expect(agreement.compare(audited("adopted"), heard("app"))).toEqual([
      "meshcni audit said soak-a/m adopted (why) while its app answered, twice in a row",
    ]);
    expect(agreement.compare(audited("protected"), heard("app"))).toEqual([]);
    expect(agreement.audits).toBe(3);
  });

  it("a pod said missing while its proxy answered is one too; one disagreement between agreements is not", () => {
    const agreement = new AuditAgreement();
    expect(agreement.compare(audited("missing"), heard("proxy"))).toEqual([]);
    expect(agreement.compare(audited("protected"), heard("proxy"))).toEqual([]);
    expect(agreement.compare(audited("missing"), heard("proxy"))).toEqual([]);
    expect(agreement.compare(audited("missing"), heard("proxy"))).toHaveLength(1);
  });

  it("drifted and unknown claim nothing about inbound; a pod not connected to is not judged", () => {
    const agreement = new AuditAgreement();
    for (let pass = 0; pass < 3; pass++) {
      expect(agreement.compare(audited("drifted"), heard("proxy"))).toEqual([]);
      expect(agreement.compare(audited("unknown"), heard("app"))).toEqual([]);
      expect(agreement.compare(audited("protected"), new Map())).toEqual([]);
    }
  });
});
