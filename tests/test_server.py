"""Server commands (COMMAND, CONFIG, INFO, DBSIZE, FLUSHDB/FLUSHALL, TIME, DEBUG,
SHUTDOWN) and start-up behaviour (directives, config file, signals)."""

import fnmatch
import random
import re
import threading
import time
from pathlib import Path

import pytest

from support import OK, PONG, Err, Status, config_dict, info, info_dict, info_fields

ARITY = "ERR wrong number of arguments for '{}' command"


# -- COMMAND -----------------------------------------------------------------


def command_entry(c, name):
    reply = c.call("COMMAND", "INFO", name)
    assert len(reply) == 1 and reply[0] is not None, reply
    return reply[0]


@pytest.mark.parametrize("name,arity,flags,categories", [
    ("get", 2, {"readonly", "fast"}, {"@read", "@string", "@fast"}),
    ("set", -3, {"write", "denyoom"}, {"@write", "@string", "@slow"}),
    ("mget", -2, {"readonly", "fast"}, {"@read", "@string", "@fast"}),
    ("del", -2, {"write"}, {"@keyspace", "@write", "@slow"}),
    ("ping", -1, {"fast"}, {"@fast", "@connection"}),
])
def test_command_info_known_entries(c, name, arity, flags, categories):
    entry = command_entry(c, name)
    assert entry[0] == name.encode()
    assert entry[1] == arity
    assert all(isinstance(f, Status) for f in entry[2])
    assert set(entry[2]) == {Status(f) for f in flags}
    if name in ("get", "set"):
        assert entry[3:6] == [1, 1, 1]  # first key, last key, step
    assert {Status(cat) for cat in categories} <= set(entry[6])


def test_command_info_is_case_insensitive_and_ordered(c):
    reply = c.call("COMMAND", "INFO", "GET", "nosuchcommand", "Set")
    assert [e[0] if e else None for e in reply] == [b"get", None, b"set"]


def test_command_count_matches_command(c):
    count = c.call("COMMAND", "COUNT")
    everything = c.call("COMMAND")
    assert isinstance(count, int) and count == len(everything)
    names = {entry[0] for entry in everything}
    assert {b"get", b"set", b"ping", b"command", b"config"} <= names
    for entry in everything:
        assert isinstance(entry[0], bytes) and isinstance(entry[1], int)


def test_command_list(c):
    names = c.call("COMMAND", "LIST")
    assert all(isinstance(n, bytes) for n in names)
    assert {b"get", b"set", b"incrbyfloat", b"config|get", b"client|id"} <= set(names)
    top_level = {entry[0] for entry in c.call("COMMAND")}
    assert top_level <= set(names)


def test_command_list_filterby_pattern(c):
    names = c.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "get*")
    assert {b"get", b"getex", b"getdel", b"getrange", b"getset"} <= set(names)
    assert all(fnmatch.fnmatchcase(n.decode(), "get*") for n in names)


def test_command_docs(c):
    reply = c.call("COMMAND", "DOCS", "get")
    assert reply[0] == b"get"
    doc = dict(zip(reply[1][::2], reply[1][1::2]))
    assert doc[b"group"] == b"string"
    assert doc[b"summary"]
    assert c.call("COMMAND", "DOCS", "nosuchcommand") == []


@pytest.mark.parametrize("args,error", [
    (("FOO",), "ERR unknown subcommand 'FOO'. Try COMMAND HELP."),
    (("COUNT", "x"), ARITY.format("command|count")),
    (("LIST", "x"), "ERR syntax error"),
])
def test_command_errors(c, args, error):
    assert c.call("COMMAND", *args) == Err(error)


# -- CONFIG ------------------------------------------------------------------


# keel deliberately starts with a 1gb memory budget where Redis has no limit, so
# that an unconfigured cache cannot grow until the machine swaps.
DEFAULT_MAXMEMORY = {"redis": b"0", "keel": b"1073741824"}


# keel evicts with its own policy by default (a full cache that refuses
# writes is rarely what a cache wants); Redis refuses writes.
DEFAULT_POLICY = {"redis": b"noeviction", "keel": b"allkeys-s3fifo"}
POLICY_NAMES = {
    "redis": "volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, "
             "allkeys-lfu, allkeys-random, noeviction",
}
POLICY_NAMES["keel"] = POLICY_NAMES["redis"] + ", allkeys-s3fifo"


def test_default_maxmemory(c, server_kind):
    assert c.call("CONFIG", "GET", "maxmemory") == [b"maxmemory", DEFAULT_MAXMEMORY[server_kind]]
    assert info(c, "memory")["maxmemory"] == DEFAULT_MAXMEMORY[server_kind].decode()


def test_config_get_glob(c, server_kind):
    values = config_dict(c.call("CONFIG", "GET", "maxmemory*"))
    assert {b"maxmemory", b"maxmemory-policy"} <= set(values)
    assert all(fnmatch.fnmatchcase(k.decode(), "maxmemory*") for k in values)
    assert values[b"maxmemory"].isdigit()
    assert values[b"maxmemory-policy"] == DEFAULT_POLICY[server_kind]


def test_config_get_several_and_unknown(c):
    values = config_dict(c.call("CONFIG", "GET", "databases", "nosuchoption", "timeout"))
    assert values == {b"databases": b"16", b"timeout": b"0"}
    assert c.call("CONFIG", "GET", "nosuchoption") == []


def test_config_get_supported_directives(c, server, server_kind):
    expected = {
        b"bind": b"127.0.0.1",
        b"port": str(server.port).encode(),
        b"databases": b"16",
        b"requirepass": b"",
        b"maxmemory-policy": DEFAULT_POLICY[server_kind],
        b"timeout": b"0",
        b"tcp-keepalive": b"300",
        b"loglevel": b"notice",
        b"logfile": b"",
        b"proto-max-bulk-len": b"536870912",
    }
    values = config_dict(c.call("CONFIG", "GET", *expected))
    assert values == expected


@pytest.mark.parametrize("name,value,stored", [
    ("maxmemory", "1gb", b"1073741824"),
    ("maxmemory", "1GB", b"1073741824"),
    ("maxmemory", "100mb", b"104857600"),
    ("maxmemory", "12345", b"12345"),
    ("maxmemory-policy", "allkeys-lru", b"allkeys-lru"),
    ("maxmemory-policy", "VOLATILE-TTL", b"volatile-ttl"),
    ("timeout", "300", b"300"),
    ("tcp-keepalive", "60", b"60"),
    ("loglevel", "warning", b"warning"),
])
def test_config_set(c, restore_config, name, value, stored):
    restore_config(name)
    assert c.call("CONFIG", "SET", name, value) == OK
    assert c.call("CONFIG", "GET", name) == [name.encode(), stored]


def test_config_set_several_at_once(c, restore_config):
    restore_config("maxmemory", "maxmemory-policy")
    assert c.call("CONFIG", "SET", "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru") == OK
    assert config_dict(c.call("CONFIG", "GET", "maxmemory*"))[b"maxmemory-policy"] == b"allkeys-lru"
    assert c.call("CONFIG", "GET", "maxmemory") == [b"maxmemory", b"104857600"]


def test_config_set_is_all_or_nothing(c, restore_config):
    restore_config("maxmemory")
    before = c.call("CONFIG", "GET", "maxmemory")
    assert c.call("CONFIG", "SET", "maxmemory", "1mb", "nosuchoption", "1") == Err(
        "ERR Unknown option or number of arguments for CONFIG SET - 'nosuchoption'")
    assert c.call("CONFIG", "GET", "maxmemory") == before


def config_set_failed(name, why):
    return Err(f"ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")


@pytest.mark.parametrize("args,error", [
    (("nosuchoption", "1"),
     Err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuchoption'")),
    (("maxmemory", "abc"), config_set_failed("maxmemory", "argument must be a memory value")),
    (("maxmemory", "-1"), config_set_failed("maxmemory", "argument must be a memory value")),
    (("maxmemory", "1.5gb"), config_set_failed("maxmemory", "argument must be a memory value")),
    (("timeout", "-1"), config_set_failed(
        "timeout", "argument must be between 0 and 2147483647 inclusive")),
    (("tcp-keepalive", "abc"), config_set_failed(
        "tcp-keepalive", "argument couldn't be parsed into an integer")),
    (("loglevel", "loud"), config_set_failed(
        "loglevel", "argument(s) must be one of the following: debug, verbose, notice, warning")),
    (("proto-max-bulk-len", "1"), config_set_failed(
        "proto-max-bulk-len", "argument must be between 1048576 and 9223372036854775807 inclusive")),
    (("databases", "4"), config_set_failed("databases", "can't set immutable config")),
    (("tcp-backlog", "100"), config_set_failed("tcp-backlog", "can't set immutable config")),
    (("maxmemory", "10", "maxmemory", "20"), config_set_failed("maxmemory", "duplicate parameter")),
    (("maxmemory", "1mb", "timeout"), Err("ERR syntax error")),
    (("maxmemory",), Err(ARITY.format("config|set"))),
])
def test_config_set_errors(c, restore_config, args, error):
    restore_config("maxmemory", "timeout")
    assert c.call("CONFIG", "SET", *args) == error


def test_config_set_unknown_policy_lists_the_policies(c, server_kind):
    assert c.call("CONFIG", "SET", "maxmemory-policy", "foo") == config_set_failed(
        "maxmemory-policy", "argument(s) must be one of the following: " + POLICY_NAMES[server_kind])


@pytest.mark.parametrize("args,error", [
    ((), ARITY.format("config")),
    (("GET",), ARITY.format("config|get")),
    (("RESETSTAT", "x"), ARITY.format("config|resetstat")),
    (("FOO",), "ERR unknown subcommand 'FOO'. Try CONFIG HELP."),
])
def test_config_errors(c, args, error):
    assert c.call("CONFIG", *args) == Err(error)


def test_config_resetstat(c):
    c.call("SET", "k", "v")
    c.call("GET", "k")
    c.call("GET", "missing")
    assert c.call("CONFIG", "RESETSTAT") == OK
    stats = info(c, "stats")
    assert stats["keyspace_hits"] == "0"
    assert stats["keyspace_misses"] == "0"
    assert "cmdstat_get" not in info(c, "commandstats")


# -- INFO --------------------------------------------------------------------

DASHBOARD_FIELDS = {
    "server": ["redis_version", "uptime_in_seconds"],
    "clients": ["connected_clients"],
    "memory": ["used_memory", "used_memory_human", "used_memory_rss", "used_memory_dataset",
               "maxmemory", "maxmemory_policy", "mem_fragmentation_ratio"],
    "stats": ["total_connections_received", "total_commands_processed",
              "instantaneous_ops_per_sec", "keyspace_hits", "keyspace_misses",
              "expired_keys", "evicted_keys"],
}


@pytest.mark.parametrize("section", sorted(DASHBOARD_FIELDS))
def test_info_section_fields(c, section):
    text = c.call("INFO", section)
    assert isinstance(text, bytes)
    lines = text.decode().split("\r\n")
    assert lines[0] == "# " + section.capitalize()
    assert [line for line in lines if line.startswith("#")] == [lines[0]]
    fields = info_dict(text)
    for name in DASHBOARD_FIELDS[section]:
        assert name in fields, f"INFO {section} lacks {name}"


def test_info_default_sections(c):
    text = c.call("INFO").decode()
    for header in ["# Server", "# Clients", "# Memory", "# Stats", "# Keyspace"]:
        assert header + "\r\n" in text
    assert "# Commandstats" not in text
    fields = info_dict(text)
    for names in DASHBOARD_FIELDS.values():
        for name in names:
            assert name in fields


@pytest.mark.parametrize("arg", ["all", "everything"])
def test_info_all_includes_commandstats(c, arg):
    c.call("GET", "k")
    text = c.call("INFO", arg).decode()
    assert "# Commandstats" in text and "# Server" in text
    assert "cmdstat_get:" in text


def test_info_several_sections(c):
    text = c.call("INFO", "server", "clients").decode()
    assert "# Server" in text and "# Clients" in text and "# Memory" not in text


def test_info_section_is_case_insensitive(c):
    assert c.call("INFO", "SERVER").decode().startswith("# Server\r\n")


def test_info_unknown_section_is_empty(c):
    assert c.call("INFO", "nosuchsection") == b""


def test_info_values(c, server, server_kind):
    fields = info(c)
    assert re.fullmatch(r"\d+\.\d+\.\d+", fields["redis_version"])
    assert int(fields["uptime_in_seconds"]) >= 0
    assert int(fields["connected_clients"]) >= 1
    assert int(fields["used_memory"]) > 0
    assert int(fields["used_memory_rss"]) > 0
    assert int(fields["used_memory_dataset"]) >= 0
    assert re.fullmatch(r"\d+(\.\d+)?[BKMGTP]", fields["used_memory_human"])
    assert fields["maxmemory"] == c.call("CONFIG", "GET", "maxmemory")[1].decode()
    assert fields["maxmemory_policy"] == DEFAULT_POLICY[server_kind].decode()
    assert float(fields["mem_fragmentation_ratio"]) >= 0
    assert int(fields["instantaneous_ops_per_sec"]) >= 0
    assert int(fields["total_commands_processed"]) > 0
    assert int(fields["evicted_keys"]) == 0


def test_info_memory_follows_config(c, restore_config):
    restore_config("maxmemory", "maxmemory-policy")
    c.call("CONFIG", "SET", "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru")
    fields = info(c, "memory")
    assert fields["maxmemory"] == "104857600"
    assert fields["maxmemory_policy"] == "allkeys-lru"


def test_info_clients_and_connections(c, connect):
    before = info(c, "stats", "clients")
    extra = [connect() for _ in range(3)]
    for conn in extra:
        assert conn.call("PING") == PONG
    after = info(c, "stats", "clients")
    # Connections of earlier tests may still be closing, so only a lower bound is exact.
    assert int(after["connected_clients"]) >= 4
    assert int(after["total_connections_received"]) >= int(before["total_connections_received"]) + 3
    assert int(after["total_commands_processed"]) > int(before["total_commands_processed"])


def test_info_keyspace_hits_and_misses(c):
    c.call("SET", "k", "v")
    c.call("CONFIG", "RESETSTAT")
    c.call("GET", "k")
    c.call("GET", "k")
    c.call("GET", "missing")
    stats = info(c, "stats")
    assert stats["keyspace_hits"] == "2"
    assert stats["keyspace_misses"] == "1"


def test_info_expired_keys(c):
    c.call("CONFIG", "RESETSTAT")
    c.call("SET", "k", "v", "PX", "1")
    time.sleep(0.05)
    assert c.call("GET", "k") is None
    assert int(info(c, "stats")["expired_keys"]) >= 1


def test_info_keyspace(c):
    assert c.call("INFO", "keyspace") == b"# Keyspace\r\n"
    c.call("MSET", "a", "1", "b", "2")
    c.call("SET", "c", "3", "EX", "1000")
    c.call("SELECT", "3")
    c.call("SET", "d", "4")
    fields = info(c, "keyspace")
    assert set(fields) == {"db0", "db3"}
    db0 = info_fields(fields["db0"])
    assert list(db0) == ["keys", "expires", "avg_ttl"]
    assert db0["keys"] == "3" and db0["expires"] == "1"
    assert int(db0["avg_ttl"]) >= 0
    assert info_fields(fields["db3"]) == {"keys": "1", "expires": "0", "avg_ttl": "0"}


def test_info_commandstats(c):
    c.call("SET", "n", "notanumber")
    assert c.call("CONFIG", "RESETSTAT") == OK
    for _ in range(3):
        c.call("GET", "n")
    c.call("GET")  # wrong arity: rejected before execution
    c.call("INCR", "n")  # fails during execution
    fields = info(c, "commandstats")
    get = info_fields(fields["cmdstat_get"])
    assert list(get) == ["calls", "usec", "usec_per_call", "rejected_calls", "failed_calls"]
    assert get["calls"] == "3"
    assert get["rejected_calls"] == "1"
    assert get["failed_calls"] == "0"
    assert int(get["usec"]) >= 0
    assert re.fullmatch(r"\d+\.\d\d", get["usec_per_call"])
    incr = info_fields(fields["cmdstat_incr"])
    assert incr["calls"] == "1" and incr["failed_calls"] == "1"
    assert "cmdstat_set" not in fields


# -- DBSIZE / FLUSHDB / FLUSHALL -----------------------------------------------


def test_dbsize(c):
    assert c.call("DBSIZE") == 0
    c.call("MSET", "a", "1", "b", "2")
    assert c.call("DBSIZE") == 2
    c.call("SELECT", "1")
    assert c.call("DBSIZE") == 0
    assert c.call("DBSIZE", "x") == Err(ARITY.format("dbsize"))


def fill_two_dbs(c):
    c.call("SELECT", "0")
    c.call("MSET", "a", "1", "b", "2")
    c.call("SELECT", "1")
    c.call("SET", "c", "3", "EX", "100")


@pytest.mark.parametrize("mode", [(), ("SYNC",), ("ASYNC",), ("async",)])
def test_flushdb_only_current_db(c, mode):
    fill_two_dbs(c)
    assert c.call("FLUSHDB", *mode) == OK
    assert c.call("DBSIZE") == 0
    c.call("SELECT", "0")
    assert c.call("DBSIZE") == 2


@pytest.mark.parametrize("mode", [(), ("SYNC",), ("ASYNC",)])
def test_flushall(c, mode):
    fill_two_dbs(c)
    assert c.call("FLUSHALL", *mode) == OK
    assert c.call("DBSIZE") == 0
    c.call("SELECT", "0")
    assert c.call("DBSIZE") == 0
    assert c.call("GET", "a") is None


@pytest.mark.parametrize("cmd", ["FLUSHDB", "FLUSHALL"])
@pytest.mark.parametrize("args", [("foo",), ("ASYNC", "SYNC")])
def test_flush_syntax_error(c, cmd, args):
    c.call("SET", "k", "v")
    assert c.call(cmd, *args) == Err("ERR syntax error")
    assert c.call("DBSIZE") == 1


# -- TIME / DEBUG ----------------------------------------------------------------


def test_time(c):
    reply = c.call("TIME")
    assert len(reply) == 2 and all(isinstance(x, bytes) for x in reply)
    seconds, micros = int(reply[0]), int(reply[1])
    assert abs(seconds - time.time()) < 600  # same clock, generous margin
    assert 0 <= micros < 1_000_000
    assert c.call("TIME", "x") == Err(ARITY.format("time"))


@pytest.mark.parametrize("seconds", ["0", "0.01", "0.1"])
def test_debug_sleep(c, seconds):
    start = time.monotonic()
    assert c.call("DEBUG", "SLEEP", seconds) == OK
    assert time.monotonic() - start >= float(seconds)


def test_debug_errors(c):
    assert c.call("DEBUG") == Err(ARITY.format("debug"))
    assert c.call("DEBUG", "SLEEP") == Err(
        "ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP.")


# -- SHUTDOWN --------------------------------------------------------------------


@pytest.mark.parametrize("args", [(), ("NOSAVE",)])
def test_shutdown(start_server, args):
    srv = start_server()
    with srv.conn() as conn:
        conn.send("SHUTDOWN", *args)
        assert conn.read_until_closed() == b""  # no reply: the server just goes away
    assert srv.wait() == 0


def test_shutdown_syntax_error_keeps_running(start_server):
    srv = start_server()
    with srv.conn() as conn:
        assert conn.call("SHUTDOWN", "foo") == Err("ERR syntax error")
        assert conn.call("PING") == PONG


# -- start-up ----------------------------------------------------------------------


def test_sigterm_exits_cleanly(start_server):
    srv = start_server()
    with srv.conn() as conn:
        assert conn.call("SET", "k", "v") == OK
    assert srv.stop() == 0


def thread_niceness(pid) -> dict:
    """Each thread name of process `pid`, with the nice values its threads have."""
    niceness = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name = (task / "comm").read_text().strip()
        # Fields after the parenthesised name start at field 3 (state); nice is field 19.
        nice = int((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
        niceness.setdefault(name, set()).add(nice)
    return niceness


@pytest.mark.keel_differs(reason="keel's own threads and their priorities")
def test_acceptor_ahead_of_workers_and_maintenance_behind(start_server):
    srv = start_server({"threads": "2", "loglevel": "notice"})
    with srv.conn() as conn:
        assert conn.call("PING") == PONG
    niceness = thread_niceness(srv.proc.pid)
    workers = niceness["keel-worker-0"] | niceness["keel-worker-1"]
    assert len(workers) == 1
    (acceptor,) = niceness["keel-server"]
    maintenance = "keel-maintenanc"  # thread names are cut to 15 bytes
    if "Accepting at the workers' priority" in srv.log_tail():
        # Not allowed to raise a priority: everything runs at the workers'.
        assert acceptor in workers
        assert niceness[maintenance] == workers
    else:
        assert acceptor < min(workers)
        # Between its short stretches of work, the maintenance thread is below the workers.
        deadline = time.monotonic() + 5
        while max(thread_niceness(srv.proc.pid)[maintenance]) <= min(workers):
            assert time.monotonic() < deadline
            time.sleep(0.01)


def test_startup_directives_are_applied(start_server):
    srv = start_server({
        "maxmemory": "10mb", "maxmemory-policy": "allkeys-lru", "timeout": "30",
        "tcp-keepalive": "60", "loglevel": "warning", "proto-max-bulk-len": "2mb",
        "databases": "4",
    })
    with srv.conn() as conn:
        values = config_dict(conn.call("CONFIG", "GET", "*"))
    assert values[b"maxmemory"] == b"10485760"
    assert values[b"maxmemory-policy"] == b"allkeys-lru"
    assert values[b"timeout"] == b"30"
    assert values[b"tcp-keepalive"] == b"60"
    assert values[b"loglevel"] == b"warning"
    assert values[b"proto-max-bulk-len"] == b"2097152"
    assert values[b"databases"] == b"4"


def test_config_file_with_command_line_override(start_server):
    conf = "# comment line\n\nmaxmemory 10mb\nmaxmemory-policy allkeys-lru\ndatabases 4\n"
    srv = start_server({"maxmemory": "20mb"}, config_text=conf)
    with srv.conn() as conn:
        values = config_dict(conn.call("CONFIG", "GET", "maxmemory*"))
        assert values[b"maxmemory"] == b"20971520"  # command line wins
        assert values[b"maxmemory-policy"] == b"allkeys-lru"
        assert conn.call("SELECT", "4") == Err("ERR DB index is out of range")


def test_config_file_requirepass(start_server):
    srv = start_server(config_text='requirepass "pass word"\n')
    with srv.conn() as conn:
        assert conn.call("GET", "k") == Err("NOAUTH Authentication required.")
        assert conn.call("AUTH", "pass word") == OK


def test_threads_directive(start_server):
    srv = start_server({"threads": "2"})
    with srv.conn() as conn:
        assert conn.call("PING") == PONG


def test_logfile_directive(start_server, tmp_path):
    logfile = tmp_path / "server.log"
    srv = start_server({"logfile": str(logfile), "loglevel": "notice"})
    with srv.conn() as conn:
        assert conn.call("CONFIG", "GET", "logfile") == [b"logfile", str(logfile).encode()]
    assert srv.stop() == 0
    assert logfile.stat().st_size > 0


def test_timeout_closes_idle_clients(start_server):
    srv = start_server({"timeout": "1"})
    with srv.conn() as conn:
        assert conn.call("PING") == PONG
        assert conn.is_closed()  # waits (with a generous limit) for the server to drop us


@pytest.mark.parametrize("args,needle", [
    (["--nosuch-directive", "1"], "nosuch-directive"),
    (["--maxmemory", "lots"], "maxmemory"),
    (["/nonexistent/keel.conf"], "/nonexistent/keel.conf"),
])
def test_bad_startup_arguments_exit_nonzero(run_to_exit, args, needle):
    code, output = run_to_exit(*args)
    assert code != 0
    assert needle in output


# -- maxmemory ------------------------------------------------------------------------


def fill(conn, count, size=10_000):
    """Write `count` values of `size` bytes; returns the replies."""
    value = b"x" * size
    return conn.pipeline([("SET", f"key:{i}", value) for i in range(count)])


def baseline_memory(conn) -> int:
    return int(info(conn, "memory")["used_memory"])


def test_maxmemory_noeviction_rejects_writes(start_server):
    srv = start_server({"maxmemory-policy": "noeviction"})
    with srv.conn() as conn:
        limit = baseline_memory(conn) + 2 * 1024 * 1024
        assert conn.call("CONFIG", "SET", "maxmemory", str(limit)) == OK
        replies = fill(conn, 1000)
        oom = Err("OOM command not allowed when used memory > 'maxmemory'.")
        assert oom in replies
        assert replies[0] == OK
        assert set(replies) <= {OK, oom}
        assert conn.call("GET", "key:0") == b"x" * 10_000  # reads still work
        assert conn.call("DEL", "key:0") == 1  # and deletes
        assert int(info(conn, "stats")["evicted_keys"]) == 0


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"])
def test_volatile_policies_evict_only_keys_with_a_ttl(start_server, policy):
    srv = start_server({"maxmemory-policy": policy})
    with srv.conn() as conn:
        limit = baseline_memory(conn) + 2 * 1024 * 1024
        assert conn.call("CONFIG", "SET", "maxmemory", str(limit)) == OK
        value = b"x" * 10_000
        kept = [f"keep:{i}" for i in range(100)]
        assert set(conn.pipeline([("SET", k, value) for k in kept])) == {OK}
        # Twice the 2 MB of room above the baseline in keys with a TTL, then
        # twice that again: the outcome does not hang on the baseline.
        assert set(conn.pipeline([("SET", f"ttl:{i}", value, "EX", "1000")
                                  for i in range(400)])) == {OK}
        assert int(info(conn, "stats")["evicted_keys"]) > 0
        # Once no key with a TTL is left, writes are refused rather than
        # evicting a key without one.
        replies = conn.pipeline([("SET", f"more:{i}", value) for i in range(800)])
        assert Err("OOM command not allowed when used memory > 'maxmemory'.") in replies
        assert conn.call("EXISTS", *kept) == len(kept)


def fill_past_limit(start_server, policy):
    """A server with `policy` filled with 10 MB of values against a 2 MB limit."""
    srv = start_server({"maxmemory-policy": policy})
    conn = srv.conn()
    limit = baseline_memory(conn) + 2 * 1024 * 1024
    assert conn.call("CONFIG", "SET", "maxmemory", str(limit)) == OK
    assert set(fill(conn, 1000)) == {OK}
    return conn


KEEL_POLICY = pytest.param("allkeys-s3fifo", marks=pytest.mark.keel_differs(
    reason="allkeys-s3fifo is keel's own policy"))


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-random", "allkeys-lfu", KEEL_POLICY])
def test_maxmemory_allkeys_eviction(start_server, policy):
    with fill_past_limit(start_server, policy) as conn:
        assert conn.call("DBSIZE") < 1000
        assert int(info(conn, "stats")["evicted_keys"]) > 0


@pytest.mark.keel_differs(reason="allkeys-s3fifo is keel's own policy")
def test_s3fifo_keeps_requested_keys_through_scans_larger_than_the_cache(start_server):
    # Each round writes 8,000 keys of 1 KB read once (more than the cache
    # holds), then reads the 1,000 hot keys, writing back any that went
    # (cache-aside). LRU loses most of the hot set in every round; S3-FIFO
    # counts the reads and lets the scan pass through its small queue.
    srv = start_server({"maxmemory-policy": "allkeys-s3fifo"})
    with srv.conn() as conn:
        limit = baseline_memory(conn) + 4 * 1024 * 1024
        assert conn.call("CONFIG", "SET", "maxmemory", str(limit)) == OK
        value = b"x" * 1000
        hot = [f"hot:{i}" for i in range(1000)]
        assert set(conn.pipeline([("SET", k, value) for k in hot])) == {OK}
        for round_ in range(5):
            conn.pipeline([("GET", k) for k in hot])
            scan = [("SET", f"scan:{round_}:{i}", value) for i in range(8000)]
            assert set(conn.pipeline(scan)) == {OK}
            missing = [k for k, v in zip(hot, conn.pipeline([("GET", k) for k in hot])) if v is None]
            conn.pipeline([("SET", k, value) for k in missing])
        assert int(info(conn, "stats")["evicted_keys"]) > 30_000
        kept = sum(v is not None for v in conn.pipeline([("GET", k) for k in hot]))
        assert kept >= 800, f"kept {kept} of 1000 hot keys"


@pytest.mark.keel_differs(reason="maxmemory bounds the dataset in keel after every write; Redis "
                                 "bounds used_memory, buffers included, and may pass it between writes")
def test_dataset_never_exceeds_maxmemory_under_a_concurrent_write_storm(start_server):
    limit = 4 * 1024 * 1024
    srv = start_server({"maxmemory": str(limit), "maxmemory-policy": "allkeys-lru"})
    done = threading.Event()
    seen = []

    def dataset(conn):
        return int(info(conn, "memory")["used_memory_dataset"])

    def watch():
        with srv.conn() as conn:
            peak = 0
            while not done.is_set():
                peak = max(peak, dataset(conn))
            seen.append(peak)

    def write(n):
        rng = random.Random(n)
        with srv.conn() as conn:
            for _ in range(40):
                batch = [("SET", f"w{n}:{rng.randrange(2000)}", b"v" * rng.randrange(100, 30_000))
                         for _ in range(25)]
                assert set(conn.pipeline(batch)) == {OK}
                seen.append(dataset(conn))

    watcher = threading.Thread(target=watch)
    watcher.start()
    writers = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    watcher.join()
    with srv.conn() as conn:
        assert int(info(conn, "stats")["evicted_keys"]) > 0, "the writes reached the limit"
    assert max(seen) <= limit


def test_lowering_maxmemory_shrinks_the_dataset_without_writes(start_server):
    srv = start_server({"maxmemory-policy": "allkeys-lru"})
    with srv.conn() as conn:
        assert set(fill(conn, 2000)) == {OK}
        full = int(info(conn, "memory")["used_memory_dataset"])
        assert conn.call("CONFIG", "SET", "maxmemory", str(full // 4)) == OK
        # No write follows (keel shrinks in the background; Redis evicts
        # before every command, these PINGs and INFOs included).
        deadline = time.monotonic() + 30
        while int(info(conn, "memory")["used_memory_dataset"]) > full // 4:
            assert conn.call("PING") == PONG, "the server keeps answering meanwhile"
            assert time.monotonic() < deadline, "the dataset never shrank below the new limit"
            time.sleep(0.01)
        assert 0 < conn.call("DBSIZE") < 2000
        assert int(info(conn, "stats")["evicted_keys"]) > 0


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu"])
def test_recency_and_frequency_policies_keep_the_newest_key(start_server, policy):
    # Not for allkeys-random: any key may go, and keel evicts in the
    # background, after the last write, where Redis evicts before it.
    with fill_past_limit(start_server, policy) as conn:
        assert conn.call("GET", "key:999") == b"x" * 10_000


def test_memory_stats_reports_redis_fields(c):
    c.call("SET", "a", "1")
    c.call("SET", "b", "2", "EX", "100")
    reply = c.call("MEMORY", "STATS")
    stats = dict(zip(reply[::2], reply[1::2]))
    for field in (b"peak.allocated", b"total.allocated", b"startup.allocated", b"clients.normal",
                  b"overhead.total", b"keys.count", b"dataset.bytes", b"fragmentation"):
        assert field in stats, field
    assert stats[b"keys.count"] == 2
    assert stats[b"total.allocated"] > 0
    db0 = dict(zip(stats[b"db.0"][::2], stats[b"db.0"][1::2]))
    assert db0[b"overhead.hashtable.main"] > 0
    assert db0[b"overhead.hashtable.expires"] > 0
