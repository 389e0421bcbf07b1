import {
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The primary CNIs' plugins the tests chain, as a node with them installed has them (in `primaryBinDir`). */
export const primaryPluginTypes = [
  "calico",
  "calico-ipam",
  "cilium-cni",
  "aws-cni",
  "azure-vnet",
  "bridge",
  "host-local",
  "portmap",
  "macvlan",
  "loopback",
];

/** Where the host keeps the primaries' plugins, as Debian does: a second bin dir the runtime (and the agent) are told of. */
export const primaryBinDir = "/usr/lib/cni";

/** A conflist file's text: these plugins under `name`, at cniVersion 1.0.0 unless `extra` says. */
export const conflist = (name: string, plugins: object[], extra: object = {}) =>
  `${JSON.stringify({ cniVersion: "1.0.0", name, ...extra, plugins }, null, 2)}\n`;

/**
 * A host in temp dirs for `meshcni install`: a CNI config dir and bin dir under a host
 * root, the primaries' plugins in a second bin dir (stubs; onHost: Debian's real ones), and
 * a projected service-account dir that rotates like kubelet's (a `..data` symlink swapped
 * by rename); what the agent wrote there, read back, and the primaries' ways of writing.
 */
export class AgentHost {
  readonly root = mkdtempSync(join(tmpdir(), "meshcni-agent-"));
  readonly hostRoot: string;
  readonly netDir: string;
  readonly binDir: string;
  readonly serviceAccountDir = join(this.root, "serviceaccount");
  private tokenGeneration = 0;
  protected readonly onHost: boolean;

  /** `onHost`: no host root; the dirs are real paths, so the conflist works for cnitool here. */
  constructor(options: { onHost?: boolean } = {}) {
    this.onHost = options.onHost ?? false;
    this.hostRoot = this.onHost ? "/" : join(this.root, "host");
    this.netDir = this.onHost ? join(this.root, "net.d") : join(this.hostRoot, "/etc/cni/net.d");
    this.binDir = this.onHost ? join(this.root, "bin") : join(this.hostRoot, "/opt/cni/bin");
    mkdirSync(this.netDir, { recursive: true });
    mkdirSync(this.binDir, { recursive: true });
    if (!this.onHost) {
      const primaries = join(this.hostRoot, primaryBinDir);
      mkdirSync(primaries, { recursive: true });
      for (const type of primaryPluginTypes) writeFileSync(join(primaries, type), "#!/bin/sh\nexit 1\n", { mode: 0o755 });
    }
    mkdirSync(this.serviceAccountDir);
    this.rotateToken("token-one", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  }

  get kubeconfigPath(): string {
    return join(this.netDir, "ZZZ-meshcni-kubeconfig");
  }

  /** Swaps the projected volume's `..data` link as kubelet's atomic writer does. */
  rotateToken(token: string, caPem = readFileSync(join(this.serviceAccountDir, "ca.crt"), "utf8")): void {
    this.tokenRotated(token);
    const generation = join(this.serviceAccountDir, `..gen_${++this.tokenGeneration}`);
    mkdirSync(generation);
    writeFileSync(join(generation, "token"), token);
    writeFileSync(join(generation, "ca.crt"), caPem);
    const staged = join(this.serviceAccountDir, "..data_tmp");
    symlinkSync(`..gen_${this.tokenGeneration}`, staged);
    renameSync(staged, join(this.serviceAccountDir, "..data"));
    for (const name of ["token", "ca.crt"]) {
      if (!existsSync(join(this.serviceAccountDir, name))) symlinkSync(`..data/${name}`, join(this.serviceAccountDir, name));
    }
  }

  /** The agent's projected token, as the test last made it. */
  projectedToken(): string {
    return readFileSync(join(this.serviceAccountDir, "token"), "utf8");
  }

  /** The plugin's state dir as the agent sees it (the host's /var/run/meshcni is never touched). */
  get stateDir(): string {
    return this.onHost ? join(this.root, "state") : join(this.hostRoot, "/var/run/meshcni");
  }

  /** A new projected token: the harness's own API server takes it as the agent's. */
  protected tokenRotated(_token: string): void {}

  /** The token in the plugin's kubeconfig ("" while there is none). */
  pluginToken(): string {
    const text = this.kubeconfig();
    return text ? (JSON.parse(text) as { users: Array<{ user: { token: string } }> }).users[0]!.user.token : "";
  }

  /** The kubeconfig the agent wrote, or "" while there is none. */
  kubeconfig(): string {
    return existsSync(this.kubeconfigPath) ? readFileSync(this.kubeconfigPath, "utf8") : "";
  }

  path(name: string): string {
    return join(this.netDir, name);
  }

  read(name: string): string {
    return readFileSync(this.path(name), "utf8");
  }

  json(name: string): { plugins?: Array<{ type: string }>; [key: string]: unknown } {
    return JSON.parse(this.read(name));
  }

  /** The types in a config's plugin list ("!" when it is missing or not JSON yet). */
  types(name: string): string[] {
    try {
      return (this.json(name).plugins ?? []).map((plugin) => plugin.type);
    } catch {
      return ["!"];
    }
  }

  /** Rewrites in place, as Calico does: open, truncate, write; no rename. */
  writeInPlace(name: string, content: string): void {
    const fd = openSync(this.path(name), existsSync(this.path(name)) ? "r+" : "w");
    ftruncateSync(fd, 0);
    writeSync(fd, content, 0);
    closeSync(fd);
  }

  /** Writes a temp file and renames it over, as the AWS VPC CNI does. */
  renameOver(name: string, content: string): void {
    writeFileSync(this.path(`.${name}.tmp`), content);
    renameSync(this.path(`.${name}.tmp`), this.path(name));
  }

  remove(name: string): void {
    rmSync(this.path(name), { force: true });
  }

  /** Removes the host's dirs. */
  protected removeDirs(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}
