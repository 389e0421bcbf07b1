/**
 * A sandbox's network namespace path from the runtime's verbose PodSandboxStatus `info`,
 * pure: containerd (and CRI-O) put JSON there holding the OCI runtime spec the sandbox
 * was created with, whose `linux.namespaces` entry of type "network" has the path of the
 * netns the runtime made and handed to CNI. Undefined when no value holds one.
 */
export function sandboxNetns(info: Record<string, string>): string | undefined {
  for (const value of Object.values(info)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      continue;
    }
    const namespaces = (parsed as { runtimeSpec?: { linux?: { namespaces?: unknown } } } | null)?.runtimeSpec?.linux?.namespaces;
    if (!Array.isArray(namespaces)) continue;
    const network = namespaces.find((entry: { type?: unknown }) => entry?.type === "network") as { path?: unknown } | undefined;
    if (typeof network?.path === "string" && network.path.startsWith("/")) return network.path;
  }
  return undefined;
}
