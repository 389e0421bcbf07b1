import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { currentChartReadme } from "../../build/chart.js";
import { chartReadme } from "../../build/chart-readme.js";
import { chartDir } from "../kit/chart/helm.js";

describe("the chart's README", () => {
  it("is what README.md.tmpl and values.yaml's comments make (npm run manifests)", () => {
    expect(readFileSync(join(chartDir, "README.md"), "utf8")).toBe(currentChartReadme());
  });

  it("lists a described map as one value, its whole default; an undescribed one key by key", () => {
    const values =
      "# -- Its strategy\nstrategy:\n  type: RollingUpdate\nimage:\n  # -- Its name\n  name: meshcni\n  # -- Its tag\n  version: ''\n";
    expect(chartReadme("{{ values }}", values).split("\n")).toEqual([
      "| key           | type   | default                    | description  |",
      "| ------------- | ------ | -------------------------- | ------------ |",
      '| strategy      | object | `{"type":"RollingUpdate"}` | Its strategy |',
      '| image.name    | string | `"meshcni"`                | Its name     |',
      '| image.version | string | `""`                       | Its tag      |',
    ]);
  });

  it('refuses a value without a "# --" comment, naming it: every value is described', () => {
    expect(() => chartReadme("{{ values }}", "# -- Described\nport: 1\nimage:\n  # a note, not a description\n  name: meshcni\n")).toThrow(
      "image.name has no",
    );
  });
});
