#!/usr/bin/env bash
# The cost of ACL checks: CPU time per request (as bench/cpu-per-op.sh
# measures it: utime + stime of the server over a redis-benchmark run,
# divided by the requests) of SET and GET at P=1 and P=16, as the default
# user (allowed everything: one test per command) and as a restricted user
# (`+@all -@dangerous ~key:*`: a command bit and a glob per key), on
# redis-server and keel-server --threads 1 side by side, the order rotating
# every round. Prints per-request CPU (median of the rounds) and each
# server's restricted / default ratio.
#
#   bench/acl-cost.sh [REQUESTS] [ROUNDS] [OUT_PREFIX]
#
# Defaults: 200000 requests at P=1 (x4 at P=16), 3 rounds; the records go to
# OUT_PREFIX-records.txt and the table to OUT_PREFIX.txt (default
# bench/results/acl-cost-<timestamp>).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
requests=${1:-200000}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${3:-$root/bench/results/acl-cost-$(date -u +%Y%m%d-%H%M%S)}
require_built "$keel"
records=$out-records.txt
: >"$records"
kill_servers_at_exit

common=(--bind 127.0.0.1 --maxmemory 1gb --maxmemory-policy noeviction --save "")
declare -A port pid
port[redis]=$(free_port)
redis-server --port "${port[redis]}" "${common[@]}" --appendonly no >/dev/null 2>&1 &
pid[redis]=$!
pids+=("${pid[redis]}")
port[keel]=$(free_port)
"$keel" --port "${port[keel]}" "${common[@]}" --threads 1 >/dev/null 2>&1 &
pid[keel]=$!
pids+=("${pid[keel]}")
for server in redis keel; do
  wait_port "${port[$server]}"
  [ "$(cli "${port[$server]}" ACL SETUSER restricted on '>pw' '+@all' '-@dangerous' '~key:*')" = OK ]
done

record "# acl-cost bench $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse HEAD)"
record "requests=$requests (x4 at P=16) rounds=$rounds; keel=$keel --threads 1; $(redis-server --version); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

run() {
  local server=$1 user=$2 test=$3 pipeline=$4 round=$5 n=$requests auth=()
  [ "$pipeline" -gt 1 ] && n=$((requests * 4))
  [ "$user" = restricted ] && auth=(--user restricted -a pw)
  local us
  us=$(cpu_us_per_request "${pid[$server]}" "$n" -p "${port[$server]}" "${auth[@]}" -c 50 -r 100000 \
    -P "$pipeline" -q -t "$test")
  python3 -c "import json; print(json.dumps({'server': '$server', 'user': '$user', 'test': '$test', 'pipeline': $pipeline, 'round': $round, 'cpu_us_per_req': $us}))" >>"$records"
}

order=(redis keel)
for round in $(seq "$rounds"); do
  for pipeline in 1 16; do
    for test in set get; do
      for server in "${order[@]}"; do
        for user in default restricted; do
          run "$server" "$user" "$test" "$pipeline" "$round"
        done
      done
    done
  done
  order=("${order[1]}" "${order[0]}")
done

python3 - "$records" <<'PY' | tee -a "$out.txt"
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
def median(server, user, test, pipeline):
    return statistics.median(r["cpu_us_per_req"] for r in runs
                             if (r["server"], r["user"], r["test"], r["pipeline"]) == (server, user, test, pipeline))
print("\n| command | P | Redis default µs | Redis restricted µs | Redis ratio | keel default µs | keel restricted µs | keel ratio | keel restricted / Redis restricted |")
print("|---|---|---|---|---|---|---|---|---|")
for pipeline in (1, 16):
    for test in ("set", "get"):
        rd, rr = median("redis", "default", test, pipeline), median("redis", "restricted", test, pipeline)
        kd, kr = median("keel", "default", test, pipeline), median("keel", "restricted", test, pipeline)
        print(f"| {test.upper()} | {pipeline} | {rd:.3f} | {rr:.3f} | {rr / rd:.2f} | {kd:.3f} | {kr:.3f} | {kr / kd:.2f} | {kr / rr:.2f} |")
PY
