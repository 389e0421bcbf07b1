import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { netnsTie, untiedNetns } from "../../../../src/agent/writers/netns-tie.js";
import { FakeCriRuntime } from "../../../kit/cri/fake-runtime.js";

describe("an ADD's netns tied to its pod by the container runtime", () => {
  it("takes a pod with no ready sandbox (its own is being set up), or the one asked, or one in that very netns", () => {
    expect(untiedNetns("shop/web", [], "c1", "/run/netns/a")).toBeUndefined();
    expect(untiedNetns("shop/web", [{ sandbox: "c1", netns: "/run/netns/b" }], "c1", "/run/netns/a")).toBeUndefined();
    expect(untiedNetns("shop/web", [{ sandbox: "c0", netns: "/run/netns/a" }], "c1", "/run/netns/a")).toBeUndefined();
  });

  it("refuses a netns other than the one the runtime runs the pod in, naming both", () => {
    expect(untiedNetns("shop/web", [{ sandbox: "c0", netns: "/run/netns/own" }], "c1", "/run/netns/victim")).toBe(
      "the container runtime runs pod shop/web in sandbox c0 with netns /run/netns/own, not /run/netns/victim",
    );
    expect(untiedNetns("shop/web", [{ sandbox: "c0", netns: undefined }], "c1", "/run/netns/victim")).toContain("(none named)");
  });

  it("asks a runtime whose socket appears after the agent started (--cri-socket auto); none to ask until then", async () => {
    const hostRoot = mkdtempSync(join(tmpdir(), "meshcni-tie-"));
    const runtime = new FakeCriRuntime();
    try {
      const tie = netnsTie("auto", hostRoot, () => join(hostRoot, "attachments"));
      const pod = { namespace: "shop", name: "web", uid: "u1" };
      expect(await tie(pod, "c1", "/run/netns/victim")).toBeUndefined();
      await runtime.start();
      runtime.sandboxes.set("u1", "/run/netns/own");
      mkdirSync(join(hostRoot, "run/containerd"), { recursive: true });
      symlinkSync(runtime.socket, join(hostRoot, "run/containerd/containerd.sock"));
      expect(await tie(pod, "c1", "/run/netns/victim")).toBe(
        `the container runtime runs pod shop/web in sandbox ${runtime.sandboxIdOf("/run/netns/own")} with netns /run/netns/own, not /run/netns/victim`,
      );
    } finally {
      await runtime.stop();
      rmSync(hostRoot, { recursive: true, force: true });
    }
  });
});
