// The chart's README (charts/meshcni/README.md), made as linkerd2's charts make theirs with
// helm-docs: a hand-written head (README.md.tmpl) and a table of every value, its type, its
// default and the `# --` comment above it in values.yaml, so the two never disagree.
import { isMap, isNode, parseDocument, type YAMLMap } from "yaml";

/** Where the template takes the values' table. */
const placeholder = "{{ values }}";

type Row = [key: string, type: string, defaultValue: string, description: string];

/**
 * What a comment says of the key below it: its last paragraph when that starts with `--`
 * (helm-docs' mark; a comment without it is a note to the file's reader, such as the
 * file's head), its lines joined.
 */
function describedBy(comment: string | null | undefined): string | undefined {
  const paragraph = comment?.split("\n\n").at(-1)?.trim();
  if (!paragraph?.startsWith("--")) return undefined;
  return paragraph
    .slice(2)
    .split("\n")
    .map((line) => line.trim())
    .join(" ");
}

function typeOf(value: unknown): string {
  if (Array.isArray(value)) return "list";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  if (typeof value === "boolean") return "bool";
  return typeof value === "object" ? "object" : "string";
}

/**
 * A row per described key, its whole value the default; an undescribed map is read key by
 * key. The comment above a map's first key is the map's own in the parsed document.
 */
function rows(map: YAMLMap, prefix: string): Row[] {
  return map.items.flatMap((pair, index) => {
    const key = `${prefix}${String(pair.key)}`;
    const comments = [index === 0 ? map.commentBefore : undefined, isNode(pair.key) ? pair.key.commentBefore : undefined];
    const description = describedBy(comments.filter(Boolean).join("\n\n"));
    if (description !== undefined) {
      const value: unknown = isNode(pair.value) ? pair.value.toJSON() : pair.value;
      return [[key, typeOf(value), `\`${JSON.stringify(value)}\``, description] satisfies Row];
    }
    if (isMap(pair.value)) return rows(pair.value, `${key}.`);
    throw new Error(`charts/meshcni/values.yaml: ${key} has no "# --" comment above it to say what it does`);
  });
}

/** A Markdown table padded as the repository's other tables are, `|` escaped in its cells. */
function table(header: Row, body: Row[]): string {
  const cells = [header, ...body].map((row) => row.map((cell) => cell.replaceAll("|", "\\|")));
  const widths = header.map((_, column) => Math.max(...cells.map((row) => row[column]!.length)));
  const line = (row: string[]) => `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(" | ")} |`;
  return [line(cells[0]!), line(widths.map((width) => "-".repeat(width))), ...cells.slice(1).map(line)].join("\n");
}

/** The chart's README: the template with every value of values.yaml in its place. Pure. */
export function chartReadme(template: string, valuesYaml: string): string {
  if (!template.includes(placeholder)) throw new Error(`charts/meshcni/README.md.tmpl: no ${placeholder} to put the values' table in`);
  const document = parseDocument(valuesYaml);
  if (!isMap(document.contents)) throw new Error("charts/meshcni/values.yaml: not a map of values");
  return template.replace(placeholder, table(["key", "type", "default", "description"], rows(document.contents, "")));
}
