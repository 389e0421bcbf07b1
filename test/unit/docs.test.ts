import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");

/** What a reader follows links through: the README, docs/, the chart's README and the benchmark's. */
const documents = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
  "charts/meshcni/README.md",
  "bench/README.md",
];

/** Each line with its number, but those of fenced code blocks: a `#` or `](` there is code, not a heading or a link. */
function proseLines(text: string): Array<{ line: string; number: number }> {
  let fenced = false;
  return text.split("\n").flatMap((line, index) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    return fenced || /^\s*```/.test(line) ? [] : [{ line, number: index + 1 }];
  });
}

/**
 * The anchors GitHub gives a file's headings: lowercased, every character but letters,
 * digits, spaces, `-` and `_` dropped (backticks and colons included), spaces made `-`,
 * and a repeated one suffixed `-1`, `-2` …
 */
function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { line } of proseLines(text)) {
    const heading = /^#{1,6} (.+?)\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replaceAll(" ", "-");
    const repeats = seen.get(slug) ?? 0;
    seen.set(slug, repeats + 1);
    anchors.add(repeats === 0 ? slug : `${slug}-${repeats}`);
  }
  return anchors;
}

/** Why a link of `document` leads nowhere, or undefined when it leads to a file there is and a heading of it. */
function brokenBecause(document: string, target: string): string | undefined {
  const [path = "", anchor] = target.split("#");
  const file = path === "" ? join(root, document) : resolve(dirname(join(root, document)), path);
  if (!existsSync(file)) return `no file ${relative(root, file)}`;
  if (anchor === undefined || !file.endsWith(".md")) return undefined;
  return headingAnchors(readFileSync(file, "utf8")).has(anchor) ? undefined : `no heading #${anchor} in ${relative(root, file)}`;
}

/** Every relative link of a document that leads nowhere, as "file:line (target): why". */
function brokenLinks(document: string): string[] {
  const text = readFileSync(join(root, document), "utf8");
  return proseLines(text).flatMap(({ line, number }) =>
    [...line.replace(/`[^`]*`/g, "code").matchAll(/\]\(([^)\s]+)\)/g)].flatMap(([, target]) => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) return [];
      const why = brokenBecause(document, target!);
      return why === undefined ? [] : [`${document}:${number} (${target}): ${why}`];
    }),
  );
}

describe("the docs", () => {
  it("keep the README a front door: under 300 lines", () => {
    expect(readFileSync(join(root, "README.md"), "utf8").split("\n").length).toBeLessThan(300);
  });

  it("link only to files there are, and to headings those files have", () => {
    expect(documents.flatMap(brokenLinks)).toEqual([]);
  });
});
