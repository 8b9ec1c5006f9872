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

# A free TCP port on the loopback interface.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until something listens on loopback port $1; exits the script if
# nothing does within 5 s.
wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
    sleep 0.05
  done
  echo "no server listening on port $1" >&2
  exit 1
}

# Resident memory of process $1, in KB.
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

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

# Prints its arguments and appends them to $out.txt (the run's record).
record() { echo "$*" | tee -a "$out.txt"; }
