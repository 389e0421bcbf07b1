#!/usr/bin/env bash
# Builds the real cluster's components (and Helm, and Cilium's CNI config writer) from the Go module
# proxy, each by module path and the version pinned in its wrapper module here
# (build/cluster/<component>/go.mod), into a cache outside git keyed by that version and a hash of
# the wrapper (go.mod, go.sum, and any .go file of ours) and the flags: a component already
# built is never built again. Prints the cache directory of each component as NAME=DIR lines.
# MESHCNI_CLUSTER_CACHE moves the cache; MESHCNI_CLUSTER_BIN names a directory of binaries a user
# already has (all of them), which are then used as they are and nothing is built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MESHCNI_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/meshcni/cluster}
export PATH=/usr/local/go/bin:$PATH CGO_ENABLED=0 GOFLAGS=-buildvcs=false

# version MODULE_DIR MODULE_PATH: the version the wrapper requires.
version() { awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1/go.mod"; }

# build NAME WRAPPER_DIR MODULE_PATH LDFLAGS TAGS PACKAGE...: one `go build` of every package, into the cache.
build() {
  local name=$1 dir=$2 module=$3 ldflags=$4 tags=$5
  shift 5
  local ver key out sources
  ver=$(version "$dir" "$module")
  mapfile -t sources < <(compgen -G "$dir/*.go" | sort)
  key=$(cat "$dir/go.mod" "$dir/go.sum" "${sources[@]}" <(printf '%s|%s|%s' "$ldflags" "$tags" "$*") | sha256sum | cut -c1-12)
  out="$cache/$name-$ver-$key"
  # One build of an output at a time: two runs at once (a test suite and a hand-run command)
  # would remove each other's half-built directory; a run wanting another output goes on.
  mkdir -p "$cache"
  exec 9>"$out.lock"
  flock 9
  if [ ! -f "$out/.built" ]; then
    local started=$SECONDS
    echo "building $name $ver ($module) into $out" >&2
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    # A component of one package is named after the component (etcd's package path ends in /v3).
    local target="$out.tmp/"
    [ $# -gt 1 ] || target="$out.tmp/$name"
    (cd "$dir" && go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$target" "$@")
    rm -rf "$out" && mv "$out.tmp" "$out"
    echo "$ver built in $((SECONDS - started)) s" > "$out/.built"
    echo "built $name $ver in $((SECONDS - started)) s" >&2
  fi
  exec 9>&-
  echo "$name=$out"
}

if [ -n "${MESHCNI_CLUSTER_BIN:-}" ]; then
  for name in kubernetes etcd containerd cni-plugins helm cilium $([ "${MESHCNI_PRIMARY:-}" = calico ] && echo calico) $([ "${MESHCNI_ISTIO:-}" = 1 ] && echo istio); do
    echo "$name=$MESHCNI_CLUSTER_BIN"
  done
  exit 0
fi


# The leg's Kubernetes and containerd (npm run test:matrix names them); npm test's by default.
# Each version has its wrapper module in build/cluster/<component>/<version>/ (wrapper.sh writes one).
kubernetes_dir="$here/kubernetes/${MESHCNI_KUBERNETES:-v1.35.4}"
containerd_dir="$here/containerd/${MESHCNI_CONTAINERD:-v2.2.9}"
for dir in "$kubernetes_dir" "$containerd_dir"; do
  [ -f "$dir/go.mod" ] || { echo "no wrapper module $dir: write one with build/cluster/wrapper.sh" >&2; exit 2; }
done

k8s=$(version "$kubernetes_dir" k8s.io/kubernetes)
k8s_date=$(go mod download -json "k8s.io/kubernetes@$k8s" | awk -F'"' '/"Info"/ { print $4 }' | xargs cat | sed -E 's/.*"Time":"([^"]+)".*/\1/')
minor=$(echo "$k8s" | cut -d. -f2)
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=$k8s_date"
done
build kubernetes "$kubernetes_dir" k8s.io/kubernetes "$stamp" "selinux,notest" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl
build etcd "$here/etcd" go.etcd.io/etcd/server/v3 "" "" go.etcd.io/etcd/server/v3
# containerd 1.x is the module github.com/containerd/containerd, 2.x .../containerd/v2.
containerd_module=github.com/containerd/containerd/v2
grep -q "^require github.com/containerd/containerd v1" "$containerd_dir/go.mod" && containerd_module=github.com/containerd/containerd
containerd=$(version "$containerd_dir" "$containerd_module")
build containerd "$containerd_dir" "$containerd_module" "-X $containerd_module/version.Version=$containerd" "no_btrfs,no_devmapper" \
  "$containerd_module/cmd/containerd" "$containerd_module/cmd/containerd-shim-runc-v2" "$containerd_module/cmd/ctr"
# With cnitool of the libcni the plugins are built against (containerd 2's): the netns suite runs
# every CNI version meshcni supports through it, 1.1.0's STATUS and GC among them.
plugins=$(version "$here/cni-plugins" github.com/containernetworking/plugins)
build cni-plugins "$here/cni-plugins" github.com/containernetworking/plugins "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$plugins" "" \
  github.com/containernetworking/plugins/plugins/main/bridge github.com/containernetworking/plugins/plugins/main/loopback \
  github.com/containernetworking/plugins/plugins/ipam/host-local github.com/containernetworking/plugins/plugins/meta/portmap \
  github.com/containernetworking/cni/cnitool
# Helm, which the chart's tests run (lint, template, install, upgrade, uninstall).
helm=$(version "$here/helm" helm.sh/helm/v4)
build helm "$here/helm" helm.sh/helm/v4 "-X helm.sh/helm/v4/internal/version.version=$helm" "" helm.sh/helm/v4/cmd/helm
# Calico's CNI plugin (calico-ipam is the same binary under that name) and installer, for a leg
# whose primary is Calico alone: a cold build costs about 11 minutes.
if [ "${MESHCNI_PRIMARY:-bridge}" = calico ]; then
  build calico "$here/calico" github.com/projectcalico/calico "-X main.VERSION=v3.28.5-a0db560f0520" "" \
    github.com/projectcalico/calico/cni-plugin/cmd/calico github.com/projectcalico/calico/cni-plugin/cmd/install
fi
# Istio's CNI plugin and node agent, for `npm run bench cluster` (MESHCNI_ISTIO=1): npm test needs neither.
if [ "${MESHCNI_ISTIO:-}" = 1 ]; then
  build istio "$here/istio" istio.io/istio "" "" istio.io/istio/cni/cmd/istio-cni istio.io/istio/cni/cmd/install-cni
fi
# Cilium's CNI config writer (daemon/cmd/cni, as cilium-agent runs it) from our main.go: its agent
# cannot run here, its config writer can (test/cluster/cilium-takeover.test.ts).
build cilium "$here/cilium" github.com/cilium/cilium "" "" meshcni.test/cluster/cilium
