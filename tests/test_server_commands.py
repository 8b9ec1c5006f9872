"""Small server commands: MEMORY DOCTOR / PURGE / MALLOC-STATS, WAIT, COMMAND GETKEYS and
GETKEYSANDFLAGS, LOLWUT — replies, reply types (RESP2 and RESP3) and errors as Redis 7.0.15."""

import pytest

from support import OK, Err, Status, Verbatim

NOT_INTEGER = Err("ERR value is not an integer or out of range")
VERSION_LINE = b"Redis ver. 7.0.15\n"


def arity(name):
    return Err(f"ERR wrong number of arguments for '{name}' command")


# -- MEMORY -------------------------------------------------------------------------------------


def test_memory_doctor_reports_in_redis_words(c):
    report = c.call("MEMORY", "DOCTOR")
    assert isinstance(report, bytes)
    assert report.startswith((b"Hi Sam, this instance is empty", b"Hi Sam, I can't find any",
                              b"Sam, I detected a few issues"))


def test_memory_doctor_is_verbatim_in_resp3(server, flushed):
    with server.conn() as c:
        c.call("HELLO", "3")
        assert isinstance(c.call("MEMORY", "DOCTOR"), Verbatim)


def test_memory_purge(c):
    assert c.call("MEMORY", "PURGE") == OK


def test_memory_malloc_stats_is_jemalloc_report(c):
    report = c.call("MEMORY", "MALLOC-STATS")
    assert report.startswith(b"___ Begin jemalloc statistics ___\n")
    assert report.endswith(b"--- End jemalloc statistics ---\n")
    assert b"Version: \"5." in report


@pytest.mark.parametrize("sub", ["DOCTOR", "PURGE", "MALLOC-STATS"])
def test_memory_subcommands_take_no_arguments(c, sub):
    assert c.call("MEMORY", sub, "x") == arity(f"memory|{sub.lower()}")


# -- WAIT ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,reply", [
    (("0", "0"), 0),
    (("1", "1"), 0),
    (("-1", "0"), 0),
    (("x", "0"), NOT_INTEGER),
    (("1", "x"), Err("ERR timeout is not an integer or out of range")),
    (("x", "x"), NOT_INTEGER),
    (("1", "1.5"), Err("ERR timeout is not an integer or out of range")),
    (("1", "-1"), Err("ERR timeout is negative")),
])
def test_wait_without_replicas(c, args, reply):
    assert c.call("WAIT", *args) == reply


def test_wait_arity(c):
    assert c.call("WAIT", "0") == arity("wait")


def test_wait_after_writes_counts_no_replica(c):
    assert c.call("SET", "k", "v") == OK
    assert c.call("WAIT", "1", "10") == 0


# -- COMMAND GETKEYS / GETKEYSANDFLAGS ----------------------------------------------------------


@pytest.mark.parametrize("command,expected", [
    (("set", "k1", "v1"), [[b"k1", {"OW", "update"}]]),
    (("set", "k1", "v1", "get"), [[b"k1", {"RW", "access", "update"}]]),
    (("mset", "k1", "v1", "k2", "v2"), [[b"k1", {"OW", "update"}], [b"k2", {"OW", "update"}]]),
    (("LMOVE", "k1", "k2", "left", "right"),
     [[b"k1", {"RW", "access", "delete"}], [b"k2", {"RW", "insert"}]]),
    (("get", "k"), [[b"k", {"RO", "access"}]]),
    (("del", "a", "b"), [[b"a", {"RM", "delete"}], [b"b", {"RM", "delete"}]]),
    (("zunionstore", "d", "2", "a", "b"),
     [[b"d", {"OW", "update"}], [b"a", {"RO", "access"}], [b"b", {"RO", "access"}]]),
    (("rename", "a", "b"), [[b"a", {"RW", "access", "delete"}], [b"b", {"OW", "update"}]]),
    (("incr", "n"), [[b"n", {"RW", "access", "update"}]]),
    (("object", "encoding", "k"), [[b"k", {"RO"}]]),
    (("sintercard", "2", "a", "b"), [[b"a", {"RO", "access"}], [b"b", {"RO", "access"}]]),
])
def test_command_getkeysandflags(c, command, expected):
    reply = c.call("COMMAND", "GETKEYSANDFLAGS", *command)
    assert [[key, set(flags)] for key, flags in reply] == [
        [key, {Status(f) for f in flags}] for key, flags in expected]
    assert c.call("COMMAND", "GETKEYS", *command) == [key for key, _ in expected]


def test_command_getkeysandflags_flags_are_a_set_in_resp3(server, flushed):
    with server.conn() as c:
        c.call("HELLO", "3")
        reply = c.call("COMMAND", "GETKEYSANDFLAGS", "set", "a", "b")
        assert reply == [[b"a", [Status("OW"), Status("update")]]]
        assert type(reply[0][1]).__name__ == "RespSet"


@pytest.mark.parametrize("sub", ["GETKEYS", "GETKEYSANDFLAGS"])
@pytest.mark.parametrize("command,error", [
    (("nosuch", "a"), "ERR Invalid command specified"),
    (("object", "nosuch", "a"), "ERR Invalid command specified"),
    (("set", "a"), "ERR Invalid number of arguments specified for command"),
    (("get", "a", "b"), "ERR Invalid number of arguments specified for command"),
    (("config", "get", "a"), "ERR The command has no key arguments"),
    (("ping", "x"), "ERR The command has no key arguments"),
    (("zunion", "5", "a"), "ERR Invalid arguments specified for command"),
])
def test_command_getkeys_errors(c, sub, command, error):
    assert c.call("COMMAND", sub, *command) == Err(error)


@pytest.mark.parametrize("sub", ["GETKEYS", "GETKEYSANDFLAGS"])
def test_command_getkeys_arity(c, sub):
    assert c.call("COMMAND", sub, "get") == arity(f"command|{sub.lower()}")


# -- LOLWUT -------------------------------------------------------------------------------------


def test_lolwut_prints_the_version(c):
    assert c.call("LOLWUT") == VERSION_LINE
    assert c.call("LOLWUT", "VERSION", "7") == VERSION_LINE
    assert c.call("LOLWUT", "version", "1", "anything") == VERSION_LINE
    assert c.call("LOLWUT", "nonsense") == VERSION_LINE


def test_lolwut_is_verbatim_in_resp3(server, flushed):
    with server.conn() as c:
        c.call("HELLO", "3")
        assert c.call("LOLWUT") == Verbatim(VERSION_LINE)


def test_lolwut_version_5_draws_columns_wide(c):
    text = c.call("LOLWUT", "VERSION", "5", "20", "4", "3").decode()
    lines = text.split("\n")
    assert text.endswith("\n")
    assert lines[-2] == "Georg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15"
    art = [line for line in lines[:-2] if line]  # Redis may leave an empty line after it
    assert len(art) == 8 and all(len(line) == 20 for line in art)
    assert all(0x2800 <= ord(ch) <= 0x28FF for line in art for ch in line)


def test_lolwut_version_6_draws_rows(c):
    text = c.call("LOLWUT", "VERSION", "6", "10", "3").decode()
    lines = text.split("\n")
    assert lines[-3:] == ["Dedicated to the 8 bit game developers of past and present.",
                          "Original 8 bit image from Plaguemon by hikikomori. Redis ver. 7.0.15",
                          ""]
    assert len(lines[:-3]) == 3
    assert all(line.count(" \x1b[0m") == 10 for line in lines[:-3])


@pytest.mark.parametrize("args", [
    ("VERSION", "x"),
    ("VERSION", "5", "x"),
    ("VERSION", "6", "10", "x"),
])
def test_lolwut_bad_numbers(c, args):
    assert c.call("LOLWUT", *args) == NOT_INTEGER


def test_lolwut_ignores_arguments_a_drawing_does_not_take(c):
    assert c.call("LOLWUT", "VERSION", "7", "x") == VERSION_LINE
    reply = c.call("LOLWUT", "VERSION", "5", "1", "1", "1", "x")
    assert reply.endswith(b"Redis ver. 7.0.15\n")


@pytest.mark.keel_differs(reason="Redis draws 800 MB of dots for this; keel bounds a drawing")
def test_lolwut_huge_arguments_are_bounded(c):
    reply = c.call("LOLWUT", "VERSION", "5", "1000", "1", "200")
    assert reply.endswith(b"Redis ver. 7.0.15\n") and len(reply) < 2 << 20
    reply = c.call("LOLWUT", "VERSION", "6", "1000", "1000")
    assert reply.endswith(b"Redis ver. 7.0.15\n") and len(reply) < 2 << 20
