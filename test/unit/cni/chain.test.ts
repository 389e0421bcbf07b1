import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chainProblems, chainTypes, checkChain } from "../../../src/cni/chain.js";
import { type ConfigFile, parseConfig } from "../../../src/cni/config-dir.js";
import { executablesIn } from "../../../src/installer/bin-dir.js";
import { calicoConflist, configFile } from "../../kit/fixtures.js";

const valid = (file: ConfigFile) => {
  const config = parseConfig(file);
  if (!config.valid) throw new Error(config.reason);
  return config;
};
const meshcni = new Set(["meshcni"]);

describe("the chain the runtime runs", () => {
  it("runs every plugin's type and every IPAM's, in chain order, once each", () => {
    const config = valid(
      configFile("10-k8s.conflist", {
        cniVersion: "1.0.0",
        name: "k8s",
        plugins: [
          { type: "bridge", ipam: { type: "host-local" } },
          { type: "portmap" },
          { type: "bandwidth", ipam: { type: "host-local" } },
          { type: "meshcni" },
        ],
      }),
    );
    expect(chainTypes(config)).toEqual(["bridge", "host-local", "portmap", "bandwidth", "meshcni"]);
    expect(chainTypes(valid(configFile("10-b.conf", { type: "bridge", ipam: { type: "dhcp" } })))).toEqual(["bridge", "dhcp"]);
  });

  it("names each type with no executable, leaving out the types checked elsewhere", () => {
    const config = valid(
      configFile("10-calico.conflist", { ...calicoConflist, plugins: [...calicoConflist.plugins, { type: "meshcni" }] }),
    );
    expect(checkChain(config, new Set(["calico", "portmap", "meshcni"]), meshcni)).toEqual({ missing: [], invalid: [] });
    expect(checkChain(config, new Set(["calico"]), meshcni)).toEqual({ missing: ["portmap"], invalid: [] });
    expect(checkChain(config, new Set(), meshcni).missing).toEqual(["calico", "portmap"]);
  });

  it("refuses what libcni refuses: a list without a name, a cniVersion that is no version or newer than 1.1.0", () => {
    const types = new Set(["bridge"]);
    const check = (json: object) => checkChain(valid(configFile("a.conflist", json)), types, meshcni).invalid;
    expect(check({ cniVersion: "1.0.0", plugins: [{ type: "bridge" }] })).toEqual([`it has no "name" (libcni refuses a list without one)`]);
    expect(check({ cniVersion: "1.0", name: "a", plugins: [{ type: "bridge" }] })).toEqual([`its cniVersion "1.0" is not a version`]);
    expect(check({ cniVersion: 1, name: "a", plugins: [{ type: "bridge" }] })).toEqual(["its cniVersion 1 is not a version"]);
    expect(check({ cniVersion: "1.2.0", name: "a", plugins: [{ type: "bridge" }] })).toEqual([
      "its cniVersion 1.2.0 is newer than any runtime's libcni speaks (1.1.0)",
    ]);
    expect(check({ cniVersion: "0.3.1", name: "a", plugins: [{ type: "bridge" }] })).toEqual([]);
    // A .conf is wrapped under its own name; no cniVersion is libcni's default.
    expect(checkChain(valid(configFile("a.conf", { type: "bridge" })), types, meshcni)).toEqual({ missing: [], invalid: [] });
  });

  it("runs no IPAM that names no type", () => {
    const config = valid(
      configFile("10-k8s.conflist", {
        name: "k8s",
        plugins: [
          { type: "bridge", ipam: {} },
          { type: "tuning", ipam: { type: "" } },
        ],
      }),
    );
    expect(chainTypes(config)).toEqual(["bridge", "tuning"]);
  });

  it("takes a cniVersion for a version only when it is three numbers, and 1.1.0 for none newer", () => {
    const check = (cniVersion: unknown) =>
      checkChain(valid(configFile("a.conflist", { cniVersion, name: "a", plugins: [{ type: "bridge" }] })), new Set(["bridge"]), meshcni)
        .invalid;
    for (const version of ["1.1.0", "1.0.10", "0.10.0"]) expect(check(version)).toEqual([]);
    expect(check("10.0.0")).toEqual(["its cniVersion 10.0.0 is newer than any runtime's libcni speaks (1.1.0)"]);
    for (const version of ["v1.0.0", "1.0.0-rc1", "1.0.0.0"])
      expect(check(version)).toEqual([`its cniVersion "${version}" is not a version`]);
    expect(check(["1.0.0"])).toEqual(['its cniVersion ["1.0.0"] is not a version']);
  });

  it("says what is wrong with a chain, a line each: the missing executables together, then why libcni refuses it", () => {
    const dirs = "/opt/cni/bin";
    expect(
      chainProblems(
        "10-calico.conflist",
        { missing: ["calico", "portmap"], invalid: ['it has no "name"', "its cniVersion 2 is not a version"] },
        dirs,
      ),
    ).toEqual([
      "10-calico.conflist chains calico, portmap, with no executable in /opt/cni/bin: the runtime fails every pod's ADD and DEL on this node",
      '10-calico.conflist: it has no "name"',
      "10-calico.conflist: its cniVersion 2 is not a version",
    ]);
    expect(chainProblems("10-calico.conflist", { missing: [], invalid: [] }, dirs)).toEqual([]);
  });
});

describe("the executables of a CNI bin dir", () => {
  const root = mkdtempSync(join(tmpdir(), "meshcni-bin-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("holds regular files with an execute bit, through symlinks followed under the host root (a target not there: not known, so held)", () => {
    const host = join(root, "host");
    const bin = join(host, "opt/cni/bin");
    mkdirSync(bin, { recursive: true });
    mkdirSync(join(host, "usr/lib/cni"), { recursive: true });
    const file = (path: string, mode: number) => {
      writeFileSync(path, "#!/bin/sh\n");
      chmodSync(path, mode);
    };
    file(join(bin, "bridge"), 0o755);
    file(join(bin, "notes"), 0o644);
    mkdirSync(join(bin, "subdir"), { mode: 0o755 });
    file(join(host, "usr/lib/cni/portmap"), 0o755);
    // Debian's packaging: an absolute link, the host's path.
    symlinkSync("/usr/lib/cni/portmap", join(bin, "portmap"));
    symlinkSync("bridge", join(bin, "bridge-again"));
    symlinkSync("/usr/lib/cni/notes", join(bin, "not-executable"));
    file(join(host, "usr/lib/cni/notes"), 0o644);
    symlinkSync("/elsewhere/tuning", join(bin, "tuning"));
    symlinkSync("loop", join(bin, "loop"));
    expect([...executablesIn(bin, host)].sort()).toEqual(["bridge", "bridge-again", "portmap", "tuning"]);
    expect(executablesIn(join(root, "absent"), host)).toEqual(new Set());
  });
});
