import type { IncomingMessage, ServerResponse } from "node:http";
import { createSecureServer, type Http2SecureServer, type Http2ServerRequest } from "node:http2";
import type { Socket } from "node:net";

/**
 * The connections open to the in-test API server: each numbered as it comes (an HTTP/2
 * session or an HTTP/1.1 socket), so a test can tell how many a client opened, and all of
 * them reset at once, as a restarted server resets them.
 */
export class Connections {
  private readonly open = new Set<Socket>();
  private readonly numbers = new WeakMap<object, number>();
  private seen = 0;

  constructor(server: Http2SecureServer) {
    server.on("secureConnection", (socket: Socket) => {
      this.open.add(socket);
      socket.on("close", () => this.open.delete(socket));
    });
  }

  /** The protocol and number of the connection a request came on ("HTTP/2 #3"). */
  of(req: Http2ServerRequest): string {
    const http2 = req.httpVersion === "2.0";
    const connection: object = http2 ? (req.stream.session ?? req.stream) : req.socket;
    let number = this.numbers.get(connection);
    if (number === undefined) {
      number = ++this.seen;
      this.numbers.set(connection, number);
    }
    return `HTTP/${http2 ? "2" : "1.1"} #${number}`;
  }

  resetAll(): void {
    for (const socket of this.open) socket.destroy();
    this.open.clear();
  }
}

/**
 * An HTTPS server speaking HTTP/2 as kube-apiserver does (ALPN), and HTTP/1.1 to clients that
 * ask for it, calling `handle` with each request's whole body and its connection. Handlers
 * take the compatibility API's request and response, which stand in for node:http's.
 */
export function apiListener(
  tls: { key: Buffer; cert: Buffer },
  handle: (req: IncomingMessage, res: ServerResponse, body: string, connection: string) => void,
): { server: Http2SecureServer; connections: Connections } {
  const server = createSecureServer({ ...tls, allowHTTP1: true }, (req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    const connection = connections.of(req);
    req.on("end", () => handle(req as unknown as IncomingMessage, res as unknown as ServerResponse, body, connection));
  });
  const connections = new Connections(server);
  return { server, connections };
}

/** The connections `who`'s requests came on, in order ("agent": the agent's tokens), and the paths it watched. */
export function connectionsOf(
  requests: Array<{ who: string; connection: string; path: string; query: Record<string, string> }>,
  who: string,
) {
  const theirs = requests.filter((request) => request.who === who);
  const watched = theirs.filter((request) => request.query.watch).map((request) => request.path);
  return { connections: [...new Set(theirs.map((request) => request.connection))], watched: [...new Set(watched)].sort() };
}
