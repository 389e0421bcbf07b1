import { describe, expect, it } from "vitest";
import { legs } from "../../kit/cluster/leg.js";
import { type LegResult, tableRows, withMatrixTable } from "../../kit/cluster/matrix-table.js";

const doc = "## Compatibility\n\nintro\n\n<!-- matrix:start -->\n<!-- matrix:end -->\n\nafter\n";
const result = (name: keyof typeof legs, passed: number, date: string): LegResult => ({
  name,
  ...legs[name],
  passed,
  failed: 0,
  skipped: 1,
  seconds: 600,
  date,
});

/** npm run test:matrix writes the legs it ran into docs/reference.md's table; the others keep their last rows. */
describe("the matrix's table", () => {
  it("holds each leg run, in the legs' order, and reads back what it wrote", () => {
    const once = withMatrixTable(doc, [result("oldest", 25, "2026-11-27"), result("default", 26, "2026-11-27")]);
    expect(once.startsWith("## Compatibility\n\nintro\n\n<!-- matrix:start -->\n\n| leg ")).toBe(true);
    expect(once.endsWith("\n\n<!-- matrix:end -->\n\nafter\n")).toBe(true);
    expect([...tableRows(once).keys()]).toEqual(["default", "oldest"]);
    expect(tableRows(once).get("oldest")).toEqual(result("oldest", 25, "2026-11-27"));
  });

  it("replaces a leg's row when it runs again, and keeps the rows of legs it did not run", () => {
    const first = withMatrixTable(doc, [result("oldest", 25, "2026-11-27"), result("default", 26, "2026-11-27")]);
    const second = withMatrixTable(first, [result("default", 27, "2026-11-28")]);
    expect(tableRows(second).get("default")).toEqual(result("default", 27, "2026-11-28"));
    expect(tableRows(second).get("oldest")).toEqual(result("oldest", 25, "2026-11-27"));
  });

  it("refuses a doc without the table's markers", () => {
    expect(() => withMatrixTable("## Compatibility\n", [])).toThrow("docs/reference.md has no <!-- matrix:start -->");
  });
});
