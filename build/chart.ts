// `npm run manifests` (with deploy/): the chart's generated files (charts/meshcni/files/), from
// the code that renders `meshcni manifests`, and its README, from values.yaml's comments;
// test/chart checks they are current.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chartFiles } from "../src/manifests/chart.js";
import { chartReadme } from "./chart-readme.js";

const chartDir = join(import.meta.dirname, "../charts/meshcni");

/** The chart's README as its template and values.yaml make it now. */
export const currentChartReadme = () =>
  chartReadme(readFileSync(join(chartDir, "README.md.tmpl"), "utf8"), readFileSync(join(chartDir, "values.yaml"), "utf8"));

if (import.meta.main) {
  for (const { name, text } of chartFiles()) writeFileSync(join(chartDir, name), text);
  writeFileSync(join(chartDir, "README.md"), currentChartReadme());
}
