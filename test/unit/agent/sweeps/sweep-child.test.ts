import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runSweepChild } from "../../../../src/agent/sweeps/sweep-child.js";
import type { SweepInput } from "../../../../src/audit/contract.js";
import { until } from "../../../kit/common.js";

const input: SweepInput = {
  kubeconfig: "",
  request: {
    node: "n1",
    pods: [],
    limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 0 },
    dirs: { hostRoot: "", stateDir: "/s", netDir: "/n", netnsDirs: ["/var/run/netns"], criSocket: "" },
  },
};

describe("the agent's sweep child", () => {
  let dir: string;
  const binary = (script: string) => {
    const path = join(dir, "meshcni");
    writeFileSync(path, `#!/bin/sh\n${script}\n`);
    chmodSync(path, 0o755);
    return path;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-sweep-child-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("kills a sweep that outlives its deadline (a hung runtime or netns): that sweep is a problem, the next one runs", async () => {
    const hung = binary("exec sleep 60");
    const started = performance.now();
    expect(await runSweepChild(hung, input, 500)).toEqual({ problem: "the sweep did not finish within 0.5 s: killed" });
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("kills a sweep when the agent stops, so none writes to the host after the stop (an uninstall's)", async () => {
    const pidFile = join(dir, "pid");
    const hung = binary(`echo $$ > ${pidFile}; exec sleep 60`);
    const stopping = new AbortController();
    const outcome = runSweepChild(hung, input, 60_000, stopping.signal);
    await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", 5000, 10);
    const pid = Number(readFileSync(pidFile, "utf8"));
    stopping.abort();
    expect(await outcome).toEqual({ problem: "the sweep was stopped with the agent: killed" });
    expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
  });

  it("says what failed: an exit code other than 0 or 1 with its last line, or a report that is none", async () => {
    expect(await runSweepChild(binary('echo "cannot read the state dir" >&2; exit 3'), input)).toEqual({
      problem: "the sweep failed: cannot read the state dir",
      exitCode: 3,
    });
    expect(await runSweepChild(binary("echo '{}'"), input)).toHaveProperty("problem");
    expect(await runSweepChild(join(dir, "gone"), input)).toEqual({ problem: `the sweep could not run: no ${join(dir, "gone")}` });
  });

  it("reads the report from stdin's request, as the child writes it", async () => {
    const report = { node: "n1", pods: [], summary: {} };
    const echoing = binary(`cat > ${join(dir, "request")}; echo '${JSON.stringify(report)}'`);
    const outcome = await runSweepChild(echoing, input);
    expect(JSON.parse(readFileSync(join(dir, "request"), "utf8"))).toEqual(input);
    expect(outcome).not.toHaveProperty("problem", expect.stringContaining("killed"));
  });
});
