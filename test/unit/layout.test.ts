import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");
const src = join(root, "src");

/** Every .ts file under a dir. */
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );

/** The src/ folders each folder imports (the shared files at the top of src/ left out), as the code has them now. */
function folderImports(): Map<string, Set<string>> {
  const imports = new Map<string, Set<string>>();
  for (const file of sources(src)) {
    const [folder, ...rest] = relative(src, file).split("/");
    if (rest.length === 0) continue;
    const found = imports.get(folder!) ?? new Set<string>();
    imports.set(folder!, found);
    for (const [, target] of readFileSync(file, "utf8").matchAll(/from "(\.[^"]+)"/g)) {
      const [other, ...below] = relative(src, resolve(dirname(file), target!)).split("/");
      if (below.length > 0 && other !== folder) found.add(other!);
    }
  }
  return imports;
}

/** docs/development.md's layout table: each `src/<folder>/` row's imports (what is in parentheses is a note). */
function documentedImports(): Map<string, Set<string>> {
  const doc = readFileSync(join(root, "docs/development.md"), "utf8");
  const layout = doc.slice(doc.indexOf("## Layout"));
  const rows = [...layout.matchAll(/^\| `src\/([a-z]+)\/` +\|.*\| ([^|]+) \|$/gm)];
  return new Map(
    rows.map(([, folder, cell]) => [
      folder!,
      new Set(
        cell!
          .replace(/\([^)]*\)/g, "")
          .split(",")
          .map((name) => name.trim())
          .filter((name) => name && name !== "—"),
      ),
    ]),
  );
}

describe("docs/development.md's layout", () => {
  it("has a row for each folder of src/, naming exactly the folders it imports", () => {
    const actual = folderImports();
    const documented = documentedImports();
    expect([...documented.keys()].sort()).toEqual([...actual.keys()].sort());
    for (const [folder, imports] of actual) expect([...(documented.get(folder) ?? [])].sort(), folder).toEqual([...imports].sort());
  });
});

describe("src/'s packages", () => {
  it("are package.json's dependencies, each imported by src/; the tools of tests and benches stay devDependencies", () => {
    const packageJson = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    const imported = new Set(
      sources(src).flatMap((file) =>
        [...readFileSync(file, "utf8").matchAll(/(?:from |import\()"((?:@[^/"]+\/)?[^./"][^/"]*)[^"]*"/g)]
          .map(([, name]) => name!)
          .filter((name) => !name.startsWith("node:") && !name.startsWith("bun:") && name !== "bun"),
      ),
    );
    expect([...imported].sort()).toEqual(Object.keys(packageJson.dependencies).sort());
  });
});
