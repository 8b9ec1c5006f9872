"""MONITOR: Redis's line format and escaping, what is fed and what is not
(refused and admin commands), redaction, MULTI/EXEC order, and a monitor
that does not read being disconnected at its output limit (and in keel at
the client budget) instead of growing memory."""

import re
import socket

import pytest

from support import OK, Err, Status, info

LINE = re.compile(r'^(\d+)\.(\d{6}) \[(\d+) ([0-9.]+:\d+)\] (.*)$')


def monitor(connect):
    conn = connect()
    assert conn.call("MONITOR") == OK
    return conn


def next_line(conn):
    """The next monitor line: (db, addr, the quoted arguments)."""
    line = conn.read()
    assert isinstance(line, Status), line
    match = LINE.match(line)
    assert match, line
    return int(match.group(3)), match.group(4), match.group(5)


def test_lines_show_time_db_address_and_arguments(c, connect):
    mon = monitor(connect)
    c.call("set", "foo", "bar")
    c.call("get", "foo")
    db, addr, args = next_line(mon)
    port = c.sock.getsockname()[1]
    assert (db, addr, args) == (0, f"127.0.0.1:{port}", '"set" "foo" "bar"')
    assert next_line(mon)[2] == '"get" "foo"'


def test_arguments_are_escaped_as_redis_does(c, connect):
    mon = monitor(connect)
    c.call("set", "k", b'a"b\\c\n\r\t\x07\x08\x01\xff\xc3\xa9 ~')
    assert next_line(mon)[2] == r'"set" "k" "a\"b\\c\n\r\t\a\b\x01\xff\xc3\xa9 ~"'


def test_the_database_is_the_one_after_the_command(c, connect):
    mon = monitor(connect)
    c.call("select", "2")
    c.call("ping")
    assert next_line(mon)[::2] == (2, '"select" "2"')
    assert next_line(mon)[::2] == (2, '"ping"')


def test_refused_and_admin_commands_are_not_fed_but_failures_are(c, connect):
    mon = monitor(connect)
    c.call("nosuchcommand", "x")
    c.call("get")
    c.call("CONFIG", "GET", "maxmemory")
    c.call("CLIENT", "LIST")
    c.call("set", "k", "v")
    c.call("incr", "k")
    c.call("exec")
    assert next_line(mon)[2] == '"set" "k" "v"'
    assert next_line(mon)[2] == '"incr" "k"'
    assert next_line(mon)[2] == '"exec"'


def test_passwords_are_redacted(c, connect):
    mon = monitor(connect)
    c.call("auth", "not-real")
    c.call("auth", "user", "not-a-password")
    c.call("hello", "2", "auth", "user", "not-a-password")
    assert next_line(mon)[2] == '"auth" "(redacted)"'
    assert next_line(mon)[2] == '"auth" "(redacted)" "(redacted)"'
    assert next_line(mon)[2] == '"hello" "2" "auth" "(redacted)" "(redacted)"'


def test_multi_exec_is_fed_in_execution_order(c, connect):
    mon = monitor(connect)
    c.call("multi")
    c.call("set", "foo", "bar")
    c.call("exec")
    assert [next_line(mon)[2] for _ in range(3)] == ['"multi"', '"set" "foo" "bar"', '"exec"']
    c.call("multi")
    c.call("nosuch")
    c.call("exec")
    assert [next_line(mon)[2] for _ in range(2)] == ['"multi"', '"exec"']


def test_a_blocked_command_is_fed_once(c, connect):
    mon, waiter = monitor(connect), connect()
    waiter.send("blpop", "list", "0")
    assert next_line(mon)[2] == '"blpop" "list" "0"'
    c.call("rpush", "list", "x")
    assert waiter.read() == [b"list", b"x"]
    assert next_line(mon)[2] == '"rpush" "list" "x"'


def test_monitor_again_and_bad_arity(c, connect):
    mon = monitor(connect)
    mon.send("MONITOR")
    mon.send("ping")
    assert mon.read() == Status("PONG"), "a second MONITOR is not answered"
    assert next_line(mon)[2] == '"ping"', "nor fed: the first line is PING's"
    assert c.call("MONITOR", "x") == Err("ERR wrong number of arguments for 'monitor' command")


def test_monitor_shows_in_client_list_and_reset_ends_it(c, connect):
    mon = monitor(connect)
    mon_id = mon.call("client", "id")
    assert next_line(mon)[2] == '"client" "id"'
    line = c.call("CLIENT", "LIST", "ID", str(mon_id)).decode()
    assert " flags=O " in line
    assert mon.call("RESET") == Status("RESET")
    c.call("set", "k", "v")
    assert mon.call("ping") == Status("PONG"), "no line came before PING's reply"


def test_reply_off_silences_monitor_lines(c, connect):
    mon = monitor(connect)
    mon.send("CLIENT", "REPLY", "OFF")
    c.call("set", "k", "v")
    assert mon.call("CLIENT", "REPLY", "ON") == OK


def drain_until_closed(conn, limit):
    """Reads what the server sends until it closes; the bytes read."""
    conn.sock.settimeout(20)
    total = len(conn.buf) - conn.pos
    while total < limit:
        data = conn.sock.recv(1 << 16)
        if not data:
            return total
        total += len(data)
    raise AssertionError(f"still open after {total} bytes")


def feed(conn, commands, value):
    conn.pipeline([("SET", f"k{i}", value) for i in range(commands)])


def test_a_monitor_that_does_not_read_is_disconnected_at_its_output_limit(
        start_server, server_kind):
    srv = start_server({"client-output-buffer-limit": "normal 1mb 0 0"})
    with srv.conn() as mon, srv.conn() as c:
        assert mon.call("MONITOR") == OK
        value = "x" * 100_000
        for _ in range(10):
            feed(c, 20, value)
        fed = 200 * 100_000
        assert drain_until_closed(mon, fed) < fed, "the monitor was cut off"
        assert c.call("ping") == Status("PONG")
        if server_kind == "keel":
            stats = info(c, "stats")
            assert int(stats["client_output_buffer_limit_disconnections"]) >= 1


@pytest.mark.keel_differs(reason="keel charges a monitor's backlog to maxmemory-clients and "
                                 "disconnects it there; Redis never evicts a monitor")
def test_a_monitor_backlog_is_bounded_by_the_client_budget(start_server):
    srv = start_server({"client-output-buffer-limit": "normal 0 0 0", "maxmemory-clients": "4mb"})
    with srv.conn() as mon, srv.conn() as c:
        assert mon.call("MONITOR") == OK
        value = "x" * 100_000
        for _ in range(10):
            feed(c, 20, value)
        fed = 200 * 100_000
        assert drain_until_closed(mon, fed) < fed
        assert c.call("ping") == Status("PONG")
        used = int(info(c, "memory")["used_memory"])
        assert used < 64 * 1024 * 1024, "nothing kept the lines the monitor never read"
