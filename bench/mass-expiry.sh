#!/usr/bin/env bash
# Mass expiry: KEYS keys all given the same absolute deadline, while an
# open-loop GET/SET load runs across that instant. For redis-server and
# keel-server (equal settings, free local ports, one after the other) it
# prints the per-second timeline around the deadline and two figures: the
# worst request latency in the second the keys expire, and how long after
# the deadline the keys were all gone from the server.
#
#   bench/mass-expiry.sh [KEYS] [RATE] [OUT_PREFIX]
#
# Defaults: 2000000 keys, 20000 requests/s; CSVs go to OUT_PREFIX-<server>.csv
# (default bench/results/mass-expiry-<timestamp>). SERVERS="keel" runs one.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
keys=${1:-2000000}
rate=${2:-20000}
out=${3:-$root/bench/results/mass-expiry-$(date +%Y%m%d-%H%M%S)}
require_built "$bench" "$keel"

pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
common=(--bind 127.0.0.1 --maxmemory 4gb --maxmemory-policy noeviction)

run() { # name
  local name=$1 port
  port=$(free_port)
  case $name in
    redis) redis-server --port "$port" "${common[@]}" --save "" --appendonly no >/dev/null 2>&1 & ;;
    keel) "$keel" --port "$port" "${common[@]}" 2>/dev/null & ;;
  esac
  pid=$!
  wait_port "$port"
  # Prefill with one shared absolute deadline, far enough ahead for the
  # prefill to finish and the load to settle first.
  local deadline_ms=$(( $(date +%s%3N) + 25000 ))
  python3 - "$keys" "$deadline_ms" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
keys, deadline = int(sys.argv[1]), sys.argv[2].encode()
out = sys.stdout.buffer
value = b"v" * 64
# Database 1 holds only the expiring keys (the load runs in database 0), so
# its size says exactly how many are left.
out.write(b"*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n")
for i in range(keys):
    key = b"mass:%d" % i
    out.write(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$4\r\nPXAT\r\n$%d\r\n%s\r\n"
              % (len(key), key, len(value), value, len(deadline), deadline))
PY
  local start_ms
  start_ms=$(date +%s%3N)
  # Beside the load: DBSIZE every 50 ms, to time the reclaim finely.
  python3 - "$port" "$deadline_ms" "$keys" > "$out-$name-reclaim.txt" <<'PY' &
import socket, sys, time
port, deadline, keys = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"SELECT 1\r\n")
s.recv(64)
def dbsize():
    s.sendall(b"DBSIZE\r\n")
    return int(s.recv(64)[1:].split(b"\r\n")[0])
while time.time() * 1000 < deadline:
    time.sleep(0.01)
while time.time() * 1000 < deadline + 20000:
    n = dbsize()
    if n <= keys // 1000:
        print(f"expired keys gone {int(time.time() * 1000) - deadline} ms after the deadline (DBSIZE of their database {n}, polled every 50 ms)")
        break
    time.sleep(0.05)
else:
    print("expired keys still present 20 s after the deadline")
PY
  local poller=$!
  "$bench" -p "$port" --name "$name" -c 50 --rate "$rate" --mix get=9,set=1 --keyspace 100000 \
    --value 64 --duration 45 --csv "$out-$name.csv" --quiet >/dev/null
  wait "$poller" || true
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  python3 - "$out-$name.csv" "$start_ms" "$deadline_ms" "$keys" "$name" <<'PY'
import csv, sys
path, start, deadline, keys, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rows = list(csv.DictReader(open(path)))
# Row t covers (t-1, t] seconds after the load started.
expiry_row = next(r for r in rows if start + int(r["t"]) * 1000 >= deadline)
gone = next((r for r in rows if start + int(r["t"]) * 1000 >= deadline and float(r["db_keys"]) < keys * 0.001 + 100_000), None)
print(f"## {name}: {keys} keys expiring at one deadline, {path}")
print("| t (s) | ops | p99 ms | max ms | keys in db | used_memory_dataset | expired keys/s |")
print("|---|---|---|---|---|---|---|")
at = int(expiry_row["t"])
for r in rows:
    if at - 3 <= int(r["t"]) <= at + 6:
        mark = " ← deadline" if r is expiry_row else ""
        print(f"| {r['t']}{mark} | {r['ops']} | {r['p99_ms']} | {r['max_ms']} | {r['db_keys']} | {r['used_memory_dataset']} | {r['expired_keys_per_s']} |")
print(f"\nworst latency in the second of the deadline: {expiry_row['max_ms']} ms; "
      f"worst over the run: {max(float(r['max_ms']) for r in rows):.3f} ms")
if gone:
    print(f"all expired keys gone by t={gone['t']} s, i.e. within {start + int(gone['t']) * 1000 - deadline} ms of the deadline (1 s sampling)\n")
else:
    print("expired keys were still present when the run ended\n")
PY
  cat "$out-$name-reclaim.txt"
  echo
}
for server in ${SERVERS:-redis keel}; do
  run "$server"
done
