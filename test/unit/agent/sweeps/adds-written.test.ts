import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { AddsWritten } from "../../../../src/agent/sweeps/adds-written.js";
import { type PodOptions, podObject } from "../../../kit/api/server.js";

const pod = (options: PodOptions = {}) =>
  podObject("shop", "web", { proxy: "container", nodeName: "n1", podIP: "10.0.0.9", ...options }) as V1Pod;
/** The pod before its sandbox had an address. */
const addressless = () => podObject("shop", "web", { proxy: "container", nodeName: "n1" }) as V1Pod;

/** What the agent remembers of the ADDs its writers carried out, and when a pod event still stands for one. */
describe("the ADDs the agent wrote, as its sweeps use them", () => {
  it("covers the pod while what the decision reads and its addresses are as written: a status change, another annotation", () => {
    const written = new AddsWritten();
    expect(written.covers(pod())).toBe(false);
    written.note(addressless(), ["10.0.0.9/24", "fd00::9/64"]);
    expect(written.covers(pod())).toBe(true);
    const ready = pod();
    ready.status = { ...ready.status, conditions: [{ type: "Ready", status: "True" }] };
    expect(written.covers(ready)).toBe(true);
    expect(written.covers(pod({ annotations: { "deployment.kubernetes.io/revision": "2" } }))).toBe(true);
    const dual = pod();
    dual.status = { ...dual.status, podIPs: [{ ip: "10.0.0.9" }, { ip: "fd00::9" }] };
    expect(written.covers(dual)).toBe(true);
  });

  it("stops covering a pod for good once the decision's fields or its addresses are not the ADD's", () => {
    const written = new AddsWritten();
    written.note(pod(), ["10.0.0.9/24"]);
    expect(written.covers(pod({ annotations: { "config.linkerd.io/skip-outbound-ports": "443" } }))).toBe(false);
    expect(written.covers(pod())).toBe(false);
    written.note(pod(), ["10.0.0.9/24"]);
    expect(written.covers(pod({ labels: { app: "web" } }))).toBe(false);
    written.note(pod(), ["10.0.0.9/24"]);
    expect(written.covers(pod({ podIP: "10.0.0.10" }))).toBe(false);
    expect(written.covers(pod())).toBe(false);
    written.note(pod(), ["10.0.0.9/24"]);
    expect(written.covers(addressless())).toBe(false);
  });

  it("notes nothing without an address or a UID, and forgets a pod removed", () => {
    const written = new AddsWritten();
    written.note(pod(), []);
    expect(written.covers(pod())).toBe(false);
    const noUid = pod();
    delete noUid.metadata!.uid;
    written.note(noUid, ["10.0.0.9/24"]);
    expect(written.covers(noUid)).toBe(false);
    written.note(pod(), ["10.0.0.9/24"]);
    written.forget("uid-shop-web");
    expect(written.covers(pod())).toBe(false);
  });
});
