import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createNodeApi } from "../../src/kube/node-api.js";
import { getJson } from "../../src/kube/transport.js";
import { RealCluster } from "../kit/cluster/cluster.js";
import { nodeName, paths } from "../kit/cluster/layout.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * The agent's one HTTP client (src/kube/https.ts) against the real kube-apiserver, for each
 * TLS setting a kubeconfig gives: its CA, a client certificate and key, a server name, skip
 * verify; and a wrong CA, or a wrong server name, refused. Under Node (these tests' runtime:
 * the generated API and the watch transport) and under Bun (`meshcni status`, the compiled
 * binary): the same client in both.
 */
describeAsRoot("the agent's API client and the kubeconfig's TLS settings, against the real API server", () => {
  const cluster = new RealCluster();
  let dir: string;
  const server = () => /server: "([^"]+)"/.exec(readFileSync(paths.adminKubeconfig, "utf8"))![1]!;
  /** A kubeconfig for the cluster's admin (its client certificate), with `tls` in its cluster. */
  const kubeconfig = (name: string, tls: Record<string, unknown>) => {
    const path = join(dir, `${name}.kubeconfig`);
    const user = { "client-certificate": join(paths.pki, "admin.crt"), "client-key": join(paths.pki, "admin.key") };
    const config = {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server: server(), ...tls } }],
      users: [{ name: "u", user }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    };
    writeFileSync(path, JSON.stringify(config));
    return path;
  };
  const underNode = async (path: string) => {
    const config = new KubeConfig();
    config.loadFromFile(path);
    const api = createNodeApi(config, nodeName);
    try {
      const namespace = await api.readNamespace("default");
      const listed = (await getJson(config, "/api/v1/namespaces", { limit: "1" }, AbortSignal.timeout(5000))) as { kind: string };
      return `${namespace.metadata?.name} ${listed.kind}`;
    } catch (error) {
      return `refused: ${String((error as Error).message)}`;
    }
  };
  const underBun = async (path: string) => {
    const result = await execa(meshcniBinary, ["status", "--kubeconfig", path, "--timeout", "10"], { reject: false });
    return result.exitCode === 0 ? "ok" : `refused: ${result.stderr}`;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-api-client-"));
    await cluster.up();
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("trusts the kubeconfig's CA, and only it", async () => {
    const trusted = kubeconfig("ca", { "certificate-authority": join(paths.pki, "ca.crt") });
    expect(await underNode(trusted)).toBe("default NamespaceList");
    expect(await underBun(trusted)).toBe("ok");
    // Another CA (the cluster's admin certificate is no CA of the server's): refused, never ignored.
    const wrong = kubeconfig("wrong-ca", { "certificate-authority": join(paths.pki, "admin.crt") });
    expect(await underNode(wrong)).toMatch(/^refused: .*(certificate|self.signed|issuer)/i);
    expect(await underBun(wrong)).toMatch(/^refused: /);
  });

  it("checks the server's name against tls-server-name when given, and skips verifying only when told to", async () => {
    const ca = join(paths.pki, "ca.crt");
    const named = kubeconfig("named", { "certificate-authority": ca, "tls-server-name": "kubernetes.default.svc" });
    expect(await underNode(named)).toBe("default NamespaceList");
    expect(await underBun(named)).toBe("ok");
    const misnamed = kubeconfig("misnamed", { "certificate-authority": ca, "tls-server-name": "not-the-api.example" });
    expect(await underNode(misnamed)).toMatch(/^refused: /);
    expect(await underBun(misnamed)).toMatch(/^refused: /);
    const skipping = kubeconfig("skip", { "insecure-skip-tls-verify": true });
    expect(await underNode(skipping)).toBe("default NamespaceList");
    expect(await underBun(skipping)).toBe("ok");
  });
});
