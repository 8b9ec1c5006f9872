#!/usr/bin/env bash
# Is keel-bench the bottleneck? Drive one redis-server with redis-benchmark
# -P 16 and with keel-bench at the same shape (50 connections, pipeline 16,
# 3-byte values, 100k keys), alternating twice, and print ops/s and each
# generator's own CPU. Usage: bench/generator-vs-redis-benchmark.sh [SECONDS]
set -euo pipefail
secs=${1:-10}
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
rpid=$!
trap 'kill $rpid 2>/dev/null; wait $rpid 2>/dev/null' EXIT
wait_port "$port"
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
for round in 1 2; do
  for test in set get; do
    # redis-benchmark: -n sized to run about $secs seconds at ~600k ops/s.
    /usr/bin/time -f "%U %S %e" -o /tmp/rb.time redis-benchmark -p "$port" -c 50 -P 16 -d 3 -r 100000 \
      -n $((secs * 600000)) -t "$test" -q 2>/dev/null | tr '\r' '\n' | grep -E "requests per second" | tail -1 > /tmp/rb.out
    read -r u s e < /tmp/rb.time
    printf 'round %s %-4s redis-benchmark -P 16: %s  (generator CPU %.0f%% of one core over %.1f s)\n' \
      "$round" "$test" "$(cat /tmp/rb.out)" "$(echo "($u+$s)*100/$e" | bc -l)" "$e"
    "$bench" -p "$port" -c 50 -P 16 --value 3 --keyspace 100000 --mix "$test=1" --duration "$secs" --quiet \
      | grep -E "throughput \(mean\)|keel-bench CPU|server CPU" | sed "s/^/round $round $test keel-bench -P 16: /"
  done
done
