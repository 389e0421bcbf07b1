import { type AgentAnswer, type AgentAsk, AgentUnavailableError, maxAskBytes, maxLineBytes } from "../agent-socket.js";
import { errnoCode, errorMessage } from "../errors.js";
import { isJsonObject } from "../json.js";

/**
 * The agent answers at once from its caches (and its writers write in milliseconds), or
 * from the API within this; past it the plugin does it itself. Measured (npm run bench): 100
 * ADDs at once beside two busy loops on 2 cores had answers of 0.5 to 1 s; at 1 s some
 * plugins fell back, each then doing all the work under the same load.
 */
export const agentTimeoutMs = 2000;

/**
 * An answer line, checked; throws (a valibot or JSON error) when it is no answer. The answer
 * nearly every pod start reads, `applied` with the result to print (or none), is recognised
 * here; any other is checked by the schema of them all (../agent-schema.ts), loaded only then.
 * Loading the schema library cost ~0.4 ms of a ~9 ms pod start through the agent (npm run
 * bench), so a pod start through the agent loads none; what passes here passes that schema
 * too, unchanged (test/unit/kube/agent-connection.test.ts holds the two to it).
 */
export async function parseAnswer(line: string): Promise<AgentAnswer> {
  const value: unknown = JSON.parse(line);
  if (isJsonObject(value) && isJsonObject(value.applied)) {
    const { result } = value.applied;
    if (!("result" in value.applied)) return { applied: {} };
    if (isJsonObject(result)) return { applied: { result } };
  }
  return (await import("../agent-schema.js")).checkAnswer(value);
}

/** A unix socket connection as the reader uses it: lines written, text, errors and the end heard. */
export interface LineSocket {
  write(text: string): void;
  end(): void;
}
export type Connector = (path: string, on: { data(text: string): void; error(error: unknown): void; close(): void }) => Promise<LineSocket>;

/** A connection to the agent: questions asked one line each, answered in order. */
export interface AgentConnection {
  /** The agent's answer; an error answer, or none in time, throws AgentUnavailableError. */
  ask(question: AgentAsk): Promise<Exclude<AgentAnswer, { error: string }>>;
  close(): void;
}

/**
 * Connects to the agent on its unix socket: one connection, one line per question,
 * everything within `timeoutMs`; an agent that cannot answer throws AgentUnavailableError.
 */
export async function connectAgent(socket: string, timeoutMs: number, connect: Connector): Promise<AgentConnection> {
  let failure: AgentUnavailableError | undefined;
  const waiting = new Set<(line: string | AgentUnavailableError) => void>();
  let connection: LineSocket | undefined;
  const fail = (reason: string) => {
    clearTimeout(deadline);
    failure ??= new AgentUnavailableError(socket, reason);
    for (const settle of waiting) settle(failure);
    waiting.clear();
    connection?.end();
  };
  // Declared before fail() uses it; a pending deadline must not keep the plugin's process alive.
  const deadline: NodeJS.Timeout = setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs);
  deadline.unref();
  let buffered = "";
  try {
    connection = await connect(socket, {
      data(text) {
        buffered += text;
        if (buffered.length > maxLineBytes) return fail("an answer longer than a line may be");
        for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
          const line = buffered.slice(0, end);
          buffered = buffered.slice(end + 1);
          const [settle] = waiting;
          if (!settle) return fail("an answer nobody asked for");
          waiting.delete(settle);
          settle(line);
        }
      },
      error: (error) => fail(errnoCode(error) ?? errorMessage(error)),
      close: () => fail("it closed the connection"),
    });
  } catch (error) {
    fail(errnoCode(error) ?? errorMessage(error));
  }
  if (failure || !connection) throw failure;
  const open = connection;

  const ask = async (question: AgentAsk): Promise<Exclude<AgentAnswer, { error: string }>> => {
    if (failure) throw failure;
    const asked = JSON.stringify(question);
    if (Buffer.byteLength(asked) > maxAskBytes)
      throw new AgentUnavailableError(socket, `a question longer than the agent reads (${maxAskBytes} bytes)`);
    const line = await new Promise<string | AgentUnavailableError>((settle) => {
      waiting.add(settle);
      open.write(`${asked}\n`);
    });
    if (line instanceof AgentUnavailableError) throw line;
    let answer: AgentAnswer;
    try {
      answer = await parseAnswer(line);
    } catch (error) {
      throw new AgentUnavailableError(socket, `not an answer: ${errorMessage(error)}`);
    }
    if ("error" in answer) throw new AgentUnavailableError(socket, answer.error);
    return answer;
  };
  return {
    ask,
    close() {
      clearTimeout(deadline);
      // Ours: its end is no failure.
      failure ??= new AgentUnavailableError(socket, "closed by the plugin");
      open.end();
    },
  };
}
