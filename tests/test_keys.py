"""Keyspace commands: DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, RANDOMKEY, RENAME,
RENAMENX, TOUCH, OBJECT, MEMORY USAGE.

WRONGTYPE replies and non-string TYPE results are tested with each
collection type in its own file.
"""

import time

import pytest

from support import OK, Err, Status

ARITY = "ERR wrong number of arguments for '{}' command"
NO_SUCH_KEY = Err("ERR no such key")


# -- DEL / UNLINK / EXISTS / TYPE / TOUCH -----------------------------------------


@pytest.mark.parametrize("cmd", ["DEL", "UNLINK"])
def test_del_counts_removed_keys(c, cmd):
    c.call("MSET", "a", "1", "b", "2", "c", "3")
    assert c.call(cmd, "a", "b", "missing", "a") == 2
    assert c.call("EXISTS", "a", "b", "c") == 1
    assert c.call(cmd, "a") == 0
    assert c.call(cmd) == Err(ARITY.format(cmd.lower()))


def test_exists_counts_duplicates(c):
    c.call("MSET", "a", "1", "b", "2")
    assert c.call("EXISTS", "a") == 1
    assert c.call("EXISTS", "a", "a", "b", "missing") == 3
    assert c.call("EXISTS", "missing") == 0
    assert c.call("EXISTS") == Err(ARITY.format("exists"))


def test_type(c):
    c.call("SET", "s", "v")
    c.call("SET", "n", "42")
    assert c.call("TYPE", "s") == Status("string")
    assert c.call("TYPE", "n") == Status("string")
    assert c.call("TYPE", "missing") == Status("none")
    assert c.call("TYPE") == Err(ARITY.format("type"))


def test_touch_counts_existing_keys_with_duplicates(c):
    c.call("MSET", "a", "1", "b", "2")
    assert c.call("TOUCH", "a", "b", "missing", "a") == 3
    assert c.call("TOUCH", "missing") == 0
    assert c.call("TOUCH") == Err(ARITY.format("touch"))


def test_binary_safe_keys_and_values(c):
    key, value = b"k\x00\r\n\xff", b"\x00\x01\r\n\xfe"
    assert c.call("SET", key, value) == OK
    assert c.call("GET", key) == value
    assert c.call("KEYS", "*") == [key]
    assert c.call("EXISTS", key) == 1


# -- KEYS ----------------------------------------------------------------------------

GLOB_KEYS = ["a", "b", "ab", "abc", "a*", "a?", "a\\", "hello", "hallo", "hxllo", "hllo",
             "heeeello", "h[e]llo", "x^", "-", "]", "[a]"]

GLOB_CASES = [
    ("*", GLOB_KEYS),
    ("h?llo", ["hallo", "hello", "hxllo"]),
    ("h*llo", ["h[e]llo", "hallo", "heeeello", "hello", "hllo", "hxllo"]),
    ("h[ae]llo", ["hallo", "hello"]),
    ("h[^e]llo", ["hallo", "hxllo"]),
    ("h[a-b]llo", ["hallo"]),
    ("h[e-h]*", ["heeeello", "hello"]),
    ("[a-c]", ["a", "b"]),
    ("[c-a]", ["a", "b"]),  # reversed ranges are accepted
    ("a[!b]", ["ab"]),  # '!' is not negation: the class is {'!', 'b'}
    ("a\\*", ["a*"]),
    ("a\\?", ["a?"]),
    ("a[?]", ["a?"]),
    ("a[*]", ["a*"]),
    ("a\\\\", ["a\\"]),
    ("*\\", ["a\\"]),  # a trailing backslash matches itself
    ("\\h*llo", ["h[e]llo", "hallo", "heeeello", "hello", "hllo", "hxllo"]),
    ("h\\[e\\]llo", ["h[e]llo"]),
    ("\\[a\\]", ["[a]"]),
    ("[a]", ["a"]),
    ("[-]", ["-"]),
    ("x[\\^]", ["x^"]),
    ("a[", []),
    ("[", []),
    ("?", ["-", "]", "a", "b"]),
    ("??", ["a*", "a?", "a\\", "ab", "x^"]),
    ("???", ["[a]", "abc"]),
    ("nomatch*", []),
]


@pytest.mark.parametrize("pattern,expected", GLOB_CASES, ids=[p for p, _ in GLOB_CASES])
def test_keys_glob(c, pattern, expected):
    c.call("MSET", *[x for k in GLOB_KEYS for x in (k, "v")])
    assert sorted(c.call("KEYS", pattern)) == sorted(k.encode() for k in expected)


def test_keys_only_current_db_and_live_keys(c):
    c.call("MSET", "a", "1", "b", "2")
    c.call("SET", "gone", "x", "PX", "1")
    time.sleep(0.05)
    assert sorted(c.call("KEYS", "*")) == [b"a", b"b"]
    c.call("SELECT", "1")
    assert c.call("KEYS", "*") == []


def test_keys_arity(c):
    assert c.call("KEYS") == Err(ARITY.format("keys"))
    assert c.call("KEYS", "a", "b") == Err(ARITY.format("keys"))


# -- SCAN ----------------------------------------------------------------------------


def scan_all(conn, *options):
    """Iterate SCAN to completion; returns (keys seen, number of calls)."""
    cursor, seen, calls = b"0", [], 0
    while True:
        reply = conn.call("SCAN", cursor, *options)
        assert isinstance(reply[0], bytes) and isinstance(reply[1], list)
        cursor, batch = reply
        seen += batch
        calls += 1
        assert calls < 100_000, "SCAN never returned cursor 0"
        if cursor == b"0":
            return seen, calls


def test_scan_empty(c):
    assert c.call("SCAN", "0") == [b"0", []]


def test_scan_full_iteration(c):
    keys = {f"key:{i}".encode() for i in range(1000)}
    c.call("MSET", *[x for k in keys for x in (k, b"v")])
    seen, calls = scan_all(c, "COUNT", "10")
    assert set(seen) == keys
    assert calls > 1


def test_scan_match(c):
    c.call("MSET", *[x for i in range(300) for x in (f"user:{i}", "v", f"item:{i}", "v")])
    seen, _ = scan_all(c, "MATCH", "user:1*", "COUNT", "20")
    assert set(seen) == {f"user:{i}".encode() for i in range(300) if str(i).startswith("1")}


def test_scan_type(c):
    c.call("MSET", *[x for i in range(50) for x in (f"k{i}", "v")])
    seen, _ = scan_all(c, "TYPE", "string", "COUNT", "100")
    assert len(set(seen)) == 50
    assert scan_all(c, "TYPE", "list")[0] == []
    assert scan_all(c, "TYPE", "nosuchtype")[0] == []


def test_scan_options_combined(c):
    c.call("MSET", "ab", "1", "ac", "2", "b", "3")
    seen, _ = scan_all(c, "COUNT", "1000", "TYPE", "string", "MATCH", "a*")
    assert sorted(seen) == [b"ab", b"ac"]


def test_scan_sees_every_stable_key_while_keyspace_changes(c, connect):
    """Keys present for the whole iteration are returned at least once, even
    while other keys are added and removed between SCAN calls."""
    stable = {f"stable:{i}".encode() for i in range(2000)}
    c.call("MSET", *[x for k in stable for x in (k, b"v")])
    writer = connect()
    cursor, seen, step = b"0", set(), 0
    while True:
        cursor, batch = c.call("SCAN", cursor, "COUNT", "25")
        seen.update(batch)
        writer.pipeline([("SET", f"churn:{step}:{j}", "x") for j in range(40)]
                        + [("DEL", f"churn:{step - 1}:{j}") for j in range(0, 40, 2)])
        step += 1
        assert step < 10_000
        if cursor == b"0":
            break
    assert stable <= seen
    assert {k for k in seen if not k.startswith((b"stable:", b"churn:"))} == set()


@pytest.mark.parametrize("args,error", [
    (("abc",), "ERR invalid cursor"),
    (("18446744073709551616",), "ERR invalid cursor"),
    (("0", "COUNT", "0"), "ERR syntax error"),
    (("0", "COUNT", "-1"), "ERR syntax error"),
    (("0", "COUNT", "abc"), "ERR value is not an integer or out of range"),
    (("0", "MATCH"), "ERR syntax error"),
    (("0", "FOO", "bar"), "ERR syntax error"),
    ((), ARITY.format("scan")),
])
def test_scan_errors(c, args, error):
    assert c.call("SCAN", *args) == Err(error)


# -- RANDOMKEY ---------------------------------------------------------------------


def test_randomkey(c):
    assert c.call("RANDOMKEY") is None
    c.call("SET", "only", "v")
    assert c.call("RANDOMKEY") == b"only"
    keys = {f"k{i}".encode() for i in range(20)} | {b"only"}
    c.call("MSET", *[x for k in keys for x in (k, b"v")])
    for _ in range(50):
        assert c.call("RANDOMKEY") in keys
    assert c.call("RANDOMKEY", "x") == Err(ARITY.format("randomkey"))


# -- RENAME / RENAMENX ---------------------------------------------------------------


def test_rename_moves_value_and_ttl(c):
    c.call("SET", "src", "v", "EX", "1000")
    c.call("SET", "dst", "old")
    assert c.call("RENAME", "src", "dst") == OK
    assert c.call("GET", "dst") == b"v"
    assert c.call("EXISTS", "src") == 0
    assert 990 <= c.call("TTL", "dst") <= 1000


def test_rename_over_key_with_ttl_drops_that_ttl(c):
    c.call("SET", "src", "v")
    c.call("SET", "dst", "old", "EX", "1000")
    assert c.call("RENAME", "src", "dst") == OK
    assert c.call("TTL", "dst") == -1


def test_rename_same_key(c):
    c.call("SET", "k", "v", "EX", "1000")
    assert c.call("RENAME", "k", "k") == OK
    assert c.call("GET", "k") == b"v"
    assert c.call("TTL", "k") > 0


def test_rename_errors(c):
    assert c.call("RENAME", "missing", "x") == NO_SUCH_KEY
    assert c.call("RENAME", "missing", "missing") == NO_SUCH_KEY
    assert c.call("RENAME", "a") == Err(ARITY.format("rename"))


def test_renamenx(c):
    c.call("MSET", "a", "1", "b", "2")
    assert c.call("RENAMENX", "a", "b") == 0
    assert c.call("GET", "a") == b"1"
    assert c.call("RENAMENX", "a", "c") == 1
    assert c.call("GET", "c") == b"1"
    assert c.call("EXISTS", "a") == 0
    assert c.call("RENAMENX", "c", "c") == 0
    assert c.call("RENAMENX", "missing", "x") == NO_SUCH_KEY
    assert c.call("RENAMENX", "a", "b", "c") == Err(ARITY.format("renamenx"))


# -- OBJECT ----------------------------------------------------------------------------


@pytest.mark.parametrize("value,encoding", [
    ("12345", "int"),
    ("-5", "int"),
    ("9223372036854775807", "int"),
    ("9223372036854775808", "embstr"),
    ("05", "embstr"),
    (" 5", "embstr"),
    ("hello", "embstr"),
    ("x" * 44, "embstr"),
    ("x" * 45, "raw"),
])
def test_object_encoding(c, value, encoding):
    c.call("SET", "k", value)
    assert c.call("OBJECT", "ENCODING", "k") == encoding.encode()


def test_object_encoding_after_modification(c):
    c.call("SET", "k", "10")
    assert c.call("OBJECT", "ENCODING", "k") == b"int"
    c.call("APPEND", "k", "x")
    assert c.call("OBJECT", "ENCODING", "k") == b"raw"
    c.call("SET", "n", "abc")
    c.call("SET", "n", "7")
    c.call("INCR", "n")
    assert c.call("OBJECT", "ENCODING", "n") == b"int"
    assert c.call("OBJECT", "ENCODING", "missing") is None


def test_object_refcount(c):
    c.call("SET", "k", "hello")
    assert c.call("OBJECT", "REFCOUNT", "k") == 1
    assert c.call("OBJECT", "REFCOUNT", "missing") is None


def test_object_idletime(c):
    c.call("SET", "k", "v")
    assert c.call("OBJECT", "IDLETIME", "k") == 0
    time.sleep(2.1)
    assert c.call("OBJECT", "IDLETIME", "k") >= 1  # OBJECT itself does not touch the key
    assert c.call("OBJECT", "IDLETIME", "k") >= 1
    c.call("GET", "k")
    assert c.call("OBJECT", "IDLETIME", "k") == 0
    assert c.call("OBJECT", "IDLETIME", "missing") is None


def test_object_freq_needs_lfu_policy(c, restore_config):
    c.call("SET", "k", "v")
    assert c.call("OBJECT", "FREQ", "k") == Err(
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
        "that when switching between policies at runtime LRU and LFU data will take some time "
        "to adjust.")
    restore_config("maxmemory-policy")
    assert c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu") == OK
    c.call("SET", "k", "v")
    assert isinstance(c.call("OBJECT", "FREQ", "k"), int)
    assert c.call("OBJECT", "FREQ", "missing") is None
    assert c.call("OBJECT", "IDLETIME", "k") == Err(
        "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
        "switching between policies at runtime LRU and LFU data will take some time to adjust.")


@pytest.mark.parametrize("args,error", [
    ((), ARITY.format("object")),
    (("ENCODING",), ARITY.format("object|encoding")),
    (("ENCODING", "a", "b"), ARITY.format("object|encoding")),
    (("FOO", "k"), "ERR unknown subcommand 'FOO'. Try OBJECT HELP."),
])
def test_object_errors(c, args, error):
    assert c.call("OBJECT", *args) == Err(error)


# -- MEMORY USAGE ----------------------------------------------------------------------


@pytest.mark.parametrize("value", [b"1", b"hello", b"x" * 1000, b"y" * 100_000])
def test_memory_usage(c, value):
    key = b"some-key"
    c.call("SET", key, value)
    usage = c.call("MEMORY", "USAGE", key)
    assert isinstance(usage, int)
    assert usage > len(key) + (len(value) if len(value) > 20 else 0)
    assert c.call("MEMORY", "USAGE", key, "SAMPLES", "5") == usage


def test_memory_usage_missing_key(c):
    assert c.call("MEMORY", "USAGE", "missing") is None


@pytest.mark.parametrize("args,error", [
    (("USAGE",), ARITY.format("memory|usage")),
    (("USAGE", "k", "SAMPLES"), "ERR syntax error"),
    (("USAGE", "k", "SAMPLES", "x"), "ERR value is not an integer or out of range"),
    (("USAGE", "k", "FOO", "1"), "ERR syntax error"),
    (("FOO",), "ERR unknown subcommand 'FOO'. Try MEMORY HELP."),
    ((), ARITY.format("memory")),
])
def test_memory_errors(c, args, error):
    c.call("SET", "k", "v")
    assert c.call("MEMORY", *args) == Err(error)


def test_exists_does_not_count_as_an_access_but_touch_does(c):
    c.call("SET", "k", "v")
    time.sleep(2.1)
    assert c.call("EXISTS", "k") == 1
    assert c.call("OBJECT", "IDLETIME", "k") >= 2
    assert c.call("TOUCH", "k") == 1
    assert c.call("OBJECT", "IDLETIME", "k") == 0


def test_move_keeps_the_ttl_and_never_overwrites(c):
    c.call("SET", "k", "v", "EX", "100")
    assert c.call("MOVE", "k", "1") == 1
    assert c.call("EXISTS", "k") == 0
    c.call("SELECT", "1")
    assert c.call("GET", "k") == b"v"
    assert 0 < c.call("TTL", "k") <= 100
    c.call("SELECT", "0")
    c.call("SET", "k", "other")
    assert c.call("MOVE", "k", "1") == 0
    assert c.call("GET", "k") == b"other"
    assert c.call("MOVE", "missing", "1") == 0


@pytest.mark.parametrize("args,error", [
    (("k", "x"), "ERR value is not an integer or out of range"),
    (("k", "16"), "ERR DB index is out of range"),
    (("k", "-1"), "ERR DB index is out of range"),
    (("k", "0"), "ERR source and destination objects are the same"),
    (("missing", "0"), "ERR source and destination objects are the same"),
    (("k", "2147483648"), "ERR value is out of range, value must between -2147483648 and 2147483647"),
])
def test_move_errors(c, args, error):
    c.call("SET", "k", "v")
    assert c.call("MOVE", *args) == Err(error)


def test_swapdb_swaps_contents_and_ttls(c):
    c.call("SET", "a", "in0", "EX", "100")
    c.call("SELECT", "1")
    c.call("RPUSH", "b", "in1")
    assert c.call("SWAPDB", "0", "1") == OK
    assert c.call("GET", "a") == b"in0"
    assert 0 < c.call("TTL", "a") <= 100
    assert c.call("EXISTS", "b") == 0
    assert c.call("DBSIZE") == 1
    c.call("SELECT", "0")
    assert c.call("LRANGE", "b", "0", "-1") == [b"in1"]
    assert c.call("SWAPDB", "1", "1") == OK
    assert c.call("DBSIZE") == 1


@pytest.mark.parametrize("args,error", [
    (("a", "1"), "ERR invalid first DB index"),
    (("0", "b"), "ERR invalid second DB index"),
    (("99", "b"), "ERR invalid second DB index"),
    (("0", "99"), "ERR DB index is out of range"),
    (("-1", "0"), "ERR DB index is out of range"),
    (("0", "2147483648"), "ERR invalid second DB index"),
])
def test_swapdb_errors(c, args, error):
    assert c.call("SWAPDB", *args) == Err(error)
