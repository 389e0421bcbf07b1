import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { chainInto, chooseActive, isChained, ownEntryCount, parseConfig, unchain } from "../../src/installer/conflist.js";
import { renderKubeconfig } from "../../src/installer/kubeconfig.js";
import { defaultTemplate, renderTemplate } from "../../src/installer/template.js";

const entry = { name: "meshcni", type: "meshcni", kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } };
const file = (name: string, json: unknown) => ({ name, text: typeof json === "string" ? json : JSON.stringify(json) });
const calico = {
  cniVersion: "1.0.0",
  name: "k8s-pod-network",
  plugins: [{ type: "calico" }, { type: "portmap", capabilities: { portMappings: true } }],
};

describe("choosing the active config", () => {
  it("takes the lexicographically first file that loads, as the runtime does", () => {
    const files = [
      file("10-calico.conflist", calico),
      file("05-broken.conflist", "{"),
      file("00-notes.txt", "x"),
      file("07-empty.conflist", { plugins: [] }),
    ];
    expect(chooseActive(files)?.file.name).toBe("10-calico.conflist");
    expect(chooseActive([...files, file("01-bridge.conf", { type: "bridge" })])?.file.name).toBe("01-bridge.conf");
    expect(chooseActive([file("a.conf", { name: "x" })])).toBeUndefined();
  });

  it("says why a file does not load", () => {
    expect(parseConfig(file("a.conflist", "{"))).toMatchObject({ valid: false, reason: expect.stringContaining("not valid JSON") });
    expect(parseConfig(file("a.conflist", { plugins: [{ name: "no type" }] }))).toMatchObject({
      valid: false,
      reason: "every plugin needs a type",
    });
    expect(parseConfig(file("a.conf", []))).toMatchObject({ valid: false, reason: "not a JSON object" });
  });
});

describe("chaining", () => {
  it("appends the entry last and keeps every other plugin and key", () => {
    const active = file("10-calico.conflist", { ...calico, disableCheck: true });
    const chained = chainInto(active, parseConfig(active) as never, entry);
    expect(chained.name).toBe("10-calico.conflist");
    expect(JSON.parse(chained.text)).toEqual({ ...calico, disableCheck: true, plugins: [...calico.plugins, entry] });
    expect(isChained(parseConfig({ name: chained.name, text: chained.text }), entry)).toBe(true);
  });

  it("replaces an existing meshcni or linkerd-cni entry instead of adding a second", () => {
    const stale = file("10-calico.conflist", {
      ...calico,
      plugins: [{ type: "linkerd-cni" }, ...calico.plugins, { type: "meshcni", old: true }],
    });
    const config = parseConfig(stale);
    expect(ownEntryCount(config)).toBe(2);
    expect(isChained(config, entry)).toBe(false);
    expect(JSON.parse(chainInto(stale, config as never, entry).text).plugins).toEqual([...calico.plugins, entry]);
  });

  it("is not chained when the entry is not last or differs", () => {
    const notLast = file("a.conflist", { ...calico, plugins: [entry, ...calico.plugins] });
    expect(isChained(parseConfig(notLast), entry)).toBe(false);
    const other = file("a.conflist", { ...calico, plugins: [...calico.plugins, { ...entry, log_level: "debug" }] });
    expect(isChained(parseConfig(other), entry)).toBe(false);
  });

  it("wraps a .conf as libcni reads it, the whole conf first", () => {
    const conf = { cniVersion: "0.4.0", name: "mynet", type: "bridge", bridge: "cni0" };
    const chained = chainInto(file("10-mynet.conf", conf), parseConfig(file("10-mynet.conf", conf)) as never, entry);
    expect(chained).toMatchObject({ name: "10-mynet.conflist", replaces: "10-mynet.conf" });
    expect(JSON.parse(chained.text)).toEqual({ cniVersion: "0.4.0", name: "mynet", plugins: [conf, entry] });
  });

  it("unchains every own entry and nothing else; undefined when there is none", () => {
    const chained = file("a.conflist", { ...calico, plugins: [...calico.plugins, entry] });
    expect(JSON.parse(unchain(parseConfig(chained))!)).toEqual(calico);
    expect(unchain(parseConfig(file("a.conflist", calico)))).toBeUndefined();
    expect(unchain(parseConfig(file("a.conf", { type: "bridge" })))).toBeUndefined();
  });
});

describe("template", () => {
  it("fills the kubeconfig path and names the binary after the type", () => {
    const template = renderTemplate(defaultTemplate, "/etc/cni/net.d/ZZZ-meshcni-kubeconfig");
    expect(template).toMatchObject({
      ok: true,
      binaryName: "meshcni",
      entry: { kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } },
    });
    const linkerd = renderTemplate('{"type":"linkerd-cni","kubernetes":{"kubeconfig":"__KUBECONFIG_FILEPATH__"}}', '/a "b"');
    expect(linkerd).toMatchObject({ ok: true, binaryName: "linkerd-cni", entry: { kubernetes: { kubeconfig: '/a "b"' } } });
  });

  it("refuses what is not JSON, not an object, or not our type", () => {
    expect(renderTemplate("{", "/k")).toMatchObject({ ok: false, reason: expect.stringContaining("not valid JSON") });
    expect(renderTemplate("[]", "/k")).toMatchObject({ ok: false, reason: expect.stringContaining("JSON object") });
    expect(renderTemplate('{"type":"calico"}', "/k")).toMatchObject({ ok: false, reason: expect.stringContaining('"calico"') });
  });
});

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
