#!/usr/bin/env bash
# Replication, a redis-server replica against a keel-server replica of the
# same primary, in the same run (one replica at a time, equal settings). The
# primary is a redis-server, or a keel-server with PRIMARY=keel; run it once
# with PRIMARY=redis ORDER=redis and once with PRIMARY=keel ORDER=keel to set
# Redis-to-Redis beside keel-to-keel. The primary gets DEBUG POPULATE KEYS key 32 plus a "hot set" of HOT keys
# that keel-bench's write load overwrites (keel-bench names keys
# key:000000000042, DEBUG POPULATE key:42), so every replica syncs the same
# number of keys and the load changes values, never the key count. Then:
#
# 0. The write load with no replica attached: the control for 2.
# For each replica (ORDER, default "redis keel"), started empty:
# 1. Full sync with the primary's repl-diskless-sync yes (delay 0): time
#    from REPLICAOF until master_link_status:up, and until the replica's
#    slave_repl_offset equals the primary's master_repl_offset; the
#    replica's RSS sampled every 10 ms (peak during the sync, and 1 s
#    after), DBSIZE on both.
# 2. Lag under an open-loop keel-bench SET load of RATE requests/s on the
#    primary for LOAD_SECS: every 100 ms a sampler reads the replica's
#    slave_repl_offset and then the primary's master_repl_offset (byte lag;
#    read in that order it can only overstate the lag), then SETs probe:<n>
#    to a nanosecond timestamp on the primary and polls GET probe:<n> on
#    the replica (every 0.2 ms) until it holds that value (time lag, from
#    before the SET is sent). Each over its own connection.
#    The CPU time the primary and the replica used meanwhile, from /proc.
# 3. With DISKLESS_NO=1 (default), the replica is restarted empty and syncs
#    again with the primary's repl-diskless-sync no (the primary saves to
#    disk, then sends a sized payload).
#
#   bench/replication.sh [KEYS] [RATE] [OUT_PREFIX]
#   bench/replication.sh --tables OUT_PREFIX   (the tables of a finished run again)
#
# Defaults: 10000000 keys, 50000 requests/s; HOT (default KEYS/10, at most
# 1000000), LOAD_SECS (default 30), DISKLESS_NO (default 1), PRIMARY
# (default redis) and ORDER (default "redis keel") from the environment. Raw outputs go to OUT_PREFIX-* (default
# bench/results/replication-<timestamp>), RDB files to
# bench/results/tmp/replication. Ports are free local ones, or BASE_PORT+1..
# if set. Both replicas write the payload, diskless or not, to a file in
# their dir, then load it (the Redis replica keeps repl-diskless-load
# disabled, its default; keel always does); each one's log tells the
# transfer from the load. keel runs with maxmemory 8gb: a replica never
# evicts, but its built-in 1 GB budget should not be what a run measures.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

# Prints the markdown tables of the run whose outputs are named OUT_PREFIX-*
# ($1) from its records and keel-bench summaries.
tables() {
  python3 - "$1" <<'PY'
import json, os, re, sys
out = sys.argv[1]
records = {r["label"]: r for r in map(json.loads, open(f"{out}-records.txt"))}
def summary(label):
    path = f"{out}-{label}-summary.txt"
    if not os.path.exists(path):
        return None
    text = open(path).read()
    def get(name):
        m = re.search(rf"^\s+{re.escape(name)}\s+([0-9.]+)", text, re.M)
        return float(m.group(1)) if m else float("nan")
    return {k: get(v) for k, v in {"p50": "latency p50", "p99": "latency p99",
            "p999": "latency p99.9", "max": "latency max", "ops": "throughput (mean)",
            "median_sec_p99": "per-second p99, median second",
            "worst_sec_p99": "per-second p99, worst second",
            "errors": "errors (all kinds)"}.items()}
def cpu(r):
    c = r.get("cpu_pct")
    return f"{c['primary']:.0f} / {c['replica']:.0f}" if c else "not recorded"
names = [n for n in ("redis", "keel") if f"{n}-sync-diskless" in records]
primary = next((r["primary"] for r in records.values() if "primary" in r), "redis")

print(f"\n## Full sync from the {primary} primary\n")
print("| replica | primary repl-diskless-sync | keys | link up s | offsets equal s | peak RSS during sync MB | RSS 1 s after MB | DBSIZE replica / primary | load avg |")
print("|---|---|---|---|---|---|---|---|---|")
for mode in ("diskless", "disk"):
    for n in names:
        r = records.get(f"{n}-sync-{mode}")
        if not r:
            continue
        print(f"| {n} | {'yes' if mode == 'diskless' else 'no'} | {r['primary_dbsize']:,} | {r['link_up_s']:.2f} | {r['offsets_equal_s']:.2f} | "
              f"{r['peak_rss_kb']/1024:.0f} | {r['rss_after_kb']/1024:.0f} | {r['replica_dbsize']:,} / {r['primary_dbsize']:,} | {r['loadavg_1min']:.1f} |")

# Each sync's phases from the replica's log, in the order they ran
# (diskless, then disk-based): from "Full resync" to the payload's end
# (Redis: "Flushing old data"; keel: "received ... loading"), then to
# "Finished with success".
def phases(name):
    path = f"{out}-{name}-server.log"
    stamps, spans = {}, []
    for line in open(path) if os.path.exists(path) else []:
        m = re.search(r"(\d\d):(\d\d):(\d\d\.\d+) \* (.*)", line)
        if not m:
            continue
        t = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
        text = m.group(4)
        if text.startswith("Full resync from master"):
            stamps = {"resync": t}
        elif "Flushing old data" in text or ("received" in text and "payload, loading" in text):
            stamps["received"] = t
        elif "sync: Finished with success" in text and "received" in stamps:
            spans.append((stamps["received"] - stamps["resync"], t - stamps["received"]))
    return dict(zip(("diskless", "disk"), spans))
print("\n## The sync's phases, from the replica's log\n")
print("| replica | primary repl-diskless-sync | resync to payload received s | loading s |")
print("|---|---|---|---|")
for mode in ("diskless", "disk"):
    for n in names:
        span = phases(n).get(mode)
        if span:
            print(f"| {n} | {'yes' if mode == 'diskless' else 'no'} | {span[0]:.2f} | {span[1]:.2f} |")

print("\n## Lag under the write load\n")
print("| replica | load achieved ops/s | load p50 / p99 / p99.9 / max ms | median-second p99 ms | byte lag p50 / p99 / max | probe delay p50 / p99 / max ms | probes (lost) | CPU % primary / replica | load avg |")
print("|---|---|---|---|---|---|---|---|---|")
for n in ["none"] + names:
    s = summary(f"{n}-load")
    if not s:
        continue
    r = records.get(f"{n}-lag")
    row = f"| {n if n != 'none' else 'no replica'} | {s['ops']:.0f} | {s['p50']:.3f} / {s['p99']:.3f} / {s['p999']:.3f} / {s['max']:.2f} | {s['median_sec_p99']:.3f} | "
    if r:
        b, p = r["byte_lag"], r["probe_ms"]
        row += (f"{b['p50']:,} / {b['p99']:,} / {b['max']:,} | {p['p50']:.2f} / {p['p99']:.2f} / {p['max']:.2f} | "
                f"{r['probes']} ({r['probes_lost']}) | {cpu(r)} | {r['loadavg_1min']:.1f} |")
    else:
        r = records["none-load"]
        row += f"| | | {r.get('primary_cpu_pct', 'not recorded')} / - | {r['loadavg_1min']:.1f} |"
    print(row)
PY
}
load_bench_setup replication 50000 "$@"
mkdir -p "$scratch/primary" "$scratch/redis" "$scratch/keel"

# The port of the $1th server: BASE_PORT+$1, or a free one.
port_for() {
  if [ -n "${BASE_PORT:-}" ]; then
    echo $((BASE_PORT + $1))
  else
    free_port
  fi
}

# Starts server $1 (primary|redis|keel) on port $2 with its files in
# $scratch/$1; sets $pid.
start() {
  local name=$1 port=$2 dir=$scratch/$1 kind=$1
  if [ "$kind" = primary ]; then
    kind=${PRIMARY:-redis}
  fi
  case $kind in
    redis) redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
      --enable-debug-command yes --dir "$dir" --dbfilename dump.rdb \
      --repl-diskless-sync yes --repl-diskless-sync-delay 0 >>"$out-$name-server.log" 2>&1 & ;;
    keel) "$keel" --port "$port" --bind 127.0.0.1 --save "" --enable-debug-command yes \
      --dir "$dir" --dbfilename dump.rdb --maxmemory 8gb >>"$out-$name-server.log" 2>&1 & ;;
  esac
  pid=$!
  pids+=("$pid")
}



# Full sync: sends REPLICAOF to the replica (port $2, pid $3) of the primary
# (port $1) and samples every 10 ms until the link is up and the offsets
# are equal. Appends one JSON record labelled $4 to the records file and
# writes the sampled series to $5.
sync_replica() {
  python3 - "$@" >>"$records" <<PY
$py_resp_client
import json, os, sys, time
primary_port, replica_port, pid = map(int, sys.argv[1:4])
label, series_path = sys.argv[4:6]
primary, replica = Conn(primary_port), Conn(replica_port)
series, link_up, equal = [], None, None
start = time.time()
assert replica.cmd("REPLICAOF", "127.0.0.1", primary_port) == "+OK"
while True:
    t = time.time() - start
    rinfo = replica.info("replication")
    pinfo = primary.info("replication")
    rss = rss_kb(pid)
    status = rinfo.get("master_link_status", "?")
    roff = int(rinfo.get("slave_repl_offset", -1))
    poff = int(pinfo["master_repl_offset"])
    series.append((t, status, rinfo.get("master_sync_in_progress", "?"), roff, poff, rss))
    if status == "up" and link_up is None:
        link_up = t
    if link_up is not None and roff == poff:
        equal = t
        break
    if t > 1200:
        break
    time.sleep(0.01)
time.sleep(1)
with open(series_path, "w") as f:
    f.write("t_ms link_status sync_in_progress slave_repl_offset master_repl_offset rss_kb\n")
    for t, *rest in series:
        f.write(f"{int(t * 1000)} {' '.join(map(str, rest))}\n")
print(json.dumps({
    "label": label, "link_up_s": link_up, "offsets_equal_s": equal,
    "peak_rss_kb": max(s[-1] for s in series), "rss_after_kb": rss_kb(pid),
    "replica_dbsize": int(replica.cmd("DBSIZE")[1:]), "primary_dbsize": int(primary.cmd("DBSIZE")[1:]),
    "primary_offset": int(primary.info("replication")["master_repl_offset"]),
    "loadavg_1min": os.getloadavg()[0],
}))
PY
}

# Lag: every 100 ms for $3 seconds, the replica's (port $2) offset and the
# primary's (port $1), then a probe key SET on the primary and polled on the
# replica. Appends one JSON record labelled $4 and writes the series to $5;
# $6 and $7 are the primary's and the replica's PIDs, for their CPU time.
lag() {
  python3 - "$@" >>"$records" <<PY
$py_resp_client
import json, os, sys, time
primary_port, replica_port = map(int, sys.argv[1:3])
seconds, label, series_path = float(sys.argv[3]), sys.argv[4], sys.argv[5]
pids = {"primary": int(sys.argv[6]), "replica": int(sys.argv[7])}
def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
cpu_before = {k: cpu_ticks(p) for k, p in pids.items()}
offsets_primary, offsets_replica = Conn(primary_port), Conn(replica_port)
probe_primary, probe_replica = Conn(primary_port), Conn(replica_port)
series, lost = [], 0
start = time.time()
tick = start
n = 0
while time.time() - start < seconds:
    roff = int(offsets_replica.info("replication").get("slave_repl_offset", -1))
    poff = int(offsets_primary.info("replication")["master_repl_offset"])
    n += 1
    key = f"probe:{n}"
    sent = time.time_ns()
    assert probe_primary.cmd("SET", key, sent) == "+OK"
    # The key may hold an earlier run's probe: wait for this value.
    while probe_replica.cmd("GET", key) != str(sent):
        if time.time_ns() - sent > 10e9:
            break
        time.sleep(0.0002)
    seen = time.time_ns()
    delay_ms = (seen - sent) / 1e6
    if delay_ms > 10e3:
        lost += 1
        delay_ms = float("nan")
    series.append((time.time() - start, poff - roff, delay_ms))
    tick += 0.1
    time.sleep(max(0.0, tick - time.time()))
elapsed = time.time() - start
cpu_pct = {k: round(100 * (cpu_ticks(p) - cpu_before[k]) / os.sysconf("SC_CLK_TCK") / elapsed, 1)
           for k, p in pids.items()}
with open(series_path, "w") as f:
    f.write("t_ms byte_lag probe_delay_ms\n")
    for t, b, d in series:
        f.write(f"{int(t * 1000)} {b} {d:.3f}\n")
lags = [b for _, b, _ in series]
delays = [d for _, _, d in series if d == d]
print(json.dumps({
    "label": label, "probes": len(series), "probes_lost": lost,
    "byte_lag": {p: percentile(lags, q) for p, q in (("p50", 50), ("p99", 99))} | {"max": max(lags)},
    "probe_ms": {p: round(percentile(delays, q), 3) for p, q in (("p50", 50), ("p99", 99))} | {"max": round(max(delays), 3)},
    "cpu_pct": cpu_pct, "loadavg_1min": os.getloadavg()[0],
}))
PY
}

# The open-loop SET load on the primary (port $1); output files named
# after $2.
load() {
  "$bench" -p "$1" --name "$2" -c 50 --rate "$rate" --mix set=1 --keyspace "$hot" --value 32 \
    --duration "$load_secs" --csv "$out-$2.csv" --summary "$out-$2-summary.txt" --quiet >/dev/null
}

write_hot_prefill "$hot" "$scratch/hot-prefill.toml"

record "# replication bench $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse HEAD)"
record "keys=$keys hot=$hot rate=$rate load_secs=$load_secs primary=${PRIMARY:-redis} keel=$keel $(redis-server --version)"

primary_port=$(port_for 1)
start primary "$primary_port"
primary_pid=$pid
wait_port "$primary_port"
t0=$(date +%s%N)
cli "$primary_port" debug populate "$keys" key 32 >/dev/null
record "primary: DEBUG POPULATE $keys key 32: $((($(date +%s%N) - t0) / 1000000)) ms"
"$bench" "$scratch/hot-prefill.toml" -p "$primary_port" --quiet >/dev/null
record "primary: DBSIZE $(cli "$primary_port" dbsize) after the hot-set prefill, RSS $(rss_kb "$primary_pid") KB"

# CPU time of process $1 so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks=$(cpu_ticks "$primary_pid")
load "$primary_port" none-load
primary_cpu=$((($(cpu_ticks "$primary_pid") - ticks) * 100 / $(getconf CLK_TCK) / load_secs))
echo "{\"label\": \"none-load\", \"primary\": \"${PRIMARY:-redis}\", \"primary_cpu_pct\": $primary_cpu, \"loadavg_1min\": $(cut -d' ' -f1 /proc/loadavg)}" >>"$records"
record "no replica: load done, $(grep -E 'throughput \(mean\)|latency p99 ' "$out-none-load-summary.txt" | tr -s ' ' | tr '\n' ';')"

declare -A port_of
index=1
for name in ${ORDER:-redis keel}; do
  index=$((index + 1))
  port_of[$name]=$(port_for $index)
done
for name in ${ORDER:-redis keel}; do
  port=${port_of[$name]}
  cli "$primary_port" config set repl-diskless-sync yes >/dev/null
  start "$name" "$port"
  wait_port "$port"
  sync_replica "$primary_port" "$port" "$pid" "$name-sync-diskless" "$out-$name-sync-diskless.txt"
  record "$name: diskless sync: $(tail -1 "$records")"
  lag "$primary_port" "$port" "$load_secs" "$name-lag" "$out-$name-lag.txt" "$primary_pid" "$pid" &
  sampler=$!
  load "$primary_port" "$name-load"
  wait "$sampler"
  record "$name: lag: $(tail -1 "$records")"
  record "$name: after the load: DBSIZE $(cli "$port" dbsize) (primary $(cli "$primary_port" dbsize)), RSS $(rss_kb "$pid") KB, role $(cli "$port" role | head -1)"
  stop "$port" "$pid"

  if [ "${DISKLESS_NO:-1}" = 1 ]; then
    cli "$primary_port" config set repl-diskless-sync no >/dev/null
    rm -rf "${scratch:?}/$name" && mkdir -p "$scratch/$name"
    start "$name" "$port"
    wait_port "$port"
    sync_replica "$primary_port" "$port" "$pid" "$name-sync-disk" "$out-$name-sync-disk.txt"
    record "$name: disk-based sync: $(tail -1 "$records")"
    stop "$port" "$pid"
  fi
done
stop "$primary_port" "$primary_pid"

tables "$out" | tee -a "$out.txt"
