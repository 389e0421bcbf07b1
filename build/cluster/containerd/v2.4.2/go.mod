// A wrapper that pins the real cluster's containerd v2.4.2 by module path and version (components.sh builds it).
module meshcni.test/cluster/containerd

go 1.26.6

require github.com/containerd/containerd/v2 v2.4.2
