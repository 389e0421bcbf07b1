import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { parseAllDocuments, stringify } from "yaml";
import { components } from "../cluster/teardown.js";
import { projectRoot } from "../paths.js";

/** meshcni's chart, as the repository holds it. */
export const chartDir = join(projectRoot, "charts/meshcni");

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
};

/** The object of this kind and name among those rendered, typed as its model; a test fails where it is missing. */
export function objectIn<T>(objects: K8sObject[], kind: string, name = "meshcni"): T {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) throw new Error(`no ${kind}/${name} among ${objects.map((object) => `${object.kind}/${object.metadata.name}`).join(", ")}`);
  return found as T;
}

let binary: Promise<string> | undefined;
/** Helm as build/cluster/components.sh built it from the Go module proxy (helm.sh/helm/v4, pinned). */
export const helmBinary = () => {
  binary ??= components().then((dirs) => join(dirs.helm, "helm"));
  return binary;
};

/** Helm's own state (repositories, cache, config) kept apart from the machine's, per test run. */
const helmHome = mkdtempSync(join(tmpdir(), "meshcni-helm-"));
process.on("exit", () => rmSync(helmHome, { recursive: true, force: true }));

export interface HelmRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with these args (and a kubeconfig when it talks to a cluster); never throws on its exit code. */
export async function helm(args: string[], kubeconfig?: string): Promise<HelmRun> {
  const env = {
    HELM_CACHE_HOME: join(helmHome, "cache"),
    HELM_CONFIG_HOME: join(helmHome, "config"),
    HELM_DATA_HOME: join(helmHome, "data"),
    ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
  };
  const result = await execa(await helmBinary(), args, { env, reject: false, timeout: 240_000 });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** A values file in a temporary dir, as an operator keeps one in git. */
export function valuesFile(values: unknown): string {
  const file = join(mkdtempSync(join(helmHome, "values-")), "values.yaml");
  writeFileSync(file, stringify(values));
  return file;
}

/** `helm template` of the chart with these values (as the release named, in that namespace): its objects, or the failure as helm printed it. */
export async function helmTemplate(
  values: unknown,
  namespace = "meshcni",
  release = "meshcni",
): Promise<{ ok: true; objects: K8sObject[] } | { ok: false; stderr: string }> {
  const run = await helm(["template", release, chartDir, "--namespace", namespace, "--values", valuesFile(values)]);
  if (run.exitCode !== 0) return { ok: false, stderr: run.stderr };
  const objects = parseAllDocuments(run.stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`helm template printed YAML that does not parse: ${doc.errors[0]!.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((object): object is K8sObject => object !== null);
  return { ok: true, objects };
}

/** The objects `helm template` renders for values it must accept. */
export async function renderedObjects(values: unknown): Promise<K8sObject[]> {
  const rendered = await helmTemplate(values);
  if (!rendered.ok) throw new Error(`helm template refused ${JSON.stringify(values)}: ${rendered.stderr}`);
  return rendered.objects;
}
