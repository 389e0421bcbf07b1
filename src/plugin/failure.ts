import { CniError, ErrorCode } from "../cni/errors.js";
import { errorMessage } from "../errors.js";
import { AnnotationError } from "../mesh/pod.js";
import { OwnNetnsError } from "../netns/enter.js";
import { PodLookupError } from "./lookup.js";

/**
 * The one place where what the layers below throw becomes a CNI error code: an invalid
 * annotation is the pod's config (7), a failed lookup may pass (11), a CNI_NETNS naming
 * the host's netns is the runtime's error (4). Everything else
 * (IptablesError, NftablesError, SyscallError, NetnsGoneError, NetnsError, a file that cannot be written) is an I/O
 * failure (5), and each of those errors' messages already names what failed.
 */
export function toCniError(error: unknown): CniError {
  if (error instanceof CniError) return error;
  if (error instanceof AnnotationError) return new CniError(ErrorCode.invalidNetworkConfig, error.message);
  if (error instanceof PodLookupError) return new CniError(ErrorCode.tryAgainLater, error.message);
  if (error instanceof OwnNetnsError) return new CniError(ErrorCode.invalidEnvironment, `CNI_NETNS: ${error.message}`);
  return new CniError(ErrorCode.ioFailure, errorMessage(error));
}
