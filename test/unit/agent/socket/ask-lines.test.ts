import { describe, expect, it } from "vitest";
import { AskLines, HeldBytes } from "../../../../src/agent/socket/ask-lines.js";

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("a connection's questions, a line each", () => {
  it("gives each whole line once, however the bytes are split, and holds only the unfinished one", () => {
    const held = new HeldBytes(100);
    const lines = new AskLines(held, 20);
    expect(lines.push(bytes('{"a":'))).toEqual([]);
    expect(lines.partial).toBe(true);
    expect(held.held).toBe(5);
    expect(lines.push(bytes('1}\n{"b":2}\n{"c"'))).toEqual(['{"a":1}', '{"b":2}']);
    expect(held.held).toBe(4);
    for (const byte of ":3}\n") lines.push(bytes(byte));
    expect(lines.partial).toBe(false);
    expect(held.held).toBe(0);
    expect(lines.push(bytes("\n"))).toEqual([""]);
  });

  it("keeps a character split across chunks whole", () => {
    const lines = new AskLines(new HeldBytes(100), 20);
    const text = bytes("é\n");
    expect(lines.push(text.subarray(0, 1))).toEqual([]);
    expect(lines.push(text.subarray(1))).toEqual(["é"]);
  });

  it("refuses a line past its bound, whole in one chunk or arriving in parts, and holds nothing of it", () => {
    const held = new HeldBytes(100);
    const lines = new AskLines(held, 8);
    expect(lines.push(bytes("12345678\n"))).toEqual(["12345678"]);
    expect(lines.push(bytes("123456789\n"))).toEqual({ refused: "a question longer than 8 bytes" });
    expect(new AskLines(held, 8).push(bytes("123456789"))).toEqual({ refused: "a question longer than 8 bytes" });
    const parts = new AskLines(held, 8);
    expect(parts.push(bytes("12345"))).toEqual([]);
    expect(parts.push(bytes("6789"))).toEqual({ refused: "a question longer than 8 bytes" });
    expect(held.held).toBe(0);
  });

  it("refuses the connection whose bytes would pass what is held across connections; the others go on, and a released one frees its share", () => {
    const held = new HeldBytes(10);
    const first = new AskLines(held, 8);
    const second = new AskLines(held, 8);
    expect(first.push(bytes("123456"))).toEqual([]);
    expect(second.push(bytes("12345"))).toEqual({ refused: "10 bytes of questions held across connections" });
    expect(second.push(bytes("1234\n"))).toEqual(["1234"]);
    expect(first.push(bytes("7\n"))).toEqual(["1234567"]);
    expect(second.push(bytes("12345678"))).toEqual([]);
    second.release();
    expect(held.held).toBe(0);
  });
});
