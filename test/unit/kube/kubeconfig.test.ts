import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadApiAccess } from "../../../src/kube/kubeconfig.js";

const dir = mkdtempSync(join(tmpdir(), "meshcni-kubeconfig-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const write = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

describe("the plugin's kubeconfig reader", () => {
  it("reads the YAML kubeconfig Linkerd's installer writes", async () => {
    const path = write(
      "linkerd.yaml",
      [
        "# Kubeconfig file for linkerd CNI plugin.",
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: local",
        "  cluster:",
        "    server: https://[10.96.0.1]:443",
        `    certificate-authority-data: ${Buffer.from("CA PEM").toString("base64")}`,
        "users:",
        "- name: linkerd-cni",
        "  user:",
        "    token: abc.def",
        "contexts:",
        "- name: linkerd-cni-context",
        "  context:",
        "    cluster: local",
        "    user: linkerd-cni",
        "current-context: linkerd-cni-context",
      ].join("\n"),
    );
    const access = await loadApiAccess(path);
    expect(access).toMatchObject({ ca: "CA PEM", token: "abc.def", insecure: false });
    expect(access.server.href).toBe("https://10.96.0.1/");
  });

  it("reads JSON, a tokenFile relative to the kubeconfig, and insecure-skip-tls-verify", async () => {
    write("token", "from-file\n");
    const path = write(
      "kc.json",
      JSON.stringify({
        clusters: [{ name: "c", cluster: { server: "https://api:6443", "insecure-skip-tls-verify": true } }],
        users: [{ name: "u", user: { tokenFile: "token" } }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
      }),
    );
    expect(await loadApiAccess(path)).toMatchObject({ token: "from-file", insecure: true, ca: undefined });
  });

  it("says what is wrong with one it cannot use", async () => {
    const base = {
      clusters: [{ name: "c", cluster: { server: "https://api" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    };
    await expect(loadApiAccess(join(dir, "absent"))).rejects.toThrow(/cannot read kubeconfig .*absent: ENOENT/);
    await expect(
      loadApiAccess(write("exec.json", JSON.stringify({ ...base, users: [{ name: "u", user: { exec: { command: "aws" } } }] }))),
    ).rejects.toThrow(/uses exec credentials, which meshcni does not run/);
    await expect(loadApiAccess(write("none.json", JSON.stringify({ ...base, users: [{ name: "u", user: {} }] })))).rejects.toThrow(
      /has no credentials/,
    );
    await expect(loadApiAccess(write("ctx.json", JSON.stringify({ ...base, "current-context": "y", users: [] })))).rejects.toThrow(
      /names no current context/,
    );
    await expect(loadApiAccess(write("bad.yaml", "clusters: [unclosed"))).rejects.toThrow(/cannot parse kubeconfig/);
  });
});
