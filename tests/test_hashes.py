"""Hash commands: HSET, HSETNX, HGET, HMGET, HMSET, HDEL, HEXISTS, HLEN, HSTRLEN,
HKEYS, HVALS, HGETALL, HINCRBY, HINCRBYFLOAT, HRANDFIELD, HSCAN; encodings and
WRONGTYPE."""

import pytest

from support import OK, Err, RespMap, Status

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INTEGER = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")


def arity(cmd):
    return Err(f"ERR wrong number of arguments for '{cmd}' command")


def test_hset_hget_hlen(c):
    assert c.call("HSET", "h", "a", "1", "b", "2") == 2
    assert c.call("HSET", "h", "a", "10", "c", "3") == 1
    assert c.call("HGET", "h", "a") == b"10"
    assert c.call("HGET", "h", "nope") is None
    assert c.call("HGET", "missing", "a") is None
    assert c.call("HLEN", "h") == 3
    assert c.call("HLEN", "missing") == 0
    assert c.call("TYPE", "h") == Status("hash")


def test_hset_odd_arguments(c):
    assert c.call("HSET", "h", "a", "1", "b") == arity("hset")
    assert c.call("HMSET", "h", "a", "1", "b") == arity("hmset")
    assert c.call("HSET", "h", "a") == arity("hset")
    assert c.call("EXISTS", "h") == 0


def test_hmset_hmget(c):
    assert c.call("HMSET", "h", "a", "1", "b", "2") == OK
    assert c.call("HMGET", "h", "a", "x", "b") == [b"1", None, b"2"]
    assert c.call("HMGET", "missing", "a", "b") == [None, None]


def test_hsetnx(c):
    assert c.call("HSETNX", "h", "a", "1") == 1
    assert c.call("HSETNX", "h", "a", "2") == 0
    assert c.call("HGET", "h", "a") == b"1"


def test_hdel_removes_key_with_last_field(c):
    c.call("HSET", "h", "a", "1", "b", "2")
    assert c.call("HDEL", "h", "a", "a", "x") == 1
    assert c.call("HDEL", "missing", "a") == 0
    assert c.call("HDEL", "h", "b") == 1
    assert c.call("EXISTS", "h") == 0


def test_hexists_hstrlen(c):
    c.call("HSET", "h", "a", "hello", "n", "-12")
    assert c.call("HEXISTS", "h", "a") == 1
    assert c.call("HEXISTS", "h", "b") == 0
    assert c.call("HSTRLEN", "h", "a") == 5
    assert c.call("HSTRLEN", "h", "n") == 3
    assert c.call("HSTRLEN", "h", "x") == 0


def test_hgetall_hkeys_hvals(c):
    c.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert c.call("HGETALL", "h") == [b"a", b"1", b"b", b"2", b"c", b"3"]
    assert c.call("HKEYS", "h") == [b"a", b"b", b"c"]
    assert c.call("HVALS", "h") == [b"1", b"2", b"3"]
    assert c.call("HGETALL", "missing") == []


def test_hgetall_is_a_map_in_resp3(c):
    c.call("HELLO", "3")
    c.call("HSET", "h", "a", "1")
    reply = c.call("HGETALL", "h")
    assert isinstance(reply, RespMap) and list(reply) == [(b"a", b"1")] or reply == RespMap([(b"a", b"1")])


def test_hincrby(c):
    assert c.call("HINCRBY", "h", "n", "5") == 5
    assert c.call("HINCRBY", "h", "n", "-7") == -2
    c.call("HSET", "h", "s", "abc", "big", "9223372036854775807")
    assert c.call("HINCRBY", "h", "s", "1") == Err("ERR hash value is not an integer")
    assert c.call("HINCRBY", "h", "n", "x") == NOT_INTEGER
    assert c.call("HINCRBY", "h", "big", "1") == Err("ERR increment or decrement would overflow")


def test_hincrbyfloat(c):
    assert c.call("HINCRBYFLOAT", "h", "f", "1.5") == b"1.5"
    assert c.call("HINCRBYFLOAT", "h", "f", "0.25") == b"1.75"
    c.call("HSET", "h", "s", "abc")
    assert c.call("HINCRBYFLOAT", "h", "s", "1") == Err("ERR hash value is not a float")
    assert c.call("HINCRBYFLOAT", "h", "f", "x") == Err("ERR value is not a valid float")
    assert c.call("HINCRBYFLOAT", "h", "f", "inf") == Err("ERR value is NaN or Infinity")


def test_hrandfield(c):
    assert c.call("HRANDFIELD", "missing") is None
    assert c.call("HRANDFIELD", "missing", "3") == []
    c.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert c.call("HRANDFIELD", "h") in (b"a", b"b", b"c")
    assert sorted(c.call("HRANDFIELD", "h", "10")) == [b"a", b"b", b"c"]
    two = c.call("HRANDFIELD", "h", "2")
    assert len(set(two)) == 2
    assert len(c.call("HRANDFIELD", "h", "-7")) == 7
    assert c.call("HRANDFIELD", "h", "0") == []
    pairs = c.call("HRANDFIELD", "h", "-4", "WITHVALUES")
    assert len(pairs) == 8
    for field, value in zip(pairs[::2], pairs[1::2]):
        assert {b"a": b"1", b"b": b"2", b"c": b"3"}[field] == value
    assert c.call("HRANDFIELD", "h", "1", "FOO") == SYNTAX
    assert c.call("HRANDFIELD", "h", "x") == NOT_INTEGER


def test_hrandfield_withvalues_pairs_in_resp3(c):
    c.call("HELLO", "3")
    c.call("HSET", "h", "a", "1")
    assert c.call("HRANDFIELD", "h", "-2", "WITHVALUES") == [[b"a", b"1"], [b"a", b"1"]]


def test_hscan_small_and_large(c):
    c.call("HSET", "h", "a", "1", "b", "2")
    assert c.call("HSCAN", "h", "0") == [b"0", [b"a", b"1", b"b", b"2"]]
    assert c.call("HSCAN", "h", "0", "MATCH", "a*") == [b"0", [b"a", b"1"]]
    fields = [f"f{i}" for i in range(300)]
    c.call("HSET", "big", *[x for f in fields for x in (f, "v")])
    seen, cursor = set(), b"0"
    while True:
        cursor, items = c.call("HSCAN", "big", cursor, "COUNT", "20")
        seen.update(items[::2])
        if cursor == b"0":
            break
    assert seen == {f.encode() for f in fields}
    assert c.call("HSCAN", "missing", "0") == [b"0", []]
    assert c.call("HSCAN", "h", "x") == Err("ERR invalid cursor")
    assert c.call("HSCAN", "h", "0", "COUNT", "0") == SYNTAX


def test_encodings_follow_thresholds(c):
    c.call("HSET", "small", "a", "1")
    assert c.call("OBJECT", "ENCODING", "small") == b"listpack"
    c.call("HSET", "long", "a", "x" * 65)
    assert c.call("OBJECT", "ENCODING", "long") == b"hashtable"
    c.call("HSET", "many", *[x for i in range(512) for x in (f"f{i}", "v")])
    assert c.call("OBJECT", "ENCODING", "many") == b"listpack"
    c.call("HSET", "many", "one-more", "v")
    assert c.call("OBJECT", "ENCODING", "many") == b"hashtable"


def test_encoding_thresholds_are_configurable(c, restore_config):
    restore_config("hash-max-listpack-entries", "hash-max-listpack-value")
    assert c.call("CONFIG", "SET", "hash-max-listpack-entries", "2") == OK
    c.call("HSET", "h", "a", "1", "b", "2")
    assert c.call("OBJECT", "ENCODING", "h") == b"listpack"
    c.call("HSET", "h", "c", "3")
    assert c.call("OBJECT", "ENCODING", "h") == b"hashtable"
    assert c.call("CONFIG", "GET", "hash-max-listpack-entries") == [b"hash-max-listpack-entries", b"2"]


@pytest.mark.parametrize("cmd", [
    ["HSET", "s", "a", "1"], ["HGET", "s", "a"], ["HMGET", "s", "a"], ["HDEL", "s", "a"],
    ["HLEN", "s"], ["HGETALL", "s"], ["HKEYS", "s"], ["HVALS", "s"], ["HEXISTS", "s", "a"],
    ["HSTRLEN", "s", "a"], ["HINCRBY", "s", "a", "1"], ["HINCRBYFLOAT", "s", "a", "1"],
    ["HSETNX", "s", "a", "1"], ["HRANDFIELD", "s"], ["HSCAN", "s", "0"], ["HMSET", "s", "a", "1"],
])
def test_wrongtype(c, cmd):
    c.call("SET", "s", "v")
    assert c.call(*cmd) == WRONGTYPE
    c.call("HSET", "h", "a", "1")
    assert c.call("GET", "h") == WRONGTYPE


def test_rename_and_ttl_keep_hash(c):
    c.call("HSET", "h", "a", "1")
    c.call("EXPIRE", "h", "100")
    assert c.call("RENAME", "h", "h2") == OK
    assert c.call("HGET", "h2", "a") == b"1"
    assert 0 < c.call("TTL", "h2") <= 100
    assert c.call("SCAN", "0", "TYPE", "hash") == [b"0", [b"h2"]]
