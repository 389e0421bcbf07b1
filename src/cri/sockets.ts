/** containerd's and CRI-O's default CRI sockets, in the order `--cri-socket auto` tries them. */
export const criSockets = ["/run/containerd/containerd.sock", "/var/run/crio/crio.sock"];

/** The CRI socket a sweep asks (a host path), pure: "" none, "auto" the first of criSockets that `exists`, else the path given. */
export function criSocketOf(flag: string, exists: (hostPath: string) => boolean): string | undefined {
  if (flag === "") return undefined;
  return flag === "auto" ? criSockets.find(exists) : flag;
}
