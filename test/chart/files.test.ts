import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { chartFiles } from "../../src/manifests/chart.js";
import { chartValuesSchema } from "../../src/manifests/chart-schema.js";
import { linkerdKeys } from "../../src/mesh/netconf.js";
import { chartDir } from "../kit/chart/helm.js";
import { projectRoot } from "../kit/paths.js";

describe("the chart's generated files", () => {
  it.each(chartFiles().map((file) => [file.name, file] as const))("%s is what src/manifests renders (npm run manifests)", (_name, file) => {
    expect(readFileSync(join(chartDir, file.name), "utf8")).toBe(file.text);
  });

  it("carries meshcni's version as the chart's and the app's", () => {
    const chart = parse(readFileSync(join(chartDir, "Chart.yaml"), "utf8")) as { version: string; appVersion: string };
    const { version } = JSON.parse(readFileSync(join(projectRoot, "package.json"), "utf8")) as { version: string };
    expect({ version: chart.version, appVersion: chart.appVersion }).toEqual({ version, appVersion: version });
  });

  it("takes the netconf keys the plugin reads, no more and no fewer (meshcni manifests --netconf refuses the others too)", () => {
    const { netconf } = (chartValuesSchema() as { properties: { netconf: { properties: Record<string, unknown> } } }).properties;
    expect(Object.keys(netconf.properties).sort()).toEqual([...linkerdKeys].sort());
  });
});
