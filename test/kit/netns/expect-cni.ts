import { expect } from "vitest";
import type { CniOutcome } from "./plugin-process.js";

/** Every failure prints exactly one CNI error object on stdout, with the code, naming each fragment, no stack. */
export function expectCniError(result: CniOutcome, code: number, ...fragments: string[]): void {
  expect(result.exitCode, result.stdout + result.stderr).toBe(1);
  expect(result.stdout.trim().split("\n")).toHaveLength(1);
  expect(result.json).toMatchObject({ cniVersion: expect.any(String), code, details: expect.any(String) });
  for (const fragment of fragments) expect(result.json?.msg).toContain(fragment);
  expect(result.stdout).not.toMatch(/\n\s+at /);
}
