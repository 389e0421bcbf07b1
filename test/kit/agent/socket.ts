import { connect, createConnection } from "node:net";
import type { CallerChecks } from "../../../src/agent/socket/peer.js";
import type { AgentAnswer, AgentAsk } from "../../../src/agent-socket.js";
import { type Connector, parseAnswer } from "../../../src/kube/agent-connection.js";
import type { NetnsId } from "../../../src/netns/enter.js";

/** Asks the agent on its socket as the plugin does, and returns its answer. */
export function askAgent(socket: string, ask: AgentAsk): Promise<AgentAnswer> {
  return new Promise((resolve, reject) => {
    const connection = connect(socket);
    let buffered = "";
    connection.setEncoding("utf8");
    connection.on("error", reject);
    connection.on("data", (chunk: string) => {
      buffered += chunk;
      if (!buffered.includes("\n")) return;
      connection.destroy();
      resolve(parseAnswer(buffered.slice(0, buffered.indexOf("\n"))));
    });
    connection.write(`${JSON.stringify(ask)}\n`);
  });
}

/** The agent reader's transport over node:net, for tests run by Node (the binary uses Bun's own socket). */
export const nodeConnector: Connector = (path, on) =>
  new Promise((resolve, reject) => {
    const connection = createConnection(path);
    connection.setEncoding("utf8");
    connection.once("connect", () => {
      connection.off("error", reject);
      connection.on("error", on.error);
      resolve({ write: (text) => void connection.write(text), end: () => connection.destroy() });
    });
    connection.once("error", reject);
    connection.on("data", (text: string) => on.data(text));
    connection.on("close", () => on.close());
  });

/**
 * The kernel's checks of a caller, left out: anyone may ask, and none passes a netns (the
 * real ones need the compiled binary's FFI: test/netns/agent-socket.test.ts has them).
 * `netns`: every caller is taken to have passed that one.
 */
export const anyCaller = (netns?: NetnsId): CallerChecks => ({
  admit: () => undefined,
  firstBytes: async () => ({ bytes: Buffer.alloc(0), ...(netns ? { netns } : {}) }),
});
