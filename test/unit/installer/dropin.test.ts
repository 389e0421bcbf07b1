import { describe, expect, it } from "vitest";
import { notLoaded } from "../../../src/agent/chain-proof.js";
import { parseConfig } from "../../../src/cni/config-dir.js";
import { dropInNetwork } from "../../../src/cni/drop-ins.js";
import { dropInText, planDropIn } from "../../../src/installer/dropin.js";

const entry = { type: "meshcni", log_level: "info", agent_socket: "/var/run/meshcni/agent/plugin.sock" };
const conflist = (name: string, plugins: object[], extra: object = {}) => ({
  name: `${name}.conflist`,
  text: JSON.stringify({ cniVersion: "1.0.0", name, plugins, ...extra }),
});
const bridge = { type: "bridge" };
const primary = conflist("k8s-pod-network", [bridge]);

describe("the network whose drop-in dir the runtime loads", () => {
  const of = (file: { name: string; text: string }) => dropInNetwork(file, parseConfig(file));
  it("is a .conflist's name", () => expect(of(primary)).toEqual({ network: "k8s-pod-network" }));
  it("is none for a single plugin's .conf, a conflist that loads only its own plugins, or a name that is no file name", () => {
    expect(of({ name: "10-bridge.conf", text: JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "bridge" }) })).toEqual({
      why: expect.stringContaining("drop-ins only for a .conflist"),
    });
    for (const only of [true, "true"])
      expect(of(conflist("n", [bridge], { loadOnlyInlinedPlugins: only }))).toEqual({
        why: expect.stringContaining("loadOnlyInlinedPlugins"),
      });
    expect(of(conflist("n", [bridge], { loadOnlyInlinedPlugins: false }))).toEqual({ network: "n" });
    for (const name of ["..", "a/b", ""])
      expect(of(conflist(name, [bridge]))).toEqual({ why: expect.stringContaining("cannot name a drop-in dir") });
  });
});

describe("planning meshcni's drop-in", () => {
  it("writes the probe alone, leaves the configs as they are, and makes the runtime reload", () => {
    const withEntry = conflist("k8s-pod-network", [bridge, entry]);
    const plan = planDropIn([withEntry], [], entry, true);
    expect(plan).toEqual({
      kind: "dropin",
      network: "k8s-pod-network",
      write: dropInText(entry, true),
      removals: [],
      stale: [],
      reload: true,
    });
    expect(JSON.parse(dropInText(entry, true))).toEqual({ type: "meshcni", probe: true });
  });

  it("as the entry: written, then taken out of every config (that write reloads the runtime)", () => {
    const withEntry = conflist("k8s-pod-network", [bridge, entry, { type: "linkerd-cni" }]);
    const plan = planDropIn([withEntry, conflist("other", [bridge, entry])], [], entry, false);
    if (plan.kind !== "dropin") throw new Error(plan.why);
    expect(plan.write).toBe(dropInText(entry, false));
    // linkerd-cni's entry is another plugin's: it stays.
    expect(plan.removals.map(({ name, text }) => [name, JSON.parse(text).plugins.map((p: { type: string }) => p.type)])).toEqual([
      ["k8s-pod-network.conflist", ["bridge", "linkerd-cni"]],
      ["other.conflist", ["bridge"]],
    ]);
    expect(plan.reload).toBe(false);
  });

  it("writes nothing when the drop-in is there as it should be, and never touches the primary's file", () => {
    const found = [{ network: "k8s-pod-network", text: dropInText(entry, false) }];
    expect(planDropIn([primary], found, entry, false)).toEqual({
      kind: "dropin",
      network: "k8s-pod-network",
      write: undefined,
      removals: [],
      stale: [],
      reload: false,
    });
  });

  it("follows the active network (Cilium's config sorted first): the old network's drop-in goes, the runtime reloads", () => {
    const cilium = { ...conflist("cilium", [{ type: "cilium-cni" }]), name: "05-cilium.conflist" };
    const found = [{ network: "k8s-pod-network", text: dropInText(entry, false) }];
    expect(planDropIn([primary, cilium], found, entry, false)).toMatchObject({
      network: "cilium",
      write: dropInText(entry, false),
      stale: ["k8s-pod-network"],
      reload: true,
    });
  });

  it("falls back when the active config cannot take a drop-in", () => {
    expect(planDropIn([conflist("n", [bridge], { loadOnlyInlinedPlugins: true })], [], entry, false)).toEqual({
      kind: "fallback",
      why: expect.stringContaining("loadOnlyInlinedPlugins"),
    });
  });
});

describe("whether the runtime loaded meshcni's drop-in", () => {
  const chain = (network: string, plugins: Array<Record<string, unknown> | undefined>) => ({
    network,
    plugins: plugins.map((config) => ({ type: (config as { type?: string } | undefined)?.type ?? "meshcni", config })),
  });
  it("is so when the network's chain holds it once, as written", () => {
    expect(notLoaded(chain("n", [bridge, { type: "meshcni", probe: true }]), "n", "meshcni", true)).toBeUndefined();
    expect(notLoaded(chain("n", [bridge, entry]), "n", "meshcni", false)).toBeUndefined();
    // The conflist's own entry beside the probe is not the probe.
    expect(notLoaded(chain("n", [bridge, entry, { type: "meshcni", probe: true }]), "n", "meshcni", true)).toBeUndefined();
  });
  it("is not, saying why: another network, none loaded, loaded twice, or the runtime cannot say", () => {
    expect(notLoaded(chain("cilium", [bridge]), "n", "meshcni", false)).toBe(
      "the container runtime has not loaded network n; it runs network cilium: bridge",
    );
    expect(notLoaded(chain("n", [bridge]), "n", "meshcni", true)).toBe(
      "the container runtime did not load meshcni's probe; it runs network n: bridge",
    );
    expect(notLoaded(chain("n", [bridge, entry, entry]), "n", "meshcni", false)).toContain("loaded meshcni's drop-in 2 times");
    expect(notLoaded({ unknown: "no word" }, "n", "meshcni", false)).toBe("no word");
  });
});
