#!/usr/bin/env bash
# Memory per element of collections: RSS growth for KEYS hashes of ELEMENTS
# fields (HSET h:0000000 field:0 value:0000 ... field:9 value:0009) and for
# KEYS sets of ELEMENTS string members (SADD s:0000000 member:0 ... member:9)
# and for KEYS sorted sets of ELEMENTS (ZADD z:0000000 0 member:0 ... 9
# member:9) and KEYS lists of ELEMENTS (RPUSH l:0000000 member:0 ...), on
# redis-server and keel-server started with equal settings and the default
# compact-encoding thresholds. ELEMENTS defaults to 10, which keeps every
# collection in its compact encoding; past 128 they take their full
# structure (hash table, skiplist or tree; a list past 8 KB, some 700 of
# these elements, its chunks). Prints a Markdown table.
#
#   bench/collections-memory.sh [KEYS] [ELEMENTS]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
keys=${1:-1000000}
elements=${2:-10}
require_built "$keel"
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
common=(--bind 127.0.0.1 --maxmemory 0 --maxmemory-policy noeviction)
echo "| server | type | keys | encoding | RSS before (KB) | RSS after (KB) | bytes per key | bytes per element | payload per element | overhead per element |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for kind in hash set zset list; do
  for server in redis keel; do
    port=$(free_port)
    case $server in
      redis) redis-server --port "$port" "${common[@]}" --save "" --appendonly no >/dev/null 2>&1 & ;;
      keel) "$keel" --port "$port" "${common[@]}" 2>/dev/null & ;;
    esac
    pid=$!
    wait_port "$port"
    before=$(settled_rss_kb "$pid")
    python3 - "$keys" "$kind" "$elements" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
keys, kind, elements = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
out = sys.stdout.buffer
bulk = lambda b: b"$%d\r\n%s\r\n" % (len(b), b)
if kind == "hash":
    head = b"*%d\r\n" % (2 + 2 * elements) + bulk(b"HSET")
    body = b"".join(bulk(b"field:%d" % i) + bulk(b"value:%04d" % i) for i in range(elements))
    prefix = b"h:"
elif kind in ("set", "list"):
    head = b"*%d\r\n" % (2 + elements) + bulk(b"SADD" if kind == "set" else b"RPUSH")
    body = b"".join(bulk(b"member:%d" % i) for i in range(elements))
    prefix = kind[0].encode() + b":"
else:
    head = b"*%d\r\n" % (2 + 2 * elements) + bulk(b"ZADD")
    body = b"".join(bulk(b"%d" % i) + bulk(b"member:%d" % i) for i in range(elements))
    prefix = b"z:"
for i in range(keys):
    out.write(head + bulk(prefix + b"%07d" % i) + body)
PY
    [ "$(redis-cli -p "$port" dbsize)" = "$keys" ] || { echo "$server did not store $keys keys" >&2; exit 1; }
    first=${kind:0:1}:0000000
    encoding=$(redis-cli -p "$port" object encoding "$first")
    sleep 1
    after=$(rss_kb "$pid")
    python3 -c "
keys, before, after, kind, elements = $keys, $before, $after, '$kind', $elements
per_key = (after - before) * 1024 / keys
per_element = per_key / elements
# Scores aside.
member = lambda i: len(b'field:%d' % i) + len(b'value:%04d' % i) if kind == 'hash' else len(b'member:%d' % i)
payload = sum(member(i) for i in range(elements)) / elements
print(f'| $server | {kind} | {keys} | $encoding | {before} | {after} | {per_key:.1f} | {per_element:.1f} | {payload:.1f} | {per_element - payload:.1f} |')"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  done
done
