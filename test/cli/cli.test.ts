import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import packageJson from "../../package.json" with { type: "json" };
import { manifestKinds } from "../kit/fixtures.js";
import { meshcniBinary } from "../kit/paths.js";

/** Runs the compiled binary as an operator would: no CNI_* variables in its environment. */
function meshcni(...args: string[]) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("CNI_")));
  const result = spawnSync(meshcniBinary, args, { env, encoding: "utf8", timeout: 20_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const commands = ["install", "ready", "audit", "sweep", "status", "rules", "check", "manifests"];
const scratch = mkdtempSync(join(tmpdir(), "meshcni-cli-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("meshcni's command line", () => {
  it("prints its usage with no arguments, naming every command", () => {
    const result = meshcni();
    expect(result.status).toBe(0);
    for (const command of [...commands, "version", "help"]) expect(result.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    expect(meshcni("--help").stdout).toBe(result.stdout);
    expect(meshcni("-h").stdout).toBe(result.stdout);
  });

  it("prints its version with build details", () => {
    const result = meshcni("--version");
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        `^meshcni ${packageJson.version.replaceAll(".", "\\.")} \\(commit [0-9a-f]{7,}(-dirty)?, bun \\d+\\.\\d+\\.\\d+, linux/(x64|arm64)\\)\\n$`,
      ),
    );
    expect(meshcni("version").stdout).toBe(result.stdout);
  });

  it("help names every command it lists, version and help too; ready's help is ready's own", () => {
    expect(meshcni("help", "help")).toEqual(meshcni("help"));
    const version = meshcni("help", "version");
    expect([version.status, version.stdout]).toEqual([0, expect.stringMatching(/^meshcni version {3}print the version/)]);
    const ready = meshcni("help", "ready").stdout;
    expect(ready).toMatch(/^meshcni ready \[options\]/);
    expect(ready).toContain("--listen");
    expect(ready).not.toContain("--repair");
    expect(meshcni("help", "rules").stdout).not.toContain("holding its IP");
  });

  it.each(commands)("%s: -h, --help and `meshcni help` print the same usage", (command) => {
    const help = meshcni("help", command);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain(`meshcni ${command}`);
    expect(meshcni(command, "--help")).toEqual(help);
    expect(meshcni(command, "-h")).toEqual(help);
  });

  it.each([
    [["bogus"], 'meshcni: unknown command "bogus" (see meshcni help)'],
    [["help", "bogus"], 'meshcni: no command "bogus" (see meshcni help)'],
    [["install", "--listen", "nowhere"], 'meshcni install: --listen must be HOST:PORT, not "nowhere" (see meshcni install --help)'],
    [["ready", "--bogus"], "meshcni ready: unknown flag --bogus"],
    [["audit", "--output", "xml"], 'meshcni audit: --output must be table or json, not "xml"'],
    [["audit", "--repair", "delete"], 'meshcni audit: --repair must be one of redirect, evict, label, none, not "delete"'],
    [["audit", "--max-evictions=-1"], 'meshcni audit: --max-evictions must be a whole number, not "-1"'],
    [["sweep"], "meshcni sweep: the sweep's input is not JSON: "],
    [["sweep", "--now"], 'meshcni sweep: takes no arguments, only its input on stdin, not "--now"'],
    [["rules"], 'meshcni rules: expected one NAMESPACE/POD, got ""'],
    [["check"], "meshcni check: say what to check: --pre (a node before installing)"],
    [["check", "--pre", "--output", "yaml"], 'meshcni check: --output must be table or json, not "yaml"'],
    [["manifests", "--repair", "delete"], 'meshcni manifests: --repair must be one of redirect, evict, label, none, not "delete"'],
    [["manifests", "--netconf", "proxy-uid"], 'meshcni manifests: --netconf must be KEY=VALUE, not "proxy-uid"'],
    [["manifests", "--metrics-port"], "meshcni manifests: --metrics-port needs a value"],
    [["manifests", "--bin-dir", "relative/dir"], "meshcni manifests: --bin-dir must be an absolute path on the node"],
    [["manifests", "--netconf", "incomming-proxy-port=4000"], "(did you mean incoming-proxy-port?)"],
    [["manifests", "--label", "app.kubernetes.io/name=foo"], "the DaemonSet selects its pods by it"],
    // A taint the agent would refuse at start, crash-looping the DaemonSet.
    [
      ["manifests", "--startup-taint", "meshcni.io/not-ready:Sometimes"],
      'meshcni manifests: --startup-taint must look like key[=value][:NoSchedule|PreferNoSchedule|NoExecute], not "meshcni.io/not-ready:Sometimes"',
    ],
  ])("refuses %j: one line on stderr, exit 2, nothing on stdout", (args, message) => {
    const result = meshcni(...args);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.split("\n")).toHaveLength(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
});

describe("meshcni manifests", () => {
  it("prints YAML documents, one object each, ready for kubectl apply -f -", () => {
    const result = meshcni("manifests", "--repair", "evict", "--evict-namespaces", "*", "--pod-monitor");
    expect(result.status).toBe(0);
    const docs = parseAllDocuments(result.stdout).map((doc) => doc.toJS() as { kind: string });
    expect(docs.map((doc) => doc.kind)).toEqual([...manifestKinds, "PodMonitor"]);
  });

  it("writes deploy/ as it is with --output-dir and the defaults", () => {
    const out = join(scratch, "deploy");
    expect(meshcni("manifests", "--output-dir", out).status).toBe(0);
    const deploy = join(import.meta.dirname, "../../deploy");
    const files = (dir: string) => (readdirSync(dir, { recursive: true }) as string[]).filter((name) => name.endsWith(".yaml")).sort();
    expect(files(out)).toEqual(files(deploy));
    expect(files(deploy)).toContain("components/prometheus-rule/prometheusrule.yaml");
    for (const name of files(deploy)) expect(readFileSync(join(out, name), "utf8"), name).toBe(readFileSync(join(deploy, name), "utf8"));
  });

  it("--output-dir says what it wrote, removes what the options no longer render, names what is not its own", () => {
    const out = join(scratch, "again");
    expect(meshcni("manifests", "--output-dir", out, "--pod-monitor").status).toBe(0);
    writeFileSync(join(out, "mine.yaml"), "kind: Mine\n");
    const again = meshcni("manifests", "--output-dir", out, "--namespace", "mesh", "--create-namespace");
    expect(again.status).toBe(0);
    expect(again.stderr.trimEnd().split("\n")).toEqual([
      expect.stringMatching(
        new RegExp(
          `^meshcni manifests: wrote 15 files to ${out}: namespace.yaml, serviceaccount.yaml, .*, kustomization.yaml, components/`,
        ),
      ),
      "meshcni manifests: removed what these options no longer render: podmonitor.yaml",
      "meshcni manifests: left alone, not meshcni's: mine.yaml",
    ]);
    expect(readdirSync(out).sort()).not.toContain("podmonitor.yaml");
    expect(readFileSync(join(out, "mine.yaml"), "utf8")).toBe("kind: Mine\n");
    // Another namespace without --create-namespace: no Namespace file is left to apply.
    const other = meshcni("manifests", "--output-dir", out, "--namespace", "mesh");
    expect(other.stderr).toContain("removed what these options no longer render: namespace.yaml");
    expect(other.stderr).toContain("warning: no Namespace object: mesh must exist");
    expect(readFileSync(join(out, "kustomization.yaml"), "utf8")).not.toContain("namespace.yaml");
  });
});
