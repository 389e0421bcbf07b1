import { describe, expect, it } from "vitest";
import { Steps } from "../../kit/cluster/steps.js";

/** `npm run cluster -- up` announces each step with its time, and a failure names its step and its daemons' last lines. */
describe("the real cluster's steps", () => {
  it("says each step as it ends, with its time, and the whole", async () => {
    const lines: string[] = [];
    const steps = new Steps((line) => lines.push(line));
    expect(await steps.run("PKI (openssl)", [], () => 7)).toBe(7);
    await steps.run("etcd and kube-apiserver ready", ["etcd"], () => new Promise((resolve) => setTimeout(resolve, 120)));
    expect(lines[0]).toMatch(/^✓ PKI \(openssl\) \(0\.\d s\)$/);
    expect(lines[1]).toMatch(/^✓ etcd and kube-apiserver ready \(0\.[1-9] s\)$/);
    expect(steps.total()).toMatch(/^0\.[1-9] s$/);
  });

  it("names the step that failed, why, and the last lines of each of its daemons", async () => {
    const lines: string[] = [];
    const logs: Record<string, string> = { kubelet: "E1127 failed to run Kubelet: cgroup", "kube-proxy": "" };
    const steps = new Steps(
      (line) => lines.push(line),
      (daemon) => logs[daemon] ?? "",
    );
    const failed = steps.run("kubelet and kube-proxy: the node Ready", ["kubelet", "kube-proxy"], async () => {
      throw new Error("kubelet exited");
    });
    await expect(failed).rejects.toThrow(
      [
        "the cluster did not come up: kubelet and kube-proxy: the node Ready failed: kubelet exited",
        "--- the last lines of kubelet's log ---",
        "E1127 failed to run Kubelet: cgroup",
        "--- the last lines of kube-proxy's log ---",
        "(nothing logged)",
      ].join("\n"),
    );
    expect(lines).toEqual([expect.stringMatching(/^✗ kubelet and kube-proxy: the node Ready \(0\.0 s\)$/)]);
  });
});
