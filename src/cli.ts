import { buildInfo } from "./build-info.js";
import { runPlugin } from "./plugin/run.js";

const version = `meshcni ${buildInfo.version} (commit ${buildInfo.commit}, ${buildInfo.runtime}, ${buildInfo.platform})`;

const usage = `meshcni ${buildInfo.version}: a chained CNI plugin redirecting meshed pods' TCP to their proxy.

As a CNI plugin, the runtime runs it with CNI_COMMAND set (ADD, DEL, CHECK, STATUS,
GC, VERSION) and the network config on stdin.

Commands (meshcni help COMMAND, or COMMAND --help, for each one's options):
  install     run the node agent: install the binary, keep it chained, audit and repair pods
  ready       exit 0 when the agent says it is ready (its /readyz), and why not
  uninstall   take meshcni off this node by hand, as its agent does when its DaemonSet is deleted
  audit       judge this node's meshed pods by what their netns hold; --repair to act
  sweep       one audit and repair pass as the agent runs it: a request on stdin, the report on stdout
  apply       the agent's writer: ADD's decisions and DELs from the agent, a line each on stdin
  status      is any meshed pod in the cluster running without its redirect? (every node, read-only)
  rules       print a pod's redirect as its netns holds it, beside meshcni's plan
  check       check a node before installing (--pre): runtime config, CNI, iptables, kernel
  manifests   print the manifests that install meshcni (kubectl apply -f -)
  version     print the version and build details
  help        print this text
`;

const versionUsage = `meshcni version   print the version and what it was built from: the commit, the runtime, the platform
`;

/** Each command's usage text and entry, loaded only when used: a pod start loads none of them. */
const commands: Record<string, { usage: () => Promise<string>; run: (argv: string[]) => Promise<number> | number }> = {
  install: {
    usage: async () => (await import("./agent/usage.js")).agentUsage,
    run: async (argv) => (await import("./agent/main.js")).runInstall(argv),
  },
  ready: {
    usage: async () => (await import("./agent/usage.js")).readyUsage,
    run: async (argv) => (await import("./agent/main.js")).runReady(argv),
  },
  uninstall: {
    usage: async () => (await import("./agent/usage.js")).uninstallUsage,
    run: async (argv) => (await import("./agent/main.js")).runUninstall(argv),
  },
  audit: {
    usage: async () => (await import("./audit/main.js")).auditUsage,
    run: async (argv) => (await import("./audit/main.js")).runAudit(argv),
  },
  sweep: {
    usage: async () => (await import("./audit/sweep-main.js")).sweepUsage,
    run: async (argv) => (await import("./audit/sweep-main.js")).runSweep(argv),
  },
  apply: {
    usage: async () => (await import("./applier/main.js")).applyUsage,
    run: async () => (await import("./applier/main.js")).runApply(),
  },
  status: {
    usage: async () => (await import("./status/main.js")).statusUsage,
    run: async (argv) => (await import("./status/main.js")).runStatus(argv),
  },
  rules: {
    usage: async () => (await import("./audit/rules.js")).rulesUsage,
    run: async (argv) => (await import("./audit/rules.js")).runRules(argv),
  },
  check: {
    usage: async () => (await import("./preflight/main.js")).checkUsage,
    run: async (argv) => (await import("./preflight/main.js")).runCheck(argv),
  },
  manifests: {
    usage: async () => (await import("./manifests/main.js")).manifestsUsage,
    run: async (argv) => (await import("./manifests/main.js")).runManifests(argv),
  },
};

function print(text: string): number {
  process.stdout.write(text);
  return 0;
}

/** A usage error: one line on stderr, exit 2. */
function refuse(message: string): number {
  process.stderr.write(`meshcni: ${message} (see meshcni help)\n`);
  return 2;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Any CNI_* variable means a runtime called us, so a missing CNI_COMMAND is its error (code 4).
  if (command === undefined && Object.keys(process.env).some((name) => name.startsWith("CNI_"))) {
    // The answer is written (synchronously, as every log line): exit at once, not after the event loop drains and Bun tears down.
    process.exit(await runPlugin(process.env));
  }
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    const topic = command === "help" ? rest[0] : undefined;
    if (topic === undefined || topic === "help") return print(usage);
    if (topic === "version") return print(versionUsage);
    const known = commands[topic];
    return known ? print(await known.usage()) : refuse(`no command ${JSON.stringify(topic)}`);
  }
  if (command === "version" || command === "--version") return print(`${version}\n`);
  const known = commands[command];
  if (!known) return refuse(`unknown command ${JSON.stringify(command)}`);
  if (rest.includes("--help") || rest.includes("-h")) return print(await known.usage());
  return known.run(rest);
}

void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
