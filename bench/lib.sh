# Helpers shared by the bench/ scripts; source it, don't run it.

# The repository root and the release binaries the scripts run;
# KEEL_SERVER names another keel-server build (say, an older commit's, for
# a before/after comparison under the same generator).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=$root/target/release/keel-bench
keel=${KEEL_SERVER:-$root/target/release/keel-server}

# Exits unless every binary named is built.
require_built() {
  for bin in "$@"; do
    [ -x "$bin" ] || { echo "missing $bin: run cargo build --release" >&2; exit 1; }
  done
}

# redis-benchmark's command line for an MGET of 10 random keys, a test it
# does not have (split it into words when passing it).
mget_ten_random_keys="MGET$(printf ' key:__rand_int__%.0s' {1..10})"

# redis-benchmark's arguments for test $1: MGET of ten keys, or its own -t test.
bench_args() {
  case $1 in
    mget) echo "$mget_ten_random_keys" ;;
    *) echo "-t $1" ;;
  esac
}

# Whether `keel-floor --keyspace` executes redis-benchmark's test $1: it
# runs SET, MSET, GET, LPUSH and HSET only (crates/bench/src/bin/keel-floor.rs).
keyspace_floor_executes() { [[ " set mset get lpush hset " == *" $1 "* ]]; }

# A free TCP port on the loopback interface.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until something listens on loopback port $1; exits the script if
# nothing does within $2 seconds (default 5).
wait_port() {
  for _ in $(seq 1 $((${2:-5} * 20))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
    sleep 0.05
  done
  echo "no server listening on port $1" >&2
  exit 1
}

# Resident memory of process $1, in KB.
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# RSS (KB) of process $1 once it has settled: a second after it listens, as
# the RSS after loading is read a second after the load. Read at once, a
# keel-server's start-up RSS is 4-5 MB short of where it settles (threads and
# pools still starting), which inflated its growth per key by as much.
settled_rss_kb() { sleep 1; rss_kb "$1"; }

# Runs a server binary (its arguments follow) with its working directory
# in bench/results/tmp, ignored by git, where a redis-server given as
# KEEL_SERVER writes its dump.rdb. Run it in a subshell in the background:
# exec keeps $! the server's PID.
in_scratch_dir() {
  local bin=$1
  shift
  case $bin in
    /*) ;;
    */*) bin=$PWD/$bin ;;
  esac
  mkdir -p "$root/bench/results/tmp"
  cd "$root/bench/results/tmp"
  exec "$bin" "$@"
}

# Writes to $2 a keel-bench scenario that only prefills keys 0..$1 with 32-byte
# values: the hot set the snapshot and replication benches load and write,
# beside DEBUG POPULATE's keys (whose names keel-bench cannot address).
write_hot_prefill() {
  cat >"$2" <<TOML
[load]
duration = 1
connections = 1
[workload]
keyspace = $1
value = 32
[[workload.mix]]
cmd = "get"
weight = 1
[prefill]
keys = $1
value = 32
connections = 4
pipeline = 256
TOML
}

# The arguments and set-up the 10M-key benches (snapshot.sh, replication.sh)
# share. `--tables OUT_PREFIX` prints a finished run's tables (the script's
# `tables`) and exits. Otherwise [KEYS] [RATE] [OUT_PREFIX] set $keys (default
# 10000000), $rate (default $2) and $out (default bench/results/$1-<timestamp>);
# HOT and LOAD_SECS set $hot (default KEYS/10, at most 1000000) and $load_secs
# (default 30). $scratch is an emptied bench/results/tmp/$1 and $records an
# emptied $out-records.txt; servers in $pids are killed at exit.
load_bench_setup() {
  local name=$1 default_rate=$2
  shift 2
  if [ "${1:-}" = --tables ]; then
    tables "$2"
    exit
  fi
  keys=${1:-10000000}
  rate=${2:-$default_rate}
  out=${3:-$root/bench/results/$name-$(date +%Y%m%d-%H%M%S)}
  hot=${HOT:-$((keys / 10 < 1000000 ? keys / 10 : 1000000))}
  load_secs=${LOAD_SECS:-30}
  require_built "$bench" "$keel"
  command -v redis-server >/dev/null || { echo "missing redis-server" >&2; exit 1; }
  scratch=$root/bench/results/tmp/$name
  rm -rf "$scratch"
  records=$out-records.txt
  : >"$records"
  kill_servers_at_exit
}

# Prints its arguments and appends them to $out.txt (the run's record).
record() { echo "$*" | tee -a "$out.txt"; }

# Python the benches' samplers share (insert it at the top of an unquoted
# heredoc): a minimal RESP client, RSS of a process (0 once it is gone) and
# a percentile.
py_resp_client='
import socket
class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
    def cmd(self, *args):
        self.sock.sendall(b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a), a) for a in (x.encode() for x in map(str, args))))
        line = self.reader.readline()
        if line[:1] == b"$":
            n = int(line[1:])
            return None if n < 0 else self.reader.read(n + 2)[:-2].decode()
        return line[:-2].decode()
    def info(self, section):
        reply = self.cmd("INFO", section)
        if reply is None or reply.startswith("-"):
            return {}
        return dict(l.split(":", 1) for l in reply.splitlines() if ":" in l)
def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))] if values else 0
'

# CPU time of process $1 so far, all threads (exited ones included), in ns.
cpu_ns() {
  awk -v tck="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e9 / tck}' "/proc/$1/stat"
}

# CPU time (µs) process $1 spends per request while redis-benchmark sends
# $2 requests with the arguments that follow.
cpu_us_per_request() {
  local pid=$1 n=$2 cpu0 cpu1
  shift 2
  cpu0=$(cpu_ns "$pid")
  redis-benchmark -n "$n" "$@" >/dev/null 2>&1
  cpu1=$(cpu_ns "$pid")
  python3 -c "print(($cpu1 - $cpu0) / 1e3 / $n)"
}

# The PIDs of the servers a bench started; kill_servers_at_exit kills them
# when it exits, however it exits.
pids=()
kill_servers_at_exit() {
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
}

# Starts redis-server and keel-server side by side on free ports with the
# same memory settings (1 GB, noeviction; keel also takes $KEEL_ARGS), sets
# $redis_port and $keel_port, and waits until both listen.
start_redis_and_keel() {
  local common=(--bind 127.0.0.1 --maxmemory 1gb --maxmemory-policy noeviction)
  redis_port=$(free_port)
  redis-server --port "$redis_port" "${common[@]}" --save "" --appendonly no >/dev/null 2>&1 &
  pids+=($!)
  keel_port=$(free_port)
  # shellcheck disable=SC2086
  "$keel" --port "$keel_port" "${common[@]}" ${KEEL_ARGS:-} 2>/dev/null &
  pids+=($!)
  wait_port "$redis_port"
  wait_port "$keel_port"
}

# Stops the server on port $1 (PID $2) with SHUTDOWN NOSAVE and waits for it.
stop() {
  redis-cli -p "$1" shutdown nosave >/dev/null 2>&1 || true
  wait "$2" 2>/dev/null || true
}

cli() { redis-cli -p "$@"; }
