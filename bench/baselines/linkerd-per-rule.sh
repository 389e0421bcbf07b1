#!/usr/bin/env bash
# Baseline: the way Linkerd's linkerd-cni applies rules (reference §2): one
# `nsenter --net=<netns> iptables -t nat …` process per rule, with iptables-save reads
# before and after. The rules come on stdin, one argument list per line.
# Usage: linkerd-per-rule.sh NETNS_PATH BACKEND(nft|legacy) < rules
set -euo pipefail
netns=$1
backend=$2
nsenter --net="$netns" "iptables-$backend-save" -t nat >/dev/null
while read -r -a rule; do
  nsenter --net="$netns" "iptables-$backend" -t nat "${rule[@]}"
done
nsenter --net="$netns" "iptables-$backend-save" -t nat >/dev/null
