#!/usr/bin/env bash
# Installs what test/jepsen-lite needs for real network faults: iproute2 (ip netns, veth,
# bridge, tc) and iptables (partitions). Called by .ci/run before the tests. Without root
# or apt-get it only says so: the jepsen-lite tests then skip partitions and packet faults
# with a clear line, and kills and pauses still run.
set -euo pipefail
need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
if [ ${#need[@]} -eq 0 ]; then
  echo "install-test-deps: iproute2 and iptables are present"
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: missing ${need[*]} and cannot install (needs root and apt-get); jepsen-lite will skip network faults"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
echo "install-test-deps: installed $(printf '%s ' "${need[@]}" | tr ' ' '\n' | sort -u | tr '\n' ' ')"
