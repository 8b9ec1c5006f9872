#!/usr/bin/env bash
# Memory of one GEO set of N members (default 1,000,000): GEOADD geo LON LAT
# place:NNNNNNN, 100 points per command, points spread uniformly (seeded) over
# the valid area, loaded with redis-cli --pipe into a fresh redis-server and
# a fresh keel-server started with equal settings. Prints a Markdown table of
# used_memory (INFO memory), used_memory_rss and the process RSS before and
# after, and the bytes per member.
#
#   bench/geo-memory.sh [MEMBERS] [REDIS_PORT] [KEEL_PORT]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
members=${1:-1000000}
redis_port=${2:-$(free_port)}
keel_port=${3:-$(free_port)}
require_built "$keel"
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
common=(--bind 127.0.0.1 --maxmemory 0 --maxmemory-policy noeviction)
info_field() { redis-cli -p "$1" info memory | tr -d '\r' | awk -F: -v f="$2" '$1 == f {print $2}'; }
echo "| server | members | encoding | used_memory before | used_memory after | RSS before (KB) | RSS after (KB) | used_memory per member | RSS per member |"
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
  python3 - "$members" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import random, sys
members = int(sys.argv[1])
rng = random.Random(2026)
out = sys.stdout.buffer
bulk = lambda b: b"$%d\r\n%s\r\n" % (len(b), b)
for start in range(0, members, 100):
    n = min(100, members - start)
    parts = [b"*%d\r\n" % (2 + 3 * n), bulk(b"GEOADD"), bulk(b"geo")]
    for i in range(start, start + n):
        lon, lat = rng.uniform(-180, 180), rng.uniform(-85, 85)
        parts += [bulk(b"%.6f" % lon), bulk(b"%.6f" % lat), bulk(b"place:%07d" % i)]
    out.write(b"".join(parts))
PY
  [ "$(redis-cli -p "$port" zcard geo)" = "$members" ] || { echo "$server did not store $members members" >&2; exit 1; }
  encoding=$(redis-cli -p "$port" object encoding geo)
  sleep 1
  used_after=$(info_field "$port" used_memory)
  rss_after=$(rss_kb "$pid")
  python3 -c "
m, ub, ua, rb, ra = $members, $used_before, $used_after, $rss_before, $rss_after
print(f'| $server | {m} | $encoding | {ub} | {ua} | {rb} | {ra} | {(ua - ub) / m:.1f} | {(ra - rb) * 1024 / m:.1f} |')"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
done
