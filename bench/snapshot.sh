#!/usr/bin/env bash
# RDB snapshots, redis-server against keel-server in the same run (one
# server at a time, equal settings). Each server gets DEBUG POPULATE KEYS
# key 32 plus a "hot set" of HOT keys that keel-bench's load reads and
# overwrites (keel-bench names keys key:000000000042, DEBUG POPULATE
# key:42, so the load cannot reach the populated keys themselves). Then:
#
# 1. BGSAVE with no load: time, and the memory it adds. RSS is sampled
#    every 20 ms: for Redis the parent and the forked child (the child's
#    RSS is mostly pages it shares with the parent, so Redis's own
#    current_cow_size / rdb_last_cow_size, the pages really copied, are
#    reported beside it); for keel the process and keel_snapshot_bytes.
# 2. For a read-heavy (get=8,set=2) and a write-heavy (get=5,set=5) mix:
#    an open-loop keel-bench load of LOAD_SECS seconds with no save, then
#    the same load while BGSAVE runs back to back for the whole run (the
#    next starts as soon as the last ends), so the whole run's percentiles
#    are percentiles during a save. The no-save run samples RSS the same
#    way, as the control for what the load alone does to RSS.
# 3. SAVE, then the server's RDB file: its size, the time to restart on it
#    (from exec to the first PING answered +PONG rather than -LOADING),
#    and redis-cli --rdb (the SYNC path) from the running server.
# 4. Cross loading: keel started on Redis's file and Redis on keel's, with
#    DBSIZE and a digest of 2,000 sampled GETs checked against the server
#    that wrote the file.
#
#   bench/snapshot.sh [KEYS] [RATE] [OUT_PREFIX]
#   bench/snapshot.sh --tables OUT_PREFIX     (the tables of a finished run again)
#
# Defaults: 10000000 keys, 20000 requests/s; HOT (default KEYS/10, at most
# 1000000), LOAD_SECS (default 30) from the environment. Raw outputs go to
# OUT_PREFIX-* (default bench/results/snapshot-<timestamp>), the RDB files
# to bench/results/tmp. Ports are free local ones, or BASE_PORT+1.. if set.
# ORDER="keel redis" runs keel first (default: redis, then keel).
# Redis runs with repl-diskless-sync-delay 0: its default waits 5 s for
# more replicas before a SYNC transfer starts.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# Prints the markdown tables of the run whose outputs are named OUT_PREFIX-*
# ($1) from its records and keel-bench summaries.
tables() {
  python3 - "$1" <<'PY'
import json, re, sys
out = sys.argv[1]
records = {r["label"]: r for r in map(json.loads, open(f"{out}-records.txt"))}
mb = lambda b: b / 1e6
def summary(label):
    text = open(f"{out}-{label}-summary.txt").read()
    def get(name):
        m = re.search(rf"^\s+{re.escape(name)}\s+([0-9.]+)", text, re.M)
        return float(m.group(1)) if m else float("nan")
    return {k: get(v) for k, v in {"p50": "latency p50", "p99": "latency p99",
            "p999": "latency p99.9", "max": "latency max", "ops": "throughput (mean)",
            "worst_sec_p99": "per-second p99, worst second",
            "median_sec_p99": "per-second p99, median second"}.items()}
def extra(r, base=None):
    """Memory the save added: (RSS growth, RSS+child growth, copy figure) in bytes."""
    grow = (r["peak_rss_kb"] - r["rss_before_kb"]) * 1024
    with_child = (r["peak_rss_with_child_kb"] - r["rss_before_kb"]) * 1024
    copy = max(r["peak_current_cow_size"], *[s.get("rdb_last_cow_size", 0) for s in r["saves"]], 0) \
        if r["label"].startswith("redis") else r["peak_keel_snapshot_bytes"]
    return grow, with_child, copy
def times(r):
    t = [s["seconds"] for s in r["saves"] if "seconds" in s]
    return t

print("\n## BGSAVE with no load\n")
print("| server | save s | dataset (used_memory_dataset) MB | RSS before MB | peak RSS growth MB | peak RSS+child growth MB | copies MB (Redis COW / keel_snapshot_bytes) | copies / dataset | RSS growth / dataset |")
print("|---|---|---|---|---|---|---|---|---|")
for name in ("redis", "keel"):
    r = records[f"{name}-idle"]
    grow, wc, copy = extra(r)
    ds = r["used_memory_dataset"]
    print(f"| {name} | {times(r)[0]:.2f} | {mb(ds):.0f} | {r['rss_before_kb']/1024:.0f} | {mb(grow):.1f} | {mb(wc):.1f} | {mb(copy):.1f} | {100*copy/ds:.2f}% | {100*grow/ds:.2f}% |")

print("\n## Open-loop load without and during back-to-back BGSAVE\n")
print("| server | mix | p99 no save ms | p99 during saves ms | ratio | p99.9 no save / during | max no save / during | median-second p99 no save / during | worst-second p99 during | saves (mean s) | RSS growth no save / during MB | copies peak MB | copies / dataset | RSS growth during / dataset | machine load avg no save / during |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for mix in ("get8set2", "get5set5"):
    for name in ("redis", "keel"):
        a, b = summary(f"{name}-{mix}-nosave"), summary(f"{name}-{mix}-bgsave")
        ra, rb = records[f"{name}-{mix}-nosave"], records[f"{name}-{mix}-bgsave"]
        t = times(rb)
        grow, _, copy = extra(rb)
        ds = rb["used_memory_dataset"]
        print(f"| {name} | {mix} | {a['p99']:.3f} | {b['p99']:.3f} | {b['p99']/a['p99']:.2f} | "
              f"{a['p999']:.3f} / {b['p999']:.3f} | {a['max']:.2f} / {b['max']:.2f} | {a['median_sec_p99']:.3f} / {b['median_sec_p99']:.3f} | {b['worst_sec_p99']:.3f} | "
              f"{len(t)} ({sum(t)/max(len(t),1):.2f}) | {mb(extra(ra)[0]):.1f} / {mb(extra(rb)[0]):.1f} | {mb(copy):.1f} | {100*copy/ds:.2f}% | {100*grow/ds:.2f}% | {ra['loadavg_1min']:.1f} / {rb['loadavg_1min']:.1f} |")
PY
}
load_bench_setup snapshot 20000 "$@"
mkdir -p "$scratch/redis" "$scratch/keel"

next_port=0
port_for() {
  if [ -n "${BASE_PORT:-}" ]; then
    next_port=$((next_port + 1))
    echo $((BASE_PORT + next_port))
  else
    free_port
  fi
}

# Starts server $1 (redis|keel) on port $2 with its RDB file in directory
# $3; sets $pid.
start() {
  local name=$1 port=$2 dir=$3
  case $name in
    redis) redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
      --enable-debug-command yes --dir "$dir" --dbfilename dump.rdb \
      --repl-diskless-sync-delay 0 >>"$out-$name-server.log" 2>&1 & ;;
    keel) "$keel" --port "$port" --bind 127.0.0.1 --save "" --enable-debug-command yes \
      --dir "$dir" --dbfilename dump.rdb >>"$out-$name-server.log" 2>&1 & ;;
  esac
  pid=$!
  pids+=("$pid")
}


# Milliseconds from $2 (date +%s%N at exec) until port $1 answers PING
# with +PONG, not -LOADING.
ready_ms() {
  python3 - "$1" "$2" <<'PY'
import socket, sys, time
port, start_ns = int(sys.argv[1]), int(sys.argv[2])
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port))
        break
    except OSError:
        time.sleep(0.005)
while True:
    s.sendall(b"PING\r\n")
    reply = s.recv(256)
    if reply.startswith(b"+PONG"):
        break
    time.sleep(0.005)
print((time.time_ns() - start_ns) // 1_000_000)
PY
}

# Samples the server (port $1, pid $2) while it runs a load: RSS of the
# process and of its forked children every 20 ms, INFO persistence every
# 20 ms, and, by mode $3, no save (none), one BGSAVE (once), or BGSAVE
# back to back for $4 seconds (loop). Appends one JSON record labelled $5
# to the records file and writes the RSS series to $6.
sample() {
  python3 - "$@" >>"$records" <<PY
$py_resp_client
import json, os, sys, threading, time
port, pid, mode, seconds, label, series_path = sys.argv[1:7]
port, pid, seconds = int(port), int(pid), float(seconds)
conn = Conn(port)

def find_child():
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid and rss_kb(p) > 0:
                        return int(p)
            except (OSError, ValueError, IndexError):
                pass
    return None

saving = threading.Event()
done = threading.Event()
series = []
child_spans = []
def sampler():
    child, since = None, None
    while not done.is_set():
        t = time.time()
        # Only Redis forks; look for a child only while a save runs.
        if child is None and saving.is_set() and label.startswith("redis"):
            child = find_child()
            since = t if child else None
        ckb = rss_kb(child) if child else 0
        if child and ckb == 0:
            child_spans.append(t - since)
            child = None
        series.append((t, rss_kb(pid), ckb))
        time.sleep(max(0.0, 0.02 - (time.time() - t)))
thread = threading.Thread(target=sampler)

mem = conn.info("memory")
before_kb = rss_kb(pid)
start = time.time()
thread.start()
saves, peak_cow, peak_snapshot = [], 0, 0
def poll():
    global peak_cow, peak_snapshot
    d = conn.info("persistence")
    peak_cow = max(peak_cow, int(d.get("current_cow_size", 0)))
    peak_snapshot = max(peak_snapshot, int(d.get("keel_snapshot_bytes", 0)))
    return d
while True:
    if mode == "none":
        poll()
        time.sleep(0.02)
        if time.time() - start >= seconds:
            break
        continue
    t0 = time.time()
    saving.set()
    reply = conn.cmd("BGSAVE")
    if not reply.startswith("+Background saving started"):
        # One still running (say, the previous run's): wait for its end.
        while poll()["rdb_bgsave_in_progress"] != "0":
            time.sleep(0.02)
        continue
    while True:
        time.sleep(0.02)
        d = poll()
        if d["rdb_bgsave_in_progress"] == "0":
            break
    saves.append({"seconds": round(time.time() - t0, 3),
                  "status": d["rdb_last_bgsave_status"],
                  "rdb_last_cow_size": int(d.get("rdb_last_cow_size", 0))})
    saving.clear()
    if mode == "once" or time.time() - start >= seconds:
        break
done.set()
thread.join()
with open(series_path, "w") as f:
    f.write("t_ms parent_rss_kb child_rss_kb\n")
    for t, p, c in series:
        f.write(f"{int((t - start) * 1000)} {p} {c}\n")
print(json.dumps({
    "label": label, "mode": mode,
    "used_memory": int(mem["used_memory"]),
    "used_memory_dataset": int(mem.get("used_memory_dataset", 0)),
    "rss_before_kb": before_kb,
    "peak_rss_kb": max(p for _, p, _ in series),
    "peak_rss_with_child_kb": max(p + c for _, p, c in series),
    "peak_child_rss_kb": max(c for _, _, c in series),
    "peak_current_cow_size": peak_cow,
    "peak_keel_snapshot_bytes": peak_snapshot,
    "child_seconds": [round(s, 3) for s in child_spans],
    "saves": saves,
    "loadavg_1min": os.getloadavg()[0],
}))
PY
}

# An open-loop keel-bench load on port $1 over the hot set: mix $2, output
# files named after $3.
load() {
  "$bench" -p "$1" --name "$3" -c 50 --rate "$rate" --mix "$2" --keyspace "$hot" --value 32 \
    --duration "$load_secs" --csv "$out-$3.csv" --summary "$out-$3-summary.txt" --quiet >/dev/null
}

# A digest of GET over 2,000 keys spread over both key sets, on port $1.
digest() {
  python3 - "$keys" "$hot" <<'PY' | redis-cli -p "$1" | md5sum | cut -c1-12
import sys
keys, hot = int(sys.argv[1]), int(sys.argv[2])
for i in range(1000):
    print(f"GET key:{i * keys // 1000}")
    print(f"GET key:{i * hot // 1000:012d}")
PY
}

write_hot_prefill "$hot" "$scratch/hot-prefill.toml"

record "# snapshot bench $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse HEAD)"
record "keys=$keys hot=$hot rate=$rate load_secs=$load_secs keel=$keel $(redis-server --version)"

declare -A port_of dbsize_of digest_of
for name in ${ORDER:-redis keel}; do
  port=$(port_for)
  port_of[$name]=$port
  dir=$scratch/$name
  start "$name" "$port" "$dir"
  wait_port "$port"
  t0=$(date +%s%N)
  cli "$port" debug populate "$keys" key 32 >/dev/null
  record "$name: DEBUG POPULATE $keys key 32: $((($(date +%s%N) - t0) / 1000000)) ms"
  "$bench" "$scratch/hot-prefill.toml" -p "$port" --quiet >/dev/null
  record "$name: DBSIZE $(cli "$port" dbsize) after the hot-set prefill"

  sample "$port" "$pid" once 0 "$name-idle" "$out-$name-idle-rss.txt"
  for mix in get=8,set=2 get=5,set=5; do
    tag=${mix//[=,]/}
    sample "$port" "$pid" none "$load_secs" "$name-$tag-nosave" "$out-$name-$tag-nosave-rss.txt" &
    sampler=$!
    load "$port" "$mix" "$name-$tag-nosave"
    wait "$sampler"
    sample "$port" "$pid" loop "$load_secs" "$name-$tag-bgsave" "$out-$name-$tag-bgsave-rss.txt" &
    sampler=$!
    load "$port" "$mix" "$name-$tag-bgsave"
    wait "$sampler"
  done

  t0=$(date +%s%N)
  cli "$port" save >/dev/null
  record "$name: SAVE: $((($(date +%s%N) - t0) / 1000000)) ms, file $(stat -c %s "$dir/dump.rdb") bytes"
  t0=$(date +%s%N)
  cli "$port" --rdb "$scratch/$name-transfer.rdb" >/dev/null 2>&1
  record "$name: redis-cli --rdb: $((($(date +%s%N) - t0) / 1000000)) ms, $(stat -c %s "$scratch/$name-transfer.rdb") bytes"
  dbsize_of[$name]=$(cli "$port" dbsize)
  digest_of[$name]=$(digest "$port")
  record "$name: DBSIZE ${dbsize_of[$name]}, GET digest ${digest_of[$name]}"
  stop "$port" "$pid"

  t0=$(date +%s%N)
  start "$name" "$port" "$dir"
  ms=$(ready_ms "$port" "$t0")
  record "$name: restart on its own file: PONG after $ms ms, RSS $(rss_kb "$pid") KB, DBSIZE $(cli "$port" dbsize), GET digest $(digest "$port")"
  stop "$port" "$pid"
done

# Each server on the other's file.
for pair in keel:redis redis:keel; do
  name=${pair%%:*} file_of=${pair#*:}
  port=${port_of[$name]}
  t0=$(date +%s%N)
  start "$name" "$port" "$scratch/$file_of"
  ms=$(ready_ms "$port" "$t0")
  size=$(cli "$port" dbsize)
  dig=$(digest "$port")
  verdict=$([ "$size" = "${dbsize_of[$file_of]}" ] && [ "$dig" = "${digest_of[$file_of]}" ] && echo equal || echo DIFFERENT)
  record "$name on $file_of's file: PONG after $ms ms, RSS $(rss_kb "$pid") KB, DBSIZE $size, GET digest $dig: $verdict to $file_of's"
  stop "$port" "$pid"
done

tables "$out" | tee -a "$out.txt"
