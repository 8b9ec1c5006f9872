#!/usr/bin/env bash
# TLS beside redis-server's: redis-server and keel-server (--threads 1, and
# its default threads) with a TLS port each, certificates made here with
# openssl (a CA, a server and a client certificate; clients authenticate);
# redis-benchmark --tls (-c 50 -r 100000) SET and GET at P=1 and P=16 against
# each in turn, the order rotating every round. Records throughput (what
# redis-benchmark reports; it takes one of the two cores, so this says as
# much about the client) and the server's CPU time per request (utime +
# stime from /proc, all threads), the figure that says what TLS costs the
# server. Prints the medians of the rounds.
#
#   bench/tls.sh [REQUESTS] [ROUNDS] [OUT_PREFIX]
#
# Defaults: 100000 requests at P=1 (x4 at P=16), 3 rounds; records go to
# OUT_PREFIX-records.txt and the table to OUT_PREFIX.txt (default
# bench/results/tls-<timestamp>).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
requests=${1:-100000}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${3:-$root/bench/results/tls-$(date -u +%Y%m%d-%H%M%S)}
require_built "$keel"
records=$out-records.txt
: >"$records"
kill_servers_at_exit
certs=$(mktemp -d)
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$certs"' EXIT

(
  cd "$certs"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=bench CA"
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
  echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >server.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile server.ext
  openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/CN=client"
  echo "extendedKeyUsage=clientAuth" >client.ext
  openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 -extfile client.ext
) >/dev/null 2>&1
tls=(--tls-cert-file "$certs/server.crt" --tls-key-file "$certs/server.key" --tls-ca-cert-file "$certs/ca.crt")
client=(--tls --cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key")

common=(--bind 127.0.0.1 --maxmemory 1gb --maxmemory-policy noeviction --save "")
declare -A port pid
servers=(redis keel-t1 keel)
for server in "${servers[@]}"; do
  plain=$(free_port)
  port[$server]=$(free_port)
  case $server in
    redis) redis-server --port "$plain" --tls-port "${port[$server]}" "${common[@]}" "${tls[@]}" --appendonly no >/dev/null 2>&1 & ;;
    keel-t1) "$keel" --port "$plain" --tls-port "${port[$server]}" "${common[@]}" "${tls[@]}" --threads 1 >/dev/null 2>&1 & ;;
    keel) "$keel" --port "$plain" --tls-port "${port[$server]}" "${common[@]}" "${tls[@]}" >/dev/null 2>&1 & ;;
  esac
  pid[$server]=$!
  pids+=("${pid[$server]}")
  wait_port "$plain"
done

record "# tls bench $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse HEAD)"
record "requests=$requests (x4 at P=16) rounds=$rounds; keel=$keel; $(redis-server --version); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

run() {
  local server=$1 test=$2 pipeline=$3 round=$4 n=$requests cpu0 cpu1 rps
  [ "$pipeline" -gt 1 ] && n=$((requests * 4))
  cpu0=$(cpu_ns "${pid[$server]}")
  rps=$(redis-benchmark -p "${port[$server]}" "${client[@]}" -c 50 -r 100000 -n "$n" -P "$pipeline" -q -t "$test" 2>/dev/null \
    | tr '\r' '\n' | awk '/requests per second/ {print $2}' | tail -1)
  cpu1=$(cpu_ns "${pid[$server]}")
  python3 -c "import json; print(json.dumps({'server': '$server', 'test': '$test', 'pipeline': $pipeline, 'round': $round, 'rps': float('${rps:-0}'), 'cpu_us_per_req': ($cpu1 - $cpu0) / 1e3 / $n}))" >>"$records"
}

order=("${servers[@]}")
for round in $(seq "$rounds"); do
  for pipeline in 1 16; do
    for test in set get; do
      for server in "${order[@]}"; do
        run "$server" "$test" "$pipeline" "$round"
      done
    done
  done
  order=("${order[@]:1}" "${order[0]}")
done

python3 - "$records" <<'PY' | tee -a "$out.txt"
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
def median(server, test, pipeline, field):
    return statistics.median(r[field] for r in runs if (r["server"], r["test"], r["pipeline"]) == (server, test, pipeline))
print("\n| command | P | Redis req/s | keel t1 req/s | keel req/s | Redis µs/req | keel t1 µs/req | keel µs/req | keel t1 ÷ Redis CPU |")
print("|---|---|---|---|---|---|---|---|---|")
for pipeline in (1, 16):
    for test in ("set", "get"):
        rps = [median(s, test, pipeline, "rps") for s in ("redis", "keel-t1", "keel")]
        cpu = [median(s, test, pipeline, "cpu_us_per_req") for s in ("redis", "keel-t1", "keel")]
        print(f"| {test.upper()} | {pipeline} | {rps[0]:,.0f} | {rps[1]:,.0f} | {rps[2]:,.0f} | {cpu[0]:.2f} | {cpu[1]:.2f} | {cpu[2]:.2f} | {cpu[1] / cpu[0]:.2f} |")
PY
