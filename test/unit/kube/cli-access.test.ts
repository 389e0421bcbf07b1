import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliKubeConfig, operatorError } from "../../../src/kube/cli-access.js";
import { ApiStatusError } from "../../../src/kube/errors.js";

const target = { server: "https://10.0.0.1:6443", context: "prod", user: "ops", source: "/home/ops/.kube/config" };
const explain = operatorError(target, 30, "list on pods");

describe("a hand-run command's API failures, in the operator's words", () => {
  it("keeps an answer's status an ApiStatusError, its code, causes and Retry-After still there to decide by", () => {
    const refused = explain(
      new ApiStatusError(500, "Cannot evict pod as it would violate the pod's disruption budget.", 2000, ["DisruptionBudget"]),
    );
    expect(refused).toBeInstanceOf(ApiStatusError);
    expect(refused).toMatchObject({ code: 500, retryAfterMs: 2000, causes: ["DisruptionBudget"] });
    expect((refused as Error).message).toBe(
      "the API server https://10.0.0.1:6443 (context prod, from /home/ops/.kube/config) answered 500: Cannot evict pod as it would violate the pod's disruption budget.",
    );
  });

  it("reads client-node's exception as the API server's Status: 401 names the user, 403 what the command needs", () => {
    const unauthorized = explain({ code: 401, body: JSON.stringify({ kind: "Status", message: "Unauthorized" }), headers: {} });
    expect(unauthorized).toMatchObject({ code: 401 });
    expect((unauthorized as Error).message).toContain("refused the credentials of user ops (401 Unauthorized)");
    const forbidden = explain({ code: 403, body: { message: 'pods is forbidden: User "ops" cannot list resource "pods"' }, headers: {} });
    expect((forbidden as Error).message).toMatch(
      /forbids user ops what this command reads \(403: pods is forbidden: .*\); it needs list on pods$/,
    );
  });

  it("says a deadline passed, a connection failed or TLS failed, as a plain error naming the server", () => {
    const aborted = explain(Object.assign(new Error("The operation was aborted."), { name: "AbortError" }));
    expect(aborted).not.toBeInstanceOf(ApiStatusError);
    expect((aborted as Error).message).toMatch(
      /^no answer from the API server https:\/\/10\.0\.0\.1:6443 \(context prod, .*\) within 30 s: /,
    );
    const refused = explain(
      Object.assign(new Error("Unable to connect. Is the computer able to access the url?"), { code: "ECONNREFUSED" }),
    );
    expect((refused as Error).message).toContain(
      "cannot reach the API server https://10.0.0.1:6443 (context prod, from /home/ops/.kube/config): the connection was refused (ECONNREFUSED)",
    );
    const untrusted = explain(
      Object.assign(new Error("self signed certificate in certificate chain"), { code: "SELF_SIGNED_CERT_IN_CHAIN" }),
    );
    expect((untrusted as Error).message).toMatch(
      /^cannot trust the API server .*: TLS: self signed certificate in certificate chain; check the cluster's certificate-authority in \/home\/ops\/\.kube\/config$/,
    );
  });
});

/** A kubeconfig naming one cluster, user and context each (`name`), its current context `current`. */
const kubeconfig = (name: string, server: string, current = "") =>
  JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster: { server } }],
    users: [{ name, user: { token: `token-${name}` } }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    "current-context": current,
  });

describe("a hand-run command's kubeconfig, as kubectl takes it", () => {
  const signal = new AbortController().signal;
  const inDir = (files: Record<string, string>, test: (dir: string) => void) => {
    const dir = mkdtempSync(join(tmpdir(), "meshcni-kubeconfig-"));
    try {
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      test(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it("merges KUBECONFIG's files: a missing one skipped, the first to name an entry or the current context winning", () => {
    // b names a cluster prod too (another server) and its own current context: a's win.
    const staging = JSON.parse(kubeconfig("staging", "https://10.0.0.2:6443", "staging"));
    staging.clusters.push({ name: "prod", cluster: { server: "https://10.9.9.9:6443" } });
    inDir({ a: kubeconfig("prod", "https://10.0.0.1:6443", "prod"), b: JSON.stringify(staging) }, (dir) => {
      const KUBECONFIG = [join(dir, "missing"), join(dir, "a"), join(dir, "b")].join(delimiter);
      const { config, target } = cliKubeConfig({}, { KUBECONFIG }, signal);
      expect(target).toMatchObject({ context: "prod", server: "https://10.0.0.1:6443", user: "prod", source: `KUBECONFIG=${KUBECONFIG}` });
      expect(config.getContexts().map((context) => context.name)).toEqual(["prod", "staging"]);
      // --context chooses another of the merged ones.
      expect(cliKubeConfig({ context: "staging" }, { KUBECONFIG }, signal).target).toMatchObject({
        server: "https://10.0.0.2:6443",
        user: "staging",
      });
    });
  });

  it("refuses a --context the kubeconfig does not have, and a KUBECONFIG none of whose files exists, naming them", () => {
    inDir({ a: kubeconfig("prod", "https://10.0.0.1:6443", "prod") }, (dir) => {
      expect(() => cliKubeConfig({ kubeconfig: join(dir, "a"), context: "dev" }, {}, signal)).toThrow(
        `--context dev: ${join(dir, "a")} has no such context (it has prod)`,
      );
      const KUBECONFIG = [join(dir, "x"), join(dir, "y")].join(delimiter);
      expect(() => cliKubeConfig({}, { KUBECONFIG }, signal)).toThrow(
        `cannot read kubeconfig ${KUBECONFIG}: none of the files it lists exists`,
      );
    });
  });
});
