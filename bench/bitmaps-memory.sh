#!/usr/bin/env bash
# Memory of many small bitmaps: KEYS keys bm:<i> of 1 KB each, made by
# `SETBIT bm:<i> 8191 1` (a new 1024-byte string with its last bit set),
# loaded with redis-cli --pipe into redis-server and keel-server started
# with equal settings. Reports INFO's used_memory and the process RSS
# before and after, per server, as a Markdown table.
#
#   bench/bitmaps-memory.sh [KEYS]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
keys=${1:-1000000}
require_built "$keel"
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
common=(--bind 127.0.0.1 --maxmemory 0 --maxmemory-policy noeviction)
used_memory() { redis-cli -p "$1" info memory | tr -d '\r' | awk -F: '/^used_memory:/ {print $2}'; }
echo "| server | keys | encoding | used_memory before | used_memory after | RSS before (KB) | RSS after (KB) | used_memory per key | RSS per key | value bytes |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for server in redis keel; do
  port=$(free_port)
  case $server in
    redis) (in_scratch_dir redis-server --port "$port" "${common[@]}" --save "" --appendonly no >/dev/null 2>&1) & ;;
    keel) (in_scratch_dir "$keel" --port "$port" "${common[@]}" 2>/dev/null) & ;;
  esac
  pid=$!
  wait_port "$port"
  used_before=$(used_memory "$port")
  rss_before=$(settled_rss_kb "$pid")
  python3 - "$keys" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
keys = int(sys.argv[1])
out = sys.stdout.buffer
for i in range(keys):
    key = b"bm:%d" % i
    out.write(b"*4\r\n$6\r\nSETBIT\r\n$%d\r\n%s\r\n$4\r\n8191\r\n$1\r\n1\r\n" % (len(key), key))
PY
  [ "$(redis-cli -p "$port" dbsize)" = "$keys" ] || { echo "$server did not store $keys keys" >&2; exit 1; }
  [ "$(redis-cli -p "$port" strlen bm:0)" = 1024 ] || { echo "$server: bm:0 is not 1 KB" >&2; exit 1; }
  encoding=$(redis-cli -p "$port" object encoding bm:0)
  sleep 1
  used_after=$(used_memory "$port")
  rss_after=$(rss_kb "$pid")
  python3 -c "
keys = $keys
used = ($used_after - $used_before) / keys
rss = ($rss_after - $rss_before) * 1024 / keys
print(f'| $server | {keys} | $encoding | $used_before | $used_after | $rss_before | $rss_after | {used:.1f} | {rss:.1f} | 1024 |')"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
done
