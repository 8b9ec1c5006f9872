#!/usr/bin/env bash
# Run one keel-bench scenario against Debian's redis-server and keel-server,
# started here with equal settings on free local ports, one after the other.
#
#   bench/compare-redis.sh SCENARIO [--redis-only|--keel-only] [--server-args "ARGS"] [-- keel-bench options]
#
# Both servers get the scenario's [server] settings (keel-bench
# --print-server-args SCENARIO) plus --server-args (Redis also gets
# --save "" --appendonly no), and a
# file-descriptor limit high enough for thousands of connections. Each
# server is stopped by its PID when the script exits, however it exits.
# Results: bench/results/<scenario>-<timestamp>{.html,-redis.csv,-keel.csv,.txt}
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
scenario=$1; shift
only="" extra_server="" bench_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --redis-only) only=redis ;;
    --keel-only) only=keel ;;
    --server-args) extra_server=$2; shift ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
  shift
done

redis=${REDIS_SERVER:-/usr/bin/redis-server}
require_built "$bench"
[ "$only" = keel ] || [ -x "$redis" ] || { echo "missing $redis (apt-get install redis-server)" >&2; exit 1; }
[ "$only" = redis ] || require_built "$keel"

server_args=$("$bench" "$scenario" --print-server-args)
name=$(basename "$scenario" .toml)
stamp=$(date +%Y%m%d-%H%M%S)
out=$root/bench/results/$name-$stamp
mkdir -p "$root/bench/results"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

start() { # binary port logfile [extra args...]
  local bin=$1 port=$2 log=$3
  shift 3
  # shellcheck disable=SC2086
  "$bin" --port "$port" --bind 127.0.0.1 "$@" $server_args $extra_server >"$log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$pid"; return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "$bin exited; see $log" >&2; cat "$log" >&2; return 1; }
    sleep 0.05
  done
  echo "$bin did not listen on $port; see $log" >&2
  return 1
}

targets=()
if [ "$only" != keel ]; then
  rport=$(free_port)
  # Redis persists by default; keel-server has no persistence to turn off.
  start "$redis" "$rport" "$out-redis-server.log" --save "" --appendonly no >/dev/null
  targets+=("redis=127.0.0.1:$rport")
fi
if [ "$only" != redis ]; then
  kport=$(free_port)
  start "$keel" "$kport" "$out-keel-server.log" >/dev/null
  targets+=("keel=127.0.0.1:$kport")
fi
echo "server settings: $server_args $extra_server" | tee "$out.txt"
if [ ${#targets[@]} -eq 2 ]; then
  target_args=(--compare "${targets[0]}" "${targets[1]}")
else
  t=${targets[0]}
  target_args=(-h 127.0.0.1 -p "${t##*:}" --name "${t%%=*}")
fi
set +e
"$bench" "$scenario" "${target_args[@]}" --csv "$out.csv" --report "$out.html" "${bench_args[@]}" | tee -a "$out.txt"
status=${PIPESTATUS[0]}
set -e
echo "results: $out.*"
exit "$status"
