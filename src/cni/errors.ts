/** Error codes from the CNI specification (SPEC.md, "Error"). */
export const ErrorCode = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnvironment: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidNetworkConfig: 7,
  tryAgainLater: 11,
  pluginNotAvailable: 50,
  pluginNotAvailableLimited: 51,
  /** meshcni's own (100+): CHECK found the pod netns's redirect differing from the plan. */
  redirectMismatch: 100,
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** An error the plugin reports to the runtime as the CNI error object on stdout. */
export class CniError extends Error {
  readonly code: ErrorCode;
  readonly details: string;

  constructor(code: ErrorCode, msg: string, details = "") {
    super(msg);
    this.name = "CniError";
    this.code = code;
    this.details = details;
  }

  toJSON(cniVersion: string): Record<string, unknown> {
    return { cniVersion, code: this.code, msg: this.message, details: this.details };
  }
}
