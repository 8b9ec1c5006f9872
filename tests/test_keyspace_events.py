"""Keyspace notifications of commands (notify-keyspace-events): for a
representative command of each family and the special cases (RENAME, MOVE,
LMOVE, expire and expired, new keys, key misses, class masks), the exact
messages in order, compared with Redis 7.0.15."""

import time

import pytest

from support import OK

# Published after each step: every notification of the step came before it.
END = b"__keyevent@99__:end"


def render(channel: bytes, payload: bytes) -> str:
    """`event key` for a keyevent message, `key: event` for a keyspace one,
    prefixed with `@db ` outside database 0."""
    kind, rest = channel.decode().split("@", 1)
    db, name = rest.split("__:", 1)
    prefix = "" if db == "0" else f"@{db} "
    if kind == "__keyevent":
        return f"{prefix}{name} {payload.decode()}"
    return f"{prefix}{name}: {payload.decode()}"


@pytest.fixture
def events(connect, restore_config):
    """`events(flags, *commands)`: runs the commands with
    notify-keyspace-events set to `flags` and returns the notifications
    they published, rendered."""
    restore_config("notify-keyspace-events")
    conn, sub = connect(), connect()
    sub.send("PSUBSCRIBE", "__key*__:*")
    assert sub.read() == [b"psubscribe", b"__key*__:*", 1]

    def run(flags, *commands):
        assert conn.call("CONFIG", "SET", "notify-keyspace-events", flags) == OK
        for command in commands:
            conn.call(*command)
        conn.call("PUBLISH", END, "")
        got = []
        while (message := sub.read())[2] != END:
            got.append(render(message[2], message[3]))
        return got

    run.conn = conn
    return run


def test_keyspace_and_keyevent_messages_come_in_that_order(events):
    assert events("KEA", ["SET", "foo", "bar"]) == ["foo: set", "set foo"]
    assert events("K$", ["SET", "foo", "bar"]) == ["foo: set"]
    assert events("E$", ["SET", "foo", "bar"]) == ["set foo"]


def test_classes_mask_events(events):
    assert events("El", ["SET", "s", "v"], ["LPUSH", "l", "a"]) == ["lpush l"]
    assert events("$", ["SET", "s", "v"]) == [], "neither K nor E: nothing published"
    # A is every class but new keys and key misses.
    assert events("EA", ["GET", "missing"], ["SET", "n", "v"]) == ["set n"]


def test_string_commands(events):
    assert events(
        "E$g",
        ["SET", "s", "v", "EX", "100"],
        ["SET", "s", "w", "KEEPTTL"],
        ["SETNX", "s", "x"],
        ["MSET", "a", "1", "b", "2"],
        ["APPEND", "a", "x"],
        ["SETRANGE", "a", "0", ""],
        ["SETRANGE", "a", "1", "yz"],
        ["INCR", "b"],
        ["INCRBYFLOAT", "b", "1.5"],
        ["GETDEL", "a"],
        ["GETDEL", "a"],
        ["GETEX", "s", "PERSIST"],
        ["GETEX", "s", "PX", "100000"],
    ) == [
        "set s", "expire s", "set s", "set a", "set b", "append a", "setrange a",
        "incrby b", "incrbyfloat b", "del a", "persist s", "expire s",
    ]


def test_generic_commands(events):
    events("", ["SET", "k", "v"], ["SET", "other", "v"])
    assert events(
        "Eg",
        ["EXPIRE", "k", "100"],
        ["PERSIST", "k"],
        ["PERSIST", "k"],
        ["DEL", "nothing", "other"],
        ["RENAME", "k", "k2"],
        ["RENAME", "k2", "k2"],
        ["EXPIRE", "k2", "-1"],
        ["EXPIRE", "k2", "100"],
    ) == ["expire k", "persist k", "del other", "rename_from k", "rename_to k2", "del k2"]


def test_rename_over_a_key_deletes_and_creates_it(events):
    events("", ["SET", "a", "1"], ["SET", "b", "2"])
    assert events("Egn", ["RENAME", "a", "b"]) == ["new b", "rename_from a", "rename_to b"]
    assert events("Egn", ["RENAMENX", "b", "a"]) == ["new a", "rename_from b", "rename_to a"]


def test_move_and_copy_notify_in_each_database(events):
    events("", ["SET", "k", "v"])
    assert events("KEgn", ["COPY", "k", "k", "DB", "1"], ["MOVE", "k", "2"]) == [
        "@1 k: new", "@1 new k", "@1 k: copy_to", "@1 copy_to k",
        "@2 k: new", "@2 new k",
        "k: move_from", "move_from k", "@2 k: move_to", "@2 move_to k",
    ]
    assert events("Eg", ["SWAPDB", "0", "2"], ["SWAPDB", "0", "2"]) == []


def test_restore_and_sort_store(events):
    conn = events.conn
    conn.call("RPUSH", "list", "3", "1", "2")
    payload = conn.call("DUMP", "list")
    assert events(
        "Eglnm",
        ["RESTORE", "copy", "0", payload],
        ["RESTORE", "copy", "0", payload, "REPLACE"],
        ["SORT", "list", "STORE", "sorted"],
        ["SORT", "missing", "STORE", "sorted"],
    ) == [
        "new copy", "restore copy", "new copy", "restore copy",
        "new sorted", "sortstore sorted", "keymiss missing", "del sorted",
    ]


def test_list_commands(events):
    assert events(
        "Elg",
        ["RPUSH", "l", "a", "b"],
        ["LPUSHX", "nolist", "a"],
        ["LINSERT", "l", "BEFORE", "missing", "x"],
        ["LSET", "l", "0", "z"],
        ["LMOVE", "l", "dst", "LEFT", "RIGHT"],
        ["RPOPLPUSH", "l", "l"],
        ["RPOP", "l"],
        ["LTRIM", "dst", "1", "0"],
    ) == [
        "rpush l", "lset l", "rpush dst", "lpop l", "lpush l", "rpop l",
        "rpop l", "del l", "ltrim dst", "del dst",
    ]


def test_blocked_pop_served_by_a_push(events, connect):
    waiter = connect()
    waiter.send("BLMOVE", "src", "dst", "LEFT", "LEFT", "0")
    deadline = time.monotonic() + 5
    while events.conn.call("CLIENT", "LIST", "TYPE", "normal").count(b"cmd=blmove") == 0:
        assert time.monotonic() < deadline, "the waiter never blocked"
        time.sleep(0.01)
    assert events("Elgn", ["LPUSH", "src", "x"]) == [
        "new src", "lpush src", "new dst", "lpush dst", "lpop src", "del src",
    ]
    assert waiter.read() == b"x"


def test_set_commands(events):
    assert events(
        "Esg",
        ["SADD", "s", "a", "b"],
        ["SADD", "s", "a"],
        ["SREM", "s", "missing"],
        ["SMOVE", "s", "t", "a"],
        ["SPOP", "s"],
        ["SINTERSTORE", "i", "t", "t"],
        ["SDIFFSTORE", "i", "t", "t"],
    ) == ["sadd s", "srem s", "sadd t", "spop s", "del s", "sinterstore i", "del i"]


def test_sorted_set_and_geo_commands(events):
    assert events(
        "Ezg",
        ["ZADD", "z", "1", "a", "2", "b"],
        ["ZADD", "z", "1", "a"],
        ["ZINCRBY", "z", "1", "a"],
        ["ZREMRANGEBYSCORE", "z", "5", "6"],
        ["ZUNIONSTORE", "u", "1", "z"],
        ["ZPOPMAX", "z", "5"],
        ["GEOADD", "g", "13.36", "38.11", "palermo"],
        ["GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", "13", "38", "BYRADIUS", "100", "km"],
    ) == [
        "zadd z", "zincr z", "zunionstore u", "zpopmax z", "del z", "zadd g",
        "geosearchstore gs",
    ]


def test_hash_commands(events):
    assert events(
        "Ehg",
        ["HSET", "h", "a", "1"],
        ["HSET", "h", "a", "1"],
        ["HSETNX", "h", "a", "2"],
        ["HINCRBY", "h", "n", "1"],
        ["HINCRBYFLOAT", "h", "n", "0.5"],
        ["HDEL", "h", "missing"],
        ["HDEL", "h", "a", "n"],
    ) == ["hset h", "hset h", "hincrby h", "hincrbyfloat h", "hdel h", "del h"]


def test_bitmap_and_hyperloglog_commands(events):
    assert events(
        "E$g",
        ["SETBIT", "b", "7", "1"],
        ["SETBIT", "b", "7", "1"],
        ["BITFIELD", "f", "SET", "u8", "0", "5"],
        ["BITOP", "OR", "o", "b", "f"],
        ["BITOP", "AND", "o", "missing"],
        ["PFADD", "p", "a"],
        ["PFADD", "p", "a"],
        ["PFMERGE", "q", "p"],
    ) == ["setbit b", "setbit f", "set o", "del o", "pfadd p", "pfadd q"]


def test_transaction_publishes_each_command_as_it_runs(events):
    assert events(
        "E$g", ["MULTI"], ["SET", "t", "1"], ["INCR", "t"], ["DEL", "t"], ["EXEC"],
    ) == ["set t", "incrby t", "del t"]


def test_new_keys(events):
    assert events(
        "En",
        ["SET", "foo", "bar"],
        ["SET", "foo", "baz"],
        ["HSET", "h", "a", "1"],
        ["HSET", "h", "b", "1"],
        ["SADD", "s"],
    ) == ["new foo", "new h"]


def test_key_misses_are_reads_only(events):
    assert events(
        "Em",
        ["GET", "a"],
        ["EXISTS", "b", "c"],
        ["TYPE", "d"],
        ["HGET", "e", "f"],
        ["INCR", "counter"],
        ["DEL", "g"],
        ["SREM", "h", "x"],
    ) == ["keymiss a", "keymiss b", "keymiss c", "keymiss d", "keymiss e"]


def test_expire_is_the_command_and_expired_the_deadline(events):
    assert events("Egx", ["SET", "k", "v"], ["PEXPIRE", "k", "1"]) == ["expire k"]
    time.sleep(0.01)
    # Whoever meets it first (this read or active expiry) says so once.
    assert events("Egx", ["GET", "k"]) == ["expired k"]
