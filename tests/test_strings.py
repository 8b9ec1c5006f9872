"""String commands: GET, SET and its options, SETNX, SETEX, PSETEX, GETEX, GETDEL,
GETSET, MGET, MSET, MSETNX, INCR/DECR family, INCRBYFLOAT, APPEND, STRLEN,
GETRANGE, SETRANGE."""

import time

import pytest

from support import OK, Err, RespMap

ARITY = "ERR wrong number of arguments for '{}' command"
NOT_INTEGER = Err("ERR value is not an integer or out of range")
NOT_FLOAT = Err("ERR value is not a valid float")
SYNTAX = Err("ERR syntax error")
OVERFLOW = Err("ERR increment or decrement would overflow")
INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808


def invalid_expire(cmd):
    return Err(f"ERR invalid expire time in '{cmd}' command")


# -- GET / SET -----------------------------------------------------------------------


def test_get_set(c):
    assert c.call("GET", "k") is None
    assert c.call("SET", "k", "v") == OK
    assert c.call("GET", "k") == b"v"
    assert c.call("SET", "k", "") == OK
    assert c.call("GET", "k") == b""


def test_set_large_value(c):
    value = bytes(range(256)) * 4096  # 1 MiB, every byte value
    assert c.call("SET", "big", value) == OK
    assert c.call("GET", "big") == value
    assert c.call("STRLEN", "big") == len(value)


def test_set_with_redis_py(r):
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.set("k", "w", nx=True) is None
    assert r.set("k", "w", xx=True, get=True) == b"v"


@pytest.mark.parametrize("option,value", [
    ("EX", "100"), ("ex", "100"), ("PX", "100000"),
    ("EXAT", lambda: int(time.time()) + 100), ("PXAT", lambda: int(time.time() * 1000) + 100_000),
])
def test_set_with_expiry(c, option, value):
    arg = value() if callable(value) else value
    assert c.call("SET", "k", "v", option, arg) == OK
    assert 95 <= c.call("TTL", "k") <= 100
    assert c.call("GET", "k") == b"v"


@pytest.mark.parametrize("option", ["EXAT", "PXAT"])
def test_set_with_past_absolute_expiry_deletes(c, option):
    c.call("SET", "k", "old")
    assert c.call("SET", "k", "v", option, "1") == OK
    assert c.call("EXISTS", "k") == 0


def test_set_nx_xx(c):
    assert c.call("SET", "k", "v1", "XX") is None
    assert c.call("EXISTS", "k") == 0
    assert c.call("SET", "k", "v1", "NX") == OK
    assert c.call("SET", "k", "v2", "NX") is None
    assert c.call("GET", "k") == b"v1"
    assert c.call("SET", "k", "v3", "XX") == OK
    assert c.call("GET", "k") == b"v3"


def test_set_get_option(c):
    assert c.call("SET", "k", "v1", "GET") is None
    assert c.call("SET", "k", "v2", "GET") == b"v1"
    assert c.call("SET", "k", "v3", "XX", "GET") == b"v2"
    assert c.call("SET", "k", "v4", "NX", "GET") == b"v3"  # NX fails, old value returned
    assert c.call("GET", "k") == b"v3"
    assert c.call("SET", "new", "v", "NX", "GET") is None
    assert c.call("GET", "new") == b"v"
    assert c.call("SET", "k", "v5", "GET", "EX", "100") == b"v3"
    assert c.call("TTL", "k") > 0


def test_set_keepttl(c):
    c.call("SET", "k", "v", "EX", "100")
    assert c.call("SET", "k", "w", "KEEPTTL") == OK
    assert 95 <= c.call("TTL", "k") <= 100
    assert c.call("GET", "k") == b"w"
    assert c.call("SET", "k", "x") == OK
    assert c.call("TTL", "k") == -1


def test_set_repeated_options_are_accepted(c):
    assert c.call("SET", "k", "v", "EX", "10", "EX", "100") == OK
    assert 95 <= c.call("TTL", "k") <= 100
    assert c.call("SET", "k", "v", "NX", "NX") is None
    assert c.call("SET", "k", "v", "GET", "GET") == b"v"


@pytest.mark.parametrize("options,error", [
    (["NX", "XX"], SYNTAX),
    (["EX", "10", "PX", "100"], SYNTAX),
    (["EX", "10", "KEEPTTL"], SYNTAX),
    (["KEEPTTL", "PXAT", "1"], SYNTAX),
    (["EXAT", "10", "PXAT", "10"], SYNTAX),
    (["EX"], SYNTAX),
    (["FOO"], SYNTAX),
    (["EX", "abc"], NOT_INTEGER),
    (["EX", "1.5"], NOT_INTEGER),
    (["EX", "0"], invalid_expire("set")),
    (["EX", "-1"], invalid_expire("set")),
    (["PX", "0"], invalid_expire("set")),
    (["EXAT", "0"], invalid_expire("set")),
    (["PXAT", "-1"], invalid_expire("set")),
    (["EX", str(INT64_MAX)], invalid_expire("set")),
    (["EX", "9223372036854775"], invalid_expire("set")),
    (["PX", str(INT64_MAX)], invalid_expire("set")),
])
def test_set_option_errors(c, options, error):
    c.call("SET", "k", "old")
    assert c.call("SET", "k", "v", *options) == error
    assert c.call("GET", "k") == b"old"
    assert c.call("TTL", "k") == -1


def test_setnx(c):
    assert c.call("SETNX", "k", "v1") == 1
    assert c.call("SETNX", "k", "v2") == 0
    assert c.call("GET", "k") == b"v1"


@pytest.mark.parametrize("cmd,ttl,pttl_max", [("SETEX", "100", 100_000), ("PSETEX", "100000", 100_000)])
def test_setex_psetex(c, cmd, ttl, pttl_max):
    assert c.call(cmd, "k", ttl, "v") == OK
    assert c.call("GET", "k") == b"v"
    assert pttl_max - 5000 <= c.call("PTTL", "k") <= pttl_max


@pytest.mark.parametrize("cmd", ["SETEX", "PSETEX"])
@pytest.mark.parametrize("ttl,error", [
    ("0", None), ("-5", None), (str(INT64_MAX), None), ("abc", NOT_INTEGER),
])
def test_setex_psetex_errors(c, cmd, ttl, error):
    c.call("SET", "k", "old")
    assert c.call(cmd, "k", ttl, "v") == (error or invalid_expire(cmd.lower()))
    assert c.call("GET", "k") == b"old"


# -- GETEX / GETDEL / GETSET ---------------------------------------------------------


@pytest.mark.parametrize("option,value", [
    ("EX", "100"), ("PX", "100000"),
    ("EXAT", lambda: int(time.time()) + 100), ("PXAT", lambda: int(time.time() * 1000) + 100_000),
])
def test_getex_sets_ttl(c, option, value):
    c.call("SET", "k", "v")
    arg = value() if callable(value) else value
    assert c.call("GETEX", "k", option, arg) == b"v"
    assert 95 <= c.call("TTL", "k") <= 100


def test_getex_persist_and_plain(c):
    c.call("SET", "k", "v", "EX", "100")
    assert c.call("GETEX", "k") == b"v"
    assert c.call("TTL", "k") > 0
    assert c.call("GETEX", "k", "PERSIST") == b"v"
    assert c.call("TTL", "k") == -1
    assert c.call("GETEX", "missing", "EX", "10") is None
    assert c.call("EXISTS", "missing") == 0


def test_getex_past_time_deletes(c):
    c.call("SET", "k", "v")
    assert c.call("GETEX", "k", "EXAT", "1") == b"v"
    assert c.call("EXISTS", "k") == 0


@pytest.mark.parametrize("options,error", [
    (["EX", "10", "PX", "10"], SYNTAX),
    (["PERSIST", "EX", "10"], SYNTAX),
    (["PXAT", "1", "PERSIST"], SYNTAX),
    (["FOO"], SYNTAX),
    (["EX"], SYNTAX),
    (["EX", "abc"], NOT_INTEGER),
    (["EX", "0"], invalid_expire("getex")),
    (["PX", "-1"], invalid_expire("getex")),
    (["EXAT", "-1"], invalid_expire("getex")),
    (["PXAT", "0"], invalid_expire("getex")),
    (["EX", str(INT64_MAX)], invalid_expire("getex")),
])
def test_getex_errors(c, options, error):
    c.call("SET", "k", "v")
    assert c.call("GETEX", "k", *options) == error
    assert c.call("TTL", "k") == -1


def test_getdel(c):
    c.call("SET", "k", "v")
    assert c.call("GETDEL", "k") == b"v"
    assert c.call("EXISTS", "k") == 0
    assert c.call("GETDEL", "k") is None


def test_getset(c):
    assert c.call("GETSET", "k", "v1") is None
    assert c.call("GETSET", "k", "v2") == b"v1"
    assert c.call("GET", "k") == b"v2"


# -- MGET / MSET / MSETNX ------------------------------------------------------------


def test_mset_mget(c):
    assert c.call("MSET", "a", "1", "b", "2", "a", "3") == OK
    assert c.call("MGET", "a", "b", "missing", "a") == [b"3", b"2", None, b"3"]


def test_msetnx(c):
    assert c.call("MSETNX", "a", "1", "b", "2") == 1
    assert c.call("MSETNX", "b", "x", "c", "3") == 0
    assert c.call("MGET", "a", "b", "c") == [b"1", b"2", None]  # all or nothing
    assert c.call("MSETNX", "c", "1", "c", "2") == 1
    assert c.call("GET", "c") == b"2"


@pytest.mark.parametrize("cmd", ["MSET", "MSETNX"])
@pytest.mark.parametrize("args", [(), ("a",), ("a", "1", "b")])
def test_mset_arity(c, cmd, args):
    assert c.call(cmd, *args) == Err(ARITY.format(cmd.lower()))
    assert c.call("EXISTS", "a") == 0


# -- INCR / DECR / INCRBY / DECRBY ---------------------------------------------------


def test_incr_decr(c):
    assert c.call("INCR", "n") == 1
    assert c.call("INCR", "n") == 2
    assert c.call("DECR", "n") == 1
    assert c.call("INCRBY", "n", "10") == 11
    assert c.call("DECRBY", "n", "20") == -9
    assert c.call("INCRBY", "n", "-1") == -10
    assert c.call("DECRBY", "m", "5") == -5
    assert c.call("GET", "n") == b"-10"


@pytest.mark.parametrize("stored", ["abc", "", "1.0", " 1", "1 ", "+1", "01", "-0", "0x10",
                                    "9223372036854775808", "-9223372036854775809"])
def test_incr_on_non_integer_value(c, stored):
    c.call("SET", "n", stored)
    for cmd in [("INCR", "n"), ("DECR", "n"), ("INCRBY", "n", "1"), ("DECRBY", "n", "1")]:
        assert c.call(*cmd) == NOT_INTEGER
    assert c.call("GET", "n") == stored.encode()


@pytest.mark.parametrize("cmd", ["INCRBY", "DECRBY"])
@pytest.mark.parametrize("arg", ["abc", "1.5", "", " 1", "+1", "01", "-0", "9223372036854775808"])
def test_incrby_non_integer_argument(c, cmd, arg):
    assert c.call(cmd, "n", arg) == NOT_INTEGER
    assert c.call("EXISTS", "n") == 0


@pytest.mark.parametrize("start,cmd,error", [
    (INT64_MAX, ("INCR", "n"), OVERFLOW),
    (INT64_MAX, ("INCRBY", "n", "1"), OVERFLOW),
    (INT64_MAX, ("DECRBY", "n", "-1"), OVERFLOW),
    (INT64_MIN, ("DECR", "n"), OVERFLOW),
    (INT64_MIN, ("DECRBY", "n", "1"), OVERFLOW),
    (INT64_MIN, ("INCRBY", "n", "-1"), OVERFLOW),
    (0, ("DECRBY", "n", str(INT64_MIN)), Err("ERR decrement would overflow")),
    (5, ("DECRBY", "n", str(INT64_MIN)), Err("ERR decrement would overflow")),
])
def test_incr_overflow(c, start, cmd, error):
    c.call("SET", "n", str(start))
    assert c.call(*cmd) == error
    assert c.call("GET", "n") == str(start).encode()


def test_incr_limits(c):
    c.call("SET", "n", str(INT64_MAX - 1))
    assert c.call("INCR", "n") == INT64_MAX
    assert c.call("INCRBY", "m", str(INT64_MIN)) == INT64_MIN
    assert c.call("GET", "m") == str(INT64_MIN).encode()


# -- INCRBYFLOAT ---------------------------------------------------------------------


@pytest.mark.parametrize("start,incr,result", [
    (None, "10.5", b"10.5"),
    ("10.50", "0.1", b"10.6"),
    ("5.0e3", "2.0e2", b"5200"),
    (None, "3e+5", b"300000"),
    ("10.5", "3e+5", b"300010.5"),
    ("0.1", "0.2", b"0.3"),
    ("1", "1e20", b"100000000000000000000"),
    ("1", "0.000001", b"1.000001"),
    ("10", "-10", b"0"),
    ("-1", "-0.5", b"-1.5"),
    (None, ".5", b"0.5"),
    (None, "5.", b"5"),
    ("3", "1", b"4"),
    ("7", "-0", b"7"),
])
def test_incrbyfloat(c, start, incr, result):
    if start is not None:
        c.call("SET", "f", start)
    reply = c.call("INCRBYFLOAT", "f", incr)
    assert reply == result  # a bulk string, not a RESP3 double
    assert c.call("GET", "f") == result


def test_incrbyfloat_uses_extended_precision(c):
    """Redis computes in long double: 1e16 + 1 is exact and 1e308 * 10 is finite."""
    c.call("SET", "f", "1e16")
    assert c.call("INCRBYFLOAT", "f", "1") == b"10000000000000001"
    c.call("SET", "g", "3")
    assert c.call("INCRBYFLOAT", "g", "1.0000000000000002") == b"4.0000000000000002"


@pytest.mark.parametrize("start,incr,error", [
    (None, "abc", NOT_FLOAT),
    (None, "", NOT_FLOAT),
    (None, "1 ", NOT_FLOAT),
    (None, " 1", NOT_FLOAT),
    (None, "1.5e", NOT_FLOAT),
    (None, "nan", NOT_FLOAT),
    ("abc", "1", NOT_FLOAT),
    ("1.5.5", "1", NOT_FLOAT),
    ("nan", "1", NOT_FLOAT),
    (None, "inf", Err("ERR increment would produce NaN or Infinity")),
    (None, "-inf", Err("ERR increment would produce NaN or Infinity")),
    ("1", "+inf", Err("ERR increment would produce NaN or Infinity")),
    ("inf", "1", Err("ERR increment would produce NaN or Infinity")),
])
def test_incrbyfloat_errors(c, start, incr, error):
    if start is not None:
        c.call("SET", "f", start)
    assert c.call("INCRBYFLOAT", "f", incr) == error
    assert c.call("GET", "f") == (start.encode() if start is not None else None)


# -- APPEND / STRLEN -----------------------------------------------------------------


def test_append_strlen(c):
    assert c.call("STRLEN", "k") == 0
    assert c.call("APPEND", "k", "Hello") == 5
    assert c.call("APPEND", "k", " World") == 11
    assert c.call("GET", "k") == b"Hello World"
    assert c.call("STRLEN", "k") == 11
    assert c.call("APPEND", "k", "") == 11
    c.call("SET", "n", "12")
    assert c.call("APPEND", "n", "3") == 3
    assert c.call("INCR", "n") == 124


# -- GETRANGE --------------------------------------------------------------------------


@pytest.mark.parametrize("start,end,result", [
    (0, 3, b"This"),
    (-3, -1, b"ing"),
    (0, -1, b"This is a string"),
    (10, 100, b"string"),
    (-100, 3, b"This"),
    (5, 2, b""),
    (0, -100, b"T"),  # Redis 7.0 clamps the end to 0 before comparing
    (100, 200, b""),
    (-1, -1, b"g"),
    (15, 15, b"g"),
    (16, 16, b""),
    (0, 0, b"T"),
    (-16, -16, b"T"),
    (-17, 0, b"T"),
    (INT64_MIN, INT64_MAX, b"This is a string"),
])
def test_getrange(c, start, end, result):
    c.call("SET", "k", "This is a string")
    assert c.call("GETRANGE", "k", str(start), str(end)) == result


def test_getrange_missing_key_and_int_value(c):
    assert c.call("GETRANGE", "missing", "0", "-1") == b""
    c.call("SET", "n", "12345")
    assert c.call("GETRANGE", "n", "1", "2") == b"23"
    assert c.call("GETRANGE", "n", "x", "1") == NOT_INTEGER


# -- SETRANGE --------------------------------------------------------------------------


def test_setrange(c):
    c.call("SET", "k", "Hello World")
    assert c.call("SETRANGE", "k", "6", "Redis") == 11
    assert c.call("GET", "k") == b"Hello Redis"
    assert c.call("SETRANGE", "k", "20", "!") == 21
    assert c.call("GET", "k") == b"Hello Redis" + b"\x00" * 9 + b"!"
    assert c.call("SETRANGE", "new", "3", "abc") == 6
    assert c.call("GET", "new") == b"\x00\x00\x00abc"


def test_setrange_empty_value(c):
    assert c.call("SETRANGE", "missing", "0", "") == 0
    assert c.call("SETRANGE", "missing", "100", "") == 0
    assert c.call("EXISTS", "missing") == 0
    c.call("SET", "k", "abc")
    assert c.call("SETRANGE", "k", "100", "") == 3
    assert c.call("GET", "k") == b"abc"


def test_setrange_errors(c):
    c.call("SET", "k", "abc")
    assert c.call("SETRANGE", "k", "-1", "x") == Err("ERR offset is out of range")
    assert c.call("SETRANGE", "k", "abc", "x") == NOT_INTEGER
    too_big = Err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    assert c.call("SETRANGE", "k", str(512 * 1024 * 1024), "x") == too_big
    assert c.call("SETRANGE", "k", str(INT64_MAX), "x") == too_big
    assert c.call("GET", "k") == b"abc"


def test_append_beyond_max_size(start_server):
    srv = start_server({"proto-max-bulk-len": "1mb"})
    with srv.conn() as conn:
        assert conn.call("SET", "k", b"x" * (1024 * 1024 - 1)) == OK
        assert conn.call("APPEND", "k", "yz") == Err(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        assert conn.call("SETRANGE", "k", str(1024 * 1024), "x") == Err(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        assert conn.call("APPEND", "k", "y") == 1024 * 1024


# -- arity of every string command ----------------------------------------------------


@pytest.mark.parametrize("cmd", [
    ("GET",), ("GET", "a", "b"), ("SET", "k"), ("SETNX", "k"), ("SETEX", "k", "10"),
    ("SETEX", "k", "10", "v", "x"), ("PSETEX", "k", "10"), ("GETEX",), ("GETDEL",),
    ("GETDEL", "a", "b"), ("GETSET", "k"), ("MGET",), ("INCR",), ("DECR", "a", "b"),
    ("INCRBY", "k"), ("DECRBY", "k"), ("INCRBYFLOAT", "k"), ("APPEND", "k"), ("STRLEN",),
    ("STRLEN", "a", "b"), ("GETRANGE", "k", "0"), ("SETRANGE", "k", "0"),
], ids=lambda cmd: " ".join(cmd))
def test_string_command_arity(c, cmd):
    assert c.call(*cmd) == Err(ARITY.format(cmd[0].lower()))


def test_substr_is_getrange(c):
    c.call("SET", "k", "Hello World")
    assert c.call("SUBSTR", "k", "0", "4") == b"Hello"
    assert c.call("SUBSTR", "k", "-5", "-1") == b"World"
    assert c.call("SUBSTR", "missing", "0", "1") == b""
    assert c.call("SUBSTR", "k", "x", "1") == NOT_INTEGER
    c.call("RPUSH", "l", "a")
    assert c.call("SUBSTR", "l", "0", "1") == Err(
        "WRONGTYPE Operation against a key holding the wrong kind of value")


def test_lcs_replies(c):
    c.call("MSET", "a", "ohmytext", "b", "mynewtext")
    assert c.call("LCS", "a", "b") == b"mytext"
    assert c.call("LCS", "a", "b", "LEN") == 6
    assert c.call("LCS", "a", "b", "IDX") == [
        b"matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], b"len", 6]
    assert c.call("LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN") == [
        b"matches", [[[4, 7], [5, 8], 4]], b"len", 6]
    assert c.call("LCS", "a", "b", "IDX", "MINMATCHLEN", "-5") == c.call("LCS", "a", "b", "IDX")
    assert c.call("LCS", "missing", "b") == b""
    assert c.call("LCS", "missing", "b", "IDX") == [b"matches", [], b"len", 0]
    c.call("HELLO", "3")
    reply = c.call("LCS", "a", "b", "IDX", "WITHMATCHLEN")
    assert isinstance(reply, RespMap)
    assert list(reply) == [(b"matches", [[[4, 7], [5, 8], 4], [[2, 3], [0, 1], 2]]), (b"len", 6)]


@pytest.mark.parametrize("args,error", [
    (("LEN", "IDX"), "ERR If you want both the length and indexes, please just use IDX."),
    (("MINMATCHLEN", "x"), "ERR value is not an integer or out of range"),
    (("MINMATCHLEN",), "ERR syntax error"),
    (("FOO",), "ERR syntax error"),
])
def test_lcs_errors(c, args, error):
    c.call("MSET", "a", "x", "b", "y")
    assert c.call("LCS", "a", "b", *args) == Err(error)
    c.call("RPUSH", "l", "x")
    assert c.call("LCS", "a", "l", *args) == Err("ERR The specified keys must contain string values")


def test_lcs_table_is_refused_past_proto_max_bulk_len(c):
    c.call("SET", "a", "x" * 12000)
    c.call("SET", "b", "y" * 12000)
    assert c.call("LCS", "a", "b", "LEN") == Err(
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
    assert c.call("LCS", "a", "b") == Err(
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")


@pytest.mark.keel_differs(reason="the LCS table is charged to maxmemory-clients, which Redis does not count it in")
def test_lcs_table_must_fit_the_client_budget(start_server):
    srv = start_server({"maxmemory-clients": "8mb"})
    with srv.conn() as conn:
        conn.call("SET", "a", "x" * 2000)
        conn.call("SET", "b", "x" * 2000)
        # 16 MB of table: within proto-max-bulk-len, past the client budget.
        assert conn.call("LCS", "a", "b") == Err(
            "ERR Insufficient memory, failed allocating transient memory for LCS")
        assert conn.call("LCS", "a", "b", "LEN") == 2000
        conn.call("SET", "b", "x" * 200)
        assert conn.call("LCS", "a", "b") == b"x" * 200
