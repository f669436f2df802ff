#!/usr/bin/env bash
# Installs what the tests need from the system, when missing:
# - iproute2 (ip netns, veth, bridge, tc) and iptables: test/jepsen-lite's real network
#   faults (partitions, packet loss);
# - chromium (Debian's package, /usr/bin/chromium): test/ops/status-page.test.ts drives the
#   status page in headless Chromium through playwright-core;
# - golang-go and python3: test/clients/go-python.test.ts runs the Go and Python clients'
#   suites (clients/go, clients/python) against a real cluster;
# - postgresql (Debian's server, /usr/lib/postgresql/N/bin): test/postgres starts a private
#   server to test deploy/postgres/raftlock-fencing.sql and the SDK's fencedQuery;
# - mariadb-server and redis-server (Debian's, /usr/sbin/mariadbd and /usr/bin/redis-server):
#   test/mysql and test/redis start private servers to test deploy/mysql and deploy/redis.
#   Debian's packages also set up system services; the tests never use them.
# - faketime (Debian's libfaketime, libfaketimeMT.so.1): test/jepsen-lite's clock faults run
#   each node's clock fast, slow or stepped (test/jepsen-lite/clock.ts).
# Called by `npm test` (pretest) and .ci/run. Without root or apt-get it only says so: the
# jepsen-lite tests then skip partitions and packet faults with a clear line (kills and
# pauses still run) and clock faults with another, and the browser test, the Go/Python
# client tests and the PostgreSQL, MySQL/MariaDB and Redis tests are skipped with a clear line.
set -euo pipefail
need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v python3 >/dev/null 2>&1 || need+=(python3)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql)
[ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
compgen -G '/usr/lib/*/faketime/libfaketimeMT.so.1' >/dev/null || need+=(faketime)
if [ ${#need[@]} -eq 0 ]; then
  echo "install-test-deps: iproute2, iptables, chromium, go, python3, postgresql, mariadb-server, redis-server and faketime are present"
  exit 0
fi
pkgs=$(printf '%s\n' "${need[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: missing ${pkgs}and cannot install (needs root and apt-get); jepsen-lite will skip network faults if iproute2/iptables are missing, the status page browser test is skipped without chromium, the Go/Python client tests without go or python3, the PostgreSQL tests without postgresql, the MySQL/MariaDB tests without mariadb-server, the Redis tests without redis-server, jepsen-lite's clock faults without faketime"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs >/dev/null; }; then
  echo "install-test-deps: apt-get could not install ${pkgs}; the tests that need them skip with a clear line"
  exit 0
fi
echo "install-test-deps: installed ${pkgs}"
