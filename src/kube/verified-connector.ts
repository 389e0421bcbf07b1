import { libc } from "../libc.js";
import type { Connector } from "./agent-connection.js";
import { listenerFacts, listenerProblem } from "./agent-listener.js";

/**
 * The plugin's connection to the agent: the listener proven to be the node's agent before
 * anything is sent (agent-listener.ts), and the pod's netns, when there is one, passed with
 * the first question (SCM_RIGHTS): the agent writes only into a netns a caller holds, never
 * one it names (issue 41). An unproven listener is closed unasked: the plugin does the work
 * itself. Neither Bun's nor Node's sockets pass descriptors or say who listens, so this one is
 * libc's, and blocking: a plugin process does nothing else while it waits (not even its
 * watchdog), so the socket's timeout bounds each send and receive, and the question's
 * deadline the receives together.
 */
export function verifiedConnector(timeoutMs: number, netnsFd?: number): Connector {
  return async (path, on) => {
    const { connectUnix, peerCredentials, sendWithRights, receiveWithRights, close } = await libc();
    const fd = connectUnix(path, timeoutMs);
    try {
      const problem = listenerProblem(listenerFacts(peerCredentials(fd)));
      if (problem) throw new Error(`the listener is not the node's agent: ${problem}`);
    } catch (error) {
      close(fd);
      throw error;
    }
    const buffer = new Uint8Array(64 << 10);
    const decoder = new TextDecoder();
    let passed = netnsFd === undefined;
    let closed = false;
    const finish = () => {
      if (closed) return;
      closed = true;
      close(fd);
    };
    return {
      write(text) {
        try {
          sendWithRights(fd, Buffer.from(text), passed ? [] : [netnsFd!]);
          passed = true;
          // Until the answer's line is whole: the caller asks one question at a time and waits for it. Each
          // receive waits up to the socket's timeout; an answer dripping in stops once that has passed since the question.
          const deadline = performance.now() + timeoutMs;
          for (let whole = false; !whole && !closed; ) {
            const received = performance.now() < deadline ? receiveWithRights(fd, buffer, true) : undefined;
            if (received === undefined) return on.error(new Error(`no answer within ${timeoutMs} ms`));
            for (const unasked of received.passed) close(unasked);
            if (received.bytes === 0) return on.close();
            const chunk = buffer.subarray(0, received.bytes);
            whole = chunk.includes(10);
            on.data(decoder.decode(chunk, { stream: true }));
          }
        } catch (error) {
          // A SyscallError's code (EPIPE, ECONNRESET…) is the reason given.
          on.error(error);
        }
      },
      end: finish,
    };
  };
}
