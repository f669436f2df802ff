#!/usr/bin/env bash
# Installs what `npm run bench -- --compare etcd` needs from the system, when missing:
# etcd 3.4 (Debian's etcd-server package; BENCHMARKS.md's comparison column). Without root
# or apt-get it only says so, and the bench runs raftlock alone with a clear line.
set -euo pipefail
if command -v etcd >/dev/null 2>&1; then
  echo "install-bench-deps: $(etcd --version | head -1) is present"
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-bench-deps: etcd is missing and cannot be installed (needs root and apt-get); --compare etcd will run raftlock alone"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends etcd-server >/dev/null; }; then
  echo "install-bench-deps: apt-get could not install etcd-server; --compare etcd will run raftlock alone"
  exit 0
fi
# The package's service is not wanted: the bench starts its own members on free ports.
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >/dev/null 2>&1 || true; fi
echo "install-bench-deps: installed $(etcd --version | head -1)"
