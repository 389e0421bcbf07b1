import { runPlugin } from "./plugin/run.js";

declare const MESHCNI_VERSION: string | undefined;
const version = typeof MESHCNI_VERSION === "string" ? MESHCNI_VERSION : "dev";

const usage = `meshcni ${version}: a chained CNI plugin redirecting meshed pods' TCP to their proxy.

As a CNI plugin, the runtime runs it with CNI_COMMAND set (ADD, DEL, CHECK, STATUS,
GC, VERSION) and the network config on stdin.

Commands:
  meshcni install    run the node agent: install the binary, keep it chained (--help)
  meshcni ready      exit 0 when the agent's work is in place (a readiness probe)
  meshcni audit      list this node's meshed pods and whether they are protected (--help)
  meshcni version    print the version
  meshcni help       print this text
`;

function help(text: string): number {
  process.stdout.write(text);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  // Any CNI_* variable means a runtime called us, so a missing CNI_COMMAND is its error (code 4).
  if (command === undefined && Object.keys(process.env).some((name) => name.startsWith("CNI_"))) return runPlugin(process.env);
  switch (command) {
    case "install":
      if (argv.includes("--help")) return help((await import("./installer/options.js")).installerUsage);
      return (await import("./installer/main.js")).runInstall(argv.slice(1));
    case "ready":
      return (await import("./installer/main.js")).runReady(argv.slice(1));
    case "audit":
      return (await import("./audit/main.js")).runAudit(argv.slice(1));
    case "version":
    case "--version":
      process.stdout.write(`${version}\n`);
      return 0;
    case undefined:
    case "help":
    case "--help":
    case "-h":
      return help(usage);
    default:
      process.stderr.write(`meshcni: unknown command ${JSON.stringify(command)}\n\n${usage}`);
      return 2;
  }
}

void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
