import { describe, expect, it } from "vitest";
import { readCniEnv } from "../../../src/cni/env.js";
import { cniErrorCode } from "../../kit/fixtures.js";

describe("CNI environment", () => {
  it("needs CNI_NETNS for ADD and CHECK but not DEL", () => {
    const base = { CNI_CONTAINERID: "c", CNI_IFNAME: "eth0" };
    expect(cniErrorCode(() => readCniEnv({ ...base, CNI_COMMAND: "ADD" }))).toBe(4);
    expect(cniErrorCode(() => readCniEnv({ ...base, CNI_COMMAND: "CHECK" }))).toBe(4);
    expect(readCniEnv({ ...base, CNI_COMMAND: "DEL" }).netns).toBe("");
  });

  it("refuses an unknown or missing command", () => {
    expect(cniErrorCode(() => readCniEnv({ CNI_COMMAND: "UPDATE" }))).toBe(4);
    expect(cniErrorCode(() => readCniEnv({}))).toBe(4);
  });

  it("needs nothing more for VERSION, STATUS and GC", () => {
    for (const command of ["VERSION", "STATUS", "GC"]) expect(readCniEnv({ CNI_COMMAND: command }).command).toBe(command);
  });
});
