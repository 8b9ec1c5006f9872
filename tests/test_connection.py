"""Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT."""

import re
import time

import pytest

from support import OK, PONG, Err, RespMap, Status, encode_command

ARITY = "ERR wrong number of arguments for '{}' command"
NOAUTH = Err("NOAUTH Authentication required.")
WRONGPASS = Err("WRONGPASS invalid username-password pair or user is disabled.")
PASSWORD = "s3cret"

HELLO_FIELDS = [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"]


@pytest.fixture
def auth_server(start_server):
    return start_server({"requirepass": PASSWORD})


def hello_map(reply):
    """HELLO's reply as a dict whatever the protocol (RESP2 flat array or RESP3 map)."""
    if isinstance(reply, RespMap):
        pairs = list(reply)
    else:
        pairs = list(zip(reply[::2], reply[1::2]))
    assert [k for k, _ in pairs] == HELLO_FIELDS
    return dict(pairs)


# -- PING / ECHO -------------------------------------------------------------


def test_ping(c):
    assert c.call("PING") == PONG
    assert c.call("ping") == PONG
    assert c.call("PING", "hello") == b"hello"
    assert c.call("PING", "a", "b") == Err(ARITY.format("ping"))


@pytest.mark.parametrize("payload", [b"hello", b"", b"\x00\xff\r\n binary", b"x" * 100_000])
def test_echo(c, payload):
    assert c.call("ECHO", payload) == payload


@pytest.mark.parametrize("args", [(), ("a", "b")])
def test_echo_arity(c, args):
    assert c.call("ECHO", *args) == Err(ARITY.format("echo"))


# -- HELLO -------------------------------------------------------------------


def test_hello_2_returns_flat_array(c):
    reply = c.call("HELLO", "2")
    assert isinstance(reply, list) and not isinstance(reply, RespMap)
    info = hello_map(reply)
    assert info[b"proto"] == 2
    assert info[b"id"] == c.call("CLIENT", "ID")
    assert re.fullmatch(rb"\d+\.\d+\.\d+", info[b"version"])
    assert info[b"server"]
    assert info[b"mode"] == b"standalone"
    assert info[b"role"] == b"master"
    assert info[b"modules"] == []


def test_hello_3_returns_map_and_switches_protocol(c):
    reply = c.call("HELLO", "3")
    assert isinstance(reply, RespMap)
    info = hello_map(reply)
    assert info[b"proto"] == 3
    assert info[b"id"] == c.call("CLIENT", "ID")
    # RESP3 null instead of the RESP2 null bulk string.
    c.send_raw(b"*2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n")
    assert c.read_exact_bytes(3) == b"_\r\n"
    # HELLO without a version reports the current protocol.
    assert hello_map(c.call("HELLO"))[b"proto"] == 3
    assert hello_map(c.call("HELLO", "2"))[b"proto"] == 2
    c.send_raw(b"*2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n")
    assert c.read_exact_bytes(5) == b"$-1\r\n"


def test_hello_without_version_keeps_resp2(c):
    assert hello_map(c.call("HELLO"))[b"proto"] == 2


@pytest.mark.parametrize("version,error", [
    ("4", "NOPROTO unsupported protocol version"),
    ("1", "NOPROTO unsupported protocol version"),
    ("abc", "ERR Protocol version is not an integer or out of range"),
])
def test_hello_bad_version(c, version, error):
    assert c.call("HELLO", version) == Err(error)
    assert c.call("PING") == PONG  # connection still usable, still RESP2


def test_hello_setname(c):
    hello_map(c.call("HELLO", "3", "SETNAME", "myname"))
    assert c.call("CLIENT", "GETNAME") == b"myname"


def test_hello_setname_invalid(c):
    assert c.call("HELLO", "3", "SETNAME", "a b") == Err(
        "ERR Client names cannot contain spaces, newlines or special characters.")


@pytest.mark.parametrize("args,option", [
    (("3", "foo"), "foo"),
    (("3", "AUTH", "default"), "AUTH"),
    (("3", "SETNAME"), "SETNAME"),
])
def test_hello_syntax_errors(c, args, option):
    assert c.call("HELLO", *args) == Err(f"ERR Syntax error in HELLO option '{option}'")


def test_hello_auth(auth_server):
    with auth_server.conn() as conn:
        assert conn.call("HELLO", "3") == Err(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
            "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
            "the RESP protocol version at the same time")
        assert conn.call("HELLO", "3", "AUTH", "default", "wrong") == WRONGPASS
        assert conn.call("GET", "k") == NOAUTH
        info = hello_map(conn.call("HELLO", "3", "AUTH", "default", PASSWORD, "SETNAME", "n1"))
        assert info[b"proto"] == 3
        assert conn.call("GET", "k") is None
        assert conn.call("CLIENT", "GETNAME") == b"n1"


# -- AUTH --------------------------------------------------------------------


def test_auth_without_requirepass(c):
    assert c.call("AUTH", "anything") == Err(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?")


def test_auth_required(auth_server):
    with auth_server.conn() as conn:
        assert conn.call("PING") == NOAUTH
        assert conn.call("GET", "k") == NOAUTH
        assert conn.call("SET", "k", "v") == NOAUTH
        assert conn.call("AUTH", "wrong") == WRONGPASS
        assert conn.call("AUTH", "default", "wrong") == WRONGPASS
        assert conn.call("GET", "k") == NOAUTH
        assert conn.call("AUTH", PASSWORD) == OK
        assert conn.call("SET", "k", "v") == OK
        assert conn.call("GET", "k") == b"v"
    with auth_server.conn() as conn:
        assert conn.call("AUTH", "default", PASSWORD) == OK
        assert conn.call("GET", "k") == b"v"


def test_auth_errors(auth_server):
    with auth_server.conn() as conn:
        assert conn.call("AUTH") == Err(ARITY.format("auth"))
        assert conn.call("AUTH", "a", "b", "c") == Err("ERR syntax error")


def test_auth_with_redis_py(auth_server):
    import redis

    with pytest.raises(redis.AuthenticationError):
        auth_server.redis(password="wrong").ping()
    client = auth_server.redis(password=PASSWORD)
    assert client.ping() is True
    client.close()


def test_quit_allowed_before_auth(auth_server):
    with auth_server.conn() as conn:
        assert conn.call("QUIT") == OK
        assert conn.is_closed()


def test_reset_deauthenticates(auth_server):
    with auth_server.conn() as conn:
        assert conn.call("AUTH", PASSWORD) == OK
        assert conn.call("RESET") == Status("RESET")
        assert conn.call("GET", "k") == NOAUTH


# -- SELECT ------------------------------------------------------------------


def test_select_isolates_databases(c):
    assert c.call("SET", "k", "db0") == OK
    assert c.call("SELECT", "15") == OK
    assert c.call("GET", "k") is None
    assert c.call("SET", "k", "db15") == OK
    assert c.call("DBSIZE") == 1
    assert c.call("SELECT", "0") == OK
    assert c.call("GET", "k") == b"db0"


@pytest.mark.parametrize("index,error", [
    ("16", "ERR DB index is out of range"),
    ("-1", "ERR DB index is out of range"),
    ("abc", "ERR value is not an integer or out of range"),
    ("1.5", "ERR value is not an integer or out of range"),
])
def test_select_errors(c, index, error):
    assert c.call("SELECT", index) == Err(error)


def test_select_arity(c):
    assert c.call("SELECT") == Err(ARITY.format("select"))
    assert c.call("SELECT", "0", "1") == Err(ARITY.format("select"))


def test_databases_directive(start_server):
    srv = start_server({"databases": "4"})
    with srv.conn() as conn:
        assert conn.call("SELECT", "3") == OK
        assert conn.call("SELECT", "4") == Err("ERR DB index is out of range")
        assert conn.call("CONFIG", "GET", "databases") == [b"databases", b"4"]


# -- QUIT / RESET ------------------------------------------------------------


def test_quit_closes_connection(c, connect):
    assert c.call("QUIT") == OK
    assert c.is_closed()
    assert connect().call("PING") == PONG


def test_quit_after_pipelined_commands(c):
    c.send_raw(b"SET k v\r\nGET k\r\nQUIT\r\nGET k\r\n")
    assert c.read() == OK
    assert c.read() == b"v"
    assert c.read() == OK
    assert c.is_closed()


def test_reset_restores_connection_state(c):
    assert c.call("HELLO", "3", "SETNAME", "before")
    assert c.call("SELECT", "5") == OK
    assert c.call("SET", "in5", "x") == OK
    client_id = c.call("CLIENT", "ID")
    assert c.call("RESET") == Status("RESET")
    assert c.call("CLIENT", "GETNAME") is None
    assert c.call("GET", "in5") is None  # back in db 0
    assert hello_map(c.call("HELLO"))[b"proto"] == 2
    assert c.call("CLIENT", "ID") == client_id  # same connection


def test_reset_arity(c):
    assert c.call("RESET", "x") == Err(ARITY.format("reset"))


# -- A connection's first requests ------------------------------------------
# keel serves a new connection's first quick requests on its acceptor and
# then moves the connection to a worker: whatever the first batch set or left
# half-read must carry over, and replies must stay in order.


def test_first_batch_state_carries_over(connect):
    c = connect()
    first = [("SELECT", "3"), ("CLIENT", "SETNAME", "early"), ("SET", "k", "v"), ("GET", "k"),
             ("INCR", "n"), ("KEYS", "*"), ("INCR", "n")]
    replies = c.pipeline(first)
    assert replies[:5] == [OK, OK, OK, b"v", 1]
    assert sorted(replies[5]) == [b"k", b"n"]
    assert replies[6] == 2
    assert c.call("CLIENT", "GETNAME") == b"early"
    assert c.call("DBSIZE") == 2
    assert c.call("SELECT", "0") == OK
    assert c.call("GET", "k") is None


def test_first_batch_hello_3_carries_over(connect):
    c = connect()
    c.send_raw(encode_command("HELLO", "3") + encode_command("GET", "missing"))
    assert hello_map(c.read())[b"proto"] == 3
    assert c.read_exact_bytes(3) == b"_\r\n"
    c.send("GET", "missing")
    assert c.read_exact_bytes(3) == b"_\r\n"


def test_first_batch_opens_a_transaction(connect):
    c = connect()
    assert c.pipeline([("MULTI",), ("INCR", "n"), ("SET", "k", "v")]) == [
        OK, Status("QUEUED"), Status("QUEUED")]
    assert c.call("EXEC") == [1, OK]


def test_first_request_split_across_reads(connect):
    c = connect()
    request = encode_command("SET", "k", "x" * 1000)
    c.send_raw(request[:20])
    time.sleep(0.05)
    c.send_raw(request[20:])
    assert c.read() == OK
    assert c.call("STRLEN", "k") == 1000


def test_first_request_blocks(connect):
    c, pusher = connect(), connect()
    c.send("BLPOP", "list", "5")
    time.sleep(0.05)
    assert pusher.call("LPUSH", "list", "x") == 1
    assert c.read() == [b"list", b"x"]


def test_first_request_subscribes(connect):
    sub, pub = connect(), connect()
    sub.send("SUBSCRIBE", "news")
    assert sub.read() == [b"subscribe", b"news", 1]
    assert pub.call("PUBLISH", "news", "hello") == 1
    assert sub.read() == [b"message", b"news", b"hello"]


def test_first_pipeline_longer_than_one_read_stays_in_order(connect):
    c = connect()
    commands = [("ECHO", str(i)) for i in range(5_000)]
    assert c.pipeline(commands) == [str(i).encode() for i in range(5_000)]


def test_first_request_after_auth(auth_server):
    with auth_server.conn() as c:
        assert c.pipeline([("GET", "k"), ("AUTH", PASSWORD)]) == [NOAUTH, OK]
        assert c.call("GET", "k") is None


# -- CLIENT ------------------------------------------------------------------


def client_fields(line: bytes) -> dict:
    return dict(f.split("=", 1) for f in line.decode().split())


def test_client_id_unique_and_increasing(c, connect):
    first = c.call("CLIENT", "ID")
    second = connect().call("CLIENT", "ID")
    assert isinstance(first, int) and first > 0
    assert second > first
    assert c.call("CLIENT", "ID") == first


def test_client_setname_getname(c):
    assert c.call("CLIENT", "GETNAME") is None
    assert c.call("CLIENT", "SETNAME", "worker-1") == OK
    assert c.call("CLIENT", "GETNAME") == b"worker-1"
    assert c.call("CLIENT", "SETNAME", "") == OK
    assert c.call("CLIENT", "GETNAME") is None


@pytest.mark.parametrize("name", ["a b", "a\nb", "a\x01b"])
def test_client_setname_invalid(c, name):
    assert c.call("CLIENT", "SETNAME", name) == Err(
        "ERR Client names cannot contain spaces, newlines or special characters.")


def test_client_list(c, connect):
    other = connect()
    other_id = other.call("CLIENT", "ID")
    assert c.call("CLIENT", "SETNAME", "lister") == OK
    assert c.call("SELECT", "2") == OK
    my_id = c.call("CLIENT", "ID")
    listing = c.call("CLIENT", "LIST")
    assert isinstance(listing, bytes) and listing.endswith(b"\n")
    clients = {int(f["id"]): f for f in map(client_fields, listing.splitlines())}
    assert {my_id, other_id} <= set(clients)
    me = clients[my_id]
    assert me["name"] == "lister"
    assert me["db"] == "2"
    assert me["cmd"] == "client|list"
    assert re.fullmatch(r"127\.0\.0\.1:\d+", me["addr"])
    assert int(me["age"]) >= 0 and int(me["idle"]) >= 0
    assert clients[other_id]["name"] == ""


def test_client_list_by_id(c, connect):
    other_id = connect().call("CLIENT", "ID")
    listing = c.call("CLIENT", "LIST", "ID", str(other_id))
    assert [int(client_fields(line)["id"]) for line in listing.splitlines()] == [other_id]
    assert c.call("CLIENT", "LIST", "ID", "abc") == Err("ERR Invalid client ID")


def test_client_info(c):
    assert c.call("CLIENT", "SETNAME", "me") == OK
    info = c.call("CLIENT", "INFO")
    assert isinstance(info, bytes) and info.endswith(b"\n") and info.count(b"\n") == 1
    fields = client_fields(info)
    assert int(fields["id"]) == c.call("CLIENT", "ID")
    assert fields["name"] == "me"
    assert fields["db"] == "0"
    assert fields["cmd"] == "client|info"


def test_client_kill_id(c, connect):
    victim = connect()
    victim_id = victim.call("CLIENT", "ID")
    assert c.call("CLIENT", "KILL", "ID", str(victim_id)) == 1
    assert victim.is_closed()
    assert c.call("CLIENT", "KILL", "ID", str(victim_id)) == 0
    assert c.call("PING") == PONG


def test_client_kill_addr(c, connect):
    victim = connect()
    addr = client_fields(victim.call("CLIENT", "INFO"))["addr"]
    assert c.call("CLIENT", "KILL", "ADDR", addr) == 1
    assert victim.is_closed()
    assert c.call("CLIENT", "KILL", "ADDR", addr) == 0


def test_client_kill_old_form(c, connect):
    victim = connect()
    addr = client_fields(victim.call("CLIENT", "INFO"))["addr"]
    assert c.call("CLIENT", "KILL", addr) == OK
    assert victim.is_closed()
    assert c.call("CLIENT", "KILL", addr) == Err("ERR No such client")


@pytest.mark.parametrize("args,error", [
    (("KILL",), ARITY.format("client|kill")),
    (("KILL", "ID", "0"), "ERR client-id should be greater than 0"),
    (("KILL", "ID", "abc"), "ERR client-id should be greater than 0"),
    (("KILL", "FOO", "x"), "ERR syntax error"),
    (("ID", "x"), ARITY.format("client|id")),
    (("SETNAME",), ARITY.format("client|setname")),
    (("GETNAME", "x"), ARITY.format("client|getname")),
    (("NO-EVICT",), ARITY.format("client|no-evict")),
    (("NO-EVICT", "maybe"), "ERR syntax error"),
    (("FOO",), "ERR unknown subcommand 'FOO'. Try CLIENT HELP."),
    ((), ARITY.format("client")),
])
def test_client_errors(c, args, error):
    assert c.call("CLIENT", *args) == Err(error)


@pytest.mark.parametrize("mode", ["on", "off", "ON", "OFF"])
def test_client_no_evict(c, mode):
    assert c.call("CLIENT", "NO-EVICT", mode) == OK
