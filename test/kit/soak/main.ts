// `npm run soak -- --faults N --seed S [--minutes M] [--only kind,kind | --except kind,kind]`:
// the soak on the real cluster, its report printed and saved (bench/results/soak-<seed>.json);
// exits 1 on any invariant violation. Without --seed, one is drawn and printed: a seed that
// finds something joins test/kit/soak/seeds.ts with its fix.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { RealCluster } from "../cluster/cluster.js";
import { projectRoot } from "../paths.js";
import { type FaultKind, faultKinds } from "./draw.js";
import { formatReport } from "./report.js";
import { soak } from "./soak.js";

const { values } = parseArgs({
  options: {
    faults: { type: "string", default: "30" },
    seed: { type: "string" },
    minutes: { type: "string" },
    only: { type: "string" },
    except: { type: "string" },
  },
});
const number = (name: string, text: string) => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number, not ${JSON.stringify(text)}`);
  return value;
};
const named = (flag: "only" | "except") => {
  const list = values[flag]?.split(",") as FaultKind[] | undefined;
  for (const kind of list ?? []) if (!faultKinds.includes(kind)) throw new Error(`--${flag}: no fault ${kind} (${faultKinds.join(", ")})`);
  return list;
};
const [only, except] = [named("only"), named("except")];
if (only && except) throw new Error("--only and --except: one or the other");
const kinds = only ?? faultKinds.filter((kind) => !except?.includes(kind));
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : number("seed", values.seed);
console.log(`soak: seed ${seed}`);

const cluster = new RealCluster();
const results = join(projectRoot, "bench/results");
await cluster.up((line) => console.log(line));
try {
  const report = await soak(cluster, {
    logsDir: results,
    draw: { seed, faults: number("faults", values.faults), kinds },
    ...(values.minutes ? { minutes: number("minutes", values.minutes) } : {}),
    log: (line) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`),
  });
  console.log(`\n${formatReport(report)}`);
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, `soak-${seed}.json`), `${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = report.violations.length === 0 ? 0 : 1;
} finally {
  await cluster.down();
}
