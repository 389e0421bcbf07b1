import { describe, expect, it } from "vitest";
import { invokePlugin, pluginEnv } from "../kit/netns/plugin-process.js";

/** The runtime's view of the agent's probe drop-in: libcni hands it the conflist's name and version and the previous result. */
const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0" }], ips: [{ address: "10.1.0.5/24", interface: 0 }] };
const probe = { cniVersion: "1.0.0", name: "k8s-pod-network", type: "meshcni", probe: true, prevResult };
const env = (command: string) =>
  pluginEnv("/var/run/netns/none", "c1", "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web", { CNI_COMMAND: command });

/**
 * The compiled plugin given the agent's probe (`{"type": "meshcni", "probe": true}`, the
 * agent's test of whether the runtime loads drop-ins): it passes the previous result on and
 * touches nothing, not even the netns it is named (none here); anything more than the probe
 * with `probe` is refused, never passed through.
 */
describe("the probe drop-in", () => {
  it("ADD passes the previous result on; DEL and CHECK do nothing", async () => {
    const added = await invokePlugin(env("ADD"), probe);
    expect(added.exitCode, added.stderr).toBe(0);
    expect(added.json).toEqual(prevResult);
    for (const command of ["DEL", "CHECK"]) {
      const outcome = await invokePlugin(env(command), probe);
      expect({ exitCode: outcome.exitCode, stdout: outcome.stdout }).toEqual({ exitCode: 0, stdout: "" });
    }
  });

  it("refuses an entry that sets probe beside redirect settings (code 7), naming them", async () => {
    const outcome = await invokePlugin(env("ADD"), {
      ...probe,
      linkerd: { "proxy-uid": 2102 },
      agent_socket: "/var/run/meshcni/agent/plugin.sock",
    });
    expect(outcome.exitCode).toBe(1);
    expect(outcome.json).toMatchObject({ code: 7, msg: expect.stringContaining("also sets linkerd, agent_socket") });
  });
});
