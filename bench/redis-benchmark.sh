#!/usr/bin/env bash
# redis-benchmark against redis-server and keel-server, started here with
# equal settings on free local ports, alternating servers so that drift in
# machine load hits both alike. Prints a markdown table of requests/s per
# round, with the generator's CPU beside each run.
#
#   bench/redis-benchmark.sh [ROUNDS] [REQUESTS]
#
# KEEL_ARGS adds keel-server directives (e.g. KEEL_ARGS="--threads 1").
# Each row runs: redis-benchmark -t set,get -n REQUESTS -r 100000 -c 50 [-P 16]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
rounds=${1:-2}
requests=${2:-1000000}
require_built "$keel"
command -v redis-benchmark >/dev/null || { echo "missing redis-benchmark (apt-get install redis-tools)" >&2; exit 1; }

kill_servers_at_exit

start_redis_and_keel

echo "| round | pipeline | test | redis-server req/s | keel-server req/s | keel / redis | generator CPU (redis, keel) |"
echo "|---|---|---|---|---|---|---|"
run() { # port pipeline test -> "rps cpu%"
  /usr/bin/time -f "%U %S %e" -o /tmp/redis-benchmark.time \
    redis-benchmark -p "$1" -t "$3" -n "$requests" -r 100000 -c 50 -P "$2" -q 2>/dev/null \
    | tr '\r' '\n' | grep -E "requests per second" | tail -1 | awk '{print $2}' > /tmp/redis-benchmark.out
  read -r u s e < /tmp/redis-benchmark.time
  echo "$(cat /tmp/redis-benchmark.out) $(echo "($u+$s)*100/$e" | bc -l | xargs printf '%.0f')"
}
for round in $(seq 1 "$rounds"); do
  for pipeline in 1 16; do
    for test in set get; do
      read -r r rcpu < <(run "$redis_port" "$pipeline" "$test")
      read -r k kcpu < <(run "$keel_port" "$pipeline" "$test")
      ratio=$(echo "$k / $r" | bc -l | xargs printf '%.2f')
      echo "| $round | $pipeline | ${test^^} | $r | $k | $ratio | ${rcpu}%, ${kcpu}% |"
    done
  done
done
