"""RESP3: the reply types that differ from RESP2 once a client sends HELLO 3."""

import pytest

from support import OK, RespMap, RespSet, Status, encode_command


@pytest.fixture
def c3(c):
    """Exact client switched to RESP3."""
    assert isinstance(c.call("HELLO", "3"), RespMap)
    return c


def raw_reply(conn, *args):
    """Send one command and return its reply's raw bytes."""
    conn.send_raw(encode_command(*args))
    return conn.read_raw()


@pytest.mark.parametrize("args", [
    ("GET", "missing"),
    ("GETDEL", "missing"),
    ("GETEX", "missing"),
    ("GETSET", "missing", "v"),
    ("SET", "k2", "v", "GET"),
    ("SET", "k", "v", "NX"),
    ("CLIENT", "GETNAME"),
    ("OBJECT", "ENCODING", "missing"),
    ("MEMORY", "USAGE", "missing"),
], ids=" ".join)
def test_null_replies(c3, args):
    c3.call("SET", "k", "v")
    assert raw_reply(c3, *args) == b"_\r\n"


def test_null_inside_arrays(c3):
    c3.call("SET", "k", "v")
    assert raw_reply(c3, "MGET", "missing", "k") == b"*2\r\n_\r\n$1\r\nv\r\n"
    assert raw_reply(c3, "COMMAND", "INFO", "nosuchcommand") == b"*1\r\n_\r\n"


def test_randomkey_on_empty_db_is_null(c3):
    assert raw_reply(c3, "RANDOMKEY") == b"_\r\n"


def test_config_get_is_a_map(c3):
    assert raw_reply(c3, "CONFIG", "GET", "timeout") == b"%1\r\n$7\r\ntimeout\r\n$1\r\n0\r\n"
    reply = c3.call("CONFIG", "GET", "maxmemory*")
    assert isinstance(reply, RespMap)
    assert {b"maxmemory", b"maxmemory-policy"} <= set(reply.to_dict())
    assert c3.call("CONFIG", "GET", "nosuchoption") == RespMap()


def test_command_docs_is_a_map(c3):
    reply = c3.call("COMMAND", "DOCS", "get")
    assert isinstance(reply, RespMap)
    doc = reply.to_dict()[b"get"]
    assert isinstance(doc, RespMap)
    assert doc.to_dict()[b"group"] == b"string"
    assert c3.call("COMMAND", "DOCS", "nosuchcommand") == RespMap()


def test_command_info_flags_are_sets(c3):
    [entry] = c3.call("COMMAND", "INFO", "get")
    assert entry[0] == b"get" and entry[1] == 2
    assert isinstance(entry[2], RespSet)
    assert set(entry[2]) == {Status("readonly"), Status("fast")}
    assert isinstance(entry[6], RespSet)


def test_unchanged_types(c3):
    """Replies whose encoding is the same in RESP2 and RESP3."""
    assert c3.call("SET", "f", "1.5") == OK
    assert raw_reply(c3, "INCRBYFLOAT", "f", "1") == b"$3\r\n2.5\r\n"  # not a double
    assert raw_reply(c3, "TYPE", "f") == b"+string\r\n"
    assert raw_reply(c3, "EXISTS", "f") == b":1\r\n"
    assert raw_reply(c3, "TTL", "f") == b":-1\r\n"
    assert raw_reply(c3, "GET", "f") == b"$3\r\n2.5\r\n"
    assert c3.call("SCAN", "0") == [b"0", [b"f"]]
    assert c3.call("KEYS", "*") == [b"f"]
    time_reply = c3.call("TIME")
    assert isinstance(time_reply, list) and all(isinstance(x, bytes) for x in time_reply)


def test_errors_are_unchanged(c3):
    assert raw_reply(c3, "GET") == \
        b"-ERR wrong number of arguments for 'get' command\r\n"


def test_hello_3_with_redis_py(r3):
    info = r3.execute_command("HELLO", "3")
    assert isinstance(info, dict)
    assert info[b"proto"] == 3
    assert set(info) == {b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"}


def test_redis_py_resp3_client(r3):
    assert r3.ping() is True
    assert r3.get("missing") is None
    assert r3.set("k", "v") is True
    assert r3.set("k", "w", nx=True) is None
    assert r3.mget("k", "missing") == [b"v", None]
    assert r3.incrbyfloat("f", 1.5) == 1.5
    assert r3.config_get("timeout") in ({b"timeout": b"0"}, {"timeout": "0"})
    assert r3.client_getname() is None
    assert r3.ttl("k") == -1
