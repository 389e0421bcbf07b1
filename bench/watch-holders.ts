// A child of `npm run bench watch-memory`: holds the watches of `count` simulated components
// against the API server, each component its own TLS connection(s), until killed. Argv: the
// watch set, `h2` (one HTTP/2 connection per component, a stream per watch, as client-go and
// now meshcni hold them) or `h1` (a connection per watch, as meshcni held them before), the
// count, the server, the PKI dir (its CA, and its admin certificate as every component's
// credentials), and optionally a file of tokens, one per line: component i then authenticates
// with token i instead (as agents do, each with its own ServiceAccount token). Prints how many
// watches the server accepted. Raw node:http2 / node:https, not src/kube: that client would pool every simulated
// component onto one connection.
import { readFileSync } from "node:fs";
import { connect } from "node:http2";
import { Agent, request } from "node:https";
import { watchSets } from "./watch-sets.js";

const [set, protocol, count, server, pki, tokenFile] = process.argv.slice(2) as [
  keyof typeof watchSets,
  "h1" | "h2",
  string,
  string,
  string,
  string?,
];
const tokens = tokenFile ? readFileSync(tokenFile, "utf8").trim().split("\n") : undefined;
const ca = readFileSync(`${pki}/ca.crt`);
const tls = tokens ? { ca } : { ca, cert: readFileSync(`${pki}/admin.crt`), key: readFileSync(`${pki}/admin.key`) };
/** Component `index`'s headers: its own token, or none (its client certificate speaks for it). */
const headersOf = (index: number): Record<string, string> => (tokens ? { authorization: `Bearer ${tokens[index % tokens.length]}` } : {});
let accepted = 0;
const failed = (error: Error) => process.stderr.write(`${error.message}\n`);

for (let index = 0; index < Number(count); index++) {
  const paths = watchSets[set](`sim-${index}`);
  if (protocol === "h2") {
    const session = connect(server, tls);
    session.on("error", failed);
    for (const path of paths) {
      const stream = session.request({ ":path": path, ...headersOf(index) });
      stream
        .on("response", () => accepted++)
        .on("data", () => undefined)
        .on("error", failed);
    }
  } else {
    for (const path of paths)
      request(`${server}${path}`, { ...tls, headers: headersOf(index), agent: new Agent({ keepAlive: false }) }, (response) => {
        accepted++;
        response.on("data", () => undefined);
      })
        .on("error", failed)
        .end();
  }
}
setInterval(() => process.stdout.write(`${accepted}\n`), 1000);
