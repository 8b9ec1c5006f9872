#!/usr/bin/env bash
# Soak: keel-server and redis-server side by side for SECONDS (default 30
# minutes), each under the same mixed keel-bench load (bench/scenarios/soak.toml:
# 10k req/s open loop, 300 pipelining connections, eviction and expiry all
# along) plus a loop of hostile clients (bench/soak_hostile.py), repeated for
# the whole run:
#   - SRANDMEMBER/HRANDFIELD/ZRANDMEMBER with count -10^12 on a small key;
#   - a subscriber that never reads while a publisher sends 64 x 1 MB;
#   - MULTI and 100k 200-byte SETs written without reading, then dropped;
#   - SETRANGE key 500000000 x;
#   - 2,000 idle connections held 5 s, then closed;
#   - a slow reader (16 KB per 10 ms) of a 10 MB LRANGE reply, dropped;
#   - a 20 MB SET argument sent 1 MB per 200 ms, dropped at 15 MB.
# Against redis-server the first and fourth are skipped: there they freeze
# the server and allocate GBs (the negative count) or 500 MB (SETRANGE).
# Both servers have maxmemory 128mb and allkeys-lru; keel keeps its default
# maxmemory-clients (64mb), redis-server its default (0, unlimited).
# Checks what the memory engine promises over a long run:
#   - keel's RSS never passes maxmemory + maxmemory-clients + the fixed
#     overhead README.md states: the lazyfree queue's 64 MB, plus 32 MB for
#     the idle server's RSS and the allocator's slack;
#   - both servers still answer PING and SET/GET at the end.
# Sampled every second per server: RSS (/proc/PID/status) and INFO memory.
#
#   bench/soak.sh [SECONDS] [OUT_PREFIX]
#
# Writes OUT_PREFIX-rss.csv (t, server, rss_kb, used_memory, dataset,
# clients, maxmemory), OUT_PREFIX-rss.svg (RSS over time, both servers, with
# the bound), OUT_PREFIX-{keel,redis}.csv/.html/-summary.txt (keel-bench's
# timeline, report and summary), OUT_PREFIX-hostile-{keel,redis}.txt (each
# hostile step's outcomes by kind; .csv: when each step ran, in seconds from
# 2 s into the load) and OUT_PREFIX-result.txt. The two
# servers share the machine's cores during the run (unlike compare-redis.sh).
# REDIS_SERVER names another redis-server binary.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
seconds=${1:-1800}
out=${2:-$root/bench/results/soak-$(date +%Y%m%d-%H%M%S)}
redis=${REDIS_SERVER:-$(command -v redis-server)}
py=$root/.venv/bin/python
[ -x "$py" ] || py=python3
require_built "$bench" "$keel" "$redis"
ulimit -n 20000
mkdir -p "$(dirname "$out")"

maxmemory_mb=128
overhead_mb=96
keel_port=$(free_port)
redis_port=$(free_port)
(in_scratch_dir "$keel" --port "$keel_port" --bind 127.0.0.1 --maxmemory ${maxmemory_mb}mb \
  --maxmemory-policy allkeys-lru 2>/dev/null) &
keel_pid=$!
(in_scratch_dir "$redis" --port "$redis_port" --bind 127.0.0.1 --maxmemory ${maxmemory_mb}mb \
  --maxmemory-policy allkeys-lru --save "" --appendonly no --maxclients 10000 >/dev/null 2>&1) &
redis_pid=$!
children=()
cleanup() {
  for p in "${children[@]}" "$keel_pid" "$redis_pid"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
wait_port "$keel_port"
wait_port "$redis_port"
clients_mb=$(( $(redis-cli -p "$keel_port" CONFIG GET maxmemory-clients | tail -1) >> 20 ))
bound_mb=$((maxmemory_mb + clients_mb + overhead_mb))
bound_text="maxmemory ${maxmemory_mb} MB + maxmemory-clients ${clients_mb} MB + overhead ${overhead_mb} MB"
echo "keel $keel_port (pid $keel_pid), redis-server $redis_port (pid $redis_pid), ${seconds} s; results: $out-*"

# Sampler for the whole run (a few seconds past the load), then the loads.
"$py" "$root/bench/soak_hostile.py" sample $((seconds + 5)) "$out-rss.csv" \
  "keel=$keel_port:$keel_pid" "redis=$redis_port:$redis_pid" &
children+=($!)
for name in keel redis; do
  port_var=${name}_port
  "$bench" soak -p "${!port_var}" --name "$name" --duration "$seconds" --quiet \
    --csv "$out-$name.csv" --report "$out-$name.html" --summary "$out-$name-summary.txt" \
    > /dev/null 2> "$out-$name-bench.log" &
  children+=($!)
done
# The hostile loops start once keel-bench's FLUSHALL has run.
sleep 2
"$py" "$root/bench/soak_hostile.py" hostile keel "$keel_port" $((seconds - 2)) \
  "$out-hostile-keel.txt" > /dev/null &
children+=($!)
"$py" "$root/bench/soak_hostile.py" hostile redis "$redis_port" $((seconds - 2)) \
  "$out-hostile-redis.txt" --skip-freezers > /dev/null &
children+=($!)
status=0
for p in "${children[@]}"; do wait "$p" || status=1; done
children=()

{
  for name in keel redis; do
    echo "== keel-bench against $name =="
    grep -E "throughput \(mean|errors \(all|latency p99 |latency max|peak used_memory_rss|keys evicted|CPU \(mean" \
      "$out-$name-summary.txt" || true
    sed -n '/errors by kind/,/^$/p' "$out-$name-summary.txt"
  done
  echo "== hostile clients =="
  cat "$out-hostile-keel.txt" "$out-hostile-redis.txt"
  echo "== RSS (sampled every second) =="
  "$py" "$root/bench/soak_hostile.py" finish "$out-rss.csv" "$out-rss.svg" \
    $((bound_mb * 1024)) "$bound_text" "keel=$keel_port" "redis=$redis_port" || status=1
} > "$out-result.txt"
[ $status -eq 0 ] && echo "soak: PASS" >> "$out-result.txt" || echo "soak: FAIL" >> "$out-result.txt"
cat "$out-result.txt"
exit $status
