// `npm run manifests` (with deploy/): the chart's generated files (charts/meshcni/files/), from
// the code that renders `meshcni manifests`; test/chart checks they are current.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { chartFiles } from "../src/manifests/chart.js";

const chartDir = join(import.meta.dirname, "../charts/meshcni");

if (import.meta.main) for (const { name, text } of chartFiles()) writeFileSync(join(chartDir, name), text);
