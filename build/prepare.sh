#!/usr/bin/env bash
# Installs what the demo, the tests and the benchmark need on a fresh Debian 12 machine,
# idempotently: npm packages, Debian's iptables/iproute2/CNI plugins/containerd, and
# cnitool built from Debian's libcni source (cached in .cache/). Needs root for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache="$root/.cache"
mkdir -p "$cache/bin"

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

# containerd (with runc) is the runtime of the CRI tests; gcc and libc6-dev build their static
# pause program; e2fsprogs has chattr (a test makes a record immutable); nftables (nft) and strace
# are test-only: nft lists what the nftables backend wrote, strace records nft's golden bytes;
# gpg makes a throwaway key to test the image build's InRelease check (gpgv and Debian's
# archive keyring are what the build itself uses).
packages=(iptables nftables strace iproute2 util-linux containernetworking-plugins golang-go openssl xz-utils containerd gcc libc6-dev e2fsprogs gpg gpgv debian-archive-keyring)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

promtool="$cache/bin/promtool"
if [ ! -x "$promtool" ]; then
  # promtool checks the alerting rules and the agent's /metrics; it ships in Debian's prometheus
  # package, whose server is not wanted here (installing it would start one): only promtool is taken.
  work=$(mktemp -d)
  chmod 755 "$work"
  (cd "$work" && apt-get download -qq prometheus 2>/dev/null || { apt-get update -qq && apt-get download -qq prometheus; })
  dpkg-deb --fsys-tarfile "$work"/prometheus_*.deb | tar -x -C "$work" ./usr/bin/promtool
  mv "$work/usr/bin/promtool" "$promtool"
  rm -rf "$work"
fi

cnitool="$cache/bin/cnitool"
if [ ! -x "$cnitool" ]; then
  # cnitool is not packaged; Debian's libcni source (golang-github-appc-cni) holds it.
  sources=/etc/apt/sources.list.d/meshcni-deb-src.sources
  if ! apt-cache showsrc golang-github-appc-cni >/dev/null 2>&1; then
    cat > "$sources" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && apt-get source --download-only -qq golang-github-appc-cni 2>/dev/null && tar xf golang-github-appc-cni_*.orig.tar.xz)
  src=$(find "$work" -maxdepth 1 -type d -name 'golang-github-appc-cni-*' | head -n 1)
  # go.mod requires test-only modules (ginkgo, gomega) that cannot be fetched offline.
  printf 'module github.com/containernetworking/cni\n\ngo 1.14\n' > "$src/go.mod"
  rm -f "$src/go.sum"
  (cd "$src" && GOPROXY=off GOFLAGS=-mod=mod GOCACHE="$cache/go-build" go build -o "$cnitool" ./cnitool)
fi
