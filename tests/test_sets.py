"""Set commands: SADD, SREM, SISMEMBER, SMISMEMBER, SMEMBERS, SCARD, SPOP,
SRANDMEMBER, SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE,
SDIFF, SDIFFSTORE, SSCAN; encodings and WRONGTYPE."""

import pytest

from support import OK, Err, RespSet, Status

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INTEGER = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")


def test_sadd_srem_scard(c):
    assert c.call("SADD", "s", "a", "b", "a") == 2
    assert c.call("SADD", "s", "b", "c") == 1
    assert c.call("SCARD", "s") == 3
    assert c.call("SCARD", "missing") == 0
    assert c.call("SREM", "s", "a", "x") == 1
    assert c.call("SREM", "missing", "a") == 0
    assert c.call("SREM", "s", "b", "c") == 2
    assert c.call("EXISTS", "s") == 0
    assert c.call("TYPE", "s") == Status("none")


def test_sismember_smismember_smembers(c):
    c.call("SADD", "s", "a", "b")
    assert c.call("SISMEMBER", "s", "a") == 1
    assert c.call("SISMEMBER", "s", "z") == 0
    assert c.call("SISMEMBER", "missing", "a") == 0
    assert c.call("SMISMEMBER", "s", "a", "z", "b") == [1, 0, 1]
    assert c.call("SMISMEMBER", "missing", "a") == [0]
    assert sorted(c.call("SMEMBERS", "s")) == [b"a", b"b"]
    assert c.call("SMEMBERS", "missing") == []


def test_smembers_is_a_set_in_resp3(c):
    c.call("HELLO", "3")
    c.call("SADD", "s", "1", "2")
    reply = c.call("SMEMBERS", "s")
    assert isinstance(reply, RespSet)
    assert sorted(reply) == [b"1", b"2"]


def test_intset_members_are_sorted(c):
    c.call("SADD", "s", "5", "-3", "10", "0")
    assert c.call("SMEMBERS", "s") == [b"-3", b"0", b"5", b"10"]
    assert c.call("OBJECT", "ENCODING", "s") == b"intset"


def test_spop(c):
    assert c.call("SPOP", "missing") is None
    assert c.call("SPOP", "missing", "2") == []
    c.call("SADD", "s", "a", "b", "c")
    first = c.call("SPOP", "s")
    assert first in (b"a", b"b", b"c")
    rest = c.call("SPOP", "s", "5")
    assert sorted(rest + [first]) == [b"a", b"b", b"c"]
    assert c.call("EXISTS", "s") == 0
    c.call("SADD", "s", "a")
    assert c.call("SPOP", "s", "0") == []
    assert c.call("SPOP", "s", "-1") == Err("ERR value is out of range, must be positive")
    assert c.call("SPOP", "s", "x") == Err("ERR value is out of range, must be positive")
    assert c.call("SPOP", "s", "1", "2") == SYNTAX


def test_srandmember(c):
    assert c.call("SRANDMEMBER", "missing") is None
    assert c.call("SRANDMEMBER", "missing", "2") == []
    c.call("SADD", "s", "a", "b", "c")
    assert c.call("SRANDMEMBER", "s") in (b"a", b"b", b"c")
    assert sorted(c.call("SRANDMEMBER", "s", "10")) == [b"a", b"b", b"c"]
    assert len(set(c.call("SRANDMEMBER", "s", "2"))) == 2
    assert len(c.call("SRANDMEMBER", "s", "-6")) == 6
    assert c.call("SRANDMEMBER", "s", "0") == []
    assert c.call("SCARD", "s") == 3
    assert c.call("SRANDMEMBER", "s", "-9223372036854775808") == Err(
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")


def test_smove(c):
    c.call("SADD", "src", "a", "b")
    assert c.call("SMOVE", "src", "dst", "a") == 1
    assert c.call("SMOVE", "src", "dst", "zz") == 0
    assert c.call("SMOVE", "missing", "dst", "a") == 0
    assert c.call("SMOVE", "src", "src", "b") == 1
    assert c.call("SMOVE", "src", "dst", "b") == 1
    assert c.call("EXISTS", "src") == 0
    assert sorted(c.call("SMEMBERS", "dst")) == [b"a", b"b"]
    c.call("SET", "str", "v")
    assert c.call("SMOVE", "dst", "str", "a") == WRONGTYPE
    assert c.call("SMOVE", "str", "dst", "a") == WRONGTYPE


def test_set_algebra(c):
    c.call("SADD", "a", "1", "2", "3", "x")
    c.call("SADD", "b", "2", "3", "4")
    c.call("SADD", "c", "3", "x")
    assert sorted(c.call("SINTER", "a", "b")) == [b"2", b"3"]
    assert sorted(c.call("SINTER", "a", "b", "c")) == [b"3"]
    assert c.call("SINTER", "a", "missing") == []
    assert sorted(c.call("SUNION", "b", "c", "missing")) == [b"2", b"3", b"4", b"x"]
    assert sorted(c.call("SDIFF", "a", "b")) == [b"1", b"x"]
    assert c.call("SDIFF", "missing", "a") == []
    assert c.call("SINTERSTORE", "d", "a", "b") == 2
    assert sorted(c.call("SMEMBERS", "d")) == [b"2", b"3"]
    assert c.call("OBJECT", "ENCODING", "d") == b"intset"
    assert c.call("SUNIONSTORE", "d", "a", "b") == 5
    assert c.call("SDIFFSTORE", "d", "a", "b", "c") == 1
    assert c.call("SMEMBERS", "d") == [b"1"]
    assert c.call("SINTERSTORE", "d", "a", "missing") == 0
    assert c.call("EXISTS", "d") == 0
    c.call("SET", "str", "v")
    assert c.call("SUNIONSTORE", "str", "a") == 4
    assert c.call("TYPE", "str") == Status("set")


def test_wrongtype_in_any_position_wins(c):
    c.call("SADD", "a", "1")
    c.call("SET", "str", "v")
    for cmd in ("SINTER", "SUNION", "SDIFF"):
        assert c.call(cmd, "missing", "str") == WRONGTYPE
        assert c.call(cmd, "a", "str") == WRONGTYPE
    assert c.call("SINTERSTORE", "d", "missing", "str") == WRONGTYPE
    assert c.call("SINTERCARD", "2", "missing", "str") == WRONGTYPE


def test_sintercard(c):
    c.call("SADD", "a", "1", "2", "3")
    c.call("SADD", "b", "1", "2", "3", "4")
    assert c.call("SINTERCARD", "2", "a", "b") == 3
    assert c.call("SINTERCARD", "2", "a", "b", "LIMIT", "2") == 2
    assert c.call("SINTERCARD", "2", "a", "b", "LIMIT", "0") == 3
    assert c.call("SINTERCARD", "1", "missing") == 0
    assert c.call("SINTERCARD", "0", "a") == Err("ERR numkeys should be greater than 0")
    assert c.call("SINTERCARD", "x", "a") == Err("ERR numkeys should be greater than 0")
    assert c.call("SINTERCARD", "3", "a", "b") == \
        Err("ERR Number of keys can't be greater than number of args")
    assert c.call("SINTERCARD", "2", "a", "b", "LIMIT", "-1") == Err("ERR LIMIT can't be negative")
    assert c.call("SINTERCARD", "2", "a", "b", "FOO") == SYNTAX


def test_sscan(c):
    c.call("SADD", "s", "a", "b", "c")
    cursor, members = c.call("SSCAN", "s", "0")
    assert cursor == b"0" and sorted(members) == [b"a", b"b", b"c"]
    assert c.call("SSCAN", "s", "0", "MATCH", "b") == [b"0", [b"b"]]
    big = [f"m{i}" for i in range(500)]
    c.call("SADD", "big", *big)
    seen, cursor = set(), b"0"
    while True:
        cursor, members = c.call("SSCAN", "big", cursor, "COUNT", "25")
        seen.update(members)
        if cursor == b"0":
            break
    assert seen == {m.encode() for m in big}


def test_intset_converts_past_its_limit(c, restore_config):
    restore_config("set-max-intset-entries")
    c.call("CONFIG", "SET", "set-max-intset-entries", "4")
    c.call("SADD", "s", "1", "2", "3", "4")
    assert c.call("OBJECT", "ENCODING", "s") == b"intset"
    c.call("SADD", "s", "5")
    assert c.call("OBJECT", "ENCODING", "s") == b"hashtable"


@pytest.mark.keel_differs(reason="small sets of strings are listpacks, as in Redis 7.2")
def test_small_string_sets_are_listpacks(c):
    c.call("SADD", "s", "a", "b")
    assert c.call("OBJECT", "ENCODING", "s") == b"listpack"
    c.call("SADD", "s", "x" * 65)
    assert c.call("OBJECT", "ENCODING", "s") == b"hashtable"


@pytest.mark.parametrize("cmd", [
    ["SADD", "s", "a"], ["SREM", "s", "a"], ["SISMEMBER", "s", "a"], ["SMISMEMBER", "s", "a"],
    ["SMEMBERS", "s"], ["SCARD", "s"], ["SPOP", "s"], ["SRANDMEMBER", "s"], ["SSCAN", "s", "0"],
    ["SINTER", "s"], ["SUNION", "s"], ["SDIFF", "s"],
])
def test_wrongtype(c, cmd):
    c.call("SET", "s", "v")
    assert c.call(*cmd) == WRONGTYPE
