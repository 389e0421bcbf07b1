import { linkerdKeys } from "./netconf.js";

/** The distance between two words, for "did you mean". */
function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** For a key meshcni does not read, the known one it most likely means, as ` (did you mean proxy-uid?)`; "" when none is near. */
export function didYouMean(key: string): string {
  const closest = [...linkerdKeys].sort((a, b) => editDistance(key, a) - editDistance(key, b))[0]!;
  return editDistance(key, closest) <= 3 ? ` (did you mean ${closest}?)` : "";
}

/** The keys of an entry's `linkerd` settings that meshcni does not read (a typo is otherwise ignored, as linkerd-cni ignores it), described. */
export function unknownLinkerdKeys(entry: Record<string, unknown>): string[] {
  const linkerd = entry.linkerd;
  if (typeof linkerd !== "object" || linkerd === null || Array.isArray(linkerd)) return [];
  return Object.keys(linkerd)
    .filter((key) => !linkerdKeys.includes(key))
    .map((key) => `${key}${didYouMean(key)}`);
}
