#!/usr/bin/env bash
# Instructions per request: the user-space half of CPU per request, counted
# exactly. cpu-per-op.sh reads CPU time, which moves by 10-35% between runs
# on a shared machine; valgrind's callgrind counts the instructions a server
# executes, whatever else the machine does. Redis's counts repeat within 2%
# from run to run (redis-benchmark's random keys differ); keel's within 5% at
# P=16, since how many requests each read brings, which sets what keel does
# once per read, follows the timing. A change of several percent in keel's
# own code shows. What it does not count is the kernel's part (the
# syscalls, a large share at P=1): cpu-per-op.sh's syscall counts cover
# that.
#
# redis-server, keel-server --threads 1, keel-floor (the server that
# answers +OK and does nothing else, crates/bench/src/bin/keel-floor.rs) and
# `keel-floor --keyspace` (SET, MSET, GET, LPUSH and HSET on a plain hash
# map, those five only) run in turn under callgrind. For each command and pipeline depth,
# redis-benchmark (-c 50 -r 100000) warms the server up with 200,000
# requests of the command at P=16, so that the keys exist and the tables
# have grown (as in cpu-per-op.sh's longer runs); then the counters are
# zeroed, REQUESTS requests run, and the counters are dumped. The servers'
# work driven by time rather than by requests (Redis's serverCron, keel's
# 100 ms sample of throughput and memory) is taken out: under valgrind a
# run takes some 30 times longer, so it would count 30 times over.
#
#   bench/instructions-per-op.sh [REQUESTS] [OUT_PREFIX]
#
# REQUESTS defaults to 20000 (x4 at P=16); TESTS (default "set get incr
# lpush hset zadd") and PIPELINES (default "1 16") from the environment.
# Writes OUT_PREFIX.txt (default bench/results/instructions-per-op-<time>).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

requests=${1:-20000}
out=${2:-$root/bench/results/instructions-per-op-$(date +%Y%m%d-%H%M%S)}
tests=${TESTS:-set get incr lpush hset zadd}
pipelines=${PIPELINES:-1 16}
floor=$root/target/release/keel-floor
require_built "$keel" "$floor"
for tool in valgrind callgrind_control callgrind_annotate redis-benchmark; do
  command -v $tool >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
work=$(mktemp -d)
records=$work/records
pids=()
kill_servers_at_exit

# Instructions in the newest dump of server $1 (PID $2), less its
# time-driven work.
counted() {
  local dump
  dump=$(ls -t "$work/$1.$2".* | head -1)
  callgrind_annotate --inclusive=yes "$dump" 2>/dev/null | python3 -c '
import re, sys
total, timed = 0, 0
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+) \(.*?\)\s+(.*)", line)
    if not m:
        continue
    count, name = int(m.group(1).replace(",", "")), m.group(2)
    if name.startswith("PROGRAM TOTALS"):
        total = count
    elif re.search(r":serverCron |sample_throughput", name):
        timed = max(timed, count)
print(total - timed)'
}

record "# instructions-per-op $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse HEAD)"
record "requests=$requests (x4 at P=16) tests=$tests; keel=$keel; $(redis-server --version); $(valgrind --version)"
for server in redis keel-t1 floor floor-keyspace; do
  port=$(free_port)
  case $server in
    redis) set -- redis-server --port "$port" --save "" --appendonly no ;;
    keel-t1) set -- "$keel" --port "$port" --threads 1 --maxmemory 0 ;;
    floor) set -- "$floor" --port "$port" ;;
    floor-keyspace) set -- "$floor" --port "$port" --keyspace ;;
  esac
  valgrind --tool=callgrind --callgrind-out-file="$work/$server.%p" "$@" >"$work/$server.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  # A server under valgrind starts slowly.
  wait_port "$port" 60
  for pipeline in $pipelines; do
    for test in $tests; do
      if [ $server = floor-keyspace ] && ! keyspace_floor_executes "$test"; then
        continue
      fi
      n=$requests
      [ "$pipeline" -gt 1 ] && n=$((requests * 4))
      # shellcheck disable=SC2046
      redis-benchmark -p "$port" -c 50 -r 100000 -n 200000 -P 16 -q $(bench_args "$test") >/dev/null 2>&1
      callgrind_control -z "$pid" >/dev/null 2>&1
      # shellcheck disable=SC2046
      redis-benchmark -p "$port" -c 50 -r 100000 -n "$n" -P "$pipeline" -q $(bench_args "$test") >/dev/null 2>&1
      callgrind_control -d "$pid" >/dev/null 2>&1
      echo "$server $test $pipeline $n $(counted "$server" "$pid")" >>"$records"
    done
  done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
done

python3 - "$records" <<'PY' | tee -a "$out.txt"
import sys
per = {}
for line in open(sys.argv[1]):
    server, test, pipeline, n, instructions = line.split()
    per[(server, test, int(pipeline))] = int(instructions) / int(n)
print("\n## Instructions per request (user space, less time-driven work)\n")
print("| command | P | redis | keel --threads 1 | ratio | floor | ratio | floor + keyspace | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
def cells(count, redis):
    return "– | –" if count is None else f"{count:.0f} | {count / redis:.2f}"
for (server, test, pipeline) in per:
    if server != "redis":
        continue
    r, k, f, fk = (per.get((s, test, pipeline)) for s in ("redis", "keel-t1", "floor", "floor-keyspace"))
    print(f"| {test.upper()} | {pipeline} | {r:.0f} | {cells(k, r)} | {cells(f, r)} | {cells(fk, r)} |")
PY
