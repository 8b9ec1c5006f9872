#!/usr/bin/env bash
# The cost of cluster mode's slot check: CPU time per request (as
# bench/cpu-per-op.sh measures it: utime + stime of the server over a
# redis-benchmark run, divided by the requests) of SET and GET at P=1 and
# P=16, on redis-server and keel-server --threads 1, each once without
# cluster mode and once as a one-node cluster serving every slot (so every
# key is served, after the CRC16 of its slot and the owner check). The order
# rotates every round. Prints per-request CPU (median of the rounds) and
# each server's cluster / plain ratio.
#
#   bench/cluster-cost.sh [REQUESTS] [ROUNDS] [OUT_PREFIX]
#
# Defaults: 200000 requests at P=1 (x4 at P=16), 3 rounds; the records go to
# OUT_PREFIX-records.txt and the table to OUT_PREFIX.txt (default
# bench/results/cluster-cost-<timestamp>).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
requests=${1:-200000}
rounds=${2:-3}
out=${3:-$root/bench/results/cluster-cost-$(date -u +%Y%m%d-%H%M%S)}
require_built "$keel"
records=$out-records.txt
: >"$records"
kill_servers_at_exit
# Each server's nodes.conf goes to a directory of its own in the ignored
# bench/results/tmp.
scratch=$root/bench/results/tmp/cluster-cost-$$

common=(--bind 127.0.0.1 --maxmemory 1gb --maxmemory-policy noeviction --save "")
declare -A port pid
for server in redis keel; do
  for mode in plain cluster; do
    name=$server-$mode
    port[$name]=$(free_port)
    mkdir -p "$scratch/$name"
    args=(--port "${port[$name]}" "${common[@]}" --dir "$scratch/$name")
    [ "$mode" = cluster ] && args+=(--cluster-enabled yes --cluster-port "$(free_port)")
    if [ "$server" = redis ]; then
      redis-server "${args[@]}" --appendonly no >/dev/null 2>&1 &
    else
      "$keel" "${args[@]}" --threads 1 >/dev/null 2>&1 &
    fi
    pid[$name]=$!
    pids+=("${pid[$name]}")
    wait_port "${port[$name]}"
    if [ "$mode" = cluster ]; then
      [ "$(cli "${port[$name]}" CLUSTER ADDSLOTSRANGE 0 16383)" = OK ]
      # Redis turns its state ok a moment after the slots are assigned.
      until cli "${port[$name]}" CLUSTER INFO | grep -q '^cluster_state:ok'; do sleep 0.1; done
    fi
  done
done

record "# cluster-cost bench $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse HEAD)"
record "requests=$requests (x4 at P=16) rounds=$rounds; keel=$keel --threads 1; $(redis-server --version); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

run() {
  local name=$1 test=$2 pipeline=$3 round=$4 n=$requests
  [ "$pipeline" -gt 1 ] && n=$((requests * 4))
  local us
  us=$(cpu_us_per_request "${pid[$name]}" "$n" -p "${port[$name]}" -c 50 -r 100000 -P "$pipeline" -q -t "$test")
  python3 -c "import json; print(json.dumps({'name': '$name', 'test': '$test', 'pipeline': $pipeline, 'round': $round, 'cpu_us_per_req': $us}))" >>"$records"
}

order=(redis keel)
for round in $(seq "$rounds"); do
  for pipeline in 1 16; do
    for test in set get; do
      for server in "${order[@]}"; do
        for mode in plain cluster; do
          run "$server-$mode" "$test" "$pipeline" "$round"
        done
      done
    done
  done
  order=("${order[1]}" "${order[0]}")
done

python3 - "$records" <<'PY' | tee -a "$out.txt"
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
def median(name, test, pipeline):
    return statistics.median(r["cpu_us_per_req"] for r in runs
                             if (r["name"], r["test"], r["pipeline"]) == (name, test, pipeline))
print("\n| command | P | Redis plain µs | Redis cluster µs | Redis ratio | keel plain µs | keel cluster µs | keel ratio | keel cluster / Redis cluster |")
print("|---|---|---|---|---|---|---|---|---|")
for pipeline in (1, 16):
    for test in ("set", "get"):
        rp, rc = median("redis-plain", test, pipeline), median("redis-cluster", test, pipeline)
        kp, kc = median("keel-plain", test, pipeline), median("keel-cluster", test, pipeline)
        print(f"| {test.upper()} | {pipeline} | {rp:.3f} | {rc:.3f} | {rc / rp:.2f} | {kp:.3f} | {kc:.3f} | {kc / kp:.2f} | {kc / rc:.2f} |")
PY
rm -rf "$scratch"
