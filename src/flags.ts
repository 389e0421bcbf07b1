import { type ParseArgsConfig, parseArgs } from "node:util";

/** The checks every command's flags share; each throws one line naming the flag and the value. */

/** node:util's parseArgs, its refusals in one line of our words (its own run to three lines, or tell of "positional arguments"). */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    const name = /'(-[^' ]+)/.exec(message)?.[1] ?? "";
    const argument = /argument '([^']*)'/.exec(message)?.[1];
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new Error(`unknown flag ${name}`);
    if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") throw new Error(`takes no arguments, not ${JSON.stringify(argument)}`);
    if (/ambiguous/.test(message)) throw new Error(`${name} needs a value (for one that starts with "-", write ${name}=VALUE)`);
    if (/argument missing/.test(message)) throw new Error(`${name} needs a value`);
    if (/does not take an argument/.test(message)) throw new Error(`${name} takes no value`);
    throw error;
  }
}

export function oneOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text))
    throw new Error(`--${flag} must be one of ${allowed.join(", ")}, not ${JSON.stringify(text)}`);
  return text as T;
}

/** A number written in decimal digits (no sign, hex or exponent: `0x50` is no port), that passes `check`. */
export function numberFlag(flag: string, text: string, check: (value: number) => boolean, what: string): number {
  const value = Number(text);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(text) || !check(value)) throw new Error(`--${flag} must be ${what}, not ${JSON.stringify(text)}`);
  return value;
}

/** --timeout of the commands run by hand that ask the API server: whole seconds, 1 to 600. */
export const timeoutFlag = (text: string) =>
  numberFlag("timeout", text, (seconds) => Number.isInteger(seconds) && seconds >= 1 && seconds <= 600, "whole seconds from 1 to 600");
