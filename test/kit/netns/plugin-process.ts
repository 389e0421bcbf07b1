import { closeSync } from "node:fs";
import { execa } from "execa";
import { inNetnsCommand } from "../common.js";
import { meshcniBinary } from "../paths.js";
import { stdinFile } from "../stdin-file.js";

/** The compiled plugin run as a runtime runs it: env and stdin in, stdout and exit code out. */

export interface CniOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
  json: Record<string, unknown> | undefined;
}

export function outcome(result: { exitCode?: number | undefined; stdout: unknown; stderr: unknown }): CniOutcome {
  const stdout = String(result.stdout);
  let json: Record<string, unknown> | undefined;
  try {
    json = stdout.trim() ? JSON.parse(stdout) : undefined;
  } catch {
    json = undefined;
  }
  return { exitCode: result.exitCode ?? -1, stdout, stderr: String(result.stderr), json };
}

/** The first address of a family a cnitool ADD result gave (IPv4 unless asked), without its prefix. */
export function resultAddress(result: CniOutcome, family: "ipv4" | "ipv6" = "ipv4"): string {
  const ips = (result.json?.ips ?? []) as Array<{ address: string }>;
  const address = ips.find((ip) => ip.address.includes(":") === (family === "ipv6"))?.address;
  if (!address) throw new Error(`no ${family} address in ADD result: ${result.stdout} ${result.stderr}`);
  return address.split("/")[0]!;
}

/** The env a runtime gives the plugin for an ADD of a pod's eth0; `extra` overrides (CNI_COMMAND…). */
export function pluginEnv(
  netnsPath: string,
  containerId: string,
  args: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return { CNI_COMMAND: "ADD", CNI_CONTAINERID: containerId, CNI_NETNS: netnsPath, CNI_IFNAME: "eth0", CNI_ARGS: args, ...extra };
}

/** Runs the compiled plugin the way a runtime does: env and stdin in, stdout and exit code out. */
export async function invokePlugin(env: Record<string, string>, stdin: string | object): Promise<CniOutcome> {
  return outcome(await startPlugin(env, stdin));
}

/**
 * Starts the compiled plugin and returns its process (to kill it midway, say). With
 * `inNetns` it runs inside that netns, as if it were the host's; `wrap` runs it under
 * another command (`unshare --pid …`).
 */
export function startPlugin(env: Record<string, string>, stdin: string | object, options: { inNetns?: string; wrap?: string[] } = {}) {
  const [command, ...args] = [...(options.inNetns ? ["ip", "netns", "exec", options.inNetns] : (options.wrap ?? [])), meshcniBinary];
  const { fd, stdin: input } = stdinFile(typeof stdin === "string" ? stdin : JSON.stringify(stdin));
  try {
    return execa(command!, args, { env: { PATH: process.env.PATH ?? "", ...env }, extendEnv: false, stdin: input, reject: false });
  } finally {
    closeSync(fd);
  }
}

/** Runs the compiled plugin inside a netns, as if that were the host's. */
export async function invokePluginIn(netns: string, env: Record<string, string>, stdin: string | object): Promise<CniOutcome> {
  return outcome(await startPlugin(env, stdin, { inNetns: netns }));
}

/** The nat table of a netns (a name or a path) as one backend's iptables-save prints it. */
export async function natRules(netns: string, backend: "nft" | "legacy", family: "ipv4" | "ipv6" = "ipv4"): Promise<string[]> {
  const binary = `${family === "ipv6" ? "ip6tables" : "iptables"}-${backend}-save`;
  const [command, ...prefix] = inNetnsCommand(netns);
  const { stdout } = await execa(command!, [...prefix, binary, "-t", "nat"]);
  return String(stdout)
    .split("\n")
    .filter((line) => line.startsWith("-A ") || line.startsWith(":PROXY"));
}
