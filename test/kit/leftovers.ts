// What a test's daemons leave on the host when they are gone (mounts, cgroups), removed by
// any harness that ran them: the real cluster's and a test's own containerd alike.
import { existsSync, readdirSync, readFileSync, rmdirSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { sleep } from "./common.js";

/** Unmounts every mount under `dir`, deepest first; one already gone is fine. */
export async function unmountUnder(dir: string): Promise<void> {
  const points = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
  for (const point of points.reverse()) await execa("umount", ["-l", point], { reject: false });
}

/** Removes a cgroup and its children, deepest first, killing what still runs in them. */
async function removeCgroupTree(path: string): Promise<void> {
  if (!existsSync(path)) return;
  for (const entry of readdirSync(path, { withFileTypes: true })) if (entry.isDirectory()) await removeCgroupTree(join(path, entry.name));
  for (const pid of readFileSync(join(path, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // Gone already.
    }
  }
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      rmdirSync(path);
      return;
    } catch {
      await sleep(20);
    }
  }
}

/** Kills what runs under a cgroup root in every hierarchy (containers whose shim is gone) and removes it. */
export async function removeCgroups(root: string): Promise<void> {
  for (const controller of existsSync("/sys/fs/cgroup") ? readdirSync("/sys/fs/cgroup") : []) {
    await removeCgroupTree(join("/sys/fs/cgroup", controller, root));
  }
}
