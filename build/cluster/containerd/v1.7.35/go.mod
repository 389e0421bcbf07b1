// A wrapper that pins the real cluster's containerd v1.7.35 by module path and version (components.sh builds it).
module meshcni.test/cluster/containerd

go 1.25.0

require github.com/containerd/containerd v1.7.35
exclude github.com/mitchellh/osext v0.0.0-20151018003038-5e2d6d41470f
