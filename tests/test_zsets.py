"""Sorted-set commands: ZADD (NX/XX/GT/LT/CH/INCR), ZINCRBY, ZREM, ZCARD,
ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZRANGE (BYSCORE/BYLEX/REV/LIMIT/
WITHSCORES) and its older forms, ZCOUNT, ZLEXCOUNT, ZPOPMIN/ZPOPMAX,
ZREMRANGEBY*, ZSCAN, ZUNION/ZINTER/ZDIFF and their STORE forms, ZINTERCARD,
ZRANGESTORE, ZRANDMEMBER; score parsing and formatting, encodings and their
thresholds, WRONGTYPE."""

import pytest

from support import Double, Err, Status

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_FLOAT = Err("ERR value is not a valid float")
NOT_INTEGER = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")
BAD_SCORE_RANGE = Err("ERR min or max is not a float")
BAD_LEX_RANGE = Err("ERR min or max not valid string range item")


def test_zadd_zcard_zscore_zrem(c):
    assert c.call("ZADD", "z", "1", "a", "2", "b", "1.5", "a") == 2
    assert c.call("ZCARD", "z") == 2
    assert c.call("ZSCORE", "z", "a") == b"1.5"
    assert c.call("ZSCORE", "z", "nope") is None
    assert c.call("ZSCORE", "missing", "a") is None
    assert c.call("ZMSCORE", "z", "a", "nope", "b") == [b"1.5", None, b"2"]
    assert c.call("ZMSCORE", "missing", "a") == [None]
    assert c.call("ZCARD", "missing") == 0
    assert c.call("TYPE", "z") == Status("zset")
    assert c.call("ZREM", "z", "a", "x") == 1
    assert c.call("ZREM", "missing", "a") == 0
    assert c.call("ZREM", "z", "b") == 1
    assert c.call("EXISTS", "z") == 0


def test_zadd_flags(c):
    assert c.call("ZADD", "z", "XX", "1", "a") == 0
    assert c.call("EXISTS", "z") == 0
    assert c.call("ZADD", "z", "NX", "1", "a") == 1
    assert c.call("ZADD", "z", "NX", "5", "a", "2", "b") == 1
    assert c.call("ZSCORE", "z", "a") == b"1"
    assert c.call("ZADD", "z", "XX", "CH", "3", "a", "9", "c") == 1
    assert c.call("ZSCORE", "z", "c") is None
    assert c.call("ZADD", "z", "GT", "CH", "2", "a", "4", "b") == 1
    assert c.call("ZMSCORE", "z", "a", "b") == [b"3", b"4"]
    assert c.call("ZADD", "z", "LT", "CH", "1", "a", "7", "b", "0", "d") == 2
    assert c.call("ZMSCORE", "z", "a", "b", "d") == [b"1", b"4", b"0"]
    assert c.call("ZADD", "z", "CH", "1", "a") == 0


def test_zadd_incr_and_zincrby(c):
    assert c.call("ZADD", "z", "INCR", "2.5", "a") == b"2.5"
    assert c.call("ZADD", "z", "INCR", "1", "a") == b"3.5"
    assert c.call("ZADD", "z", "NX", "INCR", "1", "a") is None
    assert c.call("ZADD", "z", "XX", "INCR", "1", "b") is None
    assert c.call("ZADD", "z", "GT", "INCR", "-1", "a") is None
    assert c.call("ZADD", "z", "INCR", "0", "a") == b"3.5"
    assert c.call("ZINCRBY", "z", "0.1", "a") == b"3.6000000000000001"
    assert c.call("ZINCRBY", "z", "-inf", "b") == b"-inf"
    assert c.call("ZINCRBY", "z", "+inf", "b") == Err("ERR resulting score is not a number (NaN)")
    assert c.call("ZSCORE", "z", "b") == b"-inf"
    assert c.call("ZINCRBY", "z", "x", "a") == NOT_FLOAT
    assert c.call("ZINCRBY", "missing", "5", "m") == b"5"


def test_zadd_errors(c):
    assert c.call("ZADD", "z", "1") == Err("ERR wrong number of arguments for 'zadd' command")
    assert c.call("ZADD", "z", "1", "a", "2") == SYNTAX
    assert c.call("ZADD", "z", "NX", "1") == SYNTAX
    assert c.call("ZADD", "z", "NX", "XX", "1", "a") == Err(
        "ERR XX and NX options at the same time are not compatible")
    for flags in (["GT", "LT"], ["NX", "GT"], ["NX", "LT"]):
        assert c.call("ZADD", "z", *flags, "1", "a") == Err(
            "ERR GT, LT, and/or NX options at the same time are not compatible")
    assert c.call("ZADD", "z", "INCR", "1", "a", "2", "b") == Err(
        "ERR INCR option supports a single increment-element pair")
    for bad in ("x", "nan", "1e400", "1e-400", " 1", "1 ", ""):
        assert c.call("ZADD", "z", "1", "a", bad, "b") == NOT_FLOAT, bad
    assert c.call("EXISTS", "z") == 0
    c.call("SET", "s", "x")
    for cmd in (["ZADD", "s", "1", "a"], ["ZREM", "s", "a"], ["ZSCORE", "s", "a"],
                ["ZCARD", "s"], ["ZRANGE", "s", "0", "-1"], ["ZRANK", "s", "a"],
                ["ZCOUNT", "s", "-inf", "+inf"], ["ZINCRBY", "s", "1", "a"]):
        assert c.call(*cmd) == WRONGTYPE, cmd
    assert c.call("ZADD", "s", "x", "a") == NOT_FLOAT


def test_score_formatting(c):
    c.call("ZADD", "z", "0.1", "a", "1e20", "b", "-0", "c", "inf", "d", "-inf", "e", "3", "f")
    assert c.call("ZRANGE", "z", "0", "-1", "WITHSCORES") == [
        b"e", b"-inf", b"c", b"0", b"a", b"0.10000000000000001", b"f", b"3",
        b"b", b"1e+20", b"d", b"inf"]


def test_negative_zero_is_zero_only_in_listpack(c):
    c.call("ZADD", "small", "-0", "x")
    assert c.call("ZSCORE", "small", "x") == b"0"
    c.call("CONFIG", "SET", "zset-max-listpack-entries", "0")
    try:
        c.call("ZADD", "big", "-0", "x")
        assert c.call("OBJECT", "ENCODING", "big") == b"skiplist"
        assert c.call("ZSCORE", "big", "x") == b"-0"
    finally:
        c.call("CONFIG", "SET", "zset-max-listpack-entries", "128")


def test_zrank_zrevrank(c):
    c.call("ZADD", "z", "1", "a", "2", "b", "2", "c", "3", "d")
    assert [c.call("ZRANK", "z", m) for m in "abcd"] == [0, 1, 2, 3]
    assert [c.call("ZREVRANK", "z", m) for m in "abcd"] == [3, 2, 1, 0]
    assert c.call("ZRANK", "z", "x") is None
    assert c.call("ZRANK", "missing", "x") is None


def test_zrange_by_index(c):
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    assert c.call("ZRANGE", "z", "0", "-1") == [b"a", b"b", b"c", b"d"]
    assert c.call("ZRANGE", "z", "1", "2", "WITHSCORES") == [b"b", b"2", b"c", b"3"]
    assert c.call("ZRANGE", "z", "-2", "100") == [b"c", b"d"]
    assert c.call("ZRANGE", "z", "3", "1") == []
    assert c.call("ZRANGE", "z", "0", "1", "REV") == [b"d", b"c"]
    assert c.call("ZREVRANGE", "z", "0", "1", "WITHSCORES") == [b"d", b"4", b"c", b"3"]
    assert c.call("ZRANGE", "missing", "0", "-1") == []
    assert c.call("ZRANGE", "z", "a", "1") == NOT_INTEGER
    assert c.call("ZRANGE", "z", "0", "1", "LIMIT", "0", "1") == Err(
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
    assert c.call("ZRANGE", "z", "0", "1", "BOGUS") == SYNTAX
    assert c.call("ZREVRANGE", "z", "0", "1", "REV") == SYNTAX


def test_zrange_by_score(c):
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    assert c.call("ZRANGEBYSCORE", "z", "2", "4") == [b"b", b"c", b"d"]
    assert c.call("ZRANGEBYSCORE", "z", "(2", "(4") == [b"c"]
    assert c.call("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "2") == [b"b", b"c"]
    assert c.call("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "-1") == [b"b", b"c", b"d", b"e"]
    assert c.call("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "2") == []
    assert c.call("ZRANGEBYSCORE", "z", "4", "2") == []
    assert c.call("ZREVRANGEBYSCORE", "z", "4", "2", "WITHSCORES") == [b"d", b"4", b"c", b"3", b"b", b"2"]
    assert c.call("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "1", "2") == [b"d", b"c"]
    assert c.call("ZRANGE", "z", "(1", "3", "BYSCORE") == [b"b", b"c"]
    assert c.call("ZRANGE", "z", "5", "(3", "BYSCORE", "REV", "LIMIT", "0", "5") == [b"e", b"d"]
    assert c.call("ZCOUNT", "z", "(1", "3") == 2
    assert c.call("ZCOUNT", "z", "", "10") == 5
    assert c.call("ZCOUNT", "z", "3", "1") == 0
    assert c.call("ZCOUNT", "missing", "-inf", "+inf") == 0
    assert c.call("ZCOUNT", "z", "(", " 1") == 1  # strtod: empty is 0, spaces lead
    for bad in ("x", "nan", "[1", "1 "):
        assert c.call("ZCOUNT", "z", bad, "1") == BAD_SCORE_RANGE, bad
        assert c.call("ZRANGEBYSCORE", "z", "1", bad) == BAD_SCORE_RANGE, bad
    assert c.call("ZRANGEBYSCORE", "z", "1", "2", "LIMIT", "x", "1") == NOT_INTEGER


def test_zrange_by_lex(c):
    c.call("ZADD", "z", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e")
    assert c.call("ZRANGEBYLEX", "z", "-", "+") == [b"a", b"b", b"c", b"d", b"e"]
    assert c.call("ZRANGEBYLEX", "z", "[b", "(d") == [b"b", b"c"]
    assert c.call("ZRANGEBYLEX", "z", "(b", "[d", "LIMIT", "1", "5") == [b"d"]
    assert c.call("ZREVRANGEBYLEX", "z", "+", "[c") == [b"e", b"d", b"c"]
    assert c.call("ZRANGE", "z", "[d", "-", "BYLEX", "REV") == [b"d", b"c", b"b", b"a"]
    assert c.call("ZRANGEBYLEX", "z", "+", "-") == []
    assert c.call("ZLEXCOUNT", "z", "[b", "+") == 4
    assert c.call("ZLEXCOUNT", "missing", "-", "+") == 0
    for bad in ("b", "", "--", "+x"):
        assert c.call("ZRANGEBYLEX", "z", bad, "+") == BAD_LEX_RANGE, bad
        assert c.call("ZLEXCOUNT", "z", "-", bad) == BAD_LEX_RANGE, bad
    assert c.call("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES") == Err(
        "ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    assert c.call("ZRANGE", "z", "-", "+", "BYLEX", "BYSCORE") == SYNTAX


def test_withscores_pairs_in_resp3(c):
    c.call("HELLO", "3")
    c.call("ZADD", "z", "1.5", "a", "2", "b")
    assert c.call("ZRANGE", "z", "0", "-1", "WITHSCORES") == [
        [b"a", Double("1.5")], [b"b", Double("2")]]
    assert c.call("ZREVRANGEBYSCORE", "z", "+inf", "2", "WITHSCORES") == [[b"b", Double("2")]]
    assert c.call("ZRANDMEMBER", "z", "-1", "WITHSCORES")[0][1] in (Double("1.5"), Double("2"))
    assert c.call("ZSCORE", "z", "a") == Double("1.5")
    assert c.call("ZINCRBY", "z", "1", "a") == Double("2.5")


@pytest.mark.parametrize("protocol", ["2", "3"])
def test_encoding_converts_past_thresholds(c, protocol):
    c.call("HELLO", protocol)
    c.call("ZADD", "small", *[x for i in range(128) for x in (str(i), f"m{i}")])
    assert c.call("OBJECT", "ENCODING", "small") == b"listpack"
    c.call("ZADD", "small", "0", "one-more")
    assert c.call("OBJECT", "ENCODING", "small") == b"skiplist"
    c.call("ZADD", "long", "1", "x" * 64)
    assert c.call("OBJECT", "ENCODING", "long") == b"listpack"
    c.call("ZADD", "long", "1", "x" * 65)
    assert c.call("OBJECT", "ENCODING", "long") == b"skiplist"
    assert c.call("ZRANGE", "long", "0", "-1") == [b"x" * 64, b"x" * 65]


def test_thresholds_are_configurable(c):
    c.call("CONFIG", "SET", "zset-max-listpack-entries", "2")
    try:
        c.call("ZADD", "z", "1", "a", "2", "b")
        assert c.call("OBJECT", "ENCODING", "z") == b"listpack"
        c.call("ZADD", "z", "3", "c")
        assert c.call("OBJECT", "ENCODING", "z") == b"skiplist"
        c.call("ZREM", "z", "a", "b")
        assert c.call("OBJECT", "ENCODING", "z") == b"skiplist"
    finally:
        c.call("CONFIG", "SET", "zset-max-listpack-entries", "128")
    assert c.call("CONFIG", "GET", "zset-max-listpack-value") == [b"zset-max-listpack-value", b"64"]


def test_large_sorted_set_ranks_and_ranges(c):
    n = 1000
    c.call("ZADD", "z", *[x for i in range(n) for x in (str(i % 97), f"m{i:04}")])
    assert c.call("OBJECT", "ENCODING", "z") == b"skiplist"
    expected = sorted((i % 97, f"m{i:04}".encode()) for i in range(n))
    members = [m for _, m in expected]
    assert c.call("ZRANGE", "z", "0", "-1") == members
    assert c.call("ZRANGE", "z", "100", "109") == members[100:110]
    assert c.call("ZREVRANGE", "z", "0", "4") == members[::-1][:5]
    assert c.call("ZRANK", "z", members[500]) == 500
    assert c.call("ZCOUNT", "z", "10", "(20") == sum(1 for s, _ in expected if 10 <= s < 20)
    assert c.call("ZRANGEBYSCORE", "z", "50", "50") == [m for s, m in expected if s == 50]
    for m in members[::2]:
        c.call("ZREM", "z", m)
    assert c.call("ZRANGE", "z", "0", "-1") == members[1::2]
    assert c.call("ZRANK", "z", members[501]) == 250


def test_zpopmin_zpopmax(c):
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    assert c.call("ZPOPMIN", "z") == [b"a", b"1"]
    assert c.call("ZPOPMAX", "z", "2") == [b"d", b"4", b"c", b"3"]
    assert c.call("ZPOPMIN", "z", "0") == []
    assert c.call("ZPOPMIN", "z", "-1") == Err("ERR value is out of range, must be positive")
    assert c.call("ZPOPMIN", "z", "x") == Err("ERR value is out of range, must be positive")
    assert c.call("ZPOPMIN", "z", "x", "y") == SYNTAX
    assert c.call("ZPOPMIN", "z", "10") == [b"b", b"2"]
    assert c.call("EXISTS", "z") == 0
    assert c.call("ZPOPMIN", "z") == []
    assert c.call("ZPOPMAX", "z", "3") == []


def test_zpop_replies_in_resp3(c):
    c.call("HELLO", "3")
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    assert c.call("ZPOPMIN", "z") == [b"a", Double("1")]
    assert c.call("ZPOPMAX", "z", "2") == [[b"c", Double("3")], [b"b", Double("2")]]


def test_zremrange(c):
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    assert c.call("ZREMRANGEBYRANK", "z", "-2", "-1") == 2
    assert c.call("ZREMRANGEBYSCORE", "z", "(1", "2") == 1
    assert c.call("ZRANGE", "z", "0", "-1") == [b"a", b"c"]
    assert c.call("ZREMRANGEBYLEX", "z", "-", "+") == 2
    assert c.call("EXISTS", "z") == 0
    assert c.call("ZREMRANGEBYRANK", "z", "0", "-1") == 0
    assert c.call("ZREMRANGEBYRANK", "z", "x", "1") == NOT_INTEGER
    assert c.call("ZREMRANGEBYSCORE", "z", "x", "1") == BAD_SCORE_RANGE
    assert c.call("ZREMRANGEBYLEX", "z", "x", "+") == BAD_LEX_RANGE


@pytest.mark.parametrize("size", [3, 300])
def test_zscan_returns_every_member_once(c, size):
    c.call("ZADD", "z", *[x for i in range(size) for x in (str(i / 4), f"m{i}")])
    seen = {}
    cursor = b"0"
    while True:
        cursor, items = c.call("ZSCAN", "z", cursor, "COUNT", "50")
        for member, score in zip(items[::2], items[1::2]):
            seen[member] = score
        if cursor == b"0":
            break
    assert seen == {f"m{i}".encode(): c.call("ZSCORE", "z", f"m{i}") for i in range(size)}
    assert c.call("ZSCAN", "z", "0", "MATCH", "m1", "COUNT", "1000") == [b"0", [b"m1", b"0.25"]]
    assert c.call("ZSCAN", "missing", "0") == [b"0", []]


def test_zunionstore_zinterstore(c):
    c.call("ZADD", "a", "1", "x", "2", "y", "inf", "z")
    c.call("ZADD", "b", "10", "y", "-inf", "z", "5", "w")
    c.call("SADD", "s", "y", "v")
    assert c.call("ZUNIONSTORE", "d", "2", "a", "b") == 4
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [
        b"z", b"0", b"x", b"1", b"w", b"5", b"y", b"12"]
    assert c.call("ZINTERSTORE", "d", "3", "a", "b", "s", "WEIGHTS", "2", "1", "3") == 1
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"y", b"17"]
    assert c.call("ZUNIONSTORE", "d", "2", "a", "s", "AGGREGATE", "MAX") == 4
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [
        b"v", b"1", b"x", b"1", b"y", b"2", b"z", b"inf"]
    assert c.call("ZINTERSTORE", "d", "2", "a", "b", "AGGREGATE", "min") == 2
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"z", b"-inf", b"y", b"2"]
    assert c.call("ZUNIONSTORE", "d", "1", "a", "WEIGHTS", "0") == 3
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"x", b"0", b"y", b"0", b"z", b"0"]
    assert c.call("ZINTERSTORE", "d", "2", "a", "missing") == 0
    assert c.call("EXISTS", "d") == 0


def test_zstore_errors(c):
    c.call("ZADD", "a", "1", "x")
    c.call("SET", "str", "v")
    assert c.call("ZUNIONSTORE", "d", "0", "a") == Err(
        "ERR at least 1 input key is needed for 'zunionstore' command")
    assert c.call("ZINTERSTORE", "d", "3", "a", "b") == SYNTAX
    assert c.call("ZUNIONSTORE", "d", "x", "a") == NOT_INTEGER
    assert c.call("ZUNIONSTORE", "d", "2", "a", "str", "BOGUS") == WRONGTYPE
    assert c.call("ZUNIONSTORE", "d", "1", "a", "WEIGHTS", "x") == Err("ERR weight value is not a float")
    assert c.call("ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1") == SYNTAX
    assert c.call("ZUNIONSTORE", "d", "1", "a", "AGGREGATE", "avg") == SYNTAX
    assert c.call("ZUNIONSTORE", "d", "1", "a", "AGGREGATE") == SYNTAX
    assert c.call("ZUNIONSTORE", "str", "1", "a") == 1
    assert c.call("TYPE", "str") == Status("zset")


def test_zunion_zinter_zdiff_reply(c):
    c.call("ZADD", "a", "1", "x", "2", "y", "3", "z", "-0", "n")
    c.call("ZADD", "b", "5", "y", "0", "z", "inf", "w")
    c.call("SADD", "s", "x", "w", "v")
    assert c.call("ZUNION", "2", "a", "b") == [b"n", b"x", b"z", b"y", b"w"]
    assert c.call("ZUNION", "2", "a", "b", "WITHSCORES") == [
        b"n", b"0", b"x", b"1", b"z", b"3", b"y", b"7", b"w", b"inf"]
    assert c.call("ZUNION", "3", "a", "b", "s", "WEIGHTS", "1", "2", "-1", "WITHSCORES") == [
        b"v", b"-1", b"n", b"0", b"x", b"0", b"z", b"3", b"y", b"12", b"w", b"inf"]
    assert c.call("ZUNION", "2", "a", "b", "AGGREGATE", "MAX", "WITHSCORES") == [
        b"n", b"0", b"x", b"1", b"z", b"3", b"y", b"5", b"w", b"inf"]
    assert c.call("ZINTER", "2", "a", "b", "WITHSCORES") == [b"z", b"3", b"y", b"7"]
    assert c.call("ZINTER", "2", "a", "s", "AGGREGATE", "MIN", "WITHSCORES") == [b"x", b"1"]
    assert c.call("ZINTER", "2", "a", "missing") == []
    assert c.call("ZDIFF", "2", "a", "b", "WITHSCORES") == [b"n", b"0", b"x", b"1"]
    assert c.call("ZDIFF", "3", "a", "s", "b") == [b"n"]
    assert c.call("ZDIFF", "1", "a") == [b"n", b"x", b"y", b"z"]
    assert c.call("ZDIFF", "2", "missing", "a") == []
    assert c.call("ZUNION", "1", "a", "WITHSCORES", "WITHSCORES") == [
        b"n", b"0", b"x", b"1", b"y", b"2", b"z", b"3"]


def test_zunion_withscores_pairs_in_resp3(c):
    c.call("ZADD", "a", "1", "x", "2.5", "y")
    c.call("HELLO", "3")
    assert c.call("ZUNION", "1", "a", "WITHSCORES") == [[b"x", Double("1")], [b"y", Double("2.5")]]
    assert c.call("ZDIFF", "1", "a") == [b"x", b"y"]


def test_zdiffstore_and_zintercard(c):
    c.call("ZADD", "a", "1", "x", "2", "y", "3", "z")
    c.call("ZADD", "b", "5", "y")
    c.call("SADD", "s", "x", "y", "q")
    assert c.call("ZDIFFSTORE", "d", "2", "a", "b") == 2
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"x", b"1", b"z", b"3"]
    assert c.call("ZDIFFSTORE", "d", "2", "a", "a") == 0
    assert c.call("EXISTS", "d") == 0
    assert c.call("ZINTERCARD", "2", "a", "s") == 2
    assert c.call("ZINTERCARD", "2", "a", "s", "LIMIT", "1") == 1
    assert c.call("ZINTERCARD", "2", "a", "s", "LIMIT", "0") == 2
    assert c.call("ZINTERCARD", "2", "a", "s", "LIMIT", "1", "LIMIT", "5") == 2
    assert c.call("ZINTERCARD", "1", "s") == 3
    assert c.call("ZINTERCARD", "2", "a", "missing") == 0


@pytest.mark.parametrize("args, error", [
    (("ZUNION", "0", "a"), "ERR at least 1 input key is needed for 'zunion' command"),
    (("ZINTER", "-1", "a"), "ERR at least 1 input key is needed for 'zinter' command"),
    (("ZDIFF", "0", "a"), "ERR at least 1 input key is needed for 'zdiff' command"),
    (("ZDIFFSTORE", "d", "0", "a"), "ERR at least 1 input key is needed for 'zdiffstore' command"),
    (("ZINTERCARD", "0", "a"), "ERR at least 1 input key is needed for 'zintercard' command"),
    (("ZUNION", "x", "a"), NOT_INTEGER),
    (("ZINTERCARD", "2", "a"), SYNTAX),
    (("ZUNION", "2", "a", "str"), WRONGTYPE),
    (("ZDIFF", "2", "str", "a", "BOGUS"), WRONGTYPE),
    (("ZINTERCARD", "2", "a", "str"), WRONGTYPE),
    (("ZDIFFSTORE", "d", "1", "str"), WRONGTYPE),
    (("ZUNION", "1", "a", "WEIGHTS", "x"), "ERR weight value is not a float"),
    (("ZUNION", "1", "a", "WEIGHTS"), SYNTAX),
    (("ZUNION", "1", "a", "AGGREGATE"), SYNTAX),
    (("ZUNION", "1", "a", "LIMIT", "1"), SYNTAX),
    (("ZDIFF", "1", "a", "WEIGHTS", "1"), SYNTAX),
    (("ZDIFF", "1", "a", "AGGREGATE", "SUM"), SYNTAX),
    (("ZUNIONSTORE", "d", "1", "a", "WITHSCORES"), SYNTAX),
    (("ZDIFFSTORE", "d", "1", "a", "WITHSCORES"), SYNTAX),
    (("ZINTERCARD", "1", "a", "WITHSCORES"), SYNTAX),
    (("ZINTERCARD", "1", "a", "WEIGHTS", "1"), SYNTAX),
    (("ZINTERCARD", "1", "a", "LIMIT"), SYNTAX),
    (("ZINTERCARD", "1", "a", "LIMIT", "-1"), "ERR LIMIT can't be negative"),
    (("ZINTERCARD", "1", "a", "LIMIT", "x"), "ERR LIMIT can't be negative"),
    (("ZUNION", "1"), "ERR wrong number of arguments for 'zunion' command"),
    (("ZINTERCARD", "1"), "ERR wrong number of arguments for 'zintercard' command"),
    (("ZDIFFSTORE", "d", "1"), "ERR wrong number of arguments for 'zdiffstore' command"),
])
def test_zset_algebra_errors(c, args, error):
    c.call("ZADD", "a", "1", "x")
    c.call("SET", "str", "v")
    assert c.call(*args) == (error if isinstance(error, Err) else Err(error))


def test_zrangestore(c):
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    c.call("ZADD", "lex", "0", "a", "0", "b", "0", "c")
    assert c.call("ZRANGESTORE", "d", "z", "1", "2", "REV") == 2
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"b", b"2", b"c", b"3"]
    assert c.call("ZRANGESTORE", "d", "z", "(1", "+inf", "BYSCORE", "LIMIT", "1", "1") == 1
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"c", b"3"]
    assert c.call("ZRANGESTORE", "d", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", "2") == 2
    assert c.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"c", b"3", b"d", b"4"]
    assert c.call("ZRANGESTORE", "d", "lex", "[b", "+", "BYLEX") == 2
    assert c.call("ZRANGE", "d", "0", "-1") == [b"b", b"c"]
    assert c.call("ZRANGESTORE", "d", "z", "5", "6") == 0
    assert c.call("EXISTS", "d") == 0
    c.call("SET", "d", "x")
    assert c.call("ZRANGESTORE", "d", "missing", "0", "-1") == 0
    assert c.call("EXISTS", "d") == 0
    assert c.call("ZRANGESTORE", "z", "z", "0", "1") == 2
    assert c.call("ZRANGE", "z", "0", "-1") == [b"a", b"b"]


@pytest.mark.parametrize("args, error", [
    (("ZRANGESTORE", "d", "str", "0", "-1"), WRONGTYPE),
    (("ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES"), SYNTAX),
    (("ZRANGESTORE", "d", "z", "0", "-1", "LIMIT", "0", "1"),
     Err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")),
    (("ZRANGESTORE", "d", "z", "x", "1"), NOT_INTEGER),
    (("ZRANGESTORE", "d", "z", "a", "b", "BYSCORE"), BAD_SCORE_RANGE),
    (("ZRANGESTORE", "d", "z", "a", "b", "BYLEX"), BAD_LEX_RANGE),
    (("ZRANGESTORE", "d", "z", "0"), Err("ERR wrong number of arguments for 'zrangestore' command")),
])
def test_zrangestore_errors(c, args, error):
    c.call("ZADD", "z", "1", "a")
    c.call("SET", "str", "v")
    assert c.call(*args) == error


def test_zrandmember(c):
    assert c.call("ZRANDMEMBER", "missing") is None
    assert c.call("ZRANDMEMBER", "missing", "3") == []
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    assert c.call("ZRANDMEMBER", "z") in (b"a", b"b", b"c")
    assert sorted(c.call("ZRANDMEMBER", "z", "10")) == [b"a", b"b", b"c"]
    picks = c.call("ZRANDMEMBER", "z", "-20", "WITHSCORES")
    assert len(picks) == 40
    scores = {b"a": b"1", b"b": b"2", b"c": b"3"}
    assert all(scores[m] == s for m, s in zip(picks[::2], picks[1::2]))
    assert c.call("ZRANDMEMBER", "z", "0") == []
    assert c.call("ZRANDMEMBER", "z", "1", "BOGUS") == SYNTAX
    assert c.call("ZRANDMEMBER", "z", "x") == NOT_INTEGER
    assert c.call("ZRANDMEMBER", "z", "-9223372036854775807", "WITHSCORES") == Err(
        "ERR value is out of range")


@pytest.mark.parametrize("padding", [0, 200], ids=["listpack", "skiplist"])
def test_negative_zero_scores_equal_zero(c, padding):
    if padding:
        c.call("ZADD", "z", *[x for i in range(padding) for x in (str(i + 10), f"pad{i}")])
    assert c.call("ZADD", "z", "-0", "e", "-0", "2", "0", "1") == 3
    assert c.call("ZRANGEBYSCORE", "z", "-2", "0.5") == [b"1", b"2", b"e"]
    # A listpack stores -0 as 0; a skiplist keeps the sign it was given.
    negative_zero = b"-0" if padding else b"0"
    assert c.call("ZRANGE", "z", "0", "2", "WITHSCORES") == [
        b"1", b"0", b"2", negative_zero, b"e", negative_zero]
    assert c.call("ZRANK", "z", "e") == 2
    assert c.call("ZSCORE", "z", "2") == negative_zero


def test_zmpop(c):
    c.call("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    assert c.call("ZMPOP", "2", "missing", "z", "MIN") == [b"z", [[b"a", b"1"]]]
    assert c.call("ZMPOP", "1", "z", "max", "COUNT", "2") == [b"z", [[b"d", b"4"], [b"c", b"3"]]]
    c.call("HELLO", "3")
    assert c.call("ZMPOP", "1", "z", "MIN", "COUNT", "10") == [b"z", [[b"b", Double("2")]]]
    assert c.call("EXISTS", "z") == 0
    assert c.call("ZMPOP", "1", "z", "MIN") is None
    c.call("HELLO", "2")
    c.send("ZMPOP", "1", "z", "MIN")
    assert c.read_raw() == b"*-1\r\n"
    c.call("SET", "str", "v")
    assert c.call("ZMPOP", "1", "str", "MIN") == WRONGTYPE


@pytest.mark.parametrize("args,error", [
    (("0", "z", "MIN"), "ERR numkeys should be greater than 0"),
    (("2", "z", "MIN"), "ERR syntax error"),
    (("1", "z", "LEFT"), "ERR syntax error"),
    (("1", "z", "MIN", "COUNT", "0"), "ERR count should be greater than 0"),
    (("1", "z", "MIN", "COUNT", "-1"), "ERR count should be greater than 0"),
    (("1", "z", "MIN", "COUNT", "2", "COUNT", "2"), "ERR syntax error"),
])
def test_zmpop_errors(c, args, error):
    c.call("ZADD", "z", "1", "a")
    assert c.call("ZMPOP", *args) == Err(error)
    assert c.call("BZMPOP", "0", *args) == Err(error)
    assert c.call("ZCARD", "z") == 1
