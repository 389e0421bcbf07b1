import { mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

let count = 0;
let dir: string | undefined;

/**
 * A process's stdin as a runtime hands it to a plugin, whole and closed before it starts: an
 * open descriptor of an unlinked file holding `text` (the caller closes it once the process
 * is spawned). Written through a pipe by a busy test or bench process instead, a hundred
 * plugins started at once waited past their 5 s for it. Typed as execa's "inherit": execa
 * hands a descriptor number to spawn as it is (lib/stdio/native.js), its types name only 3 to 9.
 */
export function stdinFile(text: string): { fd: number; stdin: "inherit" } {
  if (!dir) {
    const made = mkdtempSync(join(tmpdir(), "meshcni-stdin-"));
    process.once("exit", () => rmSync(made, { recursive: true, force: true }));
    dir = made;
  }
  const file = join(dir, `stdin-${++count}`);
  writeFileSync(file, text);
  const fd = openSync(file, "r");
  unlinkSync(file);
  return { fd, stdin: fd as unknown as "inherit" };
}
