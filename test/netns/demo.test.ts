import { execa } from "execa";
import { expect, it } from "vitest";
import { projectRoot } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** `npm run demo`'s script, as a newcomer runs it: what it shows must be true. */
describeAsRoot("the demo", () => {
  it("tells meshcni's story: the plugin's redirect, then the agent chaining, repairing in place, re-chaining, the condition and meshcni status", async () => {
    const demo = await execa(process.execPath.endsWith("bun") ? process.execPath : "node_modules/.bin/bun", ["demo/demo.ts"], {
      cwd: projectRoot,
      reject: false,
      timeout: 90_000,
    });
    expect(demo.exitCode, demo.stderr).toBe(0);
    const lines = demo.stdout.split("\n");
    const line = (pattern: RegExp) => lines.find((entry) => pattern.test(entry)) ?? `(no line matching ${pattern})`;
    expect(line(/client -> checkout \S+:8080/)).toMatch(/the proxy's inbound port 4143$/);
    expect(line(/client -> shop\/early-bird .*no redirect yet/)).toMatch(/the app on 8080, in plaintext$/);
    expect(line(/client -> shop\/early-bird .*not restarted/)).toMatch(/the proxy's inbound port 4143$/);
    expect(line(/^ {3}the agent's verdict/)).toMatch(/missing, redirect: "done"/);
    expect(line(/Event on the pod/)).toBe("   Event on the pod: Normal MeshRedirectMissing (WriteRedirect)");
    expect(lines.filter((entry) => /rewrite \d: the agent put meshcni back +[\d.]+ ms after the write$/.test(entry))).toHaveLength(3);
    expect(line(/now chains/)).toMatch(/bridge -> meshcni$/);
    expect(line(/client -> shop\/late-arrival /)).toMatch(/the proxy's inbound port 4143$/);
    expect(line(/written by the agent's writer/)).toMatch(/redirect applied \(\w+, ipv4\)$/);
    expect(line(/^ {3}metric: meshcni_agent_writes_total/)).toMatch(/ 1$/);
    expect(line(/^ {3}metric: meshcni_unprotected_pod/)).toContain('pod_namespace="batch",pod_name="nightly",status="missing"');
    expect(line(/MeshcniReady=/)).toMatch(/MeshcniReady=True reason=PodsUnprotected: .*1 unprotected: batch\/nightly$/);
    expect(line(/\$ meshcni status/)).toContain("(exit 1)");
    expect(line(/^ {3}batch +nightly +demo-node +condition/)).not.toMatch(/^\(no line/);
    expect(lines.at(-1)).toBe("== cleaned up: namespaces, bridge, files");
    // The demo's own timeout (90 s) within the test's: a hung demo fails with its output, not as a vitest timeout.
  }, 120_000);
});
