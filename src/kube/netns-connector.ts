import { libc } from "../libc.js";
import type { Connector } from "./agent-connection.js";

/**
 * A connection to the agent that passes the pod's netns along with the first question
 * (SCM_RIGHTS): the agent writes only into a netns a caller holds, never one it names
 * (issue 41). Neither Bun's nor Node's sockets pass descriptors, so this one is libc's,
 * and blocking: a plugin process does nothing else while it waits (not even its watchdog),
 * so the socket's timeout bounds each send and receive, and the question's deadline the
 * receives together.
 */
export function netnsConnector(netnsFd: number, timeoutMs: number): Connector {
  return async (path, on) => {
    const { connectUnix, sendWithRights, receiveWithRights, close } = await libc();
    const fd = connectUnix(path, timeoutMs);
    const buffer = new Uint8Array(64 << 10);
    const decoder = new TextDecoder();
    let passed = false;
    let closed = false;
    const finish = () => {
      if (closed) return;
      closed = true;
      close(fd);
    };
    return {
      write(text) {
        try {
          sendWithRights(fd, Buffer.from(text), passed ? [] : [netnsFd]);
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
