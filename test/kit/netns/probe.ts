import { spawn } from "node:child_process";
import { join } from "node:path";
import { inNetnsCommand } from "../common.js";

const tcpHelper = join(import.meta.dirname, "tcp.mjs");

/** A probe's tally: how often each answer (a listener's label, or `error:<code>`) came. */
export type Answers = Record<string, number>;

/**
 * Connects from a netns (a name or a path) to host:port again and again, one connection at a
 * time, from now until stop(): a redirect missing for a moment shows as an answer from the
 * app (or a refusal) among the proxy's.
 */
export async function startProbe(netns: string, host: string, port: number): Promise<{ stop(): Promise<Answers> }> {
  const [command, ...prefix] = inNetnsCommand(netns);
  const child = spawn(command!, [...prefix, process.execPath, tcpHelper, "probe", host, String(port)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once("data", () => resolve());
    void exited.then((code) => reject(new Error(`probe in ${netns} exited with ${code}`)));
  });
  return {
    async stop() {
      child.stdin.end();
      const code = await exited;
      if (code !== 0) throw new Error(`probe in ${netns} exited with ${code}: ${output}`);
      return JSON.parse(output.slice(output.indexOf("\n") + 1)) as Answers;
    },
  };
}
