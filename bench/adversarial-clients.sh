#!/usr/bin/env bash
# Adversarial clients: CONNS connections each pipelining large SETs, far
# more than keel may buffer, for SECONDS. Checks what the memory engine
# promises under that load:
#   - RSS stays within maxmemory + maxmemory-clients + 64 MB;
#   - no key is evicted (the keys written fit in maxmemory several times
#     over, so any eviction would be for client buffers);
#   - replies arrive in order (checker connections pipeline SET/GET pairs
#     with unique values and verify every GET returns its own SET);
#   - a fresh connection gets PONG within 10 ms throughout (probed every
#     100 ms; bench/fresh_ping.py times the server's part apart from the
#     probe's own waits for a core).
#
#   bench/adversarial-clients.sh [CONNS] [SECONDS] [OUT_PREFIX]
#
# Defaults: 5000 connections, 30 s; keel-server runs with maxmemory 256mb
# and its default maxmemory-clients (64mb). Writes OUT_PREFIX.csv (the
# keel-bench timeline) and OUT_PREFIX-probe.csv (time, RSS KB, and the
# probe's connect_ms, server_ms, ping_ms and probe_wait_ms).
# PROBE_REALTIME=1 runs the probe (not the checkers) at real-time priority,
# as in bench/connection-burst.sh.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
conns=${1:-5000}
seconds=${2:-30}
out=${3:-$root/bench/results/adversarial-clients-$(date +%Y%m%d-%H%M%S)}
require_built "$bench" "$keel"
ulimit -n $((conns * 2 + 1024))

maxmemory_mb=256
port=$(free_port)
(in_scratch_dir "$keel" --port "$port" --bind 127.0.0.1 --maxmemory ${maxmemory_mb}mb \
  --maxmemory-policy allkeys-lru 2>/dev/null) &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
wait_port "$port"
clients_mb=$(( $(redis-cli -p "$port" CONFIG GET maxmemory-clients | tail -1) >> 20 ))
bound_kb=$(( (maxmemory_mb + clients_mb + 64) * 1024 ))

# Probe and in-order checker, beside the load, until the load ends.
PYTHONPATH="$root/bench" python3 - "$port" "$pid" "$seconds" "$out-probe.csv" <<'PY' &
import multiprocessing, os, socket, sys, time
from fresh_ping import ping_fresh_connection
port, pid, seconds, path = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
end = time.time() + seconds + 2
def rss_kb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
def read_reply(f):
    line = f.readline()
    if line[:1] == b"$":
        n = int(line[1:])
        return None if n < 0 else f.read(n + 2)[:-2]
    return line.rstrip(b"\r\n")
# The checkers run in processes of their own: as threads beside the probe
# they held the GIL for up to its 5 ms switch interval while the probe's
# PONG waited to be read, which the probe then counted as server latency.
order_errors, checked = multiprocessing.Value("q", 0), multiprocessing.Value("q", 0)
def checker(n):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    i = 0
    while time.time() < end:
        batch = []
        for _ in range(50):
            i += 1
            v = b"%d-%d-" % (n, i) + b"x" * 4000
            key = b"order:%d" % n
            batch.append(v)
            s.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n"
                      % (len(key), key, len(v), v, len(key), key))
        replies = [(read_reply(f), read_reply(f)) for _ in batch]
        wrong = sum(ok != b"+OK" or got != v for (ok, got), v in zip(replies, batch))
        with checked.get_lock():
            checked.value += len(batch)
        with order_errors.get_lock():
            order_errors.value += wrong
checkers = [multiprocessing.Process(target=checker, args=(n,), daemon=True) for n in range(4)]
for c in checkers:
    c.start()
if os.environ.get("PROBE_REALTIME") == "1":
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
with open(path, "w") as out:
    out.write("t,rss_kb,connect_ms,server_ms,ping_ms,probe_wait_ms\n")
    start = time.time()
    worst_ping, worst_server, worst_rss = 0.0, 0.0, 0
    while time.time() < end:
        t = time.time() - start
        p = ping_fresh_connection(port)
        rss = rss_kb()
        worst_ping, worst_server = max(worst_ping, p.ping_ms), max(worst_server, p.server_ms)
        worst_rss = max(worst_rss, rss)
        out.write(f"{t:.1f},{rss},{p.connect_ms:.3f},{p.server_ms:.3f},{p.ping_ms:.3f},{p.probe_wait_ms:.3f}\n")
        time.sleep(0.1)
for c in checkers:
    c.join(timeout=5)
print(f"fresh-connection PING: worst {worst_ping:.2f} ms as the probe read it, "
      f"worst {worst_server:.2f} ms the server's part")
print(f"peak RSS: {worst_rss} KB")
print(f"in-order checker: {checked.value} SET/GET pairs, {order_errors.value} out of order or wrong")
PY
probe=$!
"$bench" -p "$port" --name keel -c "$conns" -P 16 --mix set=1 --keyspace 5000 --value 16384 \
  --duration "$seconds" --timeout 60 --csv "$out.csv" --quiet | grep -E "throughput|errors|^    [a-z]|latency p99 |latency max"
wait "$probe"
info=$(redis-cli -p "$port" INFO)
field() { echo "$info" | tr -d '\r' | awk -F: -v k="$1" '$1 == k {print $2}'; }
echo "evicted_keys: $(field evicted_keys)"
echo "evicted_clients: $(field evicted_clients)"
echo "backpressure_events: $(field backpressure_events)"
echo "used_memory_dataset: $(field used_memory_dataset) (maxmemory $((maxmemory_mb << 20)))"
echo "RSS bound (maxmemory + maxmemory-clients + 64 MB): $bound_kb KB"
