#!/usr/bin/env bash
# Memory of HyperLogLogs, keel-server against redis-server started with equal
# settings: SPARSE keys holding a sparse HLL of three elements
# (PFADD hll:0000000 a:0 b:0 c:0) and DENSE keys holding a dense one
# (PFADD dense:0000000 x, then PFDEBUG TODENSE). One server runs at a time;
# each is stopped before the next starts. Prints a Markdown table of
# used_memory (INFO memory) and RSS, before and after, per key.
#
#   bench/hll-memory.sh [SPARSE] [DENSE] [PORT]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
sparse=${1:-1000000}
dense=${2:-100000}
port=${3:-$(free_port)}
require_built "$keel"
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
common=(--bind 127.0.0.1 --maxmemory 0 --maxmemory-policy noeviction)
used_memory() { redis-cli -p "$port" info memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r'; }
echo "| server | HLLs | keys | encoding | bytes per value | used_memory before | used_memory after | used_memory per key | RSS before (KB) | RSS after (KB) | RSS per key |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for kind in sparse dense; do
  keys=$sparse
  [ "$kind" = dense ] && keys=$dense
  for server in redis keel; do
    case $server in
      redis) (in_scratch_dir redis-server --port "$port" "${common[@]}" --save "" --appendonly no >/dev/null 2>&1) & ;;
      keel) (in_scratch_dir "$keel" --port "$port" "${common[@]}" >/dev/null 2>&1) & ;;
    esac
    pid=$!
    wait_port "$port"
    before_rss=$(settled_rss_kb "$pid")
    before_used=$(used_memory)
    python3 - "$keys" "$kind" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
keys, kind = int(sys.argv[1]), sys.argv[2]
out = sys.stdout.buffer
bulk = lambda b: b"$%d\r\n%s\r\n" % (len(b), b)
for i in range(keys):
    if kind == "sparse":
        key = b"hll:%07d" % i
        out.write(b"*5\r\n" + bulk(b"PFADD") + bulk(key)
                  + b"".join(bulk(b"%s:%d" % (e, i)) for e in (b"a", b"b", b"c")))
    else:
        key = b"dense:%07d" % i
        out.write(b"*3\r\n" + bulk(b"PFADD") + bulk(key) + bulk(b"x"))
        out.write(b"*3\r\n" + bulk(b"PFDEBUG") + bulk(b"TODENSE") + bulk(key))
PY
    [ "$(redis-cli -p "$port" dbsize)" = "$keys" ] || { echo "$server did not store $keys keys" >&2; exit 1; }
    first=$([ "$kind" = sparse ] && echo hll:0000000 || echo dense:0000000)
    encoding=$(redis-cli -p "$port" pfdebug encoding "$first")
    length=$(redis-cli -p "$port" strlen "$first")
    sleep 1
    after_rss=$(rss_kb "$pid")
    after_used=$(used_memory)
    python3 -c "
keys = $keys
used = ($after_used - $before_used) / keys
rss = ($after_rss - $before_rss) * 1024 / keys
print(f'| $server | $kind | {keys} | $encoding | $length | $before_used | $after_used | {used:.1f} | $before_rss | $after_rss | {rss:.1f} |')"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  done
done
