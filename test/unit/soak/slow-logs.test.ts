import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { logSince } from "../../kit/soak/slow-logs.js";

describe("a slow recovery's logs", () => {
  const dir = mkdtempSync(join(tmpdir(), "meshcni-slow-logs-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps what a log gained since the fault began, and all of one begun again since", () => {
    const log = join(dir, "kubelet.log");
    writeFileSync(log, "before the fault\n");
    const mark = "before the fault\n".length;
    appendFileSync(log, "during the fault\n");
    expect(logSince(log, mark).toString()).toBe("during the fault\n");
    writeFileSync(log, "new\n");
    expect(logSince(log, mark).toString()).toBe("new\n");
    expect(logSince(log, 0).toString()).toBe("new\n");
  });

  it("keeps a log's last 16 MiB at most: where a slow recovery ends", () => {
    const log = join(dir, "containerd.log");
    writeFileSync(log, Buffer.alloc(17 << 20, "a"));
    appendFileSync(log, "the end\n");
    const kept = logSince(log, 0);
    expect(kept.length).toBe(16 << 20);
    expect(kept.subarray(-8).toString()).toBe("the end\n");
  });
});
