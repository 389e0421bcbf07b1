import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { renderKubeconfig } from "../../../src/installer/kubeconfig.js";

describe("kubeconfig", () => {
  it("names the API server, CA and token; brackets IPv6 hosts; reads back as YAML", () => {
    const text = renderKubeconfig(
      { token: "abc", caPem: "PEM" },
      { protocol: "https", host: "fd00::1", port: "443", skipTlsVerify: false },
    );
    expect(parseYaml(text)).toEqual({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "local",
          cluster: { server: "https://[fd00::1]:443", "certificate-authority-data": Buffer.from("PEM").toString("base64") },
        },
      ],
      users: [{ name: "meshcni", user: { token: "abc" } }],
      contexts: [{ name: "meshcni", context: { cluster: "local", user: "meshcni" } }],
      "current-context": "meshcni",
    });
    const insecure = parseYaml(
      renderKubeconfig({ token: "abc", caPem: "PEM" }, { protocol: "https", host: "10.0.0.1", port: "6443", skipTlsVerify: true }),
    );
    expect(insecure.clusters[0].cluster).toEqual({ server: "https://10.0.0.1:6443", "insecure-skip-tls-verify": true });
  });
});
