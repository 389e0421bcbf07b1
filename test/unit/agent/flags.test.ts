import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { agentDocPath, withAgentFlagsTable } from "../../../build/agent-docs.js";
import { agentEnvironment, agentFlags, readAgentFlags } from "../../../src/agent/flags.js";
import { meshcniBinary } from "../../kit/paths.js";

/** The agent's flags are declared once (src/agent/flags.ts): its parsing, its help and the docs' table come from there. */
describe("the agent's flags, declared once", () => {
  it("docs/agent.md's table is the one the table makes (npm run manifests writes it)", () => {
    const doc = readFileSync(agentDocPath, "utf8");
    expect(withAgentFlagsTable(doc)).toBe(doc);
  });

  it("each flag with a variable reads it when not given, the flag winning over it, an empty one as Linkerd's installer does", () => {
    for (const flag of agentFlags.filter((flag) => "env" in flag)) {
      const name = flag.name as Parameters<ReturnType<typeof readAgentFlags>["text"]>[0];
      expect(readAgentFlags([], { [flag.env.name]: "from-env" }).text(name), flag.name).toBe("from-env");
      expect(readAgentFlags([`--${flag.name}`, "given"], { [flag.env.name]: "from-env" }).text(name), flag.name).toBe("given");
      const unsetValue = readAgentFlags([], {}).text(name);
      const emptyValue = readAgentFlags([], { [flag.env.name]: "" }).text(name);
      expect(emptyValue, flag.name).toBe("emptyIsUnset" in flag.env ? unsetValue : "");
    }
  });

  it("reads no environment variable the table does not declare", () => {
    const source = readFileSync(join(import.meta.dirname, "../../../src/agent/options.ts"), "utf8");
    const read = new Set([...source.matchAll(/\benv\.([A-Z_]+)/g)].map((match) => match[1]));
    expect([...read].sort()).toEqual(agentEnvironment.flatMap(({ names }) => names).sort());
  });

  it("`meshcni install --help` names every flag, its variable and its default", () => {
    const help = execFileSync(meshcniBinary, ["install", "--help"], { encoding: "utf8" });
    for (const flag of agentFlags) {
      expect(help, flag.name).toMatch(new RegExp(`^  --${flag.name}\\b`, "m"));
      if ("env" in flag) expect(help).toContain(`[${flag.env.name}]`);
      if ("default" in flag && typeof flag.default === "string" && flag.default !== "") expect(help).toContain(`(${flag.default}`);
    }
    for (const name of agentEnvironment.flatMap(({ names }) => names)) expect(help).toContain(name);
  });
});
