import { describe, expect, it } from "vitest";
import { createAgentMetrics } from "../../../../src/agent/metrics.js";
import { parseAgentOptions } from "../../../../src/agent/options.js";
import { agentWriting } from "../../../../src/agent/writers/writing.js";
import { loadTemplate } from "../../../../src/installer/template.js";
import { type LogEntry, memoryLogger } from "../../../kit/memory-logger.js";

/** The writers' settings as the agent's options give them, with this entry as its template (as the installer renders it). */
const withEntry = (entry: Record<string, unknown>) => {
  const options = parseAgentOptions(["--node", "n1", "--template", JSON.stringify({ type: "meshcni", ...entry })], {}, "/bin/meshcni");
  const template = loadTemplate(options.install);
  return { hostRoot: options.install.hostRoot, netnsDirs: options.sweep.netnsDirs, template: () => template, criSocket: "" };
};

describe("how the agent writes for the plugin", () => {
  const writer = { write: async () => ({ done: true as const }) };

  it("keeps to its own entry's paths, counts what it hands back, and says each reason once", async () => {
    const logs: LogEntry[] = [];
    const metrics = createAgentMetrics();
    const writing = agentWriting(withEntry({ state_dir: "/run/x", log_file: "/var/log/meshcni.log" }), writer, memoryLogger(logs), metrics);
    expect(writing?.scope).toMatchObject({ stateDir: "/run/x", logFile: "/var/log/meshcni.log", netnsDirs: ["/var/run/netns"] });
    expect(writing?.scope.linkerd).toMatchObject({ "incoming-proxy-port": 4143, "proxy-uid": 2102 });
    for (let i = 0; i < 3; i++) writing!.handBack("ADD", "the state dir /etc is not the agent's own (/run/x)");
    writing!.handBack("DEL", "the netns /proc/1/ns/net is not in the runtime's netns dirs (/var/run/netns)");
    expect(logs.filter((line) => line.level === "warn").map((line) => line.fields?.reason)).toEqual([
      "the state dir /etc is not the agent's own (/run/x)",
      "the netns /proc/1/ns/net is not in the runtime's netns dirs (/var/run/netns)",
    ]);
    const counted = (await metrics.registry.getSingleMetric("meshcni_agent_writes_total")!.get()).values;
    expect(counted.find((value) => value.labels.verb === "ADD" && value.labels.result === "handed_back")?.value).toBe(3);
  });

  it("writes nothing for the plugin when its own entry is no netconf it could take", () => {
    const logs: LogEntry[] = [];
    const writing = agentWriting(withEntry({ log_level: "loud" }), writer, memoryLogger(logs), createAgentMetrics());
    expect(writing).toBeUndefined();
    expect(logs.map((line) => line.message)).toEqual(["the agent does not write for the plugin: its own netconf entry is invalid"]);
  });
});
