import { describe, expect, it } from "vitest";
import { PluginTokens } from "../../../src/agent/plugin-token.js";

describe("the plugin's minted token", () => {
  const account = { namespace: "meshcni", name: "meshcni-plugin" };

  it("is minted at first, renewed once 80% of its life is gone, and never handed out expired", async () => {
    let now = 0;
    const tokens = new PluginTokens(account, 3600, () => now);
    const asked: string[] = [];
    let minted = 0;
    const mint = async (namespace: string, name: string, seconds: number) => {
      asked.push(`${namespace}/${name} ${seconds}s`);
      return { token: `t${++minted}`, validForMs: seconds * 1000, serverNow: now, boundToNode: true };
    };
    const done: unknown[] = [];
    expect(tokens.token()).toBeUndefined();
    tokens.refresh(mint, (error) => done.push(error));
    // One at a time: a second refresh while minting asks nothing.
    tokens.refresh(mint, (error) => done.push(error));
    await Promise.resolve();
    await Promise.resolve();
    expect([tokens.token(), asked, done]).toEqual(["t1", ["meshcni/meshcni-plugin 3600s"], [undefined]]);
    now = 2_879_000;
    expect(tokens.due()).toBe(false);
    now = 2_880_000;
    expect(tokens.due()).toBe(true);
    tokens.refresh(mint, () => undefined);
    await Promise.resolve();
    await Promise.resolve();
    expect(tokens.token()).toBe("t2");
    now += 3_600_000;
    expect(tokens.token()).toBeUndefined();
  });

  it("backs off after a failure: 1 s doubling to 30 s, never two TokenRequests within 10 s", async () => {
    let now = 0;
    const tokens = new PluginTokens(
      account,
      600,
      () => now,
      () => 0,
    );
    const failing = async () => {
      throw new Error("403 Forbidden");
    };
    const failures: unknown[] = [];
    const attempt = async () => {
      tokens.refresh(failing, (error) => failures.push(error));
      await new Promise((resolve) => setTimeout(resolve, 0));
    };
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      await attempt();
      const start = now;
      while (!tokens.due()) now += 100;
      waits.push(now - start);
    }
    expect(waits).toEqual([10000, 10000, 10000, 10000, 16000, 30000, 30000]);
    expect(failures).toHaveLength(7);
    expect(String(failures[0])).toContain("403 Forbidden");
  });

  it("counts a token's life on this node's clock from the server's grant: an API server hours behind makes no loop", async () => {
    let now = 10_000_000;
    const serverBehind = 2 * 3600_000;
    const tokens = new PluginTokens(account, 3600, () => now);
    let mints = 0;
    // The server grants an hour by its clock: expiry and Date are both two hours behind ours.
    const mint = async (_namespace: string, _name: string, seconds: number) => ({
      token: `t${++mints}`,
      validForMs: seconds * 1000,
      serverNow: now - serverBehind,
      boundToNode: true,
    });
    for (let i = 0; i < 100; i++) {
      tokens.refresh(mint, () => undefined);
      await Promise.resolve();
      await Promise.resolve();
      now += 100;
    }
    expect(mints).toBe(1);
    expect(tokens.token()).toBe("t1");
    expect(tokens.skewMs).toBeCloseTo(-serverBehind, -3);
    expect(tokens.dueInMs()).toBeGreaterThan(2_800_000);
  });
});
