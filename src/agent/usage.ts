import { type AgentFlag, agentEnvironment, agentFlags, shownDefault } from "./flags.js";

/** The help's width, and where each flag's words start. */
const width = 110;
const column = 29;

/** `code` marks are the docs'; a terminal shows the words alone. */
const plain = (text: string) => text.replaceAll("`", "");

/** A flag's one entry: its name and argument, then what it does, its variable and its default, wrapped under the words. */
function entry(flag: AgentFlag, help = flag.help): string {
  const head = `  --${flag.name}${flag.arg ? ` ${flag.arg}` : ""}`;
  const notes = [flag.repeatable && "repeatable", shownDefault(flag)].filter(Boolean).map((note) => plain(note as string));
  const words = `${plain(help)}${flag.env ? ` [${flag.env.name}]` : ""}${notes.length ? ` (${notes.join("; ")})` : ""}`;
  return wrap(head.length < column - 1 ? head.padEnd(column) : `${head}   `, words);
}

function wrap(head: string, words: string): string {
  const lines: string[] = [];
  let line = head;
  for (const word of words.split(" ")) {
    if (line.length + word.length + 1 > width && line.trim() !== head.trim()) {
      lines.push(line.trimEnd());
      line = " ".repeat(column);
    }
    line += line.endsWith(" ") ? word : ` ${word}`;
  }
  return [...lines, line.trimEnd()].join("\n");
}

const byName = (name: string) => agentFlags.find((flag) => flag.name === name)!;

/** `meshcni install --help`: the agent's flags, and the environment Linkerd's installer sets (made from flags.ts). */
export const agentUsage = `meshcni install [options]   run the node agent (DaemonSet container)

Options ([environment variable] read when the flag is not given; (default)):
${agentFlags.map((flag) => entry(flag)).join("\n")}
From the environment alone:
${agentEnvironment.map(({ names, help }) => `  ${names.join(", ")}\n${wrap(" ".repeat(column), plain(help))}`).join("\n")}
`;

/** `meshcni ready --help`: what it reads of the agent's flags (it takes them all, so a probe can pass the agent's own). */
export const readyUsage = `meshcni ready [options]   is the node agent ready? (a probe, or by hand on the node)

Asks the agent's /readyz at --listen; says why not from what the disk shows: meshcni's binary,
its kubeconfig and its entry in the active config. Exit 0 when ready, 1 when not, 2 on a usage error.

${entry(byName("listen"), 'where the agent serves /readyz; "": ask the disk only')}
${["host-root", "net-dir", "bin-dir", "kubeconfig-name"].map((name) => entry(byName(name))).join("\n")}
Every other flag of meshcni install is accepted and changes nothing here.
`;

/** `meshcni uninstall --help`: what a stopping agent does when its DaemonSet is gone, by hand. */
export const uninstallUsage = `meshcni uninstall [options]   take meshcni off this node, as its agent does when its DaemonSet is deleted

For a node whose agent could not tell it was being uninstalled (its log: "cannot tell whether
the DaemonSet stays"): run it once the DaemonSet is gone, e.g. kubectl debug node/NODE
--profile=sysadmin --image=IMAGE -- meshcni uninstall --host-root /host. Takes meshcni's entry
out of every config in the net dir, then removes its kubeconfig, its binary, the agent's socket
and the state dir; pods still running keep their rules until they end. Prints what it did.
Exit 0 when done, 1 when something could not be removed, 2 on a usage error.

${["host-root", "net-dir", "bin-dir", "kubeconfig-name", "state-dir", "template"].map((name) => entry(byName(name))).join("\n")}
Every other flag of meshcni install is accepted and changes nothing here.
`;
