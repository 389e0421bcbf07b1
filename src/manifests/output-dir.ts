import { existsSync, mkdirSync, readdirSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ManifestOptions } from "./options.js";
import { manifestFiles } from "./yaml.js";

/**
 * What writing `writing` into a dir holding `present` does to the rest: files meshcni
 * manifests writes under other options (`ours`) are stale and removed; any other is left
 * alone and named. Pure.
 */
export function planOutputDir(present: string[], writing: string[], ours: string[]): { stale: string[]; foreign: string[] } {
  const others = present.filter((file) => !writing.includes(file));
  return { stale: others.filter((file) => ours.includes(file)), foreign: others.filter((file) => !ours.includes(file)) };
}

/** Every file meshcni manifests may write into --output-dir, whatever the options. */
function everyFile(options: ManifestOptions): string[] {
  const everything = { ...options, createNamespace: true, podMonitor: true, prometheusRule: true, grafanaDashboard: true };
  return manifestFiles(everything).map((file) => file.name);
}

/** Writes the manifests' files into `dir`, removes its stale ones; the lines that say what it did. */
export function writeOutputDir(dir: string, options: ManifestOptions): string[] {
  const files = manifestFiles(options);
  const present = existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: "utf8" }) : [];
  const { stale, foreign } = planOutputDir(
    present.filter((path) => statSync(join(dir, path)).isFile()),
    files.map((file) => file.name),
    everyFile(options),
  );
  for (const { name, text } of files) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  for (const file of stale) {
    rmSync(join(dir, file));
    // Its component's dir, once empty.
    const parent = dirname(join(dir, file));
    if (parent !== dir && readdirSync(parent).length === 0) rmdirSync(parent);
  }
  return [
    `wrote ${files.length} files to ${dir}: ${files.map((file) => file.name).join(", ")}`,
    ...(stale.length > 0 ? [`removed what these options no longer render: ${stale.join(", ")}`] : []),
    ...(foreign.length > 0 ? [`left alone, not meshcni's: ${foreign.join(", ")}`] : []),
  ];
}
