import { errorMessage } from "../../../src/errors.js";
import { daemonLog } from "./processes.js";

/** How long a step took, as kind prints it. */
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * The steps of bringing the cluster up, each announced with its time as it ends (as kind
 * announces its own); a step that fails is named, with the last lines of the daemons it
 * started or waited for.
 */
export class Steps {
  private readonly started = performance.now();

  constructor(
    /** Where each line goes (nothing: the tests' own runs stay quiet). */
    private readonly say: (line: string) => void = () => undefined,
    private readonly logOf: (daemon: string) => string = daemonLog,
  ) {}

  async run<T>(name: string, daemons: string[], action: () => T | Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const value = await action();
      this.say(`✓ ${name} (${seconds(performance.now() - started)})`);
      return value;
    } catch (error) {
      const logs = daemons.map((daemon) => `--- the last lines of ${daemon}'s log ---\n${this.logOf(daemon) || "(nothing logged)"}`);
      this.say(`✗ ${name} (${seconds(performance.now() - started)})`);
      throw new Error([`the cluster did not come up: ${name} failed: ${errorMessage(error)}`, ...logs].join("\n"));
    }
  }

  /** The whole time since the first step. */
  total(): string {
    return seconds(performance.now() - this.started);
  }
}
