"""HyperLogLog: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST and the
hll-sparse-max-bytes directive, in Redis's byte representation: an HLL is a
string whose bytes keel and redis-server produce identically and read
identically (see the cross-server tests at the end)."""

import os
import random
import shutil

import pytest

from support import OK, Err, ServerProcess, Status

NOT_HLL = Err("WRONGTYPE Key is not a valid HyperLogLog string value.")
WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
INVALID = Err("INVALIDOBJ Corrupted HLL object detected")
HEADER_LEN = 16
DENSE_LEN = 12304

# GET after `PFADD h 1 2 3 4 5` in Redis 7.0.15.
REDIS_SPARSE_1_TO_5 = (b"HYLL\x01" + b"\x00" * 10 + b"\x80"
                       + bytes.fromhex("41ee844823805351804d7480512c8c43f3"))


def stale(encoding, body):
    """An HLL string: the header with a stale cache, then `body`."""
    return b"HYLL" + bytes([encoding]) + b"\x00" * 10 + b"\x80" + body


def elements(n, prefix="e"):
    return [f"{prefix}{i}" for i in range(n)]


# -- PFADD / PFCOUNT ------------------------------------------------------------------


def test_pfadd_creates_and_reports_changes(c):
    assert c.call("PFADD", "h") == 1
    assert c.call("EXISTS", "h") == 1
    assert c.call("TYPE", "h") == Status("string")
    assert c.call("PFADD", "h") == 0
    assert c.call("PFCOUNT", "h") == 0
    assert c.call("PFADD", "h", "a", "b", "c") == 1
    assert c.call("PFADD", "h", "a", "b", "c") == 0
    assert c.call("PFADD", "h", "") == 1
    assert c.call("PFCOUNT", "h") == 4


def test_new_hll_bytes(c):
    assert c.call("PFADD", "h") == 1
    # A created key's cache is marked stale even though it holds 0.
    assert c.call("GET", "h") == b"HYLL\x01" + b"\x00" * 10 + b"\x80" + b"\x7f\xff"
    assert c.call("PFCOUNT", "h") == 0
    assert c.call("GET", "h") == b"HYLL\x01" + b"\x00" * 11 + b"\x7f\xff"


def test_sparse_bytes_are_redis_bytes(c):
    assert c.call("PFADD", "h", *"12345") == 1
    assert c.call("GET", "h") == REDIS_SPARSE_1_TO_5
    assert c.call("PFDEBUG", "DECODE", "h") == (
        b"Z:495 v:2,1 Z:2084 v:1,1 Z:4946 v:1,1 Z:3445 v:1,1 Z:4397 v:4,1 Z:1012")


def test_pfcount_caches_in_the_header(c):
    c.call("PFADD", "h", "a", "b", "c")
    assert c.call("GETRANGE", "h", 15, 15) == b"\x80"
    assert c.call("PFCOUNT", "h") == 3
    assert c.call("GETRANGE", "h", 8, 15) == b"\x03" + b"\x00" * 7
    assert c.call("PFADD", "h", "a", "b", "c") == 0
    assert c.call("GETRANGE", "h", 15, 15) == b"\x00"
    assert c.call("PFADD", "h", "1", "2", "3") == 1
    # Only the stale bit is set: the old estimate stays in the other bytes.
    assert c.call("GETRANGE", "h", 8, 15) == b"\x03" + b"\x00" * 6 + b"\x80"
    assert c.call("PFCOUNT", "h") == 6


def test_pfcount_returns_approximated_cardinality(c):
    c.call("PFADD", "h", *"12345")
    assert c.call("PFCOUNT", "h") == 5
    c.call("PFADD", "h", "6", "7", "8", "8", "9", "10")
    assert c.call("PFCOUNT", "h") == 10


def test_pfcount_missing_key_is_zero(c):
    assert c.call("PFCOUNT", "nokey") == 0
    assert c.call("PFCOUNT", "nokey", "nokey2") == 0
    assert c.call("EXISTS", "nokey") == 0


def test_pfcount_of_several_keys_is_the_union_and_changes_nothing(c):
    c.call("PFADD", "h1", "a", "b", "c")
    c.call("PFADD", "h2", "b", "c", "d")
    c.call("PFADD", "h3", "c", "d", "e")
    before = [c.call("GET", k) for k in ("h1", "h2", "h3")]
    assert c.call("PFCOUNT", "h1", "h2", "h3", "missing") == 5
    assert [c.call("GET", k) for k in ("h1", "h2", "h3")] == before


def test_large_counts_are_within_error(c):
    for chunk in range(10):
        c.call("PFADD", "h", *elements(1000, f"x{chunk}-"))
    count = c.call("PFCOUNT", "h")
    assert abs(count - 10_000) < 10_000 * 0.05
    assert c.call("PFDEBUG", "ENCODING", "h") == Status("dense")
    assert c.call("STRLEN", "h") == DENSE_LEN


# -- encodings ---------------------------------------------------------------------------


def test_promotion_at_sparse_max_bytes(c, restore_config):
    restore_config("hll-sparse-max-bytes")
    assert c.call("CONFIG", "GET", "hll-sparse-max-bytes") == [b"hll-sparse-max-bytes", b"3000"]
    assert c.call("CONFIG", "SET", "hll-sparse-max-bytes", "100") == OK
    c.call("PFADD", "h")
    n = 0
    while c.call("PFDEBUG", "ENCODING", "h") == Status("sparse"):
        assert c.call("STRLEN", "h") <= 100
        c.call("PFADD", "h", f"el{n}")
        n += 1
    assert c.call("STRLEN", "h") == DENSE_LEN
    assert 10 < n < 100


def test_config_hll_sparse_max_bytes_is_a_memory_value(c, restore_config):
    restore_config("hll-sparse-max-bytes")
    assert c.call("CONFIG", "SET", "hll-sparse-max-bytes", "1kb") == OK
    assert c.call("CONFIG", "GET", "hll-sparse-max-bytes") == [b"hll-sparse-max-bytes", b"1024"]
    reply = c.call("CONFIG", "SET", "hll-sparse-max-bytes", "nope")
    assert isinstance(reply, Err) and "hll-sparse-max-bytes" in reply


def test_sparse_and_dense_estimates_agree(c):
    rng = random.Random(7)
    for _ in range(50):
        c.call("DEL", "sparse", "dense")
        items = [str(rng.random()) for _ in range(rng.randrange(100))]
        c.call("PFADD", "dense")
        assert c.call("PFDEBUG", "TODENSE", "dense") == 1
        c.call("PFADD", "sparse", *items) if items else c.call("PFADD", "sparse")
        if items:
            c.call("PFADD", "dense", *items)
        assert c.call("PFDEBUG", "ENCODING", "sparse") == Status("sparse")
        assert c.call("PFDEBUG", "ENCODING", "dense") == Status("dense")
        assert c.call("PFCOUNT", "sparse") == c.call("PFCOUNT", "dense")


# -- PFMERGE -----------------------------------------------------------------------------


def test_pfmerge_union(c):
    c.call("PFADD", "h1", "a", "b", "c")
    c.call("PFADD", "h2", "b", "c", "d")
    c.call("PFADD", "h3", "c", "d", "e")
    assert c.call("PFMERGE", "h", "h1", "h2", "h3") == OK
    assert c.call("PFCOUNT", "h") == 5
    assert c.call("PFDEBUG", "ENCODING", "h") == Status("sparse")
    # The destination is an input too.
    c.call("PFADD", "h4", "f")
    assert c.call("PFMERGE", "h", "h4") == OK
    assert c.call("PFCOUNT", "h") == 6


def test_pfmerge_with_only_missing_keys_creates_an_empty_hll(c):
    assert c.call("PFMERGE", "dest", "nothing") == OK
    assert c.call("GET", "dest") == b"HYLL\x01" + b"\x00" * 10 + b"\x80" + b"\x7f\xff"
    assert c.call("PFMERGE", "dest2") == OK
    assert c.call("PFCOUNT", "dest2") == 0


def test_pfmerge_into_dense_when_an_input_is_dense(c):
    c.call("PFADD", "d", "a")
    c.call("PFDEBUG", "TODENSE", "d")
    c.call("PFADD", "s", "b")
    assert c.call("PFMERGE", "dest", "s", "d") == OK
    assert c.call("PFDEBUG", "ENCODING", "dest") == Status("dense")
    assert c.call("PFCOUNT", "dest") == 2


def test_pfmerge_keeps_the_destination_ttl(c):
    c.call("PFADD", "h", "a")
    c.call("EXPIRE", "h", 100)
    c.call("PFADD", "src", "b")
    assert c.call("PFMERGE", "h", "src") == OK
    assert 0 < c.call("TTL", "h") <= 100


# -- errors --------------------------------------------------------------------------------


def test_type_errors(c):
    c.call("SET", "str", "bar")
    c.call("LPUSH", "list", "x")
    assert c.call("PFADD", "str", "1") == NOT_HLL
    assert c.call("PFCOUNT", "str") == NOT_HLL
    assert c.call("PFMERGE", "x", "str") == NOT_HLL
    assert c.call("PFMERGE", "str", "x") == NOT_HLL
    assert c.call("PFADD", "list", "1") == WRONGTYPE
    assert c.call("PFCOUNT", "list") == WRONGTYPE
    assert c.call("PFCOUNT", "nokey", "list") == WRONGTYPE
    assert c.call("PFMERGE", "list", "nokey") == WRONGTYPE
    assert c.call("PFDEBUG", "ENCODING", "list") == WRONGTYPE
    c.call("SET", "int", "12345678901234567890")
    assert c.call("PFCOUNT", "int") == NOT_HLL
    assert c.call("EXISTS", "x") == 0


@pytest.mark.parametrize("args", [["PFADD"], ["PFCOUNT"], ["PFMERGE"], ["PFDEBUG", "ENCODING"],
                                  ["PFDEBUG", "ENCODING", "h", "x"], ["PFSELFTEST", "x"]])
def test_arity(c, args):
    assert c.call(*args) == Err(f"ERR wrong number of arguments for '{args[0].lower()}' command")


def test_corrupt_headers_are_wrongtype(c):
    c.call("PFADD", "h", "a", "b", "c")
    c.call("SETRANGE", "h", 0, "0123")
    assert c.call("PFCOUNT", "h") == NOT_HLL
    c.call("DEL", "h")
    c.call("PFADD", "h", "a", "b", "c")
    c.call("SETRANGE", "h", 4, "x")
    assert c.call("PFCOUNT", "h") == NOT_HLL
    c.call("DEL", "h")
    c.call("PFADD", "h", "a", "b", "c")
    c.call("SETRANGE", "h", 4, "\x00")  # dense, of the wrong length
    assert c.call("PFCOUNT", "h") == NOT_HLL
    c.call("SET", "short", "HYLL\x01")
    assert c.call("PFADD", "short", "x") == NOT_HLL


def test_corrupt_sparse_bodies_are_invalidobj(c):
    c.call("PFADD", "h", "a", "b", "c")
    c.call("APPEND", "h", "hello")
    assert c.call("PFCOUNT", "h") == INVALID
    assert c.call("PFCOUNT", "h", "h") == INVALID
    assert c.call("PFMERGE", "dest", "h") == INVALID
    assert c.call("EXISTS", "dest") == 0
    assert c.call("PFDEBUG", "GETREG", "h") == INVALID
    assert c.call("PFDEBUG", "TODENSE", "h") == INVALID


@pytest.mark.parametrize("body", [
    b"\xff" * 20,                      # VALs covering 80 registers only
    b"\x7f\xff\x7f\xff",               # two XZEROs: twice the registers
    b"\x7f",                           # XZERO cut short
    b"",                               # no registers at all
    b"\x00",                           # one register only
    b"\x40\x00" * 3 + b"\xfc" * 5000,  # 5003 registers, past sparse-max-bytes
    b"\x7f\xff" + b"\xfc" * 100,        # VALs past the last register
], ids=["short-vals", "two-xzeros", "cut-xzero", "empty", "one-register", "long",
        "past-the-end"])
def test_hostile_sparse_bodies_never_crash(c, body):
    c.call("SET", "h", stale(1, body))
    assert c.call("PFCOUNT", "h") == INVALID
    assert c.call("PFCOUNT", "h", "nokey") == INVALID
    assert c.call("PFMERGE", "dest", "h") == INVALID
    reply = c.call("PFADD", "h", *elements(50))
    assert reply in (INVALID, 0, 1)
    assert c.call("PFDEBUG", "ENCODING", "h") == Status("sparse")
    assert isinstance(c.call("PFDEBUG", "DECODE", "h"), bytes)
    assert c.call("PING") == Status("PONG")


def test_hostile_dense_bodies(c):
    dense = stale(0, b"\xff" * (DENSE_LEN - HEADER_LEN))
    c.call("SET", "h", dense)
    # Every register at 63: Redis's estimator divides by zero and replies
    # with LLONG_MIN; keel replies the same.
    assert c.call("PFCOUNT", "h") == -9223372036854775808
    assert c.call("PFADD", "h", "x") == 0
    c.call("SET", "short", dense[:-1])
    assert c.call("PFCOUNT", "short") == NOT_HLL
    assert c.call("PFADD", "short", "x") == NOT_HLL


def test_fuzzed_corruption_never_crashes(c):
    rng = random.Random(19)
    for _ in range(200):
        c.call("DEL", "h")
        c.call("PFADD", "h", *elements(rng.randrange(1, 3000), f"{rng.random()}-"))
        for _ in range(5):
            length = c.call("STRLEN", "h")
            c.call("SETRANGE", "h", rng.randrange(length), bytes([rng.randrange(256)]))
            if rng.random() < 0.5:
                break
        c.call("PFCOUNT", "h")
        c.call("PFADD", "h", "more", "elements")
    assert c.call("PING") == Status("PONG")


# -- PFDEBUG / PFSELFTEST -------------------------------------------------------------------


def test_pfdebug(c):
    assert c.call("PFDEBUG", "ENCODING", "nokey") == Err("ERR The specified key does not exist")
    assert c.call("PFDEBUG", "NOPE", "nokey") == Err("ERR The specified key does not exist")
    c.call("PFADD", "h", "a")
    assert c.call("PFDEBUG", "NOPE", "h") == Err("ERR Unknown PFDEBUG subcommand 'NOPE'")
    assert c.call("PFDEBUG", "encoding", "h") == Status("sparse")
    assert c.call("PFDEBUG", "DECODE", "h") == b"Z:12711 v:2,1 Z:3672"
    registers = c.call("PFDEBUG", "GETREG", "h")
    assert len(registers) == 16384 and registers[12711] == 2 and sum(registers) == 2
    # GETREG turns the HLL dense, as in Redis.
    assert c.call("PFDEBUG", "ENCODING", "h") == Status("dense")
    assert c.call("PFDEBUG", "DECODE", "h") == Err("ERR HLL encoding is not sparse")
    assert c.call("PFDEBUG", "TODENSE", "h") == 0
    c.call("PFADD", "h2", "a")
    assert c.call("PFDEBUG", "TODENSE", "h2") == 1
    assert c.call("GET", "h2") == c.call("GET", "h")


def test_pfdebug_is_not_gated_by_enable_debug_command(start_server):
    # In Redis 7.0.15 PFDEBUG is an admin command, not a DEBUG subcommand.
    srv = start_server({"enable-debug-command": "no"})
    with srv.conn() as conn:
        assert conn.call("PFADD", "h", "a") == 1
        assert conn.call("PFDEBUG", "ENCODING", "h") == Status("sparse")
        assert conn.call("DEBUG", "SLEEP", "0").startswith("ERR DEBUG command not allowed")


def test_pfselftest(c):
    assert c.call("PFSELFTEST") == OK


def test_command_info(c):
    info = c.call("COMMAND", "INFO", "pfadd", "pfcount", "pfmerge", "pfdebug", "pfselftest")
    assert [i[:6] for i in info] == [
        [b"pfadd", -2, [Status("write"), Status("denyoom"), Status("fast")], 1, 1, 1],
        [b"pfcount", -2, [Status("readonly")], 1, -1, 1],
        [b"pfmerge", -2, [Status("write"), Status("denyoom")], 1, -1, 1],
        [b"pfdebug", 3, [Status("write"), Status("denyoom"), Status("admin")], 2, 2, 1],
        [b"pfselftest", 1, [Status("admin")], 0, 0, 0],
    ]


# -- WATCH -----------------------------------------------------------------------------------


def test_pfcount_refreshing_the_cache_touches_watchers(c, connect):
    other = connect()
    c.call("PFADD", "h", "a")
    c.call("WATCH", "h")
    assert other.call("PFCOUNT", "h") == 1  # stale cache: rewritten
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") is None
    c.call("WATCH", "h")
    assert other.call("PFCOUNT", "h") == 1  # cached: nothing written
    assert other.call("PFADD", "h", "a") == 0
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") == [Status("PONG")]


# -- keel and redis-server side by side ------------------------------------------------------


@pytest.fixture(scope="module")
def keel_and_redis(keel_bin):
    if not os.access(keel_bin, os.X_OK):
        pytest.skip(f"keel binary not found at {keel_bin}")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    servers = [ServerProcess("keel", keel_bin=keel_bin), ServerProcess("redis")]
    try:
        for srv in servers:
            srv.start()
        conns = [srv.conn() for srv in servers]
        yield conns
        for conn in conns:
            conn.close()
    finally:
        for srv in servers:
            srv.cleanup()


def both(conns, *args):
    keel, redis = (conn.call(*args) for conn in conns)
    assert keel == redis, (args, keel, redis)
    return keel


@pytest.mark.parametrize("n", [0, 1, 7, 100, 1000, 3000, 20000])
def test_same_pfadds_give_the_same_bytes(keel_and_redis, n):
    both(keel_and_redis, "FLUSHALL")
    items = elements(n, "cross-")
    for start in range(0, max(n, 1), 500):
        both(keel_and_redis, "PFADD", "h", *items[start:start + 500])
        both(keel_and_redis, "GET", "h")
    both(keel_and_redis, "PFCOUNT", "h")
    encoding = both(keel_and_redis, "PFDEBUG", "ENCODING", "h")
    if n <= 100 or n >= 3000:
        assert encoding == Status("dense" if n >= 3000 else "sparse")
    assert both(keel_and_redis, "GET", "h")
    both(keel_and_redis, "PFADD", "other", *elements(n // 2 + 1, "other-"))
    both(keel_and_redis, "PFMERGE", "merged", "h", "other")
    both(keel_and_redis, "GET", "merged")
    both(keel_and_redis, "PFCOUNT", "h", "other")


def test_bytes_made_by_one_server_count_the_same_in_the_other(keel_and_redis):
    keel, redis = keel_and_redis
    for n in (5, 300, 5000):
        for maker, reader in ((keel, redis), (redis, keel)):
            for conn in keel_and_redis:
                conn.call("FLUSHALL")
            maker.call("PFADD", "h", *elements(n, f"made-{n}-"))
            made = maker.call("GET", "h")
            assert reader.call("SET", "h", made) == OK
            assert reader.call("PFCOUNT", "h") == maker.call("PFCOUNT", "h")
            assert reader.call("GET", "h") == maker.call("GET", "h")
            for conn in keel_and_redis:
                conn.call("PFADD", "h", "one", "more")
            assert reader.call("GET", "h") == maker.call("GET", "h")


def test_corrupted_bytes_behave_the_same_in_both(keel_and_redis):
    rng = random.Random(2024)
    for _ in range(150):
        both(keel_and_redis, "FLUSHALL")
        both(keel_and_redis, "PFADD", "h", *elements(rng.randrange(1, 200), f"{rng.random()}-"))
        for _ in range(rng.randrange(1, 4)):
            length = both(keel_and_redis, "STRLEN", "h")
            both(keel_and_redis, "SETRANGE", "h", rng.randrange(HEADER_LEN, length),
                 bytes([rng.randrange(256)]))
        both(keel_and_redis, "PFCOUNT", "h")
        both(keel_and_redis, "PFADD", "h", *elements(20, f"{rng.random()}-"))
        both(keel_and_redis, "GET", "h")
        both(keel_and_redis, "PFMERGE", "m", "h")
        both(keel_and_redis, "GET", "m")
