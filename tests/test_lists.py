"""List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LRANGE,
LINDEX, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE, RPOPLPUSH; encodings and
WRONGTYPE."""

import pytest

from support import OK, Err, Status

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INTEGER = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")
MUST_BE_POSITIVE = Err("ERR value is out of range, must be positive")


def test_push_and_range(c):
    assert c.call("RPUSH", "l", "a", "b") == 2
    assert c.call("LPUSH", "l", "x", "y") == 4
    assert c.call("LRANGE", "l", "0", "-1") == [b"y", b"x", b"a", b"b"]
    assert c.call("LLEN", "l") == 4
    assert c.call("LLEN", "missing") == 0
    assert c.call("TYPE", "l") == Status("list")
    assert c.call("OBJECT", "ENCODING", "l") == b"quicklist"


def test_pushx_needs_an_existing_list(c):
    assert c.call("LPUSHX", "l", "a") == 0
    assert c.call("RPUSHX", "l", "a") == 0
    assert c.call("EXISTS", "l") == 0
    c.call("RPUSH", "l", "m")
    assert c.call("LPUSHX", "l", "a", "b") == 3
    assert c.call("RPUSHX", "l", "z") == 4
    assert c.call("LRANGE", "l", "0", "-1") == [b"b", b"a", b"m", b"z"]


@pytest.mark.parametrize("start,stop,want", [
    ("0", "-1", "abcde"), ("1", "2", "bc"), ("-2", "-1", "de"), ("-100", "100", "abcde"),
    ("3", "1", ""), ("5", "10", ""), ("-1", "-2", ""), ("0", "0", "a"),
])
def test_lrange_indexes(c, start, stop, want):
    c.call("RPUSH", "l", *"abcde")
    assert c.call("LRANGE", "l", start, stop) == [ch.encode() for ch in want]


def test_lrange_errors_and_missing(c):
    assert c.call("LRANGE", "missing", "0", "-1") == []
    assert c.call("LRANGE", "l", "a", "1") == NOT_INTEGER


def test_pop_without_and_with_count(c):
    assert c.call("LPOP", "missing") is None
    assert c.call("LPOP", "missing", "2") is None
    c.call("RPUSH", "l", *"abcde")
    assert c.call("LPOP", "l") == b"a"
    assert c.call("RPOP", "l") == b"e"
    assert c.call("LPOP", "l", "0") == []
    assert c.call("RPOP", "l", "2") == [b"d", b"c"]
    assert c.call("LPOP", "l", "5") == [b"b"]
    assert c.call("EXISTS", "l") == 0
    c.call("RPUSH", "l", "a")
    assert c.call("LPOP", "l", "-1") == MUST_BE_POSITIVE
    assert c.call("LPOP", "l", "x") == MUST_BE_POSITIVE
    assert c.call("LPOP", "l", "1", "2") == Err("ERR wrong number of arguments for 'lpop' command")


def test_lindex_and_lset(c):
    c.call("RPUSH", "l", *"abc")
    assert c.call("LINDEX", "l", "0") == b"a"
    assert c.call("LINDEX", "l", "-1") == b"c"
    assert c.call("LINDEX", "l", "3") is None
    assert c.call("LINDEX", "l", "-4") is None
    assert c.call("LINDEX", "missing", "0") is None
    assert c.call("LINDEX", "l", "x") == NOT_INTEGER
    assert c.call("LSET", "l", "-1", "z") == OK
    assert c.call("LSET", "l", "1", "y") == OK
    assert c.call("LRANGE", "l", "0", "-1") == [b"a", b"y", b"z"]
    assert c.call("LSET", "l", "3", "q") == Err("ERR index out of range")
    assert c.call("LSET", "missing", "0", "q") == Err("ERR no such key")
    assert c.call("LSET", "l", "x", "q") == NOT_INTEGER


def test_linsert(c):
    assert c.call("LINSERT", "missing", "BEFORE", "a", "x") == 0
    c.call("RPUSH", "l", *"abc")
    assert c.call("LINSERT", "l", "BEFORE", "b", "x") == 4
    assert c.call("LINSERT", "l", "after", "c", "y") == 5
    assert c.call("LINSERT", "l", "AFTER", "zz", "y") == -1
    assert c.call("LRANGE", "l", "0", "-1") == [b"a", b"x", b"b", b"c", b"y"]
    assert c.call("LINSERT", "l", "MIDDLE", "b", "x") == SYNTAX


@pytest.mark.parametrize("count,removed,left", [
    ("0", 3, "bcd"), ("2", 2, "bcad"), ("-2", 2, "abcd"), ("10", 3, "bcd"), ("-1", 1, "abacd"),
])
def test_lrem(c, count, removed, left):
    c.call("RPUSH", "l", *"abacad")
    assert c.call("LREM", "l", count, "a") == removed
    assert c.call("LRANGE", "l", "0", "-1") == [ch.encode() for ch in left]


def test_lrem_errors_and_emptying(c):
    assert c.call("LREM", "missing", "0", "a") == 0
    c.call("RPUSH", "l", "a", "a")
    assert c.call("LREM", "l", "x", "a") == NOT_INTEGER
    assert c.call("LREM", "l", "0", "a") == 2
    assert c.call("EXISTS", "l") == 0


@pytest.mark.parametrize("start,stop,left", [
    ("1", "-2", "bcd"), ("0", "-1", "abcde"), ("-2", "100", "de"), ("3", "1", ""), ("9", "10", ""),
])
def test_ltrim(c, start, stop, left):
    c.call("RPUSH", "l", *"abcde")
    assert c.call("LTRIM", "l", start, stop) == OK
    assert c.call("LRANGE", "l", "0", "-1") == [ch.encode() for ch in left]
    assert c.call("EXISTS", "l") == int(bool(left))


def test_lpos(c):
    c.call("RPUSH", "l", *"abcabcab")
    assert c.call("LPOS", "l", "b") == 1
    assert c.call("LPOS", "l", "b", "RANK", "2") == 4
    assert c.call("LPOS", "l", "b", "RANK", "-1") == 7
    assert c.call("LPOS", "l", "b", "COUNT", "0") == [1, 4, 7]
    assert c.call("LPOS", "l", "b", "COUNT", "2", "RANK", "-1") == [7, 4]
    assert c.call("LPOS", "l", "b", "COUNT", "0", "MAXLEN", "5") == [1, 4]
    assert c.call("LPOS", "l", "b", "RANK", "-1", "MAXLEN", "1") == 7
    assert c.call("LPOS", "l", "z") is None
    assert c.call("LPOS", "l", "z", "COUNT", "1") == []
    assert c.call("LPOS", "missing", "z") is None
    assert c.call("LPOS", "missing", "z", "COUNT", "1") == []


@pytest.mark.parametrize("args,error", [
    (("RANK", "0"), "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second "
                    "... or use negative to start from the end of the list"),
    (("COUNT", "-1"), "ERR COUNT can't be negative"),
    (("MAXLEN", "-1"), "ERR MAXLEN can't be negative"),
    (("RANK", "x"), "ERR value is not an integer or out of range"),
    (("RANK",), "ERR syntax error"),
    (("FOO", "1"), "ERR syntax error"),
])
def test_lpos_errors(c, args, error):
    assert c.call("LPOS", "missing", "a", *args) == Err(error)


def test_lmove_and_rpoplpush(c):
    assert c.call("LMOVE", "missing", "d", "LEFT", "RIGHT") is None
    c.call("RPUSH", "s", *"abc")
    assert c.call("LMOVE", "s", "d", "LEFT", "RIGHT") == b"a"
    assert c.call("LMOVE", "s", "d", "right", "left") == b"c"
    assert c.call("RPOPLPUSH", "s", "d") == b"b"
    assert c.call("EXISTS", "s") == 0
    assert c.call("LRANGE", "d", "0", "-1") == [b"b", b"c", b"a"]
    assert c.call("LMOVE", "d", "d", "LEFT", "RIGHT") == b"b"
    assert c.call("LRANGE", "d", "0", "-1") == [b"c", b"a", b"b"]
    assert c.call("LMOVE", "d", "x", "UP", "LEFT") == SYNTAX


def test_rotating_a_one_element_list_keeps_the_key_and_its_ttl(c):
    c.call("RPUSH", "one", "a")
    c.call("EXPIRE", "one", "100")
    assert c.call("RPOPLPUSH", "one", "one") == b"a"
    assert c.call("LMOVE", "one", "one", "LEFT", "RIGHT") == b"a"
    assert c.call("TTL", "one") == 100


def test_lmove_type_checks(c):
    c.call("SET", "str", "v")
    assert c.call("LMOVE", "missing", "str", "LEFT", "LEFT") is None
    c.call("RPUSH", "l", "a")
    assert c.call("LMOVE", "l", "str", "LEFT", "LEFT") == WRONGTYPE
    assert c.call("LMOVE", "str", "l", "LEFT", "LEFT") == WRONGTYPE
    assert c.call("LRANGE", "l", "0", "-1") == [b"a"]


@pytest.mark.parametrize("cmd", [
    ("LPUSH", "k", "a"), ("RPUSHX", "k", "a"), ("LPOP", "k"), ("RPOP", "k", "0"), ("LLEN", "k"),
    ("LRANGE", "k", "0", "1"), ("LINDEX", "k", "0"), ("LSET", "k", "0", "a"),
    ("LINSERT", "k", "BEFORE", "a", "b"), ("LREM", "k", "0", "a"), ("LTRIM", "k", "0", "1"),
    ("LPOS", "k", "a"), ("RPOPLPUSH", "k", "d"), ("BLPOP", "k", "0"), ("BLMOVE", "k", "d", "LEFT", "LEFT", "0"),
])
def test_wrongtype(c, cmd):
    c.call("SET", "k", "v")
    assert c.call(*cmd) == WRONGTYPE


def test_large_lists_keep_order_through_conversions(c):
    """Pushes past list-max-listpack-size and pops back below it."""
    big = "x" * 1000
    for i in range(40):
        c.call("RPUSH", "l", f"{i}:{big}")
        c.call("LPUSH", "l", f"-{i}:{big}")
    assert c.call("LLEN", "l") == 80
    assert c.call("LINDEX", "l", "0") == f"-39:{big}".encode()
    assert c.call("LINDEX", "l", "-1") == f"39:{big}".encode()
    assert c.call("OBJECT", "ENCODING", "l") == b"quicklist"
    assert c.call("LTRIM", "l", "30", "49") == OK
    assert [e.split(b":")[0] for e in c.call("LRANGE", "l", "0", "-1")] == \
        [f"-{i}".encode() for i in range(9, -1, -1)] + [str(i).encode() for i in range(10)]
    assert c.call("LPOP", "l", "19") and c.call("LLEN", "l") == 1


def test_memory_usage_follows_a_list(c):
    c.call("RPUSH", "l", "a")
    small = c.call("MEMORY", "USAGE", "l")
    c.call("RPUSH", "l", *["y" * 100] * 200)
    assert c.call("MEMORY", "USAGE", "l") > small + 200 * 100
    c.call("LTRIM", "l", "0", "0")
    assert c.call("MEMORY", "USAGE", "l") < small + 100


def test_lmpop(c):
    c.call("RPUSH", "l", *"abcde")
    assert c.call("LMPOP", "2", "missing", "l", "LEFT") == [b"l", [b"a"]]
    assert c.call("LMPOP", "1", "l", "right", "COUNT", "2") == [b"l", [b"e", b"d"]]
    assert c.call("LMPOP", "1", "l", "LEFT", "COUNT", str(2**63 - 1)) == [b"l", [b"b", b"c"]]
    assert c.call("EXISTS", "l") == 0
    assert c.call("LMPOP", "2", "l", "missing", "LEFT") is None
    c.send("LMPOP", "1", "l", "LEFT")
    assert c.read_raw() == b"*-1\r\n"
    c.call("SET", "str", "v")
    c.call("RPUSH", "l", "x")
    assert c.call("LMPOP", "2", "str", "l", "LEFT") == WRONGTYPE
    assert c.call("LMPOP", "2", "l", "str", "LEFT") == [b"l", [b"x"]]


@pytest.mark.parametrize("args,error", [
    (("0", "l", "LEFT"), "ERR numkeys should be greater than 0"),
    (("-1", "l", "LEFT"), "ERR numkeys should be greater than 0"),
    (("x", "l", "LEFT"), "ERR numkeys should be greater than 0"),
    (("3", "a", "b", "LEFT"), "ERR syntax error"),
    ((str(2**63 - 1), "a", "LEFT"), "ERR syntax error"),
    (("2", "a", "b"), "ERR syntax error"),
    (("1", "a", "UP"), "ERR syntax error"),
    (("1", "a", "LEFT", "COUNT", "0"), "ERR count should be greater than 0"),
    (("1", "a", "LEFT", "COUNT", "-5"), "ERR count should be greater than 0"),
    (("1", "a", "LEFT", "COUNT", "x"), "ERR count should be greater than 0"),
    (("1", "a", "LEFT", "COUNT", "1", "COUNT", "1"), "ERR syntax error"),
    (("1", "a", "LEFT", "COUNT"), "ERR syntax error"),
    (("1", "a", "LEFT", "FOO"), "ERR syntax error"),
])
def test_lmpop_errors(c, args, error):
    c.call("RPUSH", "a", "1")
    assert c.call("LMPOP", *args) == Err(error)
    assert c.call("BLMPOP", "0", *args) == Err(error)
    assert c.call("LLEN", "a") == 1
