#!/usr/bin/env bash
# Connection burst: how long a new client waits for its first reply while
# CONNS connections open at once and pipeline large SETs (the opening
# seconds of bench/adversarial-clients.sh, probed densely).
#   - A probe opens a fresh connection every 5 ms for SECONDS and times
#     connect, the server's part of PING -> PONG, and the whole as the
#     probe saw it (bench/fresh_ping.py); keel-bench starts 0.3 s after
#     the probe.
#   - The listening socket's accept queue (connections the kernel has
#     completed and the server has not yet accepted) is sampled with `ss`
#     as fast as it runs (every few ms).
#
#   bench/connection-burst.sh [CONNS] [SECONDS] [OUT_PREFIX]
#
# KEEL_SERVER names the server binary (any keel-server build, or
# redis-server: the flags are redis.conf directives). Writes OUT_PREFIX.csv
# (t, connect_ms, server_ms, ping_ms, probe_wait_ms) and OUT_PREFIX-queue.txt
# (unix time, queue length), and prints the probes over 5 ms and the
# longest queue.
#
# PROBE_REALTIME=1 runs the probe at real-time priority (SCHED_FIFO 20;
# needs root). keel-bench keeps every core of a small machine busy in a
# burst, and a probe at normal priority then waits for a core itself, up
# to several ms; server_ms leaves that wait out, ping_ms counts it.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
conns=${1:-5000}
seconds=${2:-4}
out=${3:-$root/bench/results/connection-burst-$(date +%Y%m%d-%H%M%S)}
require_built "$bench" "$keel"
ulimit -n $((conns * 2 + 1024))

port=$(free_port)
(in_scratch_dir "$keel" --port "$port" --bind 127.0.0.1 --maxmemory 256mb \
  --maxmemory-policy allkeys-lru >/dev/null 2>&1) &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
wait_port "$port"

PYTHONPATH="$root/bench" python3 - "$port" "$seconds" "$out.csv" <<'PY' &
import os, socket, sys, time
from fresh_ping import ping_fresh_connection
port, seconds, path = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
if os.environ.get("PROBE_REALTIME") == "1":
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
# Resolve once before timing: the first lookup loads resolver modules.
socket.create_connection(("127.0.0.1", port)).close()
rows, start = [], time.time()
while time.time() - start < seconds:
    t = time.time() - start
    p = ping_fresh_connection(port)
    rows.append(f"{t:.3f},{p.connect_ms:.3f},{p.server_ms:.3f},{p.ping_ms:.3f},{p.probe_wait_ms:.3f}")
    time.sleep(0.005)
with open(path, "w") as f:
    f.write("t,connect_ms,server_ms,ping_ms,probe_wait_ms\n" + "\n".join(rows) + "\n")
PY
probe=$!
(
  end=$((SECONDS + ${seconds%.*} + 1))
  while [ "$SECONDS" -lt "$end" ]; do
    echo "$(date +%s.%N) $(ss -ltnH "sport = :$port" | awk '{print $2}')"
  done > "$out-queue.txt"
) &
sampler=$!
sleep 0.3
timeout $((${seconds%.*} + 5)) "$bench" -p "$port" -c "$conns" -P 16 --mix set=1 --keyspace 5000 \
  --value 16384 --duration "$(( ${seconds%.*} - 1 ))" --timeout 60 --quiet >/dev/null 2>&1 || true
wait "$probe" "$sampler"
python3 - "$out.csv" "$out-queue.txt" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
pings = sorted(float(r["ping_ms"]) for r in rows)
servers = sorted(float(r["server_ms"]) for r in rows)
for name, times in (("PONG read by the probe", pings), ("server's part", servers)):
    print(f"{len(rows)} probes, {name}: p50 {times[len(times) // 2]:.2f} ms, max {times[-1]:.1f} ms, "
          f"{sum(p > 5 for p in times)} over 5 ms, {sum(p > 10 for p in times)} over 10 ms")
for r in rows:
    if float(r["ping_ms"]) > 5:
        print(f"  t={r['t']} s: connect {r['connect_ms']} ms, server {r['server_ms']} ms, "
              f"PONG read after {r['ping_ms']} ms")
queue = [int(f[1]) for f in (line.split() for line in open(sys.argv[2])) if len(f) > 1]
print(f"accept queue: {len(queue)} samples, longest {max(queue)}")
PY
