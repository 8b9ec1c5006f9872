#!/usr/bin/env bash
# Scripts under load: redis-server and keel-server, started here with equal
# settings on free local ports, alternating servers each round. Prints a
# markdown table of requests/s per round, then GET latency beside a running
# script.
#
#   bench/scripting.sh [ROUNDS] [REQUESTS]
#
# Rows (redis-benchmark, 50 clients, keys drawn from 100,000):
# - EVALSHA of a small script: INCR a key, then EXPIRE it;
# - EVAL of a script over 10 declared keys (INCR each);
# - GET from 50 clients while 50 others run the EVALSHA above (both at once).
# Then GET latency (one client, 2,000 GETs) while another client runs a
# script that computes for about 50 ms, again and again.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
rounds=${1:-2}
requests=${2:-200000}
require_built "$keel"
command -v redis-benchmark >/dev/null || { echo "missing redis-benchmark (apt-get install redis-tools)" >&2; exit 1; }

kill_servers_at_exit

start_redis_and_keel

small='redis.call("INCR", KEYS[1]) return redis.call("EXPIRE", KEYS[1], 60)'
ten='for i = 1, #KEYS do redis.call("INCR", KEYS[i]) end return #KEYS'
ten_keys=()
for i in $(seq 1 10); do ten_keys+=("k$i:__rand_int__"); done
for port in "$redis_port" "$keel_port"; do
  redis-cli -p "$port" set bench:get value >/dev/null
  small_sha=$(redis-cli -p "$port" script load "$small")
done

rps() { # redis-benchmark arguments... -> requests per second
  redis-benchmark -q "$@" 2>/dev/null | tr '\r' '\n' | grep -E "requests per second" | tail -1 \
    | sed -E 's/.*: ([0-9.]+) requests per second.*/\1/'
}
evalsha() { rps -p "$1" -n "$requests" -r 100000 -c 50 evalsha "$small_sha" 1 "key:__rand_int__"; }
eval10() { rps -p "$1" -n "$requests" -r 100000 -c 50 eval "$ten" 10 "${ten_keys[@]}"; }
get_beside_scripts() {
  redis-benchmark -p "$1" -n "$((requests * 2))" -r 100000 -c 50 -q evalsha "$small_sha" 1 "key:__rand_int__" >/dev/null 2>&1 &
  local load=$!
  sleep 0.3
  rps -p "$1" -n "$requests" -c 50 get bench:get
  kill "$load" 2>/dev/null || true
  wait "$load" 2>/dev/null || true
}

echo "| round | test | redis-server req/s | keel-server req/s | keel / redis |"
echo "|---|---|---|---|---|"
for round in $(seq 1 "$rounds"); do
  for test in evalsha eval10 get_beside_scripts; do
    r=$("$test" "$redis_port")
    k=$("$test" "$keel_port")
    ratio=$(echo "$k / $r" | bc -l | xargs printf '%.2f')
    echo "| $round | $test | $r | $k | $ratio |"
  done
done

echo
echo "GET latency (ms) while another client runs a script of about 50 ms, again and again:"
echo
echo "| server | p50 | p99 | max |"
echo "|---|---|---|---|"
for server in redis:$redis_port keel:$keel_port; do
  python3 - "${server#*:}" "${server%%:*}" <<'PY'
import socket, sys, threading, time
port, name = int(sys.argv[1]), sys.argv[2]
def conn():
    s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); return s
def call(s, *args):
    s.sendall(b"".join([b"*%d\r\n" % len(args)] + [b"$%d\r\n%s\r\n" % (len(a), a) for a in args]))
    data = b""
    while not data.endswith(b"\r\n") or data.count(b"\r\n") < (2 if data[:1] == b"$" else 1):
        data += s.recv(65536)
    return data
# A script computing for about 50 ms on this machine (calibrated here).
spin = b"local t = 0 for i = 1, tonumber(ARGV[1]) do t = t + i end return 1"
loops = 1_000_000
s = conn()
while True:
    t0 = time.perf_counter(); call(s, b"EVAL", spin, b"0", str(loops).encode()); took = time.perf_counter() - t0
    if took > 0.04: break
    loops *= 2
stop = False
def scripts():
    c = conn()
    while not stop:
        call(c, b"EVAL", spin, b"0", str(loops).encode())
worker = threading.Thread(target=scripts); worker.start()
time.sleep(0.2)
lat = []
for _ in range(2000):
    t0 = time.perf_counter(); call(s, b"GET", b"bench:get"); lat.append((time.perf_counter() - t0) * 1000)
stop = True; worker.join()
lat.sort()
print(f"| {name} | {lat[len(lat)//2]:.2f} | {lat[int(len(lat)*0.99)]:.2f} | {lat[-1]:.2f} |")
PY
done
