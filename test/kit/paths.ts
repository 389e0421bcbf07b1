import { join, resolve } from "node:path";

/** Where the tests find the project and what it builds and installs. */
export const projectRoot = resolve(import.meta.dirname, "../..");
export const meshcniBinary = join(projectRoot, "build/meshcni");
/** cnitool, built from Debian's libcni source (build/prepare.sh). */
export const cnitoolBinary = join(projectRoot, ".cache/bin/cnitool");
/** Prometheus's promtool, from Debian's prometheus package (build/prepare.sh). */
export const promtoolBinary = join(projectRoot, ".cache/bin/promtool");
/** Debian's CNI plugins (containernetworking-plugins). */
export const debianPlugins = "/usr/lib/cni";
