import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { calico, installerSuite } from "../kit/agent/installer.js";
import { isRoot } from "../kit/common.js";
import { meshcniBinary } from "../kit/paths.js";

describe("meshcni install: bad input", () => {
  const suite = installerSuite();
  const { started, chainedIn, ready } = suite;

  describe("bad input: a clear log line, not ready, nothing damaged", () => {
    it("waits with no config at all, never writing a standalone one", async () => {
      await started({});
      await suite.host.waitFor(() => suite.host.notReadyBecause("no CNI config"));
      await suite.host.waitFor(() => suite.host.kubeconfig() !== "");
      expect(readdirSync(suite.host.netDir)).toEqual(["ZZZ-meshcni-kubeconfig"]);
      writeFileSync(suite.host.path("10-calico.conflist"), calico());
      await suite.host.waitFor(chainedIn("10-calico.conflist"));
    });

    it("is stopped by no fifo where its binary goes, nor a directory or fifo named as a config; keeps a config's mode (issue 57)", async () => {
      suite.host = new AgentHarness();
      writeFileSync(suite.host.path("10-calico.conflist"), calico());
      chmodSync(suite.host.path("10-calico.conflist"), 0o600);
      mkdirSync(suite.host.path("05-dir.conflist"));
      execFileSync("mkfifo", [suite.host.path("07-fifo.conflist"), `${suite.host.binDir}/meshcni`]);
      await suite.host.start();
      await suite.host.waitFor(chainedIn("10-calico.conflist"));
      await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
      expect(statSync(suite.host.path("10-calico.conflist")).mode & 0o777).toBe(0o600);
      expect(statSync(`${suite.host.binDir}/meshcni`).isFile()).toBe(true);
      expect(suite.host.logs).toContainEqual(
        expect.objectContaining({
          level: "warn",
          msg: expect.stringMatching(
            /skipped, as libcni skips a directory: 05-dir\.conflist: .* is a directory.*07-fifo\.conflist: .* is a fifo/,
          ),
        }),
      );
      // Taken out again, and the config rewritten by another: re-chained, its mode kept.
      writeFileSync(suite.host.path("10-calico.conflist"), calico());
      await suite.host.waitFor(chainedIn("10-calico.conflist"));
      expect(statSync(suite.host.path("10-calico.conflist")).mode & 0o777).toBe(0o600);
    });

    it("refuses an invalid template", async () => {
      suite.host = new AgentHarness();
      writeFileSync(suite.host.path("10-calico.conflist"), calico());
      await suite.host.start(["--template", '{"type":"calico"}']);
      await suite.host.waitFor(() =>
        suite.host.logs.some((line) => line.level === "error" && line.msg.includes('type must be "meshcni" or "linkerd-cni"')),
      );
      expect((await suite.host.readyz()).status).toBe(503);
      expect(suite.host.read("10-calico.conflist")).toBe(calico());
      expect(readdirSync(suite.host.binDir)).toEqual([]);
      expect(ready().status).toBe(1);
    });

    it("reports a read-only net dir and damages nothing", async () => {
      suite.host = new AgentHarness();
      writeFileSync(suite.host.path("10-calico.conflist"), calico());
      const readOnly = isRoot
        ? () =>
            execFileSync("sh", [
              "-c",
              `mount --bind '${suite.host.netDir}' '${suite.host.netDir}' && mount -o remount,bind,ro '${suite.host.netDir}'`,
            ])
        : () => chmodSync(suite.host.netDir, 0o555);
      readOnly();
      try {
        await suite.host.start();
        await suite.host.waitFor(() => suite.host.logs.some((line) => line.level === "error"));
        expect((await suite.host.readyz()).status).toBe(503);
        expect(suite.host.read("10-calico.conflist")).toBe(calico());
        expect(readdirSync(suite.host.netDir)).toEqual(["10-calico.conflist"]);
      } finally {
        if (isRoot) execFileSync("umount", [suite.host.netDir]);
        else chmodSync(suite.host.netDir, 0o755);
      }
    });

    it("reports a net dir it cannot read", async () => {
      suite.host = new AgentHarness();
      await suite.host.start(["--net-dir", "/does/not/exist"]);
      await suite.host.waitFor(() => suite.host.notReadyBecause("cannot read"));
      expect(ready().stdout).toContain("not ready");
    });

    it("refuses a conflist it cannot parse without touching it", async () => {
      await started({ "10-calico.conflist": "{ this is not json" });
      await suite.host.waitFor(
        () => suite.host.logs.some((line) => line.msg.includes("10-calico.conflist is not a valid CNI config")),
        5000,
      );
      expect(suite.host.read("10-calico.conflist")).toBe("{ this is not json");
      expect((await suite.host.readyz()).status).toBe(503);
    });

    it("reports an invalid first config as containerd sees it: the whole load fails, so not ready, naming it", async () => {
      await started({ "05-broken.conflist": "{", "10-calico.conflist": calico() }, ["--resync-seconds", "1"]);
      await suite.host.waitFor(() => suite.host.notReadyBecause("05-broken.conflist is not a valid CNI config"), 5000);
      expect(suite.host.notReadyBecause("containerd fails to load the CNI config dir until it is fixed or removed")).toBe(true);
      expect(suite.host.read("10-calico.conflist")).toBe(calico());
      expect(ready().stdout).toContain("05-broken.conflist is not a valid CNI config");
      // Past the half-written grace, logged once, not at every resync.
      const said = () => suite.host.logs.filter((line) => line.msg.includes("05-broken.conflist is not a valid"));
      await suite.host.waitFor(() => said().length > 0, 5000);
      // Two resyncs after it (one a second here), still one line.
      const saidAt = suite.host.logs.indexOf(said()[0]!);
      await suite.host.waitFor(() => suite.host.logs.slice(saidAt).filter((line) => line.msg === "reconcile").length >= 2, 5000);
      expect(said()).toHaveLength(1);
    });

    it("writes no kubeconfig from an empty token: not ready, saying so once", async () => {
      suite.host = new AgentHarness();
      writeFileSync(suite.host.path("10-calico.conflist"), calico());
      suite.host.rotateToken("");
      await suite.host.start();
      await suite.host.waitFor(
        () => suite.host.notReadyBecause(`the service account token ${suite.host.serviceAccountDir}/token is empty`),
        5000,
      );
      // The reasons name suite.host paths: they go to the log and `meshcni ready`, never to whoever can reach the port; the cause's word does.
      expect(await suite.host.readyz()).toEqual({ status: 503, body: "not ready: NoKubeconfig\n" });
      expect(ready().stdout).toContain(`${suite.host.serviceAccountDir}/token is empty`);
      expect(suite.host.kubeconfig()).toBe("");
      expect(ready().status).toBe(1);
      expect(suite.host.logs.filter((line) => line.msg.includes("token") && line.msg.includes("is empty"))).toHaveLength(1);
    });
  });
});

describe("meshcni install: settings it refuses", () => {
  it("documents Linkerd's environment variables", () => {
    const help = execFileSync(meshcniBinary, ["install", "--help"], { encoding: "utf8" });
    for (const name of ["DEST_CNI_NET_DIR", "DEST_CNI_BIN_DIR", "CNI_NETWORK_CONFIG", "KUBECONFIG_FILE_NAME"]) expect(help).toContain(name);
  });

  it.each([
    ["--bogus"],
    ["--listen", "localhost"],
    ["--repair", "delete"],
    ["--audit-seconds", "soon"],
    ["--log-level", "verbose"],
    ["--log-level", "warning!"],
  ])("refuses %j with one line and exit 2, before installing anything", (...flags) => {
    const probe = new AgentHarness();
    try {
      const result = spawnSync(meshcniBinary, ["install", ...probe.args(flags)], { env: probe.env, encoding: "utf8" });
      expect(result.status).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(/^meshcni install: .*\(see meshcni install --help\)$/m);
      expect(readdirSync(probe.binDir)).toEqual([]);
      expect(readdirSync(probe.netDir)).toEqual([]);
    } finally {
      void probe.cleanup();
    }
  });

  it("refuses an invalid LOG_LEVEL the same way", () => {
    const probe = new AgentHarness();
    try {
      const result = spawnSync(meshcniBinary, ["install", ...probe.args()], { env: { ...probe.env, LOG_LEVEL: "loud" }, encoding: "utf8" });
      expect([result.status, result.stderr]).toEqual([
        2,
        'meshcni install: --log-level must be one of debug, info, warn, error, not "loud" (see meshcni install --help)\n',
      ]);
    } finally {
      void probe.cleanup();
    }
  });

  it("exits 1 with one line when it cannot listen (the address is taken), before installing anything", async () => {
    const probe = new AgentHarness();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      writeFileSync(probe.path("10-calico.conflist"), calico());
      const port = (taken.address() as AddressInfo).port;
      const result = spawnSync(meshcniBinary, ["install", ...probe.args(["--listen", `127.0.0.1:${port}`])], {
        env: probe.env,
        encoding: "utf8",
      });
      expect(result.status).toBe(1);
      const lines = result.stderr
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { level: string; msg: string });
      expect(lines).toEqual([
        expect.objectContaining({ level: "error", msg: expect.stringContaining(`cannot listen on 127.0.0.1:${port} (--listen)`) }),
      ]);
      expect(lines[0]!.msg).toContain("in use");
      expect(readdirSync(probe.binDir)).toEqual([]);
      expect(probe.read("10-calico.conflist")).toBe(calico());
    } finally {
      taken.close();
      void probe.cleanup();
    }
  });
});
