import { describe, expect, it } from "vitest";
import { readCniEnv } from "../../../src/cni/env.js";
import { CniError } from "../../../src/cni/errors.js";
import { cniErrorCode } from "../../kit/fixtures.js";

/** The CNI error readCniEnv refuses `env` with. */
function refusal(env: NodeJS.ProcessEnv): { code: number; msg: string } {
  try {
    readCniEnv(env);
  } catch (error) {
    if (error instanceof CniError) return { code: error.code, msg: error.message };
    throw error;
  }
  throw new Error("expected the environment to be refused");
}

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

  it("reads every parameter the runtime passed, as passed", () => {
    const env = {
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: "3f2a",
      CNI_NETNS: "/var/run/netns/cni-1",
      CNI_IFNAME: "eth0",
      CNI_ARGS: "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web",
      CNI_PATH: "/opt/cni/bin",
    };
    expect(readCniEnv(env)).toEqual({
      command: "ADD",
      containerId: "3f2a",
      netns: "/var/run/netns/cni-1",
      ifname: "eth0",
      args: "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web",
      path: "/opt/cni/bin",
    });
  });

  it("reads what the runtime left out as empty", () => {
    expect(readCniEnv({ CNI_COMMAND: "STATUS" })).toEqual({
      command: "STATUS",
      containerId: "",
      netns: "",
      ifname: "",
      args: "",
      path: "",
    });
  });

  it("names the commands it knows when the command is not one of them", () => {
    const expected = "expected one of ADD, DEL, CHECK, STATUS, GC, VERSION";
    expect(refusal({ CNI_COMMAND: "add" })).toEqual({ code: 4, msg: `invalid CNI_COMMAND "add": ${expected}` });
    expect(refusal({})).toEqual({ code: 4, msg: `invalid CNI_COMMAND "": ${expected}` });
  });

  it.each([
    ["ADD", {}, "ADD needs CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME in the environment"],
    ["CHECK", { CNI_CONTAINERID: "c" }, "CHECK needs CNI_NETNS, CNI_IFNAME in the environment"],
    ["ADD", { CNI_CONTAINERID: "c", CNI_NETNS: "/var/run/netns/x" }, "ADD needs CNI_IFNAME in the environment"],
    ["ADD", { CNI_NETNS: "/var/run/netns/x", CNI_IFNAME: "eth0" }, "ADD needs CNI_CONTAINERID in the environment"],
    ["DEL", { CNI_NETNS: "/var/run/netns/x" }, "DEL needs CNI_CONTAINERID, CNI_IFNAME in the environment"],
    ["DEL", { CNI_CONTAINERID: "c", CNI_IFNAME: "" }, "DEL needs CNI_IFNAME in the environment"],
  ])("refuses %s with %j, naming every variable it lacks (an empty one counts as missing)", (command, env, msg) => {
    expect(refusal({ CNI_COMMAND: command, ...env })).toEqual({ code: 4, msg });
  });
});
