import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { execa } from "execa";
import { afterAll, expect, it } from "vitest";
import { stringify } from "yaml";
import { closeApiSessions } from "../../src/kube/api-session.js";
import { getJson } from "../../src/kube/transport.js";
import { selfSignedCertificate } from "../kit/api/tls.js";
import { apiserverPort, nodeIp, paths } from "../kit/cluster/layout.js";
import { suiteCluster } from "../kit/cluster/suite.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

const server = `https://${nodeIp}:${apiserverPort}`;
const pem = (name: string) => readFileSync(join(paths.pki, name)).toString("base64");

/** A kubeconfig's cluster and user, as an operator writes them (data inline). */
function kubeconfigYaml(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server, ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    "current-context": "x",
  });
}

/** The cluster's PKI exists once the suite's cluster is up. */
const admin = () => ({ "client-certificate-data": pem("admin.crt"), "client-key-data": pem("admin.key") });
const trusted = () => ({ "certificate-authority-data": pem("ca.crt") });

/**
 * The one HTTP client of the agent and the commands (`src/kube/api-session.ts`: HTTP/2 over
 * node:http2) against kube-apiserver itself, for every TLS setting of a kubeconfig it must
 * honour: each case read from the test's process (Node, as the unit tests run it) and by the
 * compiled binary's `meshcni status` (Bun, as production runs it).
 */
describeAsRoot("meshcni's API client against a real kube-apiserver", () => {
  const cluster = suiteCluster();
  const dir = mkdtempSync(join(tmpdir(), "meshcni-api-client-"));
  afterAll(() => {
    closeApiSessions();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What each runtime makes of `yaml`: Node reads the kube-system namespace; Bun runs `meshcni status`. */
  async function bothRuntimes(name: string, yaml: string) {
    const file = join(dir, name);
    writeFileSync(file, yaml, { mode: 0o600 });
    const config = new KubeConfig();
    config.loadFromString(yaml);
    const node = await getJson(config, "/api/v1/namespaces/kube-system", {}, AbortSignal.timeout(10_000)).then(
      (body) => `read ${(body as { metadata: { name: string } }).metadata.name}`,
      (error: Error) => `failed: ${error.message}`,
    );
    const bun = await execa(meshcniBinary, ["status", "--kubeconfig", file, "--timeout", "10", "--output", "json"], { reject: false });
    return { node, bun: { exitCode: bun.exitCode, stderr: bun.stderr } };
  }

  it("verifies the server by the kubeconfig's CA and authenticates by its client certificate", async () => {
    const answers = await bothRuntimes("admin", kubeconfigYaml(trusted(), admin()));
    expect(answers.node).toBe("read kube-system");
    expect(answers.bun).toEqual({ exitCode: 0, stderr: "" });
  });

  it("sends the kubeconfig's bearer token, and a client certificate of another user is that user's (a connection per identity)", async () => {
    const token = await cluster.kubectl(["create", "token", "default"]);
    const asToken = await bothRuntimes("token", kubeconfigYaml(trusted(), { token: token.trim() }));
    expect(asToken.node).toMatch(/failed: .*"system:serviceaccount:default:default" cannot get resource "namespaces"/);
    expect(asToken.bun.stderr).toMatch(/user u .*403.*system:serviceaccount:default:default/);
    // The admin's session is open in this process: kube-proxy's certificate must not ride on it.
    const proxy = { "client-certificate-data": pem("kube-proxy.crt"), "client-key-data": pem("kube-proxy.key") };
    const asProxy = await bothRuntimes("kube-proxy", kubeconfigYaml(trusted(), proxy));
    expect(asProxy.node).toMatch(/failed: .*"system:kube-proxy" cannot get resource "namespaces"/);
  });

  it("refuses a server its CA does not sign, and one whose certificate does not name tls-server-name", async () => {
    const otherDir = mkdtempSync(join(dir, "other-ca-"));
    const otherCa = selfSignedCertificate(otherDir).cert.toString("base64");
    const untrusted = await bothRuntimes("untrusted", kubeconfigYaml({ "certificate-authority-data": otherCa }, admin()));
    expect(untrusted.node).toBe("failed: unable to verify the first certificate");
    expect(untrusted.bun.exitCode).toBe(2);
    expect(untrusted.bun.stderr).toMatch(/cannot trust the API server/);
    const misnamed = await bothRuntimes("misnamed", kubeconfigYaml({ ...trusted(), "tls-server-name": "elsewhere.example" }, admin()));
    expect(misnamed.node).toMatch(/^failed: Hostname\/IP does not match certificate's altnames: Host: elsewhere\.example\. is not in/);
    expect(misnamed.bun.exitCode).toBe(2);
    expect(misnamed.bun.stderr).toMatch(/cannot trust the API server.*elsewhere\.example/);
  });

  it("checks the certificate against tls-server-name when given, and not at all when told to skip verification", async () => {
    const named = await bothRuntimes("named", kubeconfigYaml({ ...trusted(), "tls-server-name": "kubernetes.default.svc" }, admin()));
    expect(named.node).toBe("read kube-system");
    expect(named.bun.exitCode).toBe(0);
    const skipped = await bothRuntimes("skipped", kubeconfigYaml({ "insecure-skip-tls-verify": true }, admin()));
    expect(skipped.node).toBe("read kube-system");
    expect(skipped.bun.exitCode).toBe(0);
  });
});
