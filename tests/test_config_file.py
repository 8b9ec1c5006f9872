"""Configuration as a Redis user brings it: the redis.conf Debian's redis-server package installs,
the directives of Redis 7.0 keel accepts (CONFIG GET / CONFIG SET with Redis's checks and value
format), the `*-ziplist-*` and `slave-*` aliases, `include`, and the process directives (`dir`,
`pidfile`, `daemonize`, `protected-mode`)."""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from support import OK, PONG, Err, RespConn, config_dict, free_port, info

DEBIAN_REDIS_CONF = Path("/etc/redis/redis.conf")


def failed(name, why):
    return Err(f"ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")


def wait_for_ping(port, proc=None, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with RespConn(port, timeout=2) as c:
                return c.call("PING") == PONG
        except OSError:
            time.sleep(0.05)
    return False


def debian_redis_conf(workdir: Path) -> Path:
    """The file the redis-server package installs; where the test user may not read it (it is
    redis:redis 0640), its exact text copied with sudo."""
    if not DEBIAN_REDIS_CONF.exists():
        pytest.fail(f"{DEBIAN_REDIS_CONF} not found: install Debian's redis-server package")
    if os.access(DEBIAN_REDIS_CONF, os.R_OK):
        return DEBIAN_REDIS_CONF
    copy = workdir / "redis.conf"
    copy.write_bytes(subprocess.run(["sudo", "-n", "cat", str(DEBIAN_REDIS_CONF)],
                                     check=True, capture_output=True).stdout)
    return copy


@pytest.fixture
def debian_server(server_kind, keel_bin):
    """The server started with Debian's redis.conf, unchanged. Overridden on the command line,
    only what a test must: `port` (a free one), `daemonize no` (the file says yes: the test
    keeps the process), and `pidfile`, `logfile`, `dir` (the file's are under /run, /var/log
    and /var/lib, which need root) moved into a temporary folder."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{server_kind}-debian-"))
    conf = debian_redis_conf(workdir)
    port = free_port()
    exe = str(keel_bin) if server_kind == "keel" else shutil.which("redis-server")
    argv = [exe, str(conf), "--port", str(port), "--daemonize", "no",
            "--pidfile", str(workdir / "server.pid"), "--logfile", str(workdir / "server.log"),
            "--dir", str(workdir)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, cwd=workdir)
    try:
        if not wait_for_ping(port, proc):
            proc.kill()
            output = proc.communicate()[0].decode(errors="replace")
            log = (workdir / "server.log").read_text(errors="replace") \
                if (workdir / "server.log").exists() else ""
            pytest.fail(f"{' '.join(argv)} did not start:\n{output}\n{log}")
        yield proc, port, workdir, conf
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=20)
        shutil.rmtree(workdir, ignore_errors=True)


def test_debian_redis_conf_starts_and_is_honoured(debian_server):
    proc, port, workdir, conf = debian_server
    with RespConn(port) as c:
        assert c.call("SET", "k", "v") == OK
        assert c.call("GET", "k") == b"v"
        got = config_dict(c.call("CONFIG", "GET", "*"))
        # Values the file sets, as CONFIG GET shows them.
        expected = {
            b"protected-mode": b"yes", b"tcp-backlog": b"511", b"timeout": b"0",
            b"tcp-keepalive": b"300", b"loglevel": b"notice", b"databases": b"16",
            b"always-show-logo": b"no", b"stop-writes-on-bgsave-error": b"yes",
            b"rdbcompression": b"yes", b"dbfilename": b"dump.rdb",
            b"replica-serve-stale-data": b"yes", b"repl-diskless-sync-delay": b"5",
            b"repl-diskless-load": b"disabled", b"appendonly": b"no",
            b"appendfsync": b"everysec", b"auto-aof-rewrite-min-size": b"67108864",
            b"slowlog-log-slower-than": b"10000", b"latency-monitor-threshold": b"0",
            b"hash-max-listpack-entries": b"512", b"hash-max-ziplist-entries": b"512",
            b"list-max-listpack-size": b"-2", b"zset-max-listpack-value": b"64",
            b"hll-sparse-max-bytes": b"3000", b"activerehashing": b"yes", b"hz": b"10",
            b"dynamic-hz": b"yes", b"oom-score-adj-values": b"0 200 800",
            b"client-output-buffer-limit":
                b"normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
            b"bind": b"127.0.0.1 -::1", b"daemonize": b"no",
            b"dir": str(workdir).encode(), b"pidfile": str(workdir / "server.pid").encode(),
            b"logfile": str(workdir / "server.log").encode(),
        }
        assert {k: got.get(k) for k in expected} == expected
        assert info(c, "server")["config_file"] == str(conf)
    assert (workdir / "server.pid").read_text().strip() == str(proc.pid)
    assert (workdir / "server.log").stat().st_size > 0


def test_pidfile_is_removed_at_exit(debian_server):
    proc, port, workdir, _ = debian_server
    assert (workdir / "server.pid").exists()
    proc.terminate()
    assert proc.wait(timeout=20) == 0
    assert not (workdir / "server.pid").exists()


# -- directives Redis 7.0 has, through CONFIG GET / CONFIG SET ----------------------------------


@pytest.mark.parametrize("name,value,shown", [
    ("save", "100 10 60 0", "100 10 60 0"),
    ("save", "", ""),
    ("appendonly", "no", "no"),
    ("appendfsync", "ALWAYS", "always"),
    ("auto-aof-rewrite-min-size", "32mb", "33554432"),
    ("auto-aof-rewrite-percentage", "50", "50"),
    ("repl-backlog-size", "2mb", "2097152"),
    ("repl-diskless-load", "swapdb", "swapdb"),
    ("replica-read-only", "no", "no"),
    ("activerehashing", "no", "no"),
    ("hz", "20", "20"),
    ("dynamic-hz", "no", "no"),
    ("activedefrag", "no", "no"),
    ("busy-reply-threshold", "1000", "1000"),
    ("lua-time-limit", "2000", "2000"),
    ("shutdown-on-sigterm", "nosave force now", "nosave now force"),
    ("shutdown-on-sigint", "default", "default"),
    ("oom-score-adj", "relative", "yes"),
    ("oom-score-adj", "absolute", "absolute"),
    ("oom-score-adj-values", "1 2 3", "1 2 3"),
    ("stream-node-max-bytes", "8kb", "8192"),
    ("latency-monitor-threshold", "100", "100"),
    ("maxmemory-samples", "10", "10"),
    ("sanitize-dump-payload", "clients", "clients"),
    ("protected-mode", "no", "no"),
    ("jemalloc-bg-thread", "no", "no"),
    ("tls-port", "0", "0"),
])
def test_config_set_get_redis_directives(c, restore_config, name, value, shown):
    restore_config(name)
    assert c.call("CONFIG", "SET", name, value) == OK
    assert c.call("CONFIG", "GET", name) == [name.encode(), shown.encode()]


@pytest.mark.parametrize("name,value,why", [
    ("save", "0 1", "Invalid save parameters"),
    ("save", "100", "Invalid save parameters"),
    ("appendonly", "maybe", "argument must be 'yes' or 'no'"),
    ("hz", "x", "argument couldn't be parsed into an integer"),
    ("active-defrag-cycle-min", "100", "argument must be between 1 and 99 inclusive"),
    ("repl-backlog-size", "lots", "argument must be a memory value"),
    ("appendfsync", "sometimes", "argument(s) must be one of the following: everysec, always, no"),
    ("shutdown-on-sigint", "later",
     "argument(s) must be one of the following: default, save, nosave, now, force"),
    ("daemonize", "yes", "can't set immutable config"),
    ("supervised", "systemd", "can't set immutable config"),
    ("pidfile", "/tmp/elsewhere.pid", "can't set immutable config"),
    ("dir", "/tmp", "can't set protected config"),
    ("dbfilename", "x.rdb", "can't set protected config"),
])
def test_config_set_errors_as_redis(c, name, value, why):
    assert c.call("CONFIG", "SET", name, value) == failed(name, why)


def test_config_get_every_directive_can_be_set_back(c):
    """What Redis's CONFIG sanity test does: each value CONFIG GET * shows, CONFIG SET takes."""
    start_only = {"daemonize", "pidfile", "logfile", "supervised", "dir", "dbfilename",
                  "requirepass", "enable-protected-configs", "enable-debug-command"}
    before = config_dict(c.call("CONFIG", "GET", "*"))
    for name, value in before.items():
        if name.decode() in start_only:
            continue
        reply = c.call("CONFIG", "SET", name, value)
        if reply != OK and b"immutable" in str(reply).encode():
            continue  # Redis refuses start-up-only directives whatever the value
        assert reply == OK, (name, value, reply)
    assert config_dict(c.call("CONFIG", "GET", "*")) == before


# -- aliases ---------------------------------------------------------------------------------


@pytest.mark.parametrize("alias,name", [
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("slave-priority", "replica-priority"),
    ("slave-read-only", "replica-read-only"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("min-slaves-to-write", "min-replicas-to-write"),
])
def test_alias_sets_and_shows_the_directive(c, restore_config, alias, name):
    restore_config(name)
    value = {"slave-read-only": b"no", "list-max-ziplist-size": b"7"}.get(alias, b"3")
    assert c.call("CONFIG", "SET", alias, value) == OK
    assert c.call("CONFIG", "GET", name) == [name.encode(), value]
    assert c.call("CONFIG", "GET", alias) == [alias.encode(), value]


def test_config_get_pattern_lists_aliases_under_their_names(c):
    got = config_dict(c.call("CONFIG", "GET", "*ziplist*"))
    assert set(got) == {b"hash-max-ziplist-entries", b"hash-max-ziplist-value",
                        b"zset-max-ziplist-entries", b"zset-max-ziplist-value",
                        b"list-max-ziplist-size"}
    res = config_dict(c.call("CONFIG", "GET", "maxmemory", "*of"))
    assert {b"maxmemory", b"replicaof", b"slaveof"} <= set(res)


def test_ziplist_aliases_in_a_file_are_honoured(start_server):
    srv = start_server(config_text="hash-max-ziplist-entries 2\nzset-max-ziplist-entries 2\n"
                                   "hash-max-ziplist-value 8\n")
    with srv.conn() as c:
        assert c.call("HSET", "small", "a", "1", "b", "2") == 2
        assert c.call("OBJECT", "ENCODING", "small") == b"listpack"
        assert c.call("HSET", "big", "a", "1", "b", "2", "c", "3") == 3
        assert c.call("OBJECT", "ENCODING", "big") == b"hashtable"
        assert c.call("HSET", "long", "a", "123456789") == 1
        assert c.call("OBJECT", "ENCODING", "long") == b"hashtable"
        assert c.call("ZADD", "z", "1", "a", "2", "b", "3", "c") == 3
        assert c.call("OBJECT", "ENCODING", "z") == b"skiplist"


def test_directive_and_alias_together_last_wins(c, restore_config):
    restore_config("hash-max-listpack-entries")
    assert c.call("CONFIG", "SET", "hash-max-ziplist-entries", "5",
                  "hash-max-listpack-entries", "6") == OK
    assert c.call("CONFIG", "GET", "hash-max-listpack-entries") == [
        b"hash-max-listpack-entries", b"6"]
    assert c.call("CONFIG", "SET", "hz", "5", "HZ", "6") == failed("HZ", "duplicate parameter")


# -- files and the command line -----------------------------------------------------------------


def test_include_reads_files_matching_a_pattern(start_server, tmp_path):
    (tmp_path / "a.conf").write_text("hz 20\n")
    (tmp_path / "b.conf").write_text("hz 30\nslowlog-max-len 7\n")
    (tmp_path / "skip.txt").write_text("hz 40\n")
    srv = start_server(config_text=f"hz 10\ninclude {tmp_path}/*.conf\n")
    with srv.conn() as c:
        assert c.call("CONFIG", "GET", "hz") == [b"hz", b"30"]
        assert c.call("CONFIG", "GET", "slowlog-max-len") == [b"slowlog-max-len", b"7"]


def test_save_with_no_value_on_the_command_line_is_empty(start_server):
    srv = start_server(extra_args=["--save", "--loglevel", "verbose"])
    with srv.conn() as c:
        assert c.call("CONFIG", "GET", "save") == [b"save", b""]
        assert c.call("CONFIG", "GET", "loglevel") == [b"loglevel", b"verbose"]


@pytest.mark.keel_differs(reason="keel refuses directives it would silently not honour")
@pytest.mark.parametrize("line,needle", [
    ("rename-command CONFIG \"\"", "rename-command"),
    ("unixsocket /tmp/keel.sock", "Unix socket"),
    ("tls-port 6380", "TLS"),
    ("loadmodule /x.so", "modules"),
])
def test_directives_keel_cannot_honour_stop_start_up(run_to_exit, tmp_path, line, needle):
    conf = tmp_path / "keel.conf"
    conf.write_text(f"port 0\n{line}\n")
    code, output = run_to_exit(str(conf))
    assert code != 0
    assert needle in output


def test_dir_that_does_not_exist_stops_start_up(run_to_exit):
    code, output = run_to_exit("--port", "0", "--dir", "/nonexistent/keel-dir")
    assert code != 0
    assert "/nonexistent/keel-dir" in output


def test_dir_is_the_working_directory(start_server, tmp_path):
    srv = start_server({"dir": str(tmp_path), "enable-protected-configs": "yes"})
    with srv.conn() as c:
        assert c.call("CONFIG", "GET", "dir") == [b"dir", str(tmp_path).encode()]
        sub = tmp_path / "sub"
        sub.mkdir()
        assert c.call("CONFIG", "SET", "dir", str(sub)) == OK
        assert c.call("CONFIG", "GET", "dir") == [b"dir", str(sub).encode()]
        assert c.call("CONFIG", "SET", "dir", "/nonexistent/x") == failed(
            "dir", "No such file or directory")
        assert c.call("CONFIG", "GET", "dir") == [b"dir", str(sub).encode()]


def test_config_set_port_and_bind_move_the_listener(start_server):
    srv = start_server()
    new_port = free_port()
    with srv.conn() as c:
        assert c.call("SET", "k", "v") == OK
        assert c.call("CONFIG", "SET", "port", str(new_port)) == OK
        # The connection that asked stays; the old port no longer takes new ones.
        assert c.call("GET", "k") == b"v"
        assert c.call("CONFIG", "GET", "port") == [b"port", str(new_port).encode()]
    with RespConn(new_port) as moved:
        assert info(moved, "server")["tcp_port"] == str(new_port)
        with pytest.raises(OSError):
            RespConn(srv.port, timeout=2)
        # Binding a port in use fails and changes nothing.
        assert moved.call("CONFIG", "SET", "maxmemory", "12345", "port", str(new_port + 0),
                          "bind", "127.0.0.1 -::1") == OK
        import socket
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            used = taken.getsockname()[1]
            reply = moved.call("CONFIG", "SET", "maxmemory", "54321", "port", str(used))
            assert isinstance(reply, Err) and reply.startswith(
                "ERR CONFIG SET failed (possibly related to argument 'port') - "
                "Unable to listen on this port"), reply
        assert moved.call("CONFIG", "GET", "maxmemory") == [b"maxmemory", b"12345"]
        assert moved.call("CONFIG", "GET", "port") == [b"port", str(new_port).encode()]
        assert moved.call("CONFIG", "SET", "bind", "127.0.0.1") == OK
    with RespConn(new_port) as again:
        assert again.call("PING") == PONG
    srv.port = new_port  # so the fixture stops it where it listens now


def test_daemonize_detaches_and_writes_the_pidfile(server_kind, keel_bin, tmp_path):
    port = free_port()
    exe = str(keel_bin) if server_kind == "keel" else shutil.which("redis-server")
    pidfile = tmp_path / "server.pid"
    argv = [exe, "--port", str(port), "--daemonize", "yes", "--pidfile", str(pidfile),
            "--logfile", str(tmp_path / "server.log"), "--dir", str(tmp_path)]
    launcher = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    assert launcher.returncode == 0, launcher
    try:
        assert wait_for_ping(port)
        deadline = time.monotonic() + 10
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        with RespConn(port) as c:
            assert int(info(c, "server")["process_id"]) == pid
            assert c.call("CONFIG", "GET", "daemonize") == [b"daemonize", b"yes"]
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), 15)
    deadline = time.monotonic() + 20
    while pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pidfile.exists()


def test_protected_mode_refuses_remote_clients_without_a_password(start_server):
    """Only a non-loopback address shows it: the test connects to one of the machine's own."""
    import socket
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # picks the outgoing address; sends nothing
            address = s.getsockname()[0]
    except OSError:
        address = "127.0.0.1"
    if address.startswith("127."):
        pytest.skip("no non-loopback IPv4 address on this machine")
    srv = start_server({"bind": f"127.0.0.1 {address}"})
    with RespConn(srv.port, host=address) as c:
        reply = c.call("PING")
        assert isinstance(reply, Err) and reply.startswith("DENIED Redis is running in protected mode")
    with srv.conn() as local:
        assert local.call("CONFIG", "SET", "protected-mode", "no") == OK
    with RespConn(srv.port, host=address) as c:
        assert c.call("PING") == PONG


def test_save_lines_add_up_and_the_command_line_adds_more(server_kind, keel_bin, tmp_path):
    """As in Redis: the first `save` read replaces the default, later ones add to it.
    (Started by hand: the fixtures give Redis `--save ""`, which would clear them.)"""
    conf = tmp_path / "server.conf"
    conf.write_text("save 900 1\nsave 300 10\n")
    port = free_port()
    exe = str(keel_bin) if server_kind == "keel" else shutil.which("redis-server")
    proc = subprocess.Popen([exe, str(conf), "--port", str(port), "--dir", str(tmp_path),
                             "--save", "60 5"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for_ping(port, proc)
        with RespConn(port) as c:
            assert c.call("CONFIG", "GET", "save") == [b"save", b"900 1 300 10 60 5"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_supervised_systemd_notifies_ready(server_kind, keel_bin, tmp_path):
    import socket
    notify_path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(str(notify_path))
        notify.settimeout(20)
        port = free_port()
        exe = str(keel_bin) if server_kind == "keel" else shutil.which("redis-server")
        env = dict(os.environ, NOTIFY_SOCKET=str(notify_path))
        proc = subprocess.Popen([exe, "--port", str(port), "--supervised", "systemd",
                                 "--daemonize", "yes", "--dir", str(tmp_path)],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            messages = b""
            while b"READY=1" not in messages:
                messages += notify.recv(4096)
            # Supervised, daemonize is ignored: the process systemd started is the server.
            assert proc.poll() is None
            assert wait_for_ping(port, proc)
            with RespConn(port) as c:
                assert c.call("CONFIG", "GET", "supervised") == [b"supervised", b"systemd"]
        finally:
            proc.terminate()
            assert proc.wait(timeout=20) == 0
