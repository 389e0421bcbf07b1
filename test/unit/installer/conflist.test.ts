import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/cni/config-dir.js";
import { entryCount, hasEntry, withEntry, withoutEntry } from "../../../src/installer/conflist.js";
import { calicoConflist, configFile } from "../../kit/fixtures.js";

const entry = { name: "meshcni", type: "meshcni", kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } };

describe("chaining", () => {
  it("appends the entry last and keeps every other plugin and key", () => {
    const active = configFile("10-calicoConflist.conflist", { ...calicoConflist, disableCheck: true });
    const chained = withEntry(active, parseConfig(active) as never, entry);
    expect(chained.name).toBe("10-calicoConflist.conflist");
    expect(JSON.parse(chained.text)).toEqual({ ...calicoConflist, disableCheck: true, plugins: [...calicoConflist.plugins, entry] });
    expect(hasEntry(parseConfig({ name: chained.name, text: chained.text }), entry)).toBe(true);
  });

  it("replaces an earlier entry of its own type instead of adding a second; linkerd-cni's entry is linkerd-cni's", () => {
    const stale = configFile("10-calicoConflist.conflist", {
      ...calicoConflist,
      plugins: [{ type: "linkerd-cni" }, ...calicoConflist.plugins, { type: "meshcni", old: true }],
    });
    const config = parseConfig(stale);
    expect(entryCount(config, "meshcni")).toBe(1);
    expect(hasEntry(config, entry)).toBe(false);
    expect(JSON.parse(withEntry(stale, config as never, entry).text).plugins).toEqual([
      { type: "linkerd-cni" },
      ...calicoConflist.plugins,
      entry,
    ]);
    expect(JSON.parse(withoutEntry(config, "meshcni")!).plugins).toEqual([{ type: "linkerd-cni" }, ...calicoConflist.plugins]);
    // Installed under Linkerd's names (the template's type linkerd-cni), meshcni's entry is that type: it takes linkerd-cni's place.
    const asLinkerd = { ...entry, type: "linkerd-cni" };
    expect(entryCount(config, "linkerd-cni")).toBe(1);
    expect(JSON.parse(withEntry(stale, config as never, asLinkerd).text).plugins).toEqual([
      ...calicoConflist.plugins,
      { type: "meshcni", old: true },
      asLinkerd,
    ]);
  });

  it("is not chained when the entry is not last or differs", () => {
    const notLast = configFile("a.conflist", { ...calicoConflist, plugins: [entry, ...calicoConflist.plugins] });
    expect(hasEntry(parseConfig(notLast), entry)).toBe(false);
    const other = configFile("a.conflist", { ...calicoConflist, plugins: [...calicoConflist.plugins, { ...entry, log_level: "debug" }] });
    expect(hasEntry(parseConfig(other), entry)).toBe(false);
  });

  it("wraps a .conf as libcni reads it, the whole conf first", () => {
    const conf = { cniVersion: "0.4.0", name: "mynet", type: "bridge", bridge: "cni0" };
    const chained = withEntry(configFile("10-mynet.conf", conf), parseConfig(configFile("10-mynet.conf", conf)) as never, entry);
    expect(chained).toMatchObject({ name: "10-mynet.conflist", replaces: "10-mynet.conf" });
    expect(JSON.parse(chained.text)).toEqual({ cniVersion: "0.4.0", name: "mynet", plugins: [conf, entry] });
  });

  it("unchains every own entry and nothing else; undefined when there is none", () => {
    const chained = configFile("a.conflist", { ...calicoConflist, plugins: [...calicoConflist.plugins, entry] });
    expect(JSON.parse(withoutEntry(parseConfig(chained), "meshcni")!)).toEqual(calicoConflist);
    expect(withoutEntry(parseConfig(configFile("a.conflist", calicoConflist)), "meshcni")).toBeUndefined();
    expect(withoutEntry(parseConfig(configFile("a.conf", { type: "bridge" })), "meshcni")).toBeUndefined();
  });
});
