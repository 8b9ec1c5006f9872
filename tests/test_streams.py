"""Stream commands: XADD (IDs, NOMKSTREAM, MAXLEN/MINID trimming), XLEN,
XRANGE/XREVRANGE, XDEL, XTRIM, XSETID, XREAD (with BLOCK), consumer groups
(XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM), XINFO, keyspace
events, COPY of a stream, DUMP and RESTORE (Redis's bytes), MEMORY USAGE, and
errors.

No test depends on timing: a blocked reader is known to be blocked once
INFO reports it; idle times are only compared with bounds."""

import pytest

from support import OK, Err, RespMap, Status, info

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
INVALID_ID = Err("ERR Invalid stream ID specified as stream command argument")
SYNTAX = Err("ERR syntax error")
NOT_INTEGER = Err("ERR value is not an integer or out of range")


def entry(id_, *fields):
    return [id_.encode(), [f.encode() for f in fields]]


def wait_blocked(c, n):
    while int(info(c, "clients")["blocked_clients"]) != n:
        pass


def test_xadd_ids_and_xlen(c):
    assert c.call("XADD", "s", "1-1", "a", "1") == b"1-1"
    assert c.call("XADD", "s", "1-*", "b", "2") == b"1-2"
    assert c.call("XADD", "s", "5", "c", "3") == b"5-0"
    assert c.call("XADD", "s", "5-*", "d", "4") == b"5-1"
    assert c.call("XADD", "s", "5-1", "e", "5") == Err(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item"
    )
    assert c.call("XADD", "s", "0-0", "e", "5") == Err(
        "ERR The ID specified in XADD must be greater than 0-0"
    )
    auto = c.call("XADD", "s", "*", "f", "6")
    ms, seq = auto.split(b"-")
    assert int(ms) > 5 and int(seq) == 0
    assert c.call("XLEN", "s") == 5
    assert c.call("XLEN", "missing") == 0
    assert c.call("TYPE", "s") == Status("stream")
    assert c.call("OBJECT", "ENCODING", "s") == b"stream"


def test_xadd_exhausted_and_bad_input(c):
    assert c.call("XADD", "s", "18446744073709551615-18446744073709551615", "a", "1") == (
        b"18446744073709551615-18446744073709551615"
    )
    assert c.call("XADD", "s", "*", "a", "1") == Err(
        "ERR The stream has exhausted the last possible ID, unable to add more items"
    )
    assert c.call("XADD", "t", "abc", "a", "1") == INVALID_ID
    assert c.call("XADD", "t", "1-x", "a", "1") == INVALID_ID
    assert c.call("XADD", "t", "-", "a", "1") == INVALID_ID
    assert c.call("XADD", "t", "1", "a") == Err("ERR wrong number of arguments for 'xadd' command")
    assert c.call("XADD", "t", "MAXLEN", "-1", "*", "a", "1") == Err(
        "ERR The MAXLEN argument must be >= 0."
    )
    assert c.call("XADD", "t", "MAXLEN", "1", "MINID", "1", "*", "a", "1") == Err(
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
    )
    assert c.call("XADD", "t", "MAXLEN", "1", "LIMIT", "10", "*", "a", "1") == Err(
        "ERR syntax error, LIMIT cannot be used without the special ~ option"
    )
    assert c.call("EXISTS", "t") == 0
    c.call("SET", "str", "x")
    assert c.call("XADD", "str", "*", "a", "1") == WRONGTYPE


def test_xadd_nomkstream(c):
    assert c.call("XADD", "s", "NOMKSTREAM", "*", "a", "1") is None
    assert c.call("EXISTS", "s") == 0
    c.call("XADD", "s", "1", "a", "1")
    assert c.call("XADD", "s", "NOMKSTREAM", "2", "a", "1") == b"2-0"


def test_xadd_trimming_exact_and_approximate(c):
    for i in range(1, 11):
        c.call("XADD", "s", "MAXLEN", "5", str(i), "f", "v")
    assert c.call("XLEN", "s") == 5
    assert c.call("XRANGE", "s", "-", "+", "COUNT", "1") == [entry("6-0", "f", "v")]
    assert c.call("XADD", "s", "MINID", "=", "9", "11", "f", "v") == b"11-0"
    assert c.call("XLEN", "s") == 3
    c.call("DEL", "s")
    # Approximate trimming drops only whole nodes (100 entries by default).
    for i in range(1, 251):
        c.call("XADD", "s", str(i), "f", "v")
    assert c.call("XTRIM", "s", "MAXLEN", "~", "120") == 100
    assert c.call("XLEN", "s") == 150
    assert c.call("XTRIM", "s", "MAXLEN", "~", "120", "LIMIT", "10") == 0
    assert c.call("XTRIM", "s", "MAXLEN", "=", "120") == 30
    assert c.call("XTRIM", "s", "MINID", "200") == 69
    assert c.call("XRANGE", "s", "-", "+", "COUNT", "1") == [entry("200-0", "f", "v")]


def test_xtrim_errors(c):
    c.call("XADD", "s", "1", "f", "v")
    assert c.call("XTRIM", "s", "FOO", "1") == SYNTAX
    assert c.call("XTRIM", "s", "LIMIT", "1", "MAXLEN", "1") == Err(
        "ERR syntax error, LIMIT cannot be used without the special ~ option"
    )
    assert c.call("XTRIM", "missing", "MAXLEN", "0") == 0
    assert c.call("XTRIM", "s", "MAXLEN", "abc") == NOT_INTEGER


def test_xrange_and_xrevrange(c):
    for i in range(1, 6):
        c.call("XADD", "s", f"{i}-1", "k", str(i))
    assert c.call("XRANGE", "s", "2", "3") == [entry("2-1", "k", "2"), entry("3-1", "k", "3")]
    assert c.call("XRANGE", "s", "(2-1", "(4-1") == [entry("3-1", "k", "3")]
    assert c.call("XREVRANGE", "s", "+", "-", "COUNT", "2") == [
        entry("5-1", "k", "5"),
        entry("4-1", "k", "4"),
    ]
    assert c.call("XRANGE", "s", "-", "+", "COUNT", "0") is None
    assert c.call("XRANGE", "s", "-", "+", "COUNT", "-3") is None
    assert c.call("XRANGE", "s", "4", "2") == []
    assert c.call("XRANGE", "missing", "-", "+") == []
    assert c.call("XRANGE", "s", "(-", "+") == INVALID_ID
    assert c.call("XRANGE", "s", "(18446744073709551615-18446744073709551615", "+") == Err(
        "ERR invalid start ID for the interval"
    )
    assert c.call("XRANGE", "s", "-", "(0-0") == Err("ERR invalid end ID for the interval")
    assert c.call("XRANGE", "s", "-", "+", "COUNT") == SYNTAX


def test_xdel_and_max_deleted_id(c):
    for i in range(1, 4):
        c.call("XADD", "s", str(i), "f", "v")
    assert c.call("XDEL", "s", "2", "2", "9") == 1
    assert c.call("XDEL", "missing", "nonsense") == 0
    assert c.call("XDEL", "s", "nonsense") == INVALID_ID
    assert c.call("XLEN", "s") == 2
    info_ = c.call("XINFO", "STREAM", "s")
    fields = dict(zip(info_[::2], info_[1::2]))
    assert fields[b"max-deleted-entry-id"] == b"2-0"
    assert fields[b"entries-added"] == 3
    assert fields[b"recorded-first-entry-id"] == b"1-0"


def test_xsetid(c):
    c.call("XADD", "s", "5", "f", "v")
    assert c.call("XSETID", "s", "4") == Err(
        "ERR The ID specified in XSETID is smaller than the target stream top item"
    )
    assert c.call("XSETID", "s", "10", "ENTRIESADDED", "0") == Err(
        "ERR The entries_added specified in XSETID is smaller than the target stream length"
    )
    assert c.call("XSETID", "s", "10", "MAXDELETEDID", "11") == Err(
        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
    )
    assert c.call("XSETID", "s", "10", "ENTRIESADDED", "7", "MAXDELETEDID", "6") == OK
    assert c.call("XADD", "s", "9", "f", "v") == Err(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item"
    )
    assert c.call("XSETID", "missing", "1") == Err("ERR no such key")
    assert c.call("XSETID", "s", "10", "ENTRIESADDED", "-1") == Err(
        "ERR entries_added must be positive"
    )


def test_xread_sync_and_errors(c):
    c.call("XADD", "a", "1", "f", "1")
    c.call("XADD", "a", "2", "f", "2")
    c.call("XADD", "b", "3", "f", "3")
    assert c.call("XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "0") == [
        [b"a", [entry("1-0", "f", "1")]],
        [b"b", [entry("3-0", "f", "3")]],
    ]
    assert c.call("XREAD", "STREAMS", "a", "b", "2", "3") is None
    assert c.call("XREAD", "STREAMS", "a", "$") is None
    assert c.call("XREAD", "STREAMS", "a") == Err(
        "ERR wrong number of arguments for 'xread' command"
    )
    assert c.call("XREAD", "STREAMS", "a", "b", "0") == Err(
        "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
    )
    assert c.call("XREAD", "STREAMS", "a", ">") == Err(
        "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
    )
    assert c.call("XREAD", "GROUP", "g", "c", "STREAMS", "a", "0") == Err(
        "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
    )
    assert c.call("XREAD", "BLOCK", "-1", "STREAMS", "a", "0") == Err("ERR timeout is negative")
    c.call("SET", "str", "x")
    assert c.call("XREAD", "STREAMS", "str", "0") == WRONGTYPE


def test_xread_resp3_is_a_map(c):
    c.call("HELLO", "3")
    c.call("XADD", "a", "1", "f", "1")
    reply = c.call("XREAD", "STREAMS", "a", "0")
    assert isinstance(reply, RespMap)
    assert reply.to_dict() == {b"a": [entry("1-0", "f", "1")]}


def test_xread_block_served_by_xadd(c, connect):
    c.call("XADD", "s", "1", "f", "v")
    reader = connect()
    reader.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(c, 1)
    c.call("XADD", "s", "2", "g", "w")
    assert reader.read() == [[b"s", [entry("2-0", "g", "w")]]]
    assert c.call("XREAD", "BLOCK", "10", "STREAMS", "s", "$") is None


def test_xread_block_inside_multi_does_not_block(c):
    c.call("XGROUP", "CREATE", "g", "grp", "$", "MKSTREAM")
    assert c.call("MULTI") == OK
    assert c.call("XREAD", "BLOCK", "0", "STREAMS", "s", "$") == Status("QUEUED")
    assert c.call("XREADGROUP", "GROUP", "grp", "c", "BLOCK", "0", "STREAMS", "g", ">") == Status(
        "QUEUED"
    )
    assert c.call("EXEC") == [None, None]


def test_xread_block_inside_script_is_refused(c):
    reply = c.call("EVAL", "return redis.pcall('xReAd','BLOCK','0','STREAMS','s','$')", "1", "s")
    assert reply == Err("ERR xReAd command is not allowed with BLOCK option from scripts")
    reply = c.call(
        "EVAL",
        "return redis.pcall('xreadgroup','GROUP','g','c','BLOCK','0','STREAMS','s','>')",
        "1",
        "s",
    )
    assert reply == Err("ERR xreadgroup command is not allowed with BLOCK option from scripts")


def test_consumer_group_flow(c):
    for i in range(1, 4):
        c.call("XADD", "s", str(i), "f", str(i))
    assert c.call("XGROUP", "CREATE", "s", "g", "0") == OK
    assert c.call("XGROUP", "CREATE", "s", "g", "0") == Err(
        "BUSYGROUP Consumer Group name already exists"
    )
    assert c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">") == [
        [b"s", [entry("1-0", "f", "1"), entry("2-0", "f", "2")]]
    ]
    assert c.call("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">") == [
        [b"s", [entry("3-0", "f", "3")]]
    ]
    assert c.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0") == [
        [b"s", [entry("1-0", "f", "1"), entry("2-0", "f", "2")]]
    ]
    assert c.call("XPENDING", "s", "g") == [
        3,
        b"1-0",
        b"3-0",
        [[b"alice", b"2"], [b"bob", b"1"]],
    ]
    pending = c.call("XPENDING", "s", "g", "-", "+", "10", "alice")
    assert [(p[0], p[1], p[3]) for p in pending] == [(b"1-0", b"alice", 2), (b"2-0", b"alice", 2)]
    assert c.call("XACK", "s", "g", "1", "9") == 1
    assert c.call("XACK", "s", "g", "bad") == INVALID_ID
    # A deleted pending entry is replied as nil in the consumer's history.
    c.call("XDEL", "s", "2")
    assert c.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0") == [
        [b"s", [[b"2-0", None]]]
    ]
    groups = c.call("XINFO", "GROUPS", "s")
    g = dict(zip(groups[0][::2], groups[0][1::2]))
    assert g[b"name"] == b"g"
    assert g[b"consumers"] == 2
    assert g[b"pending"] == 2
    assert g[b"last-delivered-id"] == b"3-0"
    assert g[b"entries-read"] == 3
    assert g[b"lag"] == 0
    assert c.call("XGROUP", "DELCONSUMER", "s", "g", "bob") == 1
    assert c.call("XGROUP", "CREATECONSUMER", "s", "g", "carol") == 1
    assert c.call("XGROUP", "CREATECONSUMER", "s", "g", "carol") == 0
    names = [dict(zip(x[::2], x[1::2]))[b"name"] for x in c.call("XINFO", "CONSUMERS", "s", "g")]
    assert names == [b"alice", b"carol"]
    assert c.call("XGROUP", "DESTROY", "s", "g") == 1
    assert c.call("XGROUP", "DESTROY", "s", "g") == 0


def test_group_errors(c):
    assert c.call("XGROUP", "CREATE", "s", "g", "$") == Err(
        "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
        "to use the MKSTREAM option to create an empty stream automatically."
    )
    assert c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == OK
    assert c.call("XLEN", "s") == 0
    assert c.call("XGROUP", "SETID", "s", "nog", "0") == Err(
        "NOGROUP No such consumer group 'nog' for key name 's'"
    )
    assert c.call("XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD", "-5") == Err(
        "ERR value for ENTRIESREAD must be positive or -1"
    )
    assert c.call("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">") == Err(
        "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option"
    )
    assert c.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$") == Err(
        "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
        "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID "
        "would just return an empty result set."
    )
    assert c.call("XPENDING", "s", "nog") == Err("NOGROUP No such key 's' or consumer group 'nog'")
    assert c.call("XPENDING", "s", "g") == [0, None, None, None]
    assert c.call("XINFO", "STREAM", "missing") == Err("ERR no such key")
    assert c.call("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0") == Err(
        "ERR COUNT must be > 0"
    )
    assert c.call("XCLAIM", "s", "g", "c", "0", "1", "BOGUS") == Err(
        "ERR Unrecognized XCLAIM option 'BOGUS'"
    )


def test_xclaim_and_xautoclaim(c):
    for i in range(1, 5):
        c.call("XADD", "s", str(i), "f", str(i))
    c.call("XGROUP", "CREATE", "s", "g", "0")
    c.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    assert c.call("XCLAIM", "s", "g", "bob", "0", "1", "2", "JUSTID") == [b"1-0", b"2-0"]
    assert c.call("XCLAIM", "s", "g", "bob", "0", "3", "RETRYCOUNT", "7") == [entry("3-0", "f", "3")]
    pending = c.call("XPENDING", "s", "g", "3", "3", "1")
    assert pending[0][1] == b"bob" and pending[0][3] == 7
    assert c.call("XCLAIM", "s", "g", "bob", "3600000", "4") == []
    c.call("XDEL", "s", "2")
    assert c.call("XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "2") == [
        b"3-0",
        [entry("1-0", "f", "1")],
        [b"2-0"],
    ]
    assert c.call("XAUTOCLAIM", "s", "g", "carol", "0", "3", "JUSTID") == [
        b"0-0",
        [b"3-0", b"4-0"],
        [],
    ]


def test_blocked_group_reader_gets_nogroup_when_destroyed(c, connect):
    c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = connect()
    reader.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(c, 1)
    c.call("XGROUP", "DESTROY", "s", "g")
    assert reader.read() == Err(
        "NOGROUP the consumer group this client was blocked on no longer exists"
    )
    c.call("XGROUP", "CREATE", "s", "g", "$")
    reader.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(c, 1)
    c.call("DEL", "s")
    assert reader.read() == Err("UNBLOCKED the stream key no longer exists")


def test_blocked_group_reader_served_by_xadd(c, connect):
    c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    reader = connect()
    reader.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(c, 1)
    c.call("XADD", "s", "7", "f", "v")
    assert reader.read() == [[b"s", [entry("7-0", "f", "v")]]]
    assert c.call("XPENDING", "s", "g")[0] == 1


def test_keyspace_events(c, connect, restore_config):
    restore_config("notify-keyspace-events")
    c.call("CONFIG", "SET", "notify-keyspace-events", "Et")
    sub = connect()
    sub.call("PSUBSCRIBE", "__keyevent@*__:*")
    c.call("XADD", "s", "MAXLEN", "1", "1", "f", "v")
    c.call("XADD", "s", "MAXLEN", "1", "2", "f", "v")
    c.call("XDEL", "s", "2")
    c.call("XSETID", "s", "5")
    c.call("XGROUP", "CREATE", "s", "g", "0")
    c.call("XGROUP", "CREATECONSUMER", "s", "g", "c")
    c.call("XGROUP", "DELCONSUMER", "s", "g", "c")
    c.call("XGROUP", "SETID", "s", "g", "0")
    c.call("XGROUP", "DESTROY", "s", "g")
    events = [sub.read()[2].split(b":")[1] for _ in range(10)]
    assert events == [
        b"xadd",
        b"xadd",
        b"xtrim",
        b"xdel",
        b"xsetid",
        b"xgroup-create",
        b"xgroup-createconsumer",
        b"xgroup-delconsumer",
        b"xgroup-setid",
        b"xgroup-destroy",
    ]


def test_copy_deep_copies_groups(c):
    c.call("XADD", "s", "1", "f", "v")
    c.call("XGROUP", "CREATE", "s", "g", "0")
    assert c.call("COPY", "s", "t") == 1
    c.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "t", ">")
    assert c.call("XPENDING", "t", "g")[0] == 1
    assert c.call("XPENDING", "s", "g")[0] == 0
    assert c.call("XRANGE", "t", "-", "+") == [entry("1-0", "f", "v")]


# What Redis 7.0.15 DUMPs for the stream `dump_fixture` builds: one node with a
# deleted entry and an entry of other fields, a group with no consumer.
STREAM_PAYLOAD = (
    b"\x13\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\xc3@w@|\x15|"
    b"\x00\x00\x00+\x00\x05\x01\x01\x01\x02\x01\x81f\x02\x84name\x05\x00 \x0c\x00\x00 \x01\x07"
    b"\x01\x01\x81x\x02\x05\x01\x03 \x08@\x12\x04\x82xx\x03\x05 \x1a@\x1c\x06\x03\x01\x83xxx\x04"
    b"@\x0e\x00\x03 \x1c\x02\x04\x01\x84 \x0e\x01x\x05@\x0f\x00\x04 \x0f\x02\x05\x01\x85 \x0e\x03"
    b"xx\x06\x05 \x0c\x17\x08\x01\xdf\xff\x02\x01\x01\x85other\x06\x85field\x06\x06\x01\xff\x05\t"
    b"\x00\x01\x01\x02\x01\x06\x01\x01g\x03\x01\x03\x00\x00\n\x00E\xf7j\x98p\x81\x80{"
)


def dump_fixture(c):
    for i in range(1, 6):
        c.call("XADD", "s", f"{i}-1", "f", str(i), "name", "x" * i)
    c.call("XADD", "s", "9", "other", "field")
    c.call("XDEL", "s", "2-1")
    c.call("XGROUP", "CREATE", "s", "g", "3-1", "ENTRIESREAD", "3")


def test_dump_of_a_stream_is_redis_bytes(c):
    dump_fixture(c)
    assert c.call("DUMP", "s") == STREAM_PAYLOAD


def test_restore_of_a_stream_keeps_everything(c):
    assert c.call("RESTORE", "s", "0", STREAM_PAYLOAD) == OK
    assert c.call("XLEN", "s") == 5
    assert c.call("XRANGE", "s", "-", "+", "COUNT", "2") == [
        entry("1-1", "f", "1", "name", "x"),
        entry("3-1", "f", "3", "name", "xxx"),
    ]
    info_ = c.call("XINFO", "STREAM", "s")
    fields = dict(zip(info_[::2], info_[1::2]))
    assert fields[b"max-deleted-entry-id"] == b"2-1"
    assert fields[b"entries-added"] == 6
    assert fields[b"radix-tree-keys"] == 1
    assert c.call("XINFO", "GROUPS", "s")[0][6:] == [b"last-delivered-id", b"3-1", b"entries-read", 3, b"lag", 3]
    assert c.call("DUMP", "s") == STREAM_PAYLOAD
    c.call("XGROUP", "CREATECONSUMER", "s", "g", "alice")
    c.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    assert c.call("RESTORE", "t", "0", c.call("DUMP", "s")) == OK
    assert c.call("XPENDING", "t", "g") == [3, b"4-1", b"9-0", [[b"alice", b"3"]]]
    corrupt = STREAM_PAYLOAD[:30] + bytes([STREAM_PAYLOAD[30] ^ 1]) + STREAM_PAYLOAD[31:]
    assert c.call("RESTORE", "u", "0", corrupt) == Err("ERR DUMP payload version or checksum are wrong")


def test_memory_usage_grows_with_entries(c):
    c.call("XADD", "s", "1", "f", "v")
    small = c.call("MEMORY", "USAGE", "s")
    for i in range(2, 200):
        c.call("XADD", "s", str(i), "field", "x" * 50)
    assert c.call("MEMORY", "USAGE", "s") > small + 199 * 50


def test_wrong_type_everywhere(c):
    c.call("SET", "k", "v")
    for cmd in (
        ("XLEN", "k"),
        ("XRANGE", "k", "-", "+"),
        ("XDEL", "k", "1"),
        ("XTRIM", "k", "MAXLEN", "1"),
        ("XSETID", "k", "1"),
        ("XGROUP", "CREATE", "k", "g", "0"),
        ("XACK", "k", "g", "1"),
        ("XPENDING", "k", "g"),
        ("XCLAIM", "k", "g", "c", "0", "1"),
        ("XAUTOCLAIM", "k", "g", "c", "0", "0"),
        ("XINFO", "STREAM", "k"),
    ):
        assert c.call(*cmd) == WRONGTYPE, cmd
    c.call("XADD", "s", "1", "f", "v")
    assert c.call("LPUSH", "s", "x") == WRONGTYPE
