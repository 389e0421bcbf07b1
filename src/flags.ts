/** The checks every command's flags share; each throws one line naming the flag and the value. */

export function oneOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text))
    throw new Error(`--${flag} must be one of ${allowed.join(", ")}, not ${JSON.stringify(text)}`);
  return text as T;
}

export function numberFlag(flag: string, text: string, check: (value: number) => boolean, what: string): number {
  const value = Number(text);
  if (text.trim() === "" || !check(value)) throw new Error(`--${flag} must be ${what}, not ${JSON.stringify(text)}`);
  return value;
}
