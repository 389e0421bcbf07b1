import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { auditLogFiles } from "../../kit/cluster/audit.js";

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it("reads the audit log's rotated files before the live one, oldest first, and nothing else of the dir", () => {
  dir = mkdtempSync(join(tmpdir(), "audit-"));
  const names = ["audit.log", "audit-2026-11-28T16-10-00.000.log", "kube-apiserver.log", "audit-2026-11-28T15-40-00.000.log"];
  for (const name of names) writeFileSync(join(dir, name), "");
  expect(auditLogFiles(dir).map((file) => basename(file))).toEqual([
    "audit-2026-11-28T15-40-00.000.log",
    "audit-2026-11-28T16-10-00.000.log",
    "audit.log",
  ]);
});
