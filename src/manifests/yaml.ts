import { Document, isMap, isScalar, isSeq } from "yaml";
import { type FieldComment, manifestComments } from "./comments.js";
import type { ManifestOptions } from "./options.js";
import { monitoringComponents, renderManifests } from "./render.js";

const header = "# Rendered by `meshcni manifests` (npm run manifests): change its flags or src/manifests/, not this file.\n";

/** Puts the comment above the field (a map key) or the item (a list entry) at the path. */
function annotate(doc: Document, { path, text }: FieldComment): void {
  const parent = doc.getIn(path.slice(0, -1), true);
  const last = path.at(-1);
  const commentBefore = text
    .split("\n")
    .map((line) => ` ${line}`)
    .join("\n");
  if (isMap(parent)) {
    const pair = parent.items.find((item) => isScalar(item.key) && item.key.value === last);
    if (!pair || !isScalar(pair.key)) throw new Error(`no field ${path.join(".")} to comment`);
    pair.key.commentBefore = commentBefore;
  } else if (isSeq(parent) && typeof last === "number" && parent.items[last]) {
    (parent.items[last] as { commentBefore?: string }).commentBefore = commentBefore;
  } else throw new Error(`no field ${path.join(".")} to comment`);
}

/** One object as YAML, with the comments that say why its fields are so. */
function objectYaml(object: { kind: string; metadata?: unknown }, comments: FieldComment[]): string {
  const doc = new Document(object, { aliasDuplicateObjects: false });
  const name = (object.metadata as { name?: string } | undefined)?.name;
  for (const comment of comments)
    if (comment.kind === object.kind && (comment.name === undefined || comment.name === name)) annotate(doc, comment);
  return doc.toString({ lineWidth: 0 });
}

/** The manifests as one multi-document YAML stream (`kubectl apply -f -`). Pure. */
export function manifestsYaml(options: ManifestOptions): string {
  const comments = manifestComments(options);
  return (
    header +
    renderManifests(options)
      .map((object) => objectYaml(object, comments))
      .join("---\n")
  );
}

/** Objects as files, one per kind (its objects as documents). */
function filesByKind(objects: Array<{ kind: string }>, comments: FieldComment[]): Array<{ name: string; text: string }> {
  const byKind = new Map<string, string[]>();
  for (const object of objects) {
    const file = `${object.kind.toLowerCase()}.yaml`;
    byKind.set(file, [...(byKind.get(file) ?? []), objectYaml(object, comments)]);
  }
  return [...byKind].map(([name, documents]) => ({ name, text: header + documents.join("---\n") }));
}

/**
 * The manifests as files: one per kind and a kustomization.yaml listing them (`kubectl
 * apply -k`), and each optional monitoring part as a kustomize component under
 * components/ (listed in the kustomization when asked for; else a user's overlay adds it). Pure.
 */
export function manifestFiles(options: ManifestOptions): Array<{ name: string; text: string }> {
  const comments = manifestComments(options);
  const files = filesByKind(renderManifests({ ...options, prometheusRule: false, grafanaDashboard: false }), comments);
  const components = Object.entries(monitoringComponents(options)).flatMap(([component, objects]) => {
    const own = filesByKind(objects, comments);
    const kustomization = { apiVersion: "kustomize.config.k8s.io/v1alpha1", kind: "Component", resources: own.map((file) => file.name) };
    return [...own, { name: "kustomization.yaml", text: header + objectYaml(kustomization, []) }].map((file) => ({
      ...file,
      name: `components/${component}/${file.name}`,
    }));
  });
  const wanted = [...(options.prometheusRule ? ["prometheus-rule"] : []), ...(options.grafanaDashboard ? ["grafana-dashboard"] : [])];
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    namespace: options.namespace,
    resources: files.map((file) => file.name),
    ...(wanted.length > 0 ? { components: wanted.map((component) => `components/${component}`) } : {}),
  };
  return [...files, { name: "kustomization.yaml", text: header + objectYaml(kustomization, []) }, ...components];
}
