import { join } from "node:path";
import { execa } from "execa";
import { projectRoot } from "../paths.js";

/** linkerd-cni's pattern as a Go program of ours (bench/baselines/linkerd-pattern): its ADD as a Go chained plugin does it. */
export const goPattern = join(projectRoot, ".cache/bin/linkerd-pattern");

/** Builds the Go pattern with the machine's Go, offline (the standard library only). */
export async function buildGoPattern(): Promise<string> {
  await execa("go", ["build", "-o", goPattern, join(projectRoot, "bench/baselines/linkerd-pattern/main.go")], {
    env: { ...process.env, GOCACHE: join(projectRoot, ".cache/go-build"), GOPROXY: "off", GOFLAGS: "" },
  });
  return goPattern;
}
