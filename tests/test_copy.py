"""COPY source destination [DB db] [REPLACE], for every type."""

import pytest

from support import Err, Status

SYNTAX = Err("ERR syntax error")

VALUES = {
    "string": (["SET", "src", "hello"], ["GET"]),
    "int": (["SET", "src", "42"], ["GET"]),
    "hash": (["HSET", "src", "f", "v", "g", "w"], ["HGETALL"]),
    "set": (["SADD", "src", "a", "b", "1"], ["SMEMBERS"]),
    "list": (["RPUSH", "src", "a", "b", "c"], ["LRANGE", "0", "-1"]),
    "zset": (["ZADD", "src", "1", "a", "2.5", "b"], ["ZRANGE", "0", "-1", "WITHSCORES"]),
}


def read(c, key, how):
    reply = c.call(how[0], key, *how[1:])
    return sorted(reply) if how[0] in ("SMEMBERS", "HGETALL") else reply


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_copy_every_type_is_deep(c, kind):
    create, how = VALUES[kind]
    c.call(*create)
    assert c.call("COPY", "src", "dst") == 1
    assert read(c, "dst", how) == read(c, "src", how)
    assert c.call("TYPE", "dst") == c.call("TYPE", "src")
    assert c.call("OBJECT", "ENCODING", "dst") == c.call("OBJECT", "ENCODING", "src")
    c.call("DEL", "src")
    assert c.call("EXISTS", "dst") == 1


def test_copy_is_independent_of_the_source(c):
    c.call("ZADD", "src", "1", "a")
    c.call("COPY", "src", "dst")
    c.call("ZADD", "src", "2", "b")
    assert c.call("ZCARD", "dst") == 1


def test_copy_keeps_ttl_and_respects_replace(c):
    c.call("SET", "src", "v", "EX", "100")
    c.call("SET", "dst", "old")
    assert c.call("COPY", "src", "dst") == 0
    assert c.call("GET", "dst") == b"old"
    assert c.call("COPY", "src", "dst", "REPLACE") == 1
    assert c.call("GET", "dst") == b"v"
    assert 0 < c.call("TTL", "dst") <= 100
    assert c.call("COPY", "missing", "dst", "REPLACE") == 0
    assert c.call("GET", "dst") == b"v"


def test_copy_to_another_db(c):
    c.call("RPUSH", "src", "a", "b")
    assert c.call("COPY", "src", "src", "DB", "1") == 1
    assert c.call("COPY", "src", "src", "DB", "1") == 0
    c.call("SELECT", "1")
    assert c.call("LRANGE", "src", "0", "-1") == [b"a", b"b"]
    c.call("DEL", "src")
    c.call("SELECT", "0")


def test_copy_errors(c):
    c.call("SET", "src", "v")
    assert c.call("COPY", "src", "src") == Err("ERR source and destination objects are the same")
    assert c.call("COPY", "src", "dst", "DB", "99") == Err("ERR DB index is out of range")
    assert c.call("COPY", "src", "dst", "DB", "-1") == Err("ERR DB index is out of range")
    assert c.call("COPY", "src", "dst", "DB", "x") == Err("ERR value is not an integer or out of range")
    assert c.call("COPY", "src", "dst", "DB") == SYNTAX
    assert c.call("COPY", "src", "dst", "BOGUS") == SYNTAX
    assert c.call("EXISTS", "dst") == 0
    assert c.call("TYPE", "src") == Status("string")
