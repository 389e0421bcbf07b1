import { existsSync, readdirSync, readFileSync } from "node:fs";
import { release } from "node:os";
import { gunzipSync } from "node:zlib";
import { readConfigFiles } from "../cni/config-dir.js";
import { criSockets } from "../cri/sockets.js";
import { errnoCode, errorMessage } from "../errors.js";
import { parseFlags } from "../flags.js";
import { detectNodeBackend, hostPaths, installedIptablesBackends } from "../host.js";
import { pluginExecutables } from "../installer/bin-dir.js";
import { defaultStateDir } from "../state/records.js";
import { type NodeFacts, preflight } from "./checks.js";
import { askCri, proveStateDir } from "./probes.js";
import { type RuntimeCni, runtimeConfigs } from "./runtime.js";

export const checkUsage = `meshcni check --pre [options]   check a node before installing meshcni

  --host-root DIR     where the host's filesystem is mounted (""), e.g. in a debug pod
  --net-dir DIR       the runtime's CNI conf_dir (from containerd's or CRI-O's config, else /etc/cni/net.d)
  --bin-dir DIR       the runtime's CNI bin_dir (the same, else /opt/cni/bin)
  --netns-dir DIR     where the runtime keeps pod netns (repeatable; the same, else /var/run/netns)
  --state-dir DIR     the plugin's state_dir (${defaultStateDir}): proven by making a dir and a file there
  --cri-socket PATH   the runtime's CRI socket, asked for its pods (auto: ${criSockets.join(" or ")};
                      "": none)
  --output FORMAT     table or json (table)

One line per check: ok, warn or fail, and what to do. Exit 0 without a fail, 1 with one, 2 on a
usage error (a --host-root that does not exist among them).
`;

function list(dir: string): string[] | { unreadable: string } {
  try {
    return readdirSync(dir).sort();
  } catch (error) {
    return { unreadable: errnoCode(error) ?? errorMessage(error) };
  }
}

/** nf_tables: loaded (/proc/modules, /sys/module), else what the kernel's config says (/proc/config.gz, /boot/config-*). */
function nfTablesState(): NodeFacts["nfTables"] {
  const modules = existsSync("/proc/modules") ? readFileSync("/proc/modules", "utf8") : "";
  if (/^nf_tables /m.test(modules) || existsSync("/sys/module/nf_tables")) return "loaded";
  let config: string | undefined;
  for (const read of [
    () => gunzipSync(readFileSync("/proc/config.gz")).toString(),
    () => readFileSync(`/boot/config-${release()}`, "utf8"),
  ]) {
    try {
      config = read();
      break;
    } catch {
      // not on this host: try the next place
    }
  }
  const setting = config && /^CONFIG_NF_TABLES=([ym])$/m.exec(config)?.[1];
  return setting === "y" ? "built-in" : setting === "m" ? "module" : config ? "absent" : "unknown";
}

/** The first runtime config found under the host root, read; undefined when there is none. */
function readRuntime(onHost: (path: string) => string): NodeFacts["runtime"] {
  for (const { path, read } of runtimeConfigs) {
    if (!existsSync(onHost(path))) continue;
    try {
      return read(path, readFileSync(onHost(path), "utf8"));
    } catch (error) {
      return { file: path, invalid: errorMessage(error).split("\n")[0]! };
    }
  }
  return undefined;
}

type CheckValues = {
  "host-root": string;
  "net-dir"?: string;
  "bin-dir"?: string;
  "netns-dir"?: string[];
  "state-dir": string;
  "cri-socket": string;
};

/** What the checks need, read from this host (or the one under --host-root); dirs not given come from the runtime's config. */
async function gather(values: CheckValues): Promise<NodeFacts> {
  const onHost = hostPaths(values["host-root"]);
  const runtime = readRuntime(onHost);
  const found: RuntimeCni | undefined = runtime && !("invalid" in runtime) ? runtime : undefined;
  const netDir = values["net-dir"] ?? found?.confDir ?? "/etc/cni/net.d";
  const binDir = values["bin-dir"] ?? found?.binDirs[0] ?? "/opt/cni/bin";
  // Where the runtime finds the chain's plugins: every bin dir of its, and the one given.
  const pluginDirs = [...new Set([binDir, ...(found?.binDirs ?? [])])];
  const netnsDirs = values["netns-dir"] ?? [found?.netnsDir ?? "/var/run/netns"];
  let configs: NodeFacts["configs"];
  try {
    configs = readConfigFiles(onHost(netDir));
  } catch (error) {
    configs = { unreadable: errnoCode(error) ?? errorMessage(error) };
  }
  return {
    runtime,
    explicit: {
      ...(values["net-dir"] ? { netDir: values["net-dir"] } : {}),
      ...(values["bin-dir"] ? { binDir: values["bin-dir"] } : {}),
      ...(values["netns-dir"] ? { netnsDir: values["netns-dir"][0] } : {}),
    },
    netDir,
    configs,
    binDir,
    binaries: list(onHost(binDir)),
    plugins: { dirs: pluginDirs, executables: pluginExecutables(pluginDirs.map(onHost), values["host-root"]) },
    iptablesBackends: installedIptablesBackends(values["host-root"]),
    detection: await detectNodeBackend(),
    kernel: release(),
    nfTables: nfTablesState(),
    netnsDirs: netnsDirs.map((dir) => {
      const entries = list(onHost(dir));
      return { dir, entries: Array.isArray(entries) ? entries.length : undefined };
    }),
    stateDir: proveStateDir(values["state-dir"], onHost),
    cri: await askCri(values["cri-socket"], onHost),
    hostRoot: values["host-root"],
  };
}

const checkFlags = {
  pre: { type: "boolean", default: false },
  "host-root": { type: "string", default: "" },
  "net-dir": { type: "string" },
  "bin-dir": { type: "string" },
  "netns-dir": { type: "string", multiple: true },
  "state-dir": { type: "string", default: defaultStateDir },
  "cri-socket": { type: "string", default: "auto" },
  output: { type: "string", default: "table" },
} as const;

export async function runCheck(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseFlags<{ args: string[]; options: typeof checkFlags }>>["values"];
  try {
    ({ values } = parseFlags({ args: argv, options: checkFlags }));
    if (!values.pre) throw new Error("say what to check: --pre (a node before installing)");
    if (values["host-root"] && !existsSync(values["host-root"]))
      throw new Error(`--host-root ${values["host-root"]} does not exist (kubectl debug node/NAME mounts the node's filesystem at /host)`);
    if (values.output !== "table" && values.output !== "json")
      throw new Error(`--output must be table or json, not ${JSON.stringify(values.output)}`);
  } catch (error) {
    process.stderr.write(`meshcni check: ${errorMessage(error)} (see meshcni check --help)\n`);
    return 2;
  }
  const results = preflight(await gather(values));
  if (values.output === "json") process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  else {
    const width = Math.max(...results.map((result) => result.check.length));
    for (const { check, level, message } of results) process.stdout.write(`${level.padEnd(5)} ${check.padEnd(width)}  ${message}\n`);
  }
  return results.some((result) => result.level === "fail") ? 1 : 0;
}
