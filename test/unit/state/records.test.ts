import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { abandonedAfterMs, isAbandoned } from "../../../src/files.js";
import { fileRecordStore, locksDir, type NewRecord } from "../../../src/state/records.js";

const record = (containerId: string, ifname = "eth0"): NewRecord => ({
  state: "added",
  pod: { namespace: "shop", name: "web", uid: "u1" },
  containerId,
  ifname,
  netns: "/var/run/netns/x",
  backend: "nft",
  plans: [],
});

describe("ADD records on disk", () => {
  let dir = "";
  const store = () => {
    if (!dir) dir = mkdtempSync(join(tmpdir(), "meshcni-records-"));
    return fileRecordStore(dir);
  };
  const containerIds = () =>
    store()
      .list()
      .map((found) => found.containerId)
      .sort();
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = "";
  });

  it("writes one file per attachment, reads them back, and removes one", () => {
    store().write(record("a"));
    store().write(record("b", "net1"));
    expect(readdirSync(join(dir, "attachments")).sort()).toEqual(["a_eth0.json", "b_net1.json"]);
    expect(statSync(join(dir, "attachments")).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "attachments", "a_eth0.json")).mode & 0o777).toBe(0o600);
    expect(
      store()
        .list()
        .map((found) => [found.containerId, found.ifname, found.version]),
    ).toEqual(
      expect.arrayContaining([
        ["a", "eth0", 1],
        ["b", "net1", 1],
      ]),
    );
    store().remove({ containerID: "a", ifname: "eth0" });
    expect(containerIds()).toEqual(["b"]);
  });

  it("names a plain id's file after it, hashes any other (long, odd characters), and never mixes two up", () => {
    const long = "c".repeat(300);
    for (const [id, ifname] of [
      ["3f2a9c", "eth0"],
      ["../../etc/passwd", "eth0"],
      [long, "net1"],
      ["a_b", "c"],
      ["a", "b_c"],
    ] as const) {
      store().write(record(id, ifname));
    }
    const names = readdirSync(join(dir, "attachments")).sort();
    expect(names).toContain("3f2a9c_eth0.json");
    expect(names).toHaveLength(5);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9.-]+_[A-Za-z0-9.-]+\.json$/);
    expect(
      store()
        .forContainer(long)
        .map((found) => found.ifname),
    ).toEqual(["net1"]);
    expect(
      store()
        .forContainer("a_b")
        .map((found) => found.ifname),
    ).toEqual(["c"]);
    store().remove({ containerID: long, ifname: "net1" });
    expect(containerIds()).not.toContain(long);
  });

  it("finds every attachment of one container", () => {
    for (const ifname of ["eth0", "net1", "net2"]) store().write(record("pod-sandbox", ifname));
    store().write(record("other"));
    expect(
      store()
        .forContainer("pod-sandbox")
        .map((found) => found.ifname)
        .sort(),
    ).toEqual(["eth0", "net1", "net2"]);
  });

  it("sweeps temp and lock files whose process in its PID namespace is gone, never a live one's", () => {
    store().write(record("a"));
    const attachments = join(dir, "attachments");
    const dead = spawnSync("true").pid!;
    const here = readlinkSync("/proc/self/ns/pid").replace(/\D/g, "");
    writeFileSync(join(attachments, `.a_eth0.json.meshcni-ns${here}-${dead}-0badc0de.tmp`), "{");
    writeFileSync(join(attachments, `.b_eth0.json.meshcni-ns${here}-${process.ppid}-0badc0de.tmp`), "{");
    mkdirSync(locksDir(dir));
    writeFileSync(join(locksDir(dir), `xtables.meshcni-ns${here}-${dead}-0badc0de.lock`), "");
    expect(store().sweep().sort()).toEqual([
      `.a_eth0.json.meshcni-ns${here}-${dead}-0badc0de.tmp`,
      `xtables.meshcni-ns${here}-${dead}-0badc0de.lock`,
    ]);
    expect(readdirSync(attachments).sort()).toEqual([`.b_eth0.json.meshcni-ns${here}-${process.ppid}-0badc0de.tmp`, "a_eth0.json"]);
    expect(readdirSync(locksDir(dir))).toEqual([]);
  });

  it("leaves another PID namespace's files (the host's plugin, seen from the agent's pod) until they are old, whatever their PID", () => {
    const records = store();
    const attachments = join(dir, "attachments");
    mkdirSync(attachments, { recursive: true });
    const dead = spawnSync("true").pid!;
    const fresh = `.a_eth0.json.meshcni-ns1-${dead}-0badc0de.tmp`;
    const old = `.b_eth0.json.meshcni-ns1-${dead}-0badc0de.tmp`;
    const older = `.c_eth0.json.meshcni-${dead}-0badc0de.tmp`;
    for (const name of [fresh, old, older]) writeFileSync(join(attachments, name), "{");
    const longAgo = (Date.now() - abandonedAfterMs - 60_000) / 1000;
    utimesSync(join(attachments, old), longAgo, longAgo);
    utimesSync(join(attachments, older), longAgo, longAgo);
    expect(records.sweep().sort()).toEqual([old, older]);
    expect(readdirSync(attachments)).toEqual([fresh]);
  });

  it("judges a file by its writer's namespace: there by PID, elsewhere by age only", () => {
    const sweeper = { pidNamespace: "4026531836", pid: 10, isAlive: (pid: number) => pid === 42 };
    const now = 1_000_000_000;
    const name = (namespace: string, pid: number) => `.x_eth0.json.meshcni-ns${namespace}-${pid}-0badc0de.tmp`;
    expect(isAbandoned(name("4026531836", 43), now, now, sweeper)).toBe(true);
    expect(isAbandoned(name("4026531836", 42), now - 2 * abandonedAfterMs, now, sweeper)).toBe(false);
    expect(isAbandoned(name("4026531836", 10), now - 2 * abandonedAfterMs, now, sweeper)).toBe(false);
    expect(isAbandoned(name("4026532999", 43), now - abandonedAfterMs, now, sweeper)).toBe(false);
    expect(isAbandoned(name("4026532999", 43), now - abandonedAfterMs - 1, now, sweeper)).toBe(true);
    expect(isAbandoned("a_eth0.json", 0, now, sweeper)).toBe(false);
  });

  it("collects the records of attachments the runtime no longer lists", () => {
    for (const id of ["a", "b", "c"]) store().write(record(id));
    expect(store().collect([{ containerID: "b", ifname: "eth0" }])).toBe(2);
    expect(containerIds()).toEqual(["b"]);
  });

  it("skips files that are not records, and reads records that still carry a fingerprint", () => {
    store().write(record("a"));
    const text = JSON.parse(readFileSync(join(dir, "attachments", "a_eth0.json"), "utf8"));
    writeFileSync(join(dir, "attachments", "old_eth0.json"), JSON.stringify({ ...text, containerId: "old", fingerprint: "f00d" }));
    writeFileSync(join(dir, "attachments", "junk.json"), "{");
    mkdirSync(join(dir, "attachments", "dir.json"));
    expect(
      store()
        .list()
        .map((found) => found.containerId)
        .sort(),
    ).toEqual(["a", "old"]);
  });

  it("lists nothing for a state dir that is not there", () => {
    expect(fileRecordStore("/nonexistent/meshcni").list()).toEqual([]);
  });
});
