import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import { conflist } from "../kit/agent/host.js";
import { FakeCriRuntime } from "../kit/cri/fake-runtime.js";
import { meshcniBinary } from "../kit/paths.js";

/** Runs the compiled binary as an operator would: no CNI_* variables in its environment. */
function meshcni(...args: string[]) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("CNI_")));
  const result = spawnSync(meshcniBinary, args, { env, encoding: "utf8", timeout: 20_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const scratch = mkdtempSync(join(tmpdir(), "meshcni-check-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("meshcni check --pre", () => {
  /** A node under a host root: containerd's config, the CNI dirs it names, a linkerd-cni already there. */
  function node(cniVersion: string): string {
    const root = mkdtempSync(join(scratch, "node-"));
    mkdirSync(join(root, "etc/containerd"), { recursive: true });
    writeFileSync(
      join(root, "etc/containerd/config.toml"),
      'version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "/usr/lib/cni"\n  conf_dir = "/etc/cni/net.d"\n',
    );
    mkdirSync(join(root, "etc/cni/net.d"), { recursive: true });
    writeFileSync(
      join(root, "etc/cni/net.d/10-calico.conflist"),
      conflist("k8s-pod-network", [{ type: "calico" }, { type: "linkerd-cni" }], { cniVersion }),
    );
    mkdirSync(join(root, "usr/lib/cni"), { recursive: true });
    for (const binary of ["calico", "linkerd-cni"]) writeFileSync(join(root, "usr/lib/cni", binary), "#!/bin/sh\n", { mode: 0o755 });
    mkdirSync(join(root, "var/run/netns"), { recursive: true });
    return root;
  }

  it("says which config the runtime loads, from the runtime's own config, and what to do about each finding", () => {
    const result = meshcni("check", "--pre", "--host-root", node("1.0.0"));
    expect(result.status, result.stdout).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^ok {4}runtime +containerd \(\/etc\/containerd\/config\.toml\): CNI configs in \/etc\/cni\/net\.d, binaries in \/usr\/lib\/cni/,
      ),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^warn {2}install +.*`meshcni manifests --bin-dir \/usr\/lib\/cni`$/));
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^ok {4}runtime config +the runtime loads \/etc\/cni\/net\.d\/10-calico\.conflist \(conflist\): primary CNI calico, cniVersion 1\.0\.0$/,
      ),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^warn {2}cniVersion +runtimes send STATUS and GC only from cniVersion 1\.1\.0/));
    expect(lines.filter((line) => /^warn {2}linkerd-cni /.test(line))).toHaveLength(2);
    expect(lines.every((line) => /^(ok|warn|fail) /.test(line))).toBe(true);
  });

  it("fails, exit 1, when the runtime has no CNI config yet; --output json", () => {
    const root = node("1.1.0");
    rmSync(join(root, "etc/cni/net.d/10-calico.conflist"));
    const result = meshcni("check", "--pre", "--host-root", root, "--output", "json");
    expect(result.status).toBe(1);
    const results = JSON.parse(result.stdout) as Array<{ check: string; level: string; message: string }>;
    expect(results.find((entry) => entry.check === "runtime config")).toEqual({
      check: "runtime config",
      level: "fail",
      message: "no CNI config in /etc/cni/net.d: install the primary CNI first; meshcni chains after it",
    });
  });

  /** The check's lines about one thing, as "level message". */
  const about = (stdout: string, check: string) =>
    stdout
      .trimEnd()
      .split("\n")
      .filter((line) => line.slice(6).startsWith(`${check} `))
      .map((line) => `${line.slice(0, 5).trim()} ${line.slice(6 + check.length).trim()}`);

  it("refuses a --host-root that does not exist, rather than judge an empty node", () => {
    const result = meshcni("check", "--pre", "--host-root", join(scratch, "absent"));
    expect([result.status, result.stdout]).toEqual([2, ""]);
    expect(result.stderr).toBe(
      `meshcni check: --host-root ${join(scratch, "absent")} does not exist (kubectl debug node/NAME mounts the node's filesystem at /host) (see meshcni check --help)\n`,
    );
  });

  it("looks for the iptables binaries on the node under --host-root, not on its own PATH", () => {
    const root = node("1.1.0");
    const bare = meshcni("check", "--pre", "--host-root", root, "--cri-socket", "");
    expect(about(bare.stdout, "iptables")).toEqual([
      "ok no iptables binaries: meshcni writes the redirect over netlink itself (nftables), with no binary",
    ]);
    mkdirSync(join(root, "usr/sbin"), { recursive: true });
    for (const binary of ["iptables-legacy-save", "iptables-legacy-restore", "ip6tables-legacy-save", "ip6tables-legacy-restore"])
      writeFileSync(join(root, "usr/sbin", binary), "#!/bin/sh\n", { mode: 0o755 });
    const legacy = meshcni("check", "--pre", "--host-root", root, "--cri-socket", "");
    expect(about(legacy.stdout, "iptables")).toEqual([`ok backends with their binaries (the node's, under ${root}): legacy`]);
  });

  it("proves the state dir by making a dir and a file there, leaving nothing; a file or /proc is refused", () => {
    const root = node("1.1.0");
    const fresh = meshcni("check", "--pre", "--host-root", root, "--cri-socket", "", "--state-dir", "/var/run/meshcni");
    expect(about(fresh.stdout, "state dir")).toEqual([
      "ok /var/run/meshcni can be created and hold ADD's records (a dir and a file made there, and removed)",
    ]);
    expect(readdirSync(join(root, "var/run"))).toEqual(["netns"]);
    writeFileSync(join(root, "etc/hostname"), "node\n");
    const file = meshcni("check", "--pre", "--host-root", root, "--cri-socket", "", "--state-dir", "/etc/hostname");
    expect(file.status).toBe(1);
    expect(about(file.stdout, "state dir")[0]).toMatch(/^fail \/etc\/hostname: it is no directory; /);
    const proc = meshcni("check", "--pre", "--cri-socket", "", "--state-dir", "/proc/meshcni");
    expect(about(proc.stdout, "state dir")[0]).toMatch(/^fail \/proc\/meshcni: E[A-Z]+ making a dir and a file in \/proc; /);
  });

  it("asks the runtime's CRI socket for its pod sandboxes; a socket that is not the CRI, or none, is named with the flag", async () => {
    const root = node("1.1.0");
    const runtime = new FakeCriRuntime();
    await runtime.start();
    try {
      runtime.sandboxes.set("uid-a", "/var/run/netns/a");
      // On this host: the socket is not under the node's root.
      const answered = await execa(meshcniBinary, ["check", "--pre", "--cri-socket", runtime.socket], { reject: false });
      expect(about(answered.stdout, "CRI socket")).toEqual([`ok ${runtime.socket} answers the CRI: 1 pod sandboxes`]);
      expect(runtime.calls).toContain("ListPodSandbox");
    } finally {
      await runtime.stop();
    }
    const none = meshcni("check", "--pre", "--host-root", root);
    expect(about(none.stdout, "CRI socket")).toEqual([
      "warn /run/containerd/containerd.sock or /var/run/crio/crio.sock: no CRI socket found; the audit asks the runtime which netns is whose: give the runtime's with --cri-socket, and the same to meshcni manifests --cri-socket",
    ]);
    writeFileSync(join(root, "not-a-socket"), "");
    const file = meshcni("check", "--pre", "--host-root", root, "--cri-socket", "/not-a-socket");
    expect(about(file.stdout, "CRI socket")[0]).toMatch(/^warn \/not-a-socket: it is no socket; /);
  });
});
