import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fileRecordStore, type NewRecord } from "../../../src/state/records.js";

const record = (containerId: string, ifname = "eth0"): NewRecord => ({
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

  it("keeps runtime-chosen ids to safe file names", () => {
    store().write(record("../../etc/passwd"));
    expect(readdirSync(join(dir, "attachments"))).toEqual(["..-..-etc-passwd_eth0.json"]);
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
