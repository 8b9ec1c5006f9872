#!/usr/bin/env bash
# Memory of one stream of N entries (default 1,000,000): XADD stream <i> sensor
# <i mod 1000> reading value-<i>, explicit IDs, 100 commands per pipeline
# write, loaded with redis-cli --pipe into a fresh redis-server and a fresh
# keel-server started with equal settings. Prints a Markdown table of
# used_memory (INFO memory), used_memory_rss and the process RSS before and
# after, and the bytes per entry.
#
#   bench/streams-memory.sh [ENTRIES] [REDIS_PORT] [KEEL_PORT]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
entries=${1:-1000000}
redis_port=${2:-$(free_port)}
keel_port=${3:-$(free_port)}
require_built "$keel"
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
common=(--bind 127.0.0.1 --maxmemory 0 --maxmemory-policy noeviction)
info_field() { redis-cli -p "$1" info memory | tr -d '\r' | awk -F: -v f="$2" '$1 == f {print $2}'; }
echo "| server | entries | encoding | used_memory before | used_memory after | RSS before (KB) | RSS after (KB) | used_memory per entry | RSS per entry |"
echo "|---|---|---|---|---|---|---|---|---|"
for server in redis keel; do
  case $server in
    redis) port=$redis_port; redis-server --port "$port" "${common[@]}" --save "" --appendonly no >/dev/null 2>&1 & ;;
    keel) port=$keel_port; "$keel" --port "$port" "${common[@]}" 2>/dev/null & ;;
  esac
  pid=$!
  wait_port "$port"
  used_before=$(info_field "$port" used_memory)
  rss_before=$(settled_rss_kb "$pid")
  python3 - "$entries" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
entries = int(sys.argv[1])
out = sys.stdout.buffer
bulk = lambda b: b"$%d\r\n%s\r\n" % (len(b), b)
for start in range(0, entries, 100):
    parts = []
    for i in range(start + 1, min(entries, start + 100) + 1):
        args = [b"XADD", b"stream", b"%d" % i, b"sensor", b"%d" % (i % 1000), b"reading", b"value-%d" % i]
        parts.append(b"*%d\r\n" % len(args) + b"".join(bulk(a) for a in args))
    out.write(b"".join(parts))
PY
  [ "$(redis-cli -p "$port" xlen stream)" = "$entries" ] || { echo "$server did not store $entries entries" >&2; exit 1; }
  encoding=$(redis-cli -p "$port" object encoding stream)
  sleep 1
  used_after=$(info_field "$port" used_memory)
  rss_after=$(rss_kb "$pid")
  python3 -c "
m, ub, ua, rb, ra = $entries, $used_before, $used_after, $rss_before, $rss_after
print(f'| $server | {m} | $encoding | {ub} | {ua} | {rb} | {ra} | {(ua - ub) / m:.1f} | {(ra - rb) * 1024 / m:.1f} |')"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
done
