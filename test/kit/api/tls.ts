import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** A P-256 key and a certificate for 127.0.0.1 and localhost, valid two days, made by openssl in `dir` (server.key, server.crt). */
export function selfSignedCertificate(dir: string): { key: Buffer; cert: Buffer } {
  const key = join(dir, "server.key");
  const cert = join(dir, "server.crt");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=meshcni-test-apiserver",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    { stdio: "ignore" },
  );
  return { key: readFileSync(key), cert: readFileSync(cert) };
}
