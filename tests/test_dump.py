"""DUMP, RESTORE and MIGRATE: Redis 7.0's serialized format, so values move
between Redis and keel both ways.

The tests on one server run against either; the cross-server tests start
the other kind beside the server under test (redis-server beside keel, keel
beside redis-server) and move every type and encoding, small and large,
with TTLs, by DUMP/RESTORE and by MIGRATE in both directions.
"""

import random
import shutil
import struct
import time

import pytest

from support import OK, Err, ServerProcess, Status, encode_command, free_port

BUSYKEY = Err("BUSYKEY Target key name already exists.")
BAD_PAYLOAD = Err("ERR DUMP payload version or checksum are wrong")
BAD_DATA = Err("ERR Bad data format")
SYNTAX = Err("ERR syntax error")
NOT_INTEGER = Err("ERR value is not an integer or out of range")


def crc64(data: bytes) -> int:
    """Redis's CRC-64 (Jones polynomial, reflected)."""
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x95AC9329AC4BC9B5 if crc & 1 else 0)
    return crc


def seal(body: bytes, version: int = 10) -> bytes:
    """A DUMP payload around an RDB object: version and checksum."""
    payload = body + struct.pack("<H", version)
    return payload + struct.pack("<Q", crc64(payload))


def rdb_string(b: bytes) -> bytes:
    n = len(b)
    return (bytes([n]) if n < 64 else bytes([0x40 | n >> 8, n & 0xFF])) + b


def ziplist(items) -> bytes:
    """A ziplist as Redis 6 lays one out (strings under 64 bytes, ints as int16)."""
    body, prev, last = b"", 0, 10
    for item in items:
        enc = b"\xc0" + struct.pack("<h", item) if isinstance(item, int) else bytes([len(item)]) + item
        entry = bytes([prev]) + enc
        last = 10 + len(body)
        body += entry
        prev = len(entry)
    return struct.pack("<IIH", 10 + len(body) + 1, last, len(items)) + body + b"\xff"


# DUMP replies of Redis 7.0.15 for small values: keel's must be the same bytes.
REDIS_DUMPS = [
    (["RPUSH", "k", "a", "b", "1", "2", "300", "-5", "70000"],
     b"\x12\x01\x02\x1c\x1c\x00\x00\x00\x07\x00\x81a\x02\x81b\x02\x01\x01\x02\x01\xc1,\x02\xdf\xfb\x02"
     b"\xf2p\x11\x01\x04\xff\n\x00\xde\x0e\xe6n\t\xffo\xca"),
    (["SADD", "k", "3", "1", "2"],
     b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02\\\xe2mnM\x1b"),
    (["ZADD", "k", "1.5", "a", "2", "b", "0.1", "c"],
     b"\x11\xc3#,\r,\x00\x00\x00\x06\x00\x81c\x02\x930.10\xe0\x05\x00\x0f1\x14\x81a\x02\x831.5\x04\x81b"
     b"\x02\x02\x01\xff\n\x00\x85\x99\xb8]\xdaq\x83I"),
    (["HSET", "k", "f", "v", "n", "12"],
     b"\x10\x12\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x0c\x01\xff\n\x00\x016\x94\x81\xd3[\x89t"),
    (["SET", "k", "hello"], b"\x00\x05hello\n\x00cr\xdfve4 \n"),
    (["SET", "k", "12345"], b"\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9"),
    (["SET", "k", "a" * 25], b"\x00\xc3\t\x19\x01aa\xe0\x0c\x00\x01aa\n\x00\xd0\x8dg\x00\x9b\x1b\x83\xb3"),
]


@pytest.mark.parametrize("create,payload", REDIS_DUMPS, ids=lambda v: v[0] if isinstance(v, list) else "")
def test_dump_is_byte_identical_to_redis(c, create, payload):
    c.call(*create)
    assert c.call("DUMP", "k") == payload
    c.call("DEL", "k")
    assert c.call("RESTORE", "k", "0", payload) == OK
    assert c.call("DUMP", "k") == payload


def test_restore_asking_is_restore_outside_a_cluster(c):
    c.call("SET", "k", "v")
    payload = c.call("DUMP", "k")
    assert c.call("RESTORE-ASKING", "k", "0", payload) == BUSYKEY
    assert c.call("RESTORE-ASKING", "n", "0", payload) == OK
    assert c.call("GET", "n") == b"v"
    info = c.call("COMMAND", "INFO", "RESTORE-ASKING")[0]
    assert info[:6] == [b"restore-asking", -4, [Status("write"), Status("denyoom"), Status("asking")], 1, 1, 1]


def test_dump_of_a_missing_key_is_nil(c):
    assert c.call("DUMP", "nosuchkey") is None


def test_restore_errors_in_redis_order(c):
    c.call("SET", "k", "v")
    payload = c.call("DUMP", "k")
    assert c.call("RESTORE", "k", "0", payload) == BUSYKEY
    assert c.call("RESTORE", "k", "-1", payload) == BUSYKEY, "BUSYKEY comes before the TTL"
    assert c.call("RESTORE", "k", "0", payload, "bogus") == SYNTAX, "options come first"
    assert c.call("RESTORE", "n", "-1", payload) == Err("ERR Invalid TTL value, must be >= 0")
    assert c.call("RESTORE", "n", "x", payload) == NOT_INTEGER
    assert c.call("RESTORE", "n", "-1", b"garbage") == Err("ERR Invalid TTL value, must be >= 0")
    assert c.call("RESTORE", "n", "0", payload, "IDLETIME", "-1") == Err("ERR Invalid IDLETIME value, must be >= 0")
    assert c.call("RESTORE", "n", "0", payload, "FREQ", "256") == Err(
        "ERR Invalid FREQ value, must be >= 0 and <= 255")
    assert c.call("RESTORE", "n", "0", payload, "FREQ", "-1") == Err(
        "ERR Invalid FREQ value, must be >= 0 and <= 255")
    assert c.call("RESTORE", "n", "0", payload, "IDLETIME", "1", "FREQ", "1") == SYNTAX
    assert c.call("RESTORE", "n", "0", payload, "IDLETIME") == SYNTAX
    assert c.call("RESTORE", "n", "0") == Err("ERR wrong number of arguments for 'restore' command")
    assert c.call("EXISTS", "n") == 0


def test_restore_refuses_bad_checksums_and_versions(c):
    c.call("SET", "k", "hello")
    payload = c.call("DUMP", "k")
    assert c.call("RESTORE", "a", "0", payload[:-1] + bytes([payload[-1] ^ 1])) == BAD_PAYLOAD
    assert c.call("RESTORE", "a", "0", payload[:5]) == BAD_PAYLOAD
    assert c.call("RESTORE", "a", "0", b"") == BAD_PAYLOAD
    assert c.call("RESTORE", "a", "0", seal(b"\x00\x05hello", version=11)) == BAD_PAYLOAD
    assert c.call("RESTORE", "a", "0", seal(b"\x00\x05hello", version=9)) == OK
    assert c.call("GET", "a") == b"hello"


@pytest.mark.parametrize("body", [
    b"\x00",                                # no string at all
    b"\x01\x00",                            # empty list
    b"\x01\x03\x01a",                       # list shorter than its count
    b"\x02\x02\x01a\x01a",                  # repeated set member
    b"\x04\x01\x01f",                       # hash field without a value
    b"\x05\x01\x01a\x00\x00\x00\x00\x00\x00\xf8\x7f",   # NaN score
    b"\x03\x01\x01a\xfd",                   # NaN score, old style
    b"\x01\x81\xff\xff\xff\xff\xff\xff\xff\xff",        # absurd count
    b"\x00\xc3\x02\xff\x00\x10",            # LZF expanding past its ratio
    b"\x00\xc3\x03\x05\x20\x00\x00",        # LZF reference before the start
    b"\x0b" + rdb_string(b"\x02\x00\x00\x00\x05\x00\x00\x00\x01\x00"),  # intset shorter than its count
    b"\x12\x01\x02" + rdb_string(b"\x0b\x00\x00\x00\x01\x00\x81a"),     # listpack without its end
    b"\x07",                                # module value
    b"\x0f\x00",                            # stream
    b"\x2a\x00",                            # unknown type
])
def test_restore_refuses_malformed_bodies(c, body):
    assert c.call("RESTORE", "k", "0", seal(body)) == BAD_DATA
    assert c.call("EXISTS", "k") == 0


@pytest.mark.keel_differs(reason="Redis reads an object running past its end into the footer")
def test_restore_refuses_an_object_running_into_the_footer(c):
    assert c.call("RESTORE", "k", "0", seal(b"\x00\x06hello")) == BAD_DATA


def test_restore_survives_random_corruption(c):
    """Flipped and cut payloads (with a valid checksum) never crash the server."""
    c.call("RPUSH", "l", *[f"element-{i}" for i in range(50)])
    c.call("HSET", "h", *[x for i in range(40) for x in (f"f{i}", "v" * i)])
    c.call("ZADD", "z", *[x for i in range(300) for x in (str(i / 7), f"m{i}")])
    rng = random.Random(19)
    for key in ("l", "h", "z"):
        body = c.call("DUMP", key)[:-10]
        for _ in range(150):
            mutated = bytearray(body)
            for _ in range(rng.randint(1, 4)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            mutated = bytes(mutated[: rng.randint(1, len(mutated))])
            reply = c.call("RESTORE", "x", "0", seal(mutated), "REPLACE")
            assert reply == OK or reply == BAD_DATA, reply
    assert c.call("PING") == Status("PONG")


def test_restore_replace_and_ttls(c):
    c.call("SET", "k", "old")
    payload = c.call("DUMP", "k")
    c.call("SET", "k", "new")
    assert c.call("RESTORE", "k", "0", payload, "REPLACE") == OK
    assert c.call("GET", "k") == b"old"
    assert c.call("TTL", "k") == -1
    assert c.call("RESTORE", "t", "3000", payload) == OK
    assert 2000 <= c.call("PTTL", "t") <= 3000
    assert c.call("RESTORE", "big", "2569591501", payload) == OK
    assert 2569591501 - 5000 <= c.call("PTTL", "big") <= 2569591501
    at = int(time.time() * 1000) + 100_000
    assert c.call("RESTORE", "abs", str(at), payload, "ABSTTL") == OK
    assert 90_000 <= c.call("PTTL", "abs") <= 100_000
    assert c.call("RESTORE", "past", "1", payload, "ABSTTL") == OK
    assert c.call("EXISTS", "past") == 0
    assert c.call("RESTORE", "k", "1", payload, "ABSTTL", "REPLACE") == OK
    assert c.call("EXISTS", "k") == 0, "an expired REPLACE deletes the old key"


def test_restore_sets_idle_time_and_frequency(c, restore_config):
    restore_config("maxmemory-policy")
    c.call("SET", "k", "v")
    payload = c.call("DUMP", "k")
    assert c.call("RESTORE", "idle", "0", payload, "IDLETIME", "1000") == OK
    assert 1000 <= c.call("OBJECT", "IDLETIME", "idle") <= 1010
    c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    assert c.call("RESTORE", "freq", "0", payload, "FREQ", "100") == OK
    assert c.call("OBJECT", "FREQ", "freq") == 100


def test_restore_reads_encodings_redis_7_no_longer_writes(c):
    cases = {
        "list": (b"\x01\x02\x01a\xc0\x05", ["LRANGE", "0", "-1"], [b"a", b"5"]),
        "zset": (b"\x03\x02\x01a\x031.5\x01b\xfe", ["ZRANGE", "0", "-1", "WITHSCORES"],
                 [b"a", b"1.5", b"b", b"inf"]),
        "zipmap": (b"\x09" + rdb_string(b"\x02\x01a\x02\x01xy\x00\x02bc\x01\x00z\xff"), ["HGETALL"],
                   [b"a", b"xy", b"bc", b"z"]),
        "ziplist": (b"\x0a" + rdb_string(ziplist([b"x", 300, -7])), ["LRANGE", "0", "-1"],
                    [b"x", b"300", b"-7"]),
        "zset-ziplist": (b"\x0c" + rdb_string(ziplist([b"a", 1, b"b", b"2.5"])),
                         ["ZRANGE", "0", "-1", "WITHSCORES"], [b"a", b"1", b"b", b"2.5"]),
        "hash-ziplist": (b"\x0d" + rdb_string(ziplist([b"f", b"v", b"n", 12])), ["HGETALL"],
                         [b"f", b"v", b"n", b"12"]),
        "quicklist": (b"\x0e\x02" + rdb_string(ziplist([b"a", b"b"])) + rdb_string(ziplist([3])),
                      ["LRANGE", "0", "-1"], [b"a", b"b", b"3"]),
        "quicklist-plain-node": (b"\x12\x01\x01" + rdb_string(b"plain"), ["LRANGE", "0", "-1"], [b"plain"]),
        "string-int32": (b"\x00\xc2\x00\x00\x00\x80", ["GET"], b"-2147483648"),
    }
    for name, (body, read, expected) in cases.items():
        assert c.call("RESTORE", name, "0", seal(body)) == OK, name
        assert c.call(read[0], name, *read[1:]) == expected, name


@pytest.mark.parametrize("args,error", [
    (["MIGRATE", "127.0.0.1", "1", "k", "0", "100", "bogus"], SYNTAX),
    (["MIGRATE", "127.0.0.1", "1", "k", "0", "100", "AUTH"], SYNTAX),
    (["MIGRATE", "127.0.0.1", "1", "k", "0", "100", "AUTH2", "u"], SYNTAX),
    (["MIGRATE", "127.0.0.1", "1", "k", "0", "100", "KEYS", "a"],
     Err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")),
    (["MIGRATE", "127.0.0.1", "1", "k", "0", "x"], NOT_INTEGER),
    (["MIGRATE", "127.0.0.1", "1", "k", "x", "100"], NOT_INTEGER),
    (["MIGRATE", "127.0.0.1", "1", "k", "0"], Err("ERR wrong number of arguments for 'migrate' command")),
])
def test_migrate_argument_errors(c, args, error):
    c.call("SET", "k", "v")
    assert c.call(*args) == error


def test_migrate_of_missing_keys_says_nokey(c):
    assert c.call("MIGRATE", "127.0.0.1", "1", "missing", "0", "100") == Status("NOKEY")
    assert c.call("MIGRATE", "127.0.0.1", "1", "", "0", "100", "KEYS", "a", "b") == Status("NOKEY")


def test_migrate_to_nowhere_is_an_ioerror_and_keeps_the_key(c):
    c.call("SET", "k", "v")
    # Redis connects without blocking: a refused connection fails the write.
    reply = c.call("MIGRATE", "127.0.0.1", str(free_port()), "k", "0", "500")
    assert reply == Err("IOERR error or timeout writing to target instance")
    reply = c.call("MIGRATE", "127.0.0.1", "notaport", "k", "0", "500")
    assert reply == Err("IOERR error or timeout writing to target instance")
    reply = c.call("MIGRATE", "", "6379", "k", "0", "500")
    assert reply == Err("IOERR error or timeout connecting to the client")
    assert c.call("GET", "k") == b"v"


def test_migrate_keys_for_command_getkeys(c):
    assert c.call("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "10") == [b"k"]
    assert c.call("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "10", "AUTH2", "keys", "keys",
                  "COPY", "KEYS", "a", "b") == [b"a", b"b"]
    info = c.call("COMMAND", "INFO", "MIGRATE")[0]
    assert info[:6] == [b"migrate", -6, [Status("write"), Status("movablekeys")], 3, 3, 1]


def test_info_counts_no_cached_migrate_sockets(c):
    assert b"migrate_cached_sockets:0" in c.call("INFO", "stats")


# ---- across servers ---------------------------------------------------------

def _read(conn, kind, key):
    if kind == "string":
        return conn.call("GET", key)
    if kind == "list":
        return conn.call("LRANGE", key, "0", "-1")
    if kind == "set":
        return sorted(conn.call("SMEMBERS", key))
    if kind == "zset":
        return conn.call("ZRANGE", key, "0", "-1", "WITHSCORES")
    reply = conn.call("HGETALL", key)
    return sorted(zip(reply[::2], reply[1::2]))


def _values():
    """name -> (type, creating command without the key, same bytes as Redis)."""
    rng = random.Random(7)
    noise = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(3000))
    return {
        "str-raw": ("string", ["SET", "hello world"], True),
        "str-empty": ("string", ["SET", ""], True),
        "str-int8": ("string", ["SET", "-100"], True),
        "str-int32": ("string", ["SET", "2000000000"], True),
        "str-int64": ("string", ["SET", "-9223372036854775808"], True),
        "str-lzf": ("string", ["SET", "abc" * 400], True),
        "str-noise": ("string", ["SET", noise], True),
        "list-small": ("list", ["RPUSH", "a", "-1", "4096", "70000", "9999999999", "x" * 100], True),
        "list-nodes": ("list", ["RPUSH"] + [f"element number {i}" for i in range(2000)], True),
        "list-big-elements": ("list", ["RPUSH"] + ["y" * 5000 + str(i) for i in range(5)], True),
        "set-intset": ("set", ["SADD", "5", "-70000", "9999999999"], True),
        "set-intset-large": ("set", ["SADD"] + [str(i * 1001 - 250_000) for i in range(500)], True),
        "set-strings": ("set", ["SADD", "a", "b", "c"], False),
        "set-large-ints": ("set", ["SADD"] + [str(i) for i in range(600)], False),
        "zset-small": ("zset", ["ZADD", "1", "a", "-inf", "b", "0.25", "c", "1e100", "d"], True),
        "zset-large": ("zset", ["ZADD"] + [x for i in range(300) for x in (str(i * 1.5), f"m{i}")], True),
        "zset-long-member": ("zset", ["ZADD", "1", "z" * 100, "2", "short"], True),
        "hash-small": ("hash", ["HSET", "f", "v", "n", "-5", "big", "12345678901"], True),
        "hash-medium": ("hash", ["HSET"] + [x for i in range(300) for x in (f"f{i}", str(i * 37))], True),
        "hash-large": ("hash", ["HSET"] + [x for i in range(600) for x in (f"f{i}", f"v{i}")], False),
        "hash-long-value": ("hash", ["HSET", "f", "v" * 100], False),
    }


VALUES = _values()


@pytest.fixture
def pair(server, server_kind, keel_bin, flushed):
    """(keel connection, redis-server connection): the server under test and
    the other kind, started for the test."""
    if server_kind == "redis" and not keel_bin.exists():
        pytest.skip("the cross-server tests need the keel binary beside redis-server")
    if server_kind == "keel" and shutil.which("redis-server") is None:
        pytest.skip("the cross-server tests need redis-server")
    other = ServerProcess("redis" if server_kind == "keel" else "keel", keel_bin=keel_bin).start()
    mine, theirs = server.conn(), other.conn()
    mine.port, theirs.port = server.port, other.port
    yield (mine, theirs) if server_kind == "keel" else (theirs, mine)
    mine.close()
    theirs.close()
    other.stop()
    other.cleanup()


def _create(conn, name):
    kind, command, _ = VALUES[name]
    assert not isinstance(conn.call(command[0], name, *command[1:]), Err)
    conn.call("PEXPIRE", name, "500000")


@pytest.mark.parametrize("direction", ["redis->keel", "keel->redis"])
def test_dump_restore_across_servers(pair, direction):
    keel, redis = pair
    source, target = (redis, keel) if direction == "redis->keel" else (keel, redis)
    for name, (kind, _, _) in VALUES.items():
        _create(source, name)
        payload = source.call("DUMP", name)
        assert target.call("RESTORE", name, str(source.call("PTTL", name)), payload) == OK, name
        assert _read(target, kind, name) == _read(source, kind, name), name
        assert 490_000 <= target.call("PTTL", name) <= 500_000, name
        if kind != "set":  # keel keeps small sets of strings in a listpack, as Redis 7.2 does
            assert target.call("OBJECT", "ENCODING", name) == source.call("OBJECT", "ENCODING", name), name


def test_dump_bytes_match_redis_for_every_encoding_redis_orders_alike(pair):
    keel, redis = pair
    for name, (_, _, same_bytes) in VALUES.items():
        _create(keel, name)
        _create(redis, name)
        if same_bytes:
            assert keel.call("DUMP", name) == redis.call("DUMP", name), name


@pytest.mark.parametrize("direction", ["redis->keel", "keel->redis"])
def test_migrate_across_servers(pair, direction):
    keel, redis = pair
    source, target = (redis, keel) if direction == "redis->keel" else (keel, redis)
    port = str(target.port)
    for name in VALUES:
        _create(source, name)
    names = list(VALUES)
    expected = {name: _read(source, VALUES[name][0], name) for name in names}
    # One key, then all the others at once into db 1.
    assert source.call("MIGRATE", "127.0.0.1", port, names[0], "0", "5000") == OK
    assert source.call("EXISTS", names[0]) == 0
    assert source.call("MIGRATE", "127.0.0.1", port, "", "1", "5000", "KEYS", *names[1:], "nokey") == OK
    assert source.call("DBSIZE") == 0
    target.call("SELECT", "1")
    for name in names[1:]:
        assert _read(target, VALUES[name][0], name) == expected[name], name
        assert 490_000 <= target.call("PTTL", name) <= 500_000, name
    # COPY keeps the source; without REPLACE the target's key is busy.
    source.call("SET", "s", "one")
    assert source.call("MIGRATE", "127.0.0.1", port, "s", "1", "5000", "COPY") == OK
    assert source.call("GET", "s") == b"one"
    source.call("SET", "s", "two")
    reply = source.call("MIGRATE", "127.0.0.1", port, "s", "1", "5000")
    assert reply == Err("ERR Target instance replied with error: BUSYKEY Target key name already exists.")
    assert source.call("GET", "s") == b"two"
    assert source.call("MIGRATE", "127.0.0.1", port, "s", "1", "5000", "REPLACE") == OK
    assert target.call("GET", "s") == b"two"
    assert source.call("EXISTS", "s") == 0


@pytest.mark.parametrize("direction", ["redis->keel", "keel->redis"])
def test_migrate_auth_across_servers(pair, direction):
    keel, redis = pair
    source, target = (redis, keel) if direction == "redis->keel" else (keel, redis)
    port = str(target.port)
    assert target.call("CONFIG", "SET", "requirepass", "secret") == OK
    source.call("RPUSH", "l", "a", "b")
    reply = source.call("MIGRATE", "127.0.0.1", port, "l", "0", "5000", "AUTH", "wrong")
    assert isinstance(reply, Err) and "WRONGPASS" in reply, reply
    assert source.call("EXISTS", "l") == 1
    assert source.call("MIGRATE", "127.0.0.1", port, "l", "0", "5000", "AUTH", "secret") == OK
    assert source.call("EXISTS", "l") == 0
    source.call("SET", "s", "v")
    assert source.call("MIGRATE", "127.0.0.1", port, "s", "0", "5000", "AUTH2", "default", "secret") == OK
    target.call("AUTH", "secret")
    assert target.call("LRANGE", "l", "0", "-1") == [b"a", b"b"]
    assert target.call("GET", "s") == b"v"
    target.call("CONFIG", "SET", "requirepass", "")


def test_migrate_timeout_bounds_the_wait(pair, server_kind):
    """A target that never answers costs the timeout, not more, and the
    server keeps serving its other clients on other connections."""
    import socket

    keel, redis = pair
    source = keel if server_kind == "keel" else redis
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    source.call("SET", "k", "v")
    started = time.monotonic()
    reply = source.call("MIGRATE", "127.0.0.1", str(listener.getsockname()[1]), "k", "0", "300")
    elapsed = time.monotonic() - started
    listener.close()
    assert reply == Err("IOERR error or timeout reading to target instance")
    assert 0.25 <= elapsed < 2.0, elapsed
    assert source.call("GET", "k") == b"v"


def test_migrate_keeps_a_value_written_while_it_waited(server, c):
    """A write that lands while MIGRATE waits for its target is not lost:
    Redis runs it after MIGRATE, keel keeps the value it never sent."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    answer = threading.Event()

    def target():
        conn, _ = listener.accept()
        conn.recv(1 << 16)
        answer.wait(10)
        conn.sendall(b"+OK\r\n+OK\r\n")  # SELECT, RESTORE
        conn.close()

    thread = threading.Thread(target=target)
    thread.start()
    c.call("SET", "k", "old")
    with server.conn() as migrating, server.conn() as writer:
        migrating.send_raw(encode_command("MIGRATE", "127.0.0.1", str(listener.getsockname()[1]),
                                          "k", "0", "5000"))
        time.sleep(0.2)
        writer.send_raw(encode_command("SET", "k", "new"))
        time.sleep(0.2)
        answer.set()
        assert migrating.read() == OK
        assert writer.read() == OK
    thread.join()
    listener.close()
    assert c.call("GET", "k") == b"new"


def packed_list_bomb(copies: int) -> bytes:
    """A list payload (QUICKLIST_2, one packed node) whose node is an LZF
    string of a listpack of 2-byte entries: 3 payload bytes per 132
    entries, each a list element once decoded."""
    entries = 2 + copies * 264
    listpack_len = 6 + entries + 1
    literal = struct.pack("<IH", listpack_len, 0xFFFF) + b"\x00\x01"
    # A back-reference of 264 bytes at distance 2 repeats the entry.
    compressed = bytes([len(literal) - 1]) + literal + b"\xe0\xff\x01" * copies + b"\x00\xff"

    def length(n):
        return b"\x80" + struct.pack(">I", n)

    node = b"\xc3" + length(len(compressed)) + length(listpack_len) + compressed
    return seal(b"\x12\x01\x02" + node)


def peak_rss_kb(srv):
    status = open(f"/proc/{srv.proc.pid}/status").read()
    return int(status.split("VmHWM:")[1].split()[0])


@pytest.mark.keel_differs(reason="Redis keeps the listpack as it is; keel splits it into elements, "
                                 "so it bounds what decoding may take by what maxmemory leaves")
def test_restore_decoding_stays_within_maxmemory(start_server):
    """300 KB of payload claiming 13 million elements is refused with OOM
    before they are allocated (it took 1 GB of RSS), and the same shape at
    a size that fits restores."""
    srv = start_server({"maxmemory": "50mb", "maxmemory-policy": "noeviction"})
    with srv.conn() as conn:
        before = peak_rss_kb(srv)
        assert conn.call("RESTORE", "bomb", "0", packed_list_bomb(100_000)) == Err(
            "OOM command not allowed when used memory > 'maxmemory'.")
        assert peak_rss_kb(srv) - before < 100_000
        assert conn.call("RESTORE", "small", "0", packed_list_bomb(10)) == OK
        assert conn.call("LLEN", "small") == 1321


@pytest.mark.keel_differs(reason="keel refuses a write that would pass maxmemory; Redis checks before it")
def test_restore_reserves_the_decoded_value(start_server):
    """A payload far smaller than its value (a compressed string) is refused
    with OOM when the value would not fit, and fits once there is room."""
    srv = start_server({"maxmemory": "100mb", "maxmemory-policy": "noeviction"})
    with srv.conn() as conn:
        conn.call("SET", "k", "a" * 30_000_000)
        payload = conn.call("DUMP", "k")
        assert len(payload) < 1_000_000
        conn.call("DEL", "k")
        conn.call("CONFIG", "SET", "maxmemory", "20mb")
        assert conn.call("RESTORE", "k", "0", payload) == Err(
            "OOM command not allowed when used memory > 'maxmemory'.")
        assert conn.call("EXISTS", "k") == 0
        conn.call("CONFIG", "SET", "maxmemory", "100mb")
        assert conn.call("RESTORE", "k", "0", payload) == OK
        assert conn.call("STRLEN", "k") == 30_000_000
