import { describe, expect, it } from "vitest";
import { untiedNetns } from "../../../../src/agent/writers/netns-tie.js";

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
});
