"""The wire protocol on raw sockets: inline commands, pipelining, malformed input
and request size limits. Error texts are Redis 7.0's."""

import pytest

from support import OK, PONG, Err, encode_command

PROTO_MAX_BULK_LEN = 512 * 1024 * 1024


def protocol_error(message: str) -> bytes:
    return b"-ERR Protocol error: " + message.encode() + b"\r\n"


def assert_closed_with(conn, payload: bytes, expected: bytes):
    """Send payload; the server must answer exactly `expected` and close the connection."""
    conn.send_raw(payload)
    assert conn.read_until_closed() == expected


# -- inline commands ---------------------------------------------------------------


@pytest.mark.parametrize("line", [b"PING\r\n", b"PING\n", b"ping\r\n", b"  PING  \r\n"])
def test_inline_ping(c, line):
    c.send_raw(line)
    assert c.read() == PONG


def test_inline_quoted_arguments(c):
    c.send_raw(b'set "a b" c\r\nget "a b"\r\n')
    assert c.read() == OK
    assert c.read() == b"c"
    assert c.call("GET", "a b") == b"c"


@pytest.mark.parametrize("line,value", [
    (b'ECHO "\\x41\\n\\"q"', b'A\n"q'),
    (b"ECHO 'it\\'s'", b"it's"),
    (b'ECHO "a\\tb"', b"a\tb"),
    (b'ECHO ""', b""),
    (b"ECHO ''", b""),
    (b"ECHO 'a b'", b"a b"),
    (b'ECHO "\\\\"', b"\\"),
])
def test_inline_quoting_rules(c, line, value):
    c.send_raw(line + b"\r\n")
    assert c.read() == value


def test_inline_tabs_separate_arguments(c):
    c.send_raw(b"ECHO a\tb\r\n")
    assert c.read() == Err("ERR wrong number of arguments for 'echo' command")


def test_empty_inline_lines_are_ignored(c):
    c.send_raw(b"\r\n\r\n   \r\nPING\r\n")
    assert c.read() == PONG


@pytest.mark.parametrize("line", [b'set "a b c', b'echo "a"b', b"echo 'abc", b"echo 'a'b"])
def test_inline_unbalanced_quotes(c, connect, line):
    assert_closed_with(c, line + b"\r\n", protocol_error("unbalanced quotes in request"))
    assert connect().call("PING") == PONG


def test_inline_too_big(c, connect):
    assert_closed_with(c, b"x" * 70_000, protocol_error("too big inline request"))
    assert connect().call("PING") == PONG


def test_inline_and_multibulk_mixed(c):
    c.send_raw(b"SET k 1\r\n" + encode_command("INCR", "k") + b"INCR k\r\n" + encode_command("GET", "k"))
    assert [c.read() for _ in range(4)] == [OK, 2, 3, b"3"]


# -- pipelining ----------------------------------------------------------------------


def test_pipeline_of_10000_commands_in_order(c):
    commands = []
    for i in range(5000):
        commands.append(("INCR", "counter"))
        commands.append(("ECHO", f"msg-{i}"))
    replies = c.pipeline(commands)
    assert replies[0::2] == list(range(1, 5001))
    assert replies[1::2] == [f"msg-{i}".encode() for i in range(5000)]


def test_pipeline_of_10000_inline_commands(c):
    c.send_raw(b"".join(b"SET key:%d %d\r\n" % (i, i) for i in range(10_000)))
    assert all(c.read() == OK for _ in range(10_000))
    assert c.call("DBSIZE") == 10_000
    assert c.call("GET", "key:9999") == b"9999"


def test_command_split_across_many_writes(c):
    payload = encode_command("SET", "split", "value") + encode_command("GET", "split")
    for i in range(len(payload)):
        c.send_raw(payload[i : i + 1])
    assert c.read() == OK
    assert c.read() == b"value"


def test_empty_multibulk_is_ignored(c):
    c.send_raw(b"*0\r\n*-1\r\n" + encode_command("PING"))
    assert c.read() == PONG


# -- malformed RESP --------------------------------------------------------------------


@pytest.mark.parametrize("payload,message", [
    (b"*1\r\n$x\r\n", "invalid bulk length"),
    (b"*1\r\n$\r\n", "invalid bulk length"),
    (b"*1\r\n$ 4\r\nPING\r\n", "invalid bulk length"),
    (b"*1\r\n$-1\r\n", "invalid bulk length"),
    (b"*1\r\n$536870913\r\n", "invalid bulk length"),
    (b"*1\r\n$9223372036854775808\r\n", "invalid bulk length"),
    (b"*x\r\n", "invalid multibulk length"),
    (b"*\r\n", "invalid multibulk length"),
    (b"*3x\r\n", "invalid multibulk length"),
    (b"*01\r\n$4\r\nPING\r\n", "invalid multibulk length"),
    (b"*+1\r\n$4\r\nPING\r\n", "invalid multibulk length"),
    (b"*-0\r\n*1\r\n$4\r\nPING\r\n", "invalid multibulk length"),
    (b"*1\r\n$-0\r\n", "invalid bulk length"),
    (b"*1\r\n$04\r\nPING\r\n", "invalid bulk length"),
    (b"*2147483648\r\n", "invalid multibulk length"),
    (b"*1\r\nx\r\n", "expected '$', got 'x'"),
    (b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n:1\r\n", "expected '$', got ':'"),
], ids=lambda p: repr(p)[2:-1] if isinstance(p, bytes) else p)
def test_malformed_resp(c, connect, payload, message):
    other = connect()
    assert_closed_with(c, payload, protocol_error(message))
    assert other.call("PING") == PONG
    assert connect().call("PING") == PONG


def test_multibulk_count_of_one_million_is_accepted(c):
    """The largest request keel accepts (Redis 7 accepts more, see below)."""
    c.call("SET", "k", "v")
    count = 1024 * 1024 - 1
    c.send_raw(b"*%d\r\n$6\r\nEXISTS\r\n" % (count + 1) + b"$1\r\nk\r\n" * count)
    assert c.read() == count


@pytest.mark.keel_differs(reason="Redis 7 accepts up to 2^31-1 arguments; keel refuses counts above "
                                 "1048576, as older Redis did, so a bogus count cannot make it reserve memory")
def test_multibulk_count_above_one_million_is_refused(c, connect):
    assert_closed_with(c, b"*%d\r\n" % (1024 * 1024 + 1), protocol_error("invalid multibulk length"))
    assert connect().call("PING") == PONG


def test_replies_before_protocol_error_are_sent(c):
    assert_closed_with(c, encode_command("SET", "k", "v") + b"PING\r\n*x\r\n",
                       b"+OK\r\n+PONG\r\n" + protocol_error("invalid multibulk length"))


def test_protocol_error_discards_rest_of_pipeline(c, connect):
    assert_closed_with(c, b"*1\r\n$x\r\n" + encode_command("SET", "after", "1"),
                       protocol_error("invalid bulk length"))
    assert connect().call("EXISTS", "after") == 0


# -- size limits ---------------------------------------------------------------------------


def test_bulk_length_limit_follows_proto_max_bulk_len(start_server):
    limit = 2 * 1024 * 1024
    srv = start_server({"proto-max-bulk-len": "2mb"})
    with srv.conn() as conn:
        assert conn.call("SET", "k", b"x" * limit) == OK
        assert conn.call("STRLEN", "k") == limit
        assert_closed_with(conn, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (limit + 1),
                           protocol_error("invalid bulk length"))


def test_unauthenticated_request_limits(start_server):
    srv = start_server({"requirepass": "pw"})
    with srv.conn() as conn:
        assert_closed_with(conn, b"*11\r\n", protocol_error("unauthenticated multibulk length"))
    with srv.conn() as conn:
        assert_closed_with(conn, b"*2\r\n$4\r\nECHO\r\n$16385\r\n",
                           protocol_error("unauthenticated bulk length"))
    with srv.conn() as conn:
        assert conn.call("ECHO", "x" * 16384) == Err("NOAUTH Authentication required.")
        assert conn.call("AUTH", "pw") == OK
        assert conn.call("ECHO", "x" * 100_000) == b"x" * 100_000
        assert conn.call("MSET", *["k", "v"] * 20) == OK


def test_reset_in_a_pipeline_brings_back_the_unauthenticated_limits(start_server):
    # The requests after RESET are read with the RESET in one batch (a
    # big ECHO first grows the read buffer to hold it); they still meet the
    # limits of a client that has not authenticated.
    srv = start_server({"requirepass": "pw"})
    with srv.conn() as conn:
        assert conn.call("AUTH", "pw") == OK
        assert conn.call("ECHO", "x" * 40_000) == b"x" * 40_000
        pipeline = (encode_command("PING") + encode_command("RESET")
                    + encode_command("ECHO", "x" * 16385) + encode_command("SET", "after", "1"))
        assert_closed_with(conn, pipeline,
                           b"+PONG\r\n+RESET\r\n" + protocol_error("unauthenticated bulk length"))
    with srv.conn() as conn:
        assert conn.call("AUTH", "pw") == OK
        assert conn.call("EXISTS", "after") == 0
