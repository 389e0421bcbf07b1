import type { RealCluster } from "../cluster/cluster.js";
import { hostPort } from "../cluster/families.js";

/**
 * Real connections from the client pod to each pod's app port, all in one exec (`probe
 * connect-each`): what each answered (its line, or `error: …`), by IP. A failed exec
 * answers every target with its error.
 */
export async function answersFrom(cluster: RealCluster, ips: string[], port = 8080): Promise<Map<string, string>> {
  if (ips.length === 0) return new Map();
  const targets = ips.map((ip) => hostPort(ip, port));
  const output = await cluster
    .kubectl(["exec", "-n", "default", "client", "-c", "app", "--", "/probe", "connect-each", ...targets])
    .catch((error: Error) => `${targets.map((target) => `${target}\terror: ${error.message.split("\n")[0]}`).join("\n")}\n`);
  const byTarget = new Map(
    output
      .split("\n")
      .filter(Boolean)
      .map((line) => [line.slice(0, line.indexOf("\t")), line.slice(line.indexOf("\t") + 1)] as const),
  );
  return new Map(ips.map((ip, index) => [ip, byTarget.get(targets[index]!) ?? "error: no answer line"]));
}
