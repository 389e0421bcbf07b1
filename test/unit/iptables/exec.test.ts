import { describe, expect, it } from "vitest";
import { checkedSave, IptablesError } from "../../../src/iptables/exec.js";
import { readLimitBytes } from "../../../src/redirect/table.js";

/** What a save may hand the agent: a pod with NET_ADMIN fills its own netns as it likes. */
describe("an iptables save's output, bounded", () => {
  it("kills a save writing past readLimitBytes and reads none of it, naming the limit", async () => {
    // `yes` writes without end, as a save of a netns holding millions of rules would write for long.
    const saved = checkedSave("yes", ["COMMIT"]);
    await expect(saved).rejects.toBeInstanceOf(IptablesError);
    await expect(saved).rejects.toThrow(`yes wrote more than ${readLimitBytes >> 20} MiB and was killed: not read further`);
  });

  it("reads a save within the limit whole", async () => {
    expect(await checkedSave("printf", ["*raw\\nCOMMIT\\n"])).toBe("*raw\nCOMMIT\n");
  });
});
