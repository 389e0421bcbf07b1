import { readdirSync } from "node:fs";
import { join } from "node:path";
import { readRegularFile } from "../../file-open.js";

/** What an ADD record says of its attachment: whose pod, which sandbox, which netns. */
export interface NetnsClaim {
  uid: string;
  containerId: string;
  netns: string;
}

function readClaim(path: string): NetnsClaim | undefined {
  try {
    const record = JSON.parse(readRegularFile(path, 1 << 20)) as { pod?: { uid?: unknown }; containerId?: unknown; netns?: unknown };
    const { pod, containerId, netns } = record;
    return typeof pod?.uid === "string" && typeof containerId === "string" && typeof netns === "string"
      ? { uid: pod.uid, containerId, netns }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The netns the node's ADD records name, read as they come: a record's file is read once
 * (an attachment's pod, sandbox and netns never change; meshcni rewrites only its state and
 * backend), so an ADD costs one listing of the records' dir and the reading of new ones.
 */
export class NetnsClaims {
  private readonly known = new Map<string, NetnsClaim>();

  constructor(private readonly dir: () => string) {}

  /** The records naming this netns path. */
  of(netns: string): NetnsClaim[] {
    const dir = this.dir();
    let names: string[];
    try {
      names = readdirSync(dir).filter((name) => name.endsWith(".json"));
    } catch {
      return [];
    }
    const present = new Set(names);
    for (const name of this.known.keys()) if (!present.has(name)) this.known.delete(name);
    for (const name of names.filter((candidate) => !this.known.has(candidate))) {
      const claim = readClaim(join(dir, name));
      if (claim) this.known.set(name, claim);
    }
    return [...this.known.values()].filter((claim) => claim.netns === netns);
  }
}
