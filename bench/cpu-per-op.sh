#!/usr/bin/env bash
# CPU time per request: what a server costs, whatever the load generator
# does with the other core. redis-server, keel-server --threads 1 and
# keel-server with its default threads run side by side on free ports (1 GB,
# noeviction); for each command and pipeline depth, redis-benchmark
# (-c 50 -r 100000) runs against each server in turn, the order rotating every
# round, and the server's CPU time over that run (utime + stime of the
# process, all threads, from /proc/PID/stat: clock ticks, so a run takes a few
# hundred of them) is divided by the requests. Then, once per server, the
# syscalls per request of SET and GET at P=1 and P=16, counted by strace -c on
# every thread during a short run of SYSCALL_REQUESTS (strace slows the server;
# the counts are what matters), and each server's CPU over IDLE_SECS with no
# client at all.
#
# Beside them run three floors, `keel-floor --io epoll`, `--io tokio` and
# `--io uring` (crates/bench/src/bin/keel-floor.rs): servers that answer
# every request with +OK and do nothing else. A floor's CPU per request is
# what the kernel and finding the end of each request cost under the same
# load, so its ratio to Redis is the lowest ratio any server doing that I/O
# could reach here; the tokio floor's is what keel's runtime adds to it.
# A fourth, `keel-floor --keyspace` (epoll), executes SET, MSET, GET, LPUSH
# and HSET on a plain hash map and nothing more: the lowest ratio a server
# could reach that does those commands (it runs those five only).
#
# Commands: SET, GET, INCR, LPUSH, HSET, ZADD, MSET (redis-benchmark's, 10
# keys) and MGET of 10 random keys, at P=1 and P=16 (P=16 sends 4x the
# requests, to run about as long).
#
#   bench/cpu-per-op.sh [REQUESTS] [ROUNDS] [OUT_PREFIX]
#   bench/cpu-per-op.sh --tables OUT_PREFIX   (the tables of a finished run again)
#   bench/cpu-per-op.sh --check [LIMIT]       (the CI guard, below)
#
# --check is the short form CI runs: redis-server and keel-server --threads 1
# only, SET, GET, INCR, LPUSH and HSET at P=1 and P=16, two rounds of 100000
# requests (x10 at P=16, so that every run takes some 50 clock ticks of CPU),
# no syscall count, no idle step. Each server's cheaper round counts, since
# noise only ever adds CPU time. It fails if keel's CPU per request on any
# command is above LIMIT (default 1.5, issue 24's) times Redis's in the same
# run: a regression of several times, not a few percent. (Until round eleven
# of issue 24 the limit was 1.75: LPUSH at P=16 then measured 1.29-1.60 on
# unchanged code as the machine's load moved, see
# bench/results/2026-11-26-issue24-round2.md. With the profile-guided build
# the guard measured at most 1.02, see 2026-11-27-issue24-round11.md.)
#
# Defaults: 300000 requests at P=1, 3 rounds; IDLE_SECS (default 30),
# SYSCALL_REQUESTS (default 20000) and TESTS (default "set get incr lpush hset
# zadd mset mget") from the environment. Raw records go
# to OUT_PREFIX-records.txt, the tables to OUT_PREFIX.txt (default
# bench/results/cpu-per-op-<timestamp>).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

# Prints the tables of the run whose records are OUT_PREFIX-records.txt ($1):
# medians over the rounds.
tables() {
  python3 - "$1" <<'PY'
import json, math, statistics, sys
out = sys.argv[1]
records = [json.loads(line) for line in open(f"{out}-records.txt") if line.startswith("{")]
runs = [r for r in records if r["kind"] == "run"]
idle = [r for r in records if r["kind"] == "idle"]
servers = [s for s in ["redis", "keel-t1", "keel", "floor-epoll", "floor-tokio", "floor-uring", "floor-keyspace"]
           if any(r["server"] == s for r in runs)]
titles = {"keel-t1": "keel --threads 1", "keel": "keel (default threads)",
          "floor-epoll": "floor, epoll", "floor-tokio": "floor, tokio", "floor-uring": "floor, io_uring",
          "floor-keyspace": "floor + keyspace"}
def median(values):
    return statistics.median(values) if values else float("nan")
def per(test, pipeline, server, field):
    return median([r[field] for r in runs
                   if (r["test"], r["pipeline"], r["server"]) == (test, pipeline, server)])
keys = sorted({(r["test"], r["pipeline"]) for r in runs},
              key=lambda k: (k[1], [r["test"] for r in runs].index(k[0])))
rounds = len({r["round"] for r in runs})
if not runs:
    keys = []
print(f"\n## CPU per request, µs (median of {rounds} rounds); ratio to Redis\n")
print("| command | P | redis | " + " | ".join(f"{titles[s]} | ratio" for s in servers[1:]) + " |")
print("|---|---|---|" + "---|---|" * (len(servers) - 1))
for test, pipeline in keys:
    r, *others = (per(test, pipeline, s, "cpu_us_per_req") for s in servers)
    print(f"| {test.upper()} | {pipeline} | {r:.3f} | "
          + " | ".join("– | –" if math.isnan(o) else f"{o:.3f} | {o / r:.2f}" for o in others) + " |")
calls = [r for r in records if r["kind"] == "syscalls"]
if calls:
    print("\n## Syscalls per request (strace -c, every thread, one run each)\n")
    print("| command | P | " + " | ".join(titles.get(s, s) for s in servers) + " | keel-t1's commonest |")
    print("|---|---|" + "---|" * (len(servers) + 1))
    for test, pipeline in sorted({(r["test"], r["pipeline"]) for r in calls}, key=lambda k: (k[1], k[0])):
        by = {r["server"]: r for r in calls if (r["test"], r["pipeline"]) == (test, pipeline)}
        top = ", ".join(f"{name} {n:.2f}" for name, n in by["keel-t1"]["top"])
        print(f"| {test.upper()} | {pipeline} | " + " | ".join(f"{by[s]['per_req']:.2f}" for s in servers)
              + f" | {top} |")
print(f"\n## Every round, µs per request ({' / '.join(servers)})\n")
print("| command | P | " + " | ".join(f"round {n}" for n in sorted({r['round'] for r in runs})) + " |")
print("|---|---|" + "---|" * rounds)
for test, pipeline in keys:
    cells = []
    for n in sorted({r["round"] for r in runs}):
        vals = [next((r["cpu_us_per_req"] for r in runs if (r["test"], r["pipeline"], r["server"], r["round"]) ==
                      (test, pipeline, s, n)), float("nan")) for s in servers]
        cells.append(" / ".join("–" if math.isnan(v) else f"{v:.3f}" for v in vals))
    print(f"| {test.upper()} | {pipeline} | " + " | ".join(cells) + " |")
if idle:
    print("\n## Idle\n")
    print("| server | seconds | CPU ms |")
    print("|---|---|---|")
    for r in idle:
        print(f"| {r['server']} | {r['seconds']} | {r['cpu_ms']:.1f} |")
PY
}
# Fails (status 1) if keel-t1's CPU per request is above $2 times Redis's on
# any command of the run whose records are OUT_PREFIX-records.txt ($1).
check() {
  python3 - "$1" "$2" <<'PY'
import json, sys
out, limit = sys.argv[1], float(sys.argv[2])
runs = [json.loads(line) for line in open(f"{out}-records.txt") if line.startswith("{")]
cost = {}
for r in runs:
    key = (r["test"], r["pipeline"], r["server"])
    cost[key] = min(cost.get(key, float("inf")), r["cpu_us_per_req"])
failed = []
for test, pipeline in sorted({(t, p) for t, p, _ in cost}, key=lambda k: (k[1], k[0])):
    redis, keel = cost[(test, pipeline, "redis")], cost[(test, pipeline, "keel-t1")]
    ratio = keel / redis
    print(f"{test.upper():6} P={pipeline:<2}  redis {redis:.3f} µs  keel --threads 1 {keel:.3f} µs  ratio {ratio:.2f}")
    if ratio > limit:
        failed.append(f"{test.upper()} P={pipeline}")
if failed:
    print(f"keel's CPU per request is over {limit}x Redis's on: {', '.join(failed)}")
    sys.exit(1)
print(f"keel's CPU per request is within {limit}x Redis's on every command")
PY
}

mode=full
case ${1:-} in
  --tables)
    tables "$2"
    exit
    ;;
  --check)
    mode=check
    limit=${2:-1.5}
    requests=100000
    pipelined_factor=10
    rounds=2
    out=$(mktemp -d)/cpu-per-op-check
    tests="set get incr lpush hset"
    servers=(redis keel-t1)
    ;;
  *)
    requests=${1:-300000}
    pipelined_factor=4
    rounds=${2:-3}
    out=${3:-$root/bench/results/cpu-per-op-$(date +%Y%m%d-%H%M%S)}
    tests=${TESTS:-set get incr lpush hset zadd mset mget}
    servers=(redis keel-t1 keel floor-epoll floor-tokio floor-uring floor-keyspace)
    ;;
esac
idle_secs=${IDLE_SECS:-30}
floor=$root/target/release/keel-floor
require_built "$keel"
command -v redis-benchmark >/dev/null || { echo "missing redis-benchmark" >&2; exit 1; }
records=$out-records.txt
: >"$records"
kill_servers_at_exit


common=(--bind 127.0.0.1 --maxmemory 1gb --maxmemory-policy noeviction --save "")
declare -A port pid
port[redis]=$(free_port)
redis-server --port "${port[redis]}" "${common[@]}" --appendonly no >/dev/null 2>&1 &
pid[redis]=$!
pids+=("${pid[redis]}")
port[keel-t1]=$(free_port)
"$keel" --port "${port[keel-t1]}" "${common[@]}" --threads 1 >/dev/null 2>&1 &
pid[keel-t1]=$!
pids+=("${pid[keel-t1]}")
if [ $mode = full ]; then
  require_built "$floor"
  port[keel]=$(free_port)
  "$keel" --port "${port[keel]}" "${common[@]}" >/dev/null 2>&1 &
  pid[keel]=$!
  pids+=("${pid[keel]}")
  for floor_server in epoll tokio uring keyspace; do
    floor_args=(--io "$floor_server")
    [ "$floor_server" = keyspace ] && floor_args=(--io epoll --keyspace)
    port[floor-$floor_server]=$(free_port)
    "$floor" --port "${port[floor-$floor_server]}" "${floor_args[@]}" >/dev/null 2>&1 &
    pid[floor-$floor_server]=$!
    pids+=("${pid[floor-$floor_server]}")
  done
fi
for server in "${servers[@]}"; do
  wait_port "${port[$server]}"
done

record "# cpu-per-op bench $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse HEAD)"
record "requests=$requests (x$pipelined_factor at P=16) rounds=$rounds idle_secs=$idle_secs tests=$tests; keel=$keel; $(redis-server --version); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# redis-benchmark's stderr, less its warning that a floor has no CONFIG.
quiet_floor() { grep -v -e "Could not fetch server CONFIG" -e '^$' >&2 || true; }

# One run: test $2 at pipeline $3 against server $1 in round $4; appends a
# JSON record.
run() {
  local server=$1 test=$2 pipeline=$3 round=$4 n=$requests
  [ "$pipeline" -gt 1 ] && n=$((requests * pipelined_factor))
  local p=${pid[$server]} cpu0 cpu1
  cpu0=$(cpu_ns "$p")
  # shellcheck disable=SC2046
  redis-benchmark -p "${port[$server]}" -c 50 -r 100000 -n "$n" -P "$pipeline" -q $(bench_args "$test") >/dev/null 2> >(quiet_floor)
  cpu1=$(cpu_ns "$p")
  python3 -c "import json; print(json.dumps({'kind': 'run', 'server': '$server', 'test': '$test', 'pipeline': $pipeline, 'round': $round, 'requests': $n, 'cpu_us_per_req': ($cpu1 - $cpu0) / 1e3 / $n}))" >>"$records"
}

# Whether server $1 executes test $2 (the keyspace floor runs five).
executes() { [ "$1" != floor-keyspace ] || keyspace_floor_executes "$2"; }

# Syscalls per request of test $2 at pipeline $3 against server $1: strace -c
# on every thread during a run of SYSCALL_REQUESTS; appends a JSON record with
# the total and the three commonest calls.
count_syscalls() {
  local server=$1 test=$2 pipeline=$3 n=${SYSCALL_REQUESTS:-20000} trace=$out-strace.tmp attach=()
  for task in /proc/"${pid[$server]}"/task/*; do
    attach+=(-p "${task##*/}")
  done
  strace -c -f -o "$trace" "${attach[@]}" 2>/dev/null &
  local tracer=$!
  sleep 1
  # shellcheck disable=SC2046
  redis-benchmark -p "${port[$server]}" -c 50 -r 100000 -n "$n" -P "$pipeline" -q $(bench_args "$test") >/dev/null 2> >(quiet_floor)
  kill -INT "$tracer"
  wait "$tracer" 2>/dev/null || true
  python3 - "$trace" "$server" "$test" "$pipeline" "$n" >>"$records" <<'PY'
import json, sys
path, server, test, pipeline, n = sys.argv[1:]
rows = []
for line in open(path):
    parts = line.split()
    if len(parts) >= 5 and parts[0].replace(".", "").isdigit() and parts[-1] != "total":
        rows.append((parts[-1], int(parts[3])))
total = sum(calls for _, calls in rows)
top = sorted(rows, key=lambda r: -r[1])[:3]
print(json.dumps({"kind": "syscalls", "server": server, "test": test, "pipeline": int(pipeline),
                  "per_req": total / int(n), "top": [(name, calls / int(n)) for name, calls in top]}))
PY
  rm -f "$trace"
}

order=("${servers[@]}")
for round in $(seq 1 "$rounds"); do
  for pipeline in 1 16; do
    for test in $tests; do
      for server in "${order[@]}"; do
        if executes "$server" "$test"; then
          run "$server" "$test" "$pipeline" "$round"
        fi
      done
    done
  done
  record "round $round done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  order=("${order[@]:1}" "${order[0]}")
done

if [ $mode = check ]; then
  check "$out" "$limit"
  exit
fi

for server in "${servers[@]}"; do
  for pipeline in 1 16; do
    for test in set get; do
      count_syscalls "$server" "$test" "$pipeline"
    done
  done
done

# Idle: no client connected; each server's CPU over the same seconds.
declare -A idle0
for server in redis keel-t1 keel; do
  idle0[$server]=$(cpu_ns "${pid[$server]}")
done
sleep "$idle_secs"
for server in redis keel-t1 keel; do
  echo "{\"kind\": \"idle\", \"server\": \"$server\", \"seconds\": $idle_secs, \"cpu_ms\": $((($(cpu_ns "${pid[$server]}") - ${idle0[$server]}) / 1000000))}" >>"$records"
done

tables "$out" | tee -a "$out.txt"
