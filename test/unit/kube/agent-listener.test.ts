import { describe, expect, it } from "vitest";
import { listenerFacts, listenerProblem } from "../../../src/kube/agent-listener.js";

const agent = { pid: 4242, uid: 0, capEff: (1n << 12n) | (1n << 21n) | (1n << 13n), sameNetns: true };

describe("who listens on the agent's socket, as the plugin proves it", () => {
  it("takes root on the host's network with CAP_NET_ADMIN and CAP_SYS_ADMIN for the agent", () => {
    expect(listenerProblem(agent)).toBeUndefined();
  });

  it("takes nothing else for it: another uid, a capability missing, another netns, nothing readable, outside the PID namespace", () => {
    expect(listenerProblem({ ...agent, uid: 1000 })).toBe("it (pid 4242) runs as uid 1000, not root");
    expect(listenerProblem({ ...agent, capEff: 0n })).toMatch(/lacks CAP_NET_ADMIN or CAP_SYS_ADMIN/);
    expect(listenerProblem({ ...agent, capEff: 1n << 21n })).toMatch(/lacks CAP_NET_ADMIN/);
    expect(listenerProblem({ ...agent, capEff: 1n << 12n })).toMatch(/CAP_SYS_ADMIN/);
    expect(listenerProblem({ ...agent, sameNetns: false })).toMatch(/not in the host's network namespace/);
    expect(listenerProblem({ ...agent, sameNetns: undefined })).toMatch(/not in the host's network namespace/);
    expect(listenerProblem({ ...agent, capEff: undefined })).toBe("its capabilities cannot be read (pid 4242)");
    expect(listenerProblem({ ...agent, pid: 0 })).toMatch(/outside the host's PID namespace/);
  });

  it("reads a process's capabilities and network namespace from /proc: this one's, and one that is gone", () => {
    const own = listenerFacts({ pid: process.pid, uid: 0 });
    expect(own.sameNetns).toBe(true);
    expect(typeof own.capEff).toBe("bigint");
    expect(listenerFacts({ pid: 2 ** 22 + 1, uid: 0 })).toEqual({ pid: 2 ** 22 + 1, uid: 0, capEff: undefined, sameNetns: undefined });
  });
});
