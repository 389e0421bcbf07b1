import { isAbsolute, normalize } from "node:path";

/**
 * Whether a netns path (as the host sees it) lies in one of the runtime's netns dirs, in
 * its plainest form: absolute, no `..` or `.` or doubled slashes, which could leave them.
 * Pure: the path is not looked at.
 */
export function inNetnsDirs(path: string, dirs: string[]): boolean {
  if (!isAbsolute(path) || normalize(path) !== path) return false;
  return dirs.some((dir) => path.startsWith(`${dir.replace(/\/+$/, "")}/`));
}
