import { describe, expect, it } from "vitest";
import { checkAnswer } from "../../../src/agent-schema.js";
import { parseAnswer } from "../../../src/kube/agent-connection.js";

/** What the full schema makes of a value: the answer, or that it is none. */
const bySchema = (value: unknown) => {
  try {
    return { answer: checkAnswer(value) };
  } catch {
    return { none: true };
  }
};
const byPlugin = async (value: unknown) => {
  try {
    return { answer: await parseAnswer(JSON.stringify(value)) };
  } catch {
    return { none: true };
  }
};

/** The plugin recognises `applied` without the schema library: it must agree with the schema on every answer. */
describe("the plugin's reading of the agent's answers", () => {
  const result = { cniVersion: "1.0.0", interfaces: [{ name: "eth0" }], ips: [{ address: "10.0.0.2/24", interface: 0 }] };
  it.each([
    ["applied with a result", { applied: { result } }],
    ["applied with none (DEL)", { applied: {} }],
    ["applied, beside keys no answer has", { applied: { result, extra: 1 }, more: true }],
    ["applied with a result that is null", { applied: { result: null } }],
    ["applied with a result that is a list", { applied: { result: [result] } }],
    ["applied with a result that is text", { applied: { result: "ok" } }],
    ["applied as null", { applied: null }],
    ["applied as a list", { applied: [] }],
    ["applied as true", { applied: true }],
    ["refused", { refused: { code: 7, msg: "bad netconf", details: "field x" } }],
    ["refused with code 0", { refused: { code: 0, msg: "m", details: "d" } }],
    ["an error", { error: "the API server did not answer" }],
    ["a pod gone", { gone: "the API server has no such pod (404 Not Found)" }],
    ["a pod gone, said by no text", { gone: 404 }],
    ["a cached object", { object: { metadata: { name: "web" } }, cached: true }],
    ["nothing", {}],
    ["a list", [{ applied: {} }]],
    ["a number", 7],
    ["null", null],
  ])("%s: as the schema says", async (_what, value) => {
    expect(await byPlugin(value)).toEqual(bySchema(value));
  });

  it("is no answer when the line is no JSON", async () => {
    await expect(parseAnswer('{"applied":')).rejects.toThrow(SyntaxError);
  });
});
