#!/usr/bin/env bash
# Writes the wrapper module that pins one version of a component of the real cluster:
# build/cluster/<component>/<version>/go.mod and go.sum, made from the Go module proxy (only
# these two files are committed; components.sh builds from them). Run once per new version.
#   wrapper.sh kubernetes v1.37.2    each staging module replaced by its published twin
#   wrapper.sh containerd v2.4.2     github.com/containerd/containerd/v2 (v1.x: .../containerd)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=mod CGO_ENABLED=0
component=$1 version=$2
dir="$here/$component/$version"
mkdir -p "$dir"

case "$component" in
kubernetes)
  upstream=$(go mod download -json "k8s.io/kubernetes@$version" | awk -F'"' '/"GoMod"/ { print $4 }')
  staging=${version/v1./v0.}
  {
    echo "// A wrapper that builds Kubernetes $version's commands from the Go module proxy: k8s.io/kubernetes"
    echo "// replaces its staging modules with local directories, so each is pinned here to its published twin."
    echo "module meshcni.test/cluster/kubernetes"
    echo
    grep -E '^go ' "$upstream"
    grep -E '^godebug ' "$upstream" || true
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    awk -v v="$staging" '$2 == "=>" && $3 ~ /^\.\/staging\// { printf "\t%s => %s %s\n", $1, $1, v }' "$upstream"
    echo ")"
  } > "$dir/go.mod"
  packages="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl"
  tags="selinux,notest"
  ;;
containerd)
  case "$version" in v1.*) module=github.com/containerd/containerd ;; *) module=github.com/containerd/containerd/v2 ;; esac
  upstream=$(go mod download -json "$module@$version" | awk -F'"' '/"GoMod"/ { print $4 }')
  {
    echo "// A wrapper that pins the real cluster's containerd $version by module path and version (components.sh builds it)."
    echo "module meshcni.test/cluster/containerd"
    echo
    grep -E '^go ' "$upstream"
    echo
    echo "require $module $version"
    grep -E '^exclude ' "$upstream" || true
  } > "$dir/go.mod"
  packages="$module/cmd/containerd $module/cmd/containerd-shim-runc-v2 $module/cmd/ctr"
  tags="no_btrfs,no_devmapper"
  ;;
*)
  echo "usage: wrapper.sh kubernetes|containerd VERSION" >&2
  exit 2
  ;;
esac

# Resolving the commands' packages fills in every module they need, and go.sum, without building: with
# the build tags components.sh builds them with (containerd 1.7's with Kubernetes' tags too left out
# github.com/google/gofuzz, which its build needs).
rm -f "$dir/go.sum"
# shellcheck disable=SC2086
(cd "$dir" && go list -deps -tags "$tags" $packages > /dev/null)
echo "wrote $dir/go.mod and go.sum" >&2
