import type { CoreV1Api } from "@kubernetes/client-node";
import { ApiStatusError, apiError } from "./errors.js";

/** What a TokenRequest gave: the token, how long the server made it valid, the server's clock when it answered, whether it dies with the Node. */
export interface Mint {
  token: string;
  validForMs: number;
  serverNow: number | undefined;
  boundToNode: boolean;
}

/**
 * Why a TokenRequest bound to the Node was refused, when it is for the binding: the server
 * cannot bind to Nodes ("unsupported": 400 where the ServiceAccountTokenNodeBinding gate is
 * off, as before 1.31; 422 naming boundObjectRef before 1.29), or does not know this Node
 * (404: an agent given another name, a Node deleted until kubelet registers it again).
 */
export function nodeBindingRefusal(failure: ApiStatusError): "unsupported" | "unknown-node" | undefined {
  if (failure.code === 404) return "unknown-node";
  if (failure.code === 400 && failure.message.includes("ServiceAccountTokenNodeBinding")) return "unsupported";
  if (failure.code === 422 && failure.message.includes("boundObjectRef")) return "unsupported";
  return undefined;
}

/**
 * Mints tokens of a ServiceAccount (TokenRequest) bound to this node's Node, so a token
 * copied off the node is worth nothing once the Node is gone; unbound where the server
 * cannot bind to Nodes (from then on), or for one mint where it does not know the Node.
 */
export class TokenMinter {
  /** Whether to ask for a Node binding: until the server says it cannot bind to Nodes. */
  private nodeBinding: boolean;

  constructor(
    private readonly api: CoreV1Api,
    private readonly nodeName: string,
  ) {
    this.nodeBinding = nodeName !== "";
  }

  private request(namespace: string, serviceAccount: string, seconds: number, bound: boolean) {
    return this.api.createNamespacedServiceAccountTokenWithHttpInfo({
      namespace,
      name: serviceAccount,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: {
          audiences: [],
          expirationSeconds: seconds,
          ...(bound ? { boundObjectRef: { apiVersion: "v1", kind: "Node", name: this.nodeName } } : {}),
        },
      },
    });
  }

  async mint(namespace: string, serviceAccount: string, seconds: number): Promise<Mint> {
    let boundToNode = this.nodeBinding;
    let answer: Awaited<ReturnType<TokenMinter["request"]>>;
    try {
      answer = await this.request(namespace, serviceAccount, seconds, boundToNode);
    } catch (error) {
      const failure = apiError(error);
      const refusal = boundToNode && failure instanceof ApiStatusError ? nodeBindingRefusal(failure) : undefined;
      if (!refusal) throw failure;
      // A server that cannot bind to Nodes never will; a Node it does not know (yet) may be registered again.
      if (refusal === "unsupported") this.nodeBinding = false;
      boundToNode = false;
      answer = await this.request(namespace, serviceAccount, seconds, false);
    }
    const token = answer.data.status?.token;
    const expires = answer.data.status?.expirationTimestamp;
    if (!token || !expires) throw new Error(`the API server's TokenRequest answer for ${namespace}/${serviceAccount} has no token`);
    const serverNow = Date.parse(answer.headers.date ?? "");
    const granted = new Date(expires).getTime() - serverNow;
    // Without the server's time, or with a grant past what was asked (+ the Date's rounding), what was asked.
    const validForMs = granted > 0 && granted <= seconds * 1000 + 2000 ? granted : seconds * 1000;
    return { token, validForMs, serverNow: Number.isFinite(serverNow) ? serverNow : undefined, boundToNode };
  }
}
