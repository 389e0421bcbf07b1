/** The message of anything thrown, for logs and error texts. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The errno name (ENOENT, EACCES…) of a failed system call, when the error has one. */
export function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}
