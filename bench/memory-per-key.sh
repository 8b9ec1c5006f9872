#!/usr/bin/env bash
# Per-key memory overhead: RSS growth per key minus key and value bytes, for
# KEYS keys (key:0000000 ...) with 64-byte values, without and with a TTL,
# on redis-server and keel-server started with equal settings (noeviction),
# and on keel-server with its default policy, allkeys-s3fifo, whose queues
# cost memory per key too (row keel-s3fifo).
#
#   bench/memory-per-key.sh [KEYS]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
keys=${1:-1000000}
require_built "$keel"
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
common=(--bind 127.0.0.1 --maxmemory 0 --maxmemory-policy noeviction)
echo "| server | TTL | keys | RSS before (KB) | RSS after (KB) | bytes per key | key+value bytes | overhead per key |"
echo "|---|---|---|---|---|---|---|---|"
for server in redis keel keel-s3fifo; do
  for ttl in no yes; do
    port=$(free_port)
    case $server in
      redis) redis-server --port "$port" "${common[@]}" --save "" --appendonly no >/dev/null 2>&1 & ;;
      keel) "$keel" --port "$port" "${common[@]}" 2>/dev/null & ;;
      keel-s3fifo) "$keel" --port "$port" "${common[@]}" --maxmemory-policy allkeys-s3fifo 2>/dev/null & ;;
    esac
    pid=$!
    wait_port "$port"
    before=$(settled_rss_kb "$pid")
    python3 - "$keys" "$ttl" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
keys, ttl = int(sys.argv[1]), sys.argv[2] == "yes"
out = sys.stdout.buffer
value = b"v" * 64
tail = b"$2\r\nEX\r\n$6\r\n100000\r\n" if ttl else b""
head = b"*5\r\n" if ttl else b"*3\r\n"
for i in range(keys):
    key = b"key:%07d" % i
    out.write(head + b"$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%s\r\n" % (len(key), key, value) + tail)
PY
    [ "$(redis-cli -p "$port" dbsize)" = "$keys" ] || { echo "$server did not store $keys keys" >&2; exit 1; }
    sleep 1
    after=$(rss_kb "$pid")
    python3 -c "
keys, before, after = $keys, $before, $after
per_key = (after - before) * 1024 / keys
payload = len(b'key:0000000') + 64
print(f'| $server | $ttl | {keys} | {before} | {after} | {per_key:.1f} | {payload} | {per_key - payload:.1f} |')"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  done
done
