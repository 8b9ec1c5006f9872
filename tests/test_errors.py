"""Generic error replies: wrong arity, unknown commands, non-integer arguments.

Only string values exist in keel so far, so WRONGTYPE errors are not covered here;
they come with the first non-string type.
"""

import pytest

from support import OK, PONG, Err

# Arity as Redis 7 reports it in COMMAND INFO: N means exactly N words (command
# included), -N means at least N.
ARITIES = {
    "ping": -1, "echo": 2, "hello": -1, "auth": -2, "select": 2, "quit": -1, "reset": 1,
    "client": -2, "command": -1, "config": -2, "info": -1, "dbsize": 1, "flushdb": -1,
    "flushall": -1, "time": 1, "debug": -2, "shutdown": -1, "del": -2, "unlink": -2,
    "exists": -2, "type": 2, "keys": 2, "scan": -2, "randomkey": 1, "rename": 3, "renamenx": 3,
    "touch": -2, "object": -2, "memory": -2, "expire": -3, "pexpire": -3, "expireat": -3,
    "pexpireat": -3, "ttl": 2, "pttl": 2, "expiretime": 2, "pexpiretime": 2, "persist": 2,
    "get": 2, "set": -3, "setnx": 3, "setex": 4, "psetex": 4, "getex": -2, "getdel": 2,
    "getset": 3, "mget": -2, "mset": -3, "msetnx": -3, "incr": 2, "decr": 2, "incrby": 3,
    "decrby": 3, "incrbyfloat": 3, "append": 3, "strlen": 2, "getrange": 4, "setrange": 4,
}

SUBCOMMAND_ARITIES = {
    "client|id": 2, "client|setname": 3, "client|getname": 2, "client|list": -2,
    "client|info": 2, "client|kill": -3, "client|no-evict": 3,
    "command|count": 2, "command|info": -2, "command|docs": -2, "command|list": -2,
    "config|get": -3, "config|set": -4, "config|resetstat": 2,
    "object|encoding": 3, "object|freq": 3, "object|idletime": 3, "object|refcount": 3,
    "memory|usage": -3,
}


def wrong_arity_calls(name, arity):
    """Argument lists (command words included) with a wrong number of words."""
    words = name.split("|")
    filler = lambda n: ["1"] * max(n, 0)  # noqa: E731 - short local helper
    if arity > 0:
        calls = [words + filler(arity - len(words) + 1)]
        if arity > len(words):
            calls.append(words + filler(arity - len(words) - 1))
        return calls
    if -arity > len(words):
        return [words + filler(-arity - len(words) - 1)]
    return []


ARITY_CASES = [
    (name, call)
    for name, arity in {**ARITIES, **SUBCOMMAND_ARITIES}.items()
    for call in wrong_arity_calls(name, arity)
]


@pytest.mark.parametrize("name,call", ARITY_CASES, ids=[" ".join(c) for _, c in ARITY_CASES])
def test_wrong_arity(c, name, call):
    assert c.call(*call) == Err(f"ERR wrong number of arguments for '{name}' command")
    assert c.call("PING") == PONG


def test_wrong_arity_uses_lowercase_name(c):
    assert c.call("GeT") == Err("ERR wrong number of arguments for 'get' command")
    assert c.call("CONFIG", "get") == Err("ERR wrong number of arguments for 'config|get' command")


@pytest.mark.parametrize("name", sorted(ARITIES))
def test_command_info_arity_matches_redis(c, name):
    [entry] = c.call("COMMAND", "INFO", name)
    assert entry is not None, f"COMMAND INFO does not know {name}"
    assert entry[1] == ARITIES[name]


@pytest.mark.parametrize("args,message", [
    (("foo", "a", "b"), "ERR unknown command 'foo', with args beginning with: 'a' 'b' "),
    (("FOO",), "ERR unknown command 'FOO', with args beginning with: "),
    (("foo", "a'b"), "ERR unknown command 'foo', with args beginning with: 'a'b' "),
    (("foo", "a\nb", "c\r\nd"), "ERR unknown command 'foo', with args beginning with: 'a b' 'c  d' "),
    (("get|x", "k"), "ERR unknown command 'get|x', with args beginning with: 'k' "),
    (("",), "ERR unknown command '', with args beginning with: "),
    (("x" * 200,), "ERR unknown command '" + "x" * 128 + "', with args beginning with: "),
    (("foo", "y" * 200, "z"),
     "ERR unknown command 'foo', with args beginning with: '" + "y" * 128 + "' "),
    (("foo", "a" * 100, "b" * 100, "c"),
     "ERR unknown command 'foo', with args beginning with: '" + "a" * 100 + "' '" + "b" * 25 + "' "),
])
def test_unknown_command(c, args, message):
    assert c.call(*args) == Err(message)
    assert c.call("PING") == PONG


@pytest.mark.parametrize("args", [
    ("SELECT", "abc"), ("EXPIRE", "k", "abc"), ("PEXPIRE", "k", "1.0"), ("EXPIREAT", "k", "x"),
    ("PEXPIREAT", "k", ""), ("SETEX", "k", "abc", "v"), ("PSETEX", "k", "1e3", "v"),
    ("INCRBY", "k", "abc"), ("DECRBY", "k", "1.5"), ("GETRANGE", "k", "a", "1"),
    ("GETRANGE", "k", "0", "b"), ("SETRANGE", "k", "a", "v"), ("SET", "k", "v", "EX", "abc"),
    ("SET", "k", "v", "PX", "1.5"), ("GETEX", "k", "PX", "abc"), ("SCAN", "0", "COUNT", "abc"),
    ("MEMORY", "USAGE", "k", "SAMPLES", "abc"),
], ids=lambda a: " ".join(a))
def test_not_an_integer(c, args):
    c.call("SET", "k", "v")
    assert c.call(*args) == Err("ERR value is not an integer or out of range")


def test_errors_do_not_break_pipelines(c):
    replies = c.pipeline([("SET", "k", "1"), ("GET",), ("NOSUCH",), ("INCR", "k"),
                          ("INCRBY", "k", "x"), ("GET", "k")])
    assert replies == [
        OK,
        Err("ERR wrong number of arguments for 'get' command"),
        Err("ERR unknown command 'NOSUCH', with args beginning with: "),
        2,
        Err("ERR value is not an integer or out of range"),
        b"2",
    ]


def test_redis_py_raises_response_error(r):
    import redis

    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'get' command"):
        r.execute_command("GET")
    with pytest.raises(redis.ResponseError, match="unknown command 'NOSUCH'"):
        r.execute_command("NOSUCH", "a")
    assert r.ping() is True
