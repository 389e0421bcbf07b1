import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/cni/config-dir.js";
import { entryCount, hasEntry, withEntry, withoutEntry } from "../../../src/installer/conflist.js";

const entry = { name: "meshcni", type: "meshcni", kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } };
const file = (name: string, json: unknown) => ({ name, text: typeof json === "string" ? json : JSON.stringify(json) });
const calico = {
  cniVersion: "1.0.0",
  name: "k8s-pod-network",
  plugins: [{ type: "calico" }, { type: "portmap", capabilities: { portMappings: true } }],
};

describe("chaining", () => {
  it("appends the entry last and keeps every other plugin and key", () => {
    const active = file("10-calico.conflist", { ...calico, disableCheck: true });
    const chained = withEntry(active, parseConfig(active) as never, entry);
    expect(chained.name).toBe("10-calico.conflist");
    expect(JSON.parse(chained.text)).toEqual({ ...calico, disableCheck: true, plugins: [...calico.plugins, entry] });
    expect(hasEntry(parseConfig({ name: chained.name, text: chained.text }), entry)).toBe(true);
  });

  it("replaces an existing meshcni or linkerd-cni entry instead of adding a second", () => {
    const stale = file("10-calico.conflist", {
      ...calico,
      plugins: [{ type: "linkerd-cni" }, ...calico.plugins, { type: "meshcni", old: true }],
    });
    const config = parseConfig(stale);
    expect(entryCount(config)).toBe(2);
    expect(hasEntry(config, entry)).toBe(false);
    expect(JSON.parse(withEntry(stale, config as never, entry).text).plugins).toEqual([...calico.plugins, entry]);
  });

  it("is not chained when the entry is not last or differs", () => {
    const notLast = file("a.conflist", { ...calico, plugins: [entry, ...calico.plugins] });
    expect(hasEntry(parseConfig(notLast), entry)).toBe(false);
    const other = file("a.conflist", { ...calico, plugins: [...calico.plugins, { ...entry, log_level: "debug" }] });
    expect(hasEntry(parseConfig(other), entry)).toBe(false);
  });

  it("wraps a .conf as libcni reads it, the whole conf first", () => {
    const conf = { cniVersion: "0.4.0", name: "mynet", type: "bridge", bridge: "cni0" };
    const chained = withEntry(file("10-mynet.conf", conf), parseConfig(file("10-mynet.conf", conf)) as never, entry);
    expect(chained).toMatchObject({ name: "10-mynet.conflist", replaces: "10-mynet.conf" });
    expect(JSON.parse(chained.text)).toEqual({ cniVersion: "0.4.0", name: "mynet", plugins: [conf, entry] });
  });

  it("unchains every own entry and nothing else; undefined when there is none", () => {
    const chained = file("a.conflist", { ...calico, plugins: [...calico.plugins, entry] });
    expect(JSON.parse(withoutEntry(parseConfig(chained))!)).toEqual(calico);
    expect(withoutEntry(parseConfig(file("a.conflist", calico)))).toBeUndefined();
    expect(withoutEntry(parseConfig(file("a.conf", { type: "bridge" })))).toBeUndefined();
  });
});
