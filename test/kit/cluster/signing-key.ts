// The ServiceAccount signing key rotated on the running cluster, as an operator does it: a new
// key pair signs from the API server's restart on, and the old public key is kept among those
// it verifies with (a careful rotation: tokens already out stay good until they are renewed)
// or dropped (every token already out is refused). The controller manager is restarted with
// it, as a rotation restarts the control plane (its controllers' tokens are minted again).
import { execa } from "execa";
import type { RealCluster } from "./cluster.js";
import { paths } from "./layout.js";
import { daemonSpec, startDaemon, stopDaemon } from "./processes.js";

const signing = "--service-account-signing-key-file=";
const verifying = "--service-account-key-file=";

/** Rotates the key; the new key's files are kept in the cluster's run dir (gone with the cluster). */
export async function rotateSigningKey(cluster: RealCluster, old: "kept" | "dropped"): Promise<void> {
  const stem = `${paths.run}/sa-${Date.now()}`;
  await execa("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", `${stem}.key`]);
  await execa("openssl", ["pkey", "-in", `${stem}.key`, "-pubout", "-out", `${stem}.pub`]);
  const spec = daemonSpec("kube-apiserver");
  const kept = old === "kept" ? spec.args.filter((arg) => arg.startsWith(verifying)) : [];
  const args = [
    ...spec.args.filter((arg) => !arg.startsWith(signing) && !arg.startsWith(verifying)),
    `${signing}${stem}.key`,
    `${verifying}${stem}.pub`,
    ...kept,
  ];
  await stopDaemon("kube-apiserver");
  startDaemon({ ...spec, args });
  await cluster.waitApiserver();
  await cluster.restart("kube-controller-manager");
}
