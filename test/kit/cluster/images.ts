import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { buildImage } from "../../../build/image.js";
import { writeOciArchive } from "../../../build/oci.js";
import { meshcniBinary, projectRoot } from "../paths.js";
import { pauseImage } from "./containerd.js";
import { currentLeg } from "./leg.js";

export const probeImage = "meshcni.test/probe:1";

const cache = join(projectRoot, ".cache/cluster");
const architecture = process.arch === "arm64" ? "arm64" : "amd64";
const newer = (path: string, than: string) => existsSync(path) && statSync(path).mtimeMs >= statSync(than).mtimeMs;

/** Kubernetes' own pause program (build/pause/linux/pause.c of the release the leg's cluster is built from), static. */
async function pauseBinary(): Promise<string> {
  const { stdout } = await execa("go", ["list", "-m", "-json", "k8s.io/kubernetes"], {
    cwd: join(projectRoot, "build/cluster/kubernetes", currentLeg().kubernetes),
    env: { PATH: `/usr/local/go/bin:${process.env.PATH}` },
  });
  const { Dir, Version } = JSON.parse(stdout) as { Dir: string; Version: string };
  const source = join(Dir, "build/pause/linux/pause.c");
  const binary = join(cache, `pause-${Version}`);
  if (!existsSync(binary)) await execa("gcc", ["-static", "-Os", "-s", `-DVERSION=${Version}`, "-o", binary, source]);
  return binary;
}

/** The probe (test/cluster/probe): the test pods' app, proxy stand-in, client and socket squatter; built here when its source changed. */
export async function probeBinary(): Promise<string> {
  const source = join(projectRoot, "test/cluster/probe");
  const binary = join(cache, "probe");
  if (!readdirSync(source).every((file) => newer(binary, join(source, file)))) {
    await execa("go", ["build", "-trimpath", "-ldflags=-s -w", "-o", binary, "."], {
      cwd: source,
      env: { PATH: `/usr/local/go/bin:${process.env.PATH}`, CGO_ENABLED: "0" },
    });
  }
  return binary;
}

const single = (entry: string, source: string, name: string, archive: string) =>
  writeOciArchive(archive, name, [
    { os: "linux", architecture, entries: [{ path: entry, source, mode: 0o755 }], config: { Entrypoint: [`/${entry}`] } },
  ]);

/** The sandbox's image alone: all a node's runtime needs to run a pod's network. */
export async function pauseArchive(): Promise<string> {
  mkdirSync(cache, { recursive: true });
  const pause = join(cache, "pause.tar");
  await single("pause", await pauseBinary(), pauseImage, pause);
  return pause;
}

/**
 * The image archives a node imports (nothing is pulled): the sandbox's pause, the probe,
 * and meshcni's own as `npm run image` builds it, for this machine's architecture only;
 * each rebuilt only when what it holds changed.
 */
export async function imageArchives(): Promise<string[]> {
  const pause = await pauseArchive();
  const probe = join(cache, "probe.tar");
  await single("probe", await probeBinary(), probeImage, probe);
  const meshcni = join(cache, "meshcni-image.tar");
  if (!newer(meshcni, meshcniBinary)) await buildImage([architecture], meshcni);
  return [pause, probe, meshcni];
}

/** A second build of meshcni (its binary names another commit): what rollouts to another version roll to. */
export const otherBuild = { tag: "other-build", commit: "other-build" };

/** The other build's image archive, built once per build of meshcni's binary. */
export async function otherBuildArchive(): Promise<string> {
  mkdirSync(cache, { recursive: true });
  const archive = join(cache, "meshcni-other-image.tar");
  if (!newer(archive, meshcniBinary)) await buildImage([architecture], archive, false, otherBuild);
  return archive;
}
