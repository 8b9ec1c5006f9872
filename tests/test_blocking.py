"""Blocking list commands: BLPOP, BRPOP, BLMOVE, and the blocking sorted-set
pops BZPOPMIN and BZPOPMAX — timeouts, arrival order, wake-ups by any writer
(pushes, ZADD, LMOVE, ZUNIONSTORE, EXEC), a key emptied before a waiter is
served, waiters for another type, disconnect and CLIENT KILL of a blocked
client, and INFO's blocked_clients.

No test depends on timing: a waiter is known to be blocked once INFO
reports it, and timeouts are only checked for the reply they give."""

import threading

import pytest

from support import OK, Double, Err, Status, info

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")


def blocked_clients(c) -> int:
    return int(info(c, "clients")["blocked_clients"])


def wait_blocked(c, n):
    """Waits until `n` clients are blocked (a condition, not a duration)."""
    while blocked_clients(c) != n:
        pass


def test_immediate_pops(c):
    c.call("RPUSH", "b", "1", "2")
    assert c.call("BLPOP", "a", "b", "0") == [b"b", b"1"]
    assert c.call("BRPOP", "a", "b", "0") == [b"b", b"2"]
    assert c.call("EXISTS", "b") == 0
    c.call("RPUSH", "s", "x")
    assert c.call("BLMOVE", "s", "d", "LEFT", "RIGHT", "0") == b"x"
    assert c.call("LRANGE", "d", "0", "-1") == [b"x"]


def test_timeouts_reply_null(c):
    assert c.call("BLPOP", "a", "b", "0.01") is None
    assert c.call("BRPOP", "a", "0.01") is None
    assert c.call("BLMOVE", "a", "d", "LEFT", "LEFT", "0.01") is None
    c.call("HELLO", "3")
    assert c.call("BLPOP", "a", "0.01") is None


def test_timeout_reply_is_a_null_array_in_resp2(c):
    """Redis 7.0 times out every blocked list command with a null array,
    BLMOVE included; inside MULTI, BLMOVE answers a null bulk string."""
    c.send("BLPOP", "a", "0.01")
    assert c.read_raw() == b"*-1\r\n"
    c.send("BLMOVE", "a", "b", "LEFT", "LEFT", "0.01")
    assert c.read_raw() == b"*-1\r\n"
    c.call("MULTI")
    c.call("BLMOVE", "a", "b", "LEFT", "LEFT", "0")
    c.call("BLPOP", "a", "0")
    c.send("EXEC")
    assert c.read_raw() == b"*2\r\n$-1\r\n*-1\r\n"


@pytest.mark.parametrize("timeout,error", [
    ("-1", "ERR timeout is negative"),
    ("abc", "ERR timeout is not a float or out of range"),
    ("inf", "ERR timeout is negative"),
])
def test_timeout_errors(c, timeout, error):
    assert c.call("BLPOP", "a", timeout) == Err(error)
    assert c.call("BLMOVE", "a", "b", "LEFT", "LEFT", timeout) == Err(error)


def test_syntax_and_type_errors(c):
    assert c.call("BLMOVE", "a", "b", "UP", "LEFT", "0") == Err("ERR syntax error")
    c.call("SET", "str", "v")
    assert c.call("BLPOP", "missing", "str", "0") == WRONGTYPE
    c.call("RPUSH", "l", "a")
    assert c.call("BLMOVE", "l", "str", "LEFT", "LEFT", "0") == WRONGTYPE


def test_push_wakes_a_waiter(c, connect):
    waiter = connect()
    waiter.send("BLPOP", "q", "0")
    wait_blocked(c, 1)
    assert c.call("RPUSH", "q", "a", "b") == 2
    assert waiter.read() == [b"q", b"a"]
    assert c.call("LRANGE", "q", "0", "-1") == [b"b"]
    assert blocked_clients(c) == 0


def test_waiters_are_served_in_arrival_order(c, connect):
    waiters = [connect() for _ in range(5)]
    for n, w in enumerate(waiters):
        w.send("BRPOP", "other", "q", "0")
        wait_blocked(c, n + 1)
    c.call("LPUSH", "q", *[str(i) for i in range(7)])
    # LPUSH leaves 6..0; BRPOP takes from the tail: 0 first.
    assert [w.read() for w in waiters] == [[b"q", str(i).encode()] for i in range(5)]
    assert c.call("LRANGE", "q", "0", "-1") == [b"6", b"5"]


def test_arrival_order_under_concurrent_pushes(c, connect):
    """Many waiters, many pushers at once: every element is delivered once,
    and each pusher's elements reach waiters in the order waiters came."""
    waiters = [connect() for _ in range(20)]
    for n, w in enumerate(waiters):
        w.send("BLPOP", "q", "0")
        wait_blocked(c, n + 1)
    pushers = [connect() for _ in range(4)]

    def push(conn, p):
        for i in range(5):
            conn.call("RPUSH", "q", f"{p}:{i}")

    threads = [threading.Thread(target=push, args=(conn, p)) for p, conn in enumerate(pushers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [w.read()[1].decode() for w in waiters]
    assert sorted(got) == sorted(f"{p}:{i}" for p in range(4) for i in range(5))
    # Waiters are served in arrival order, so each pusher's elements, which
    # it pushed in order, reach earlier waiters first.
    for p in range(4):
        mine = [int(e.split(":")[1]) for e in got if e.startswith(f"{p}:")]
        assert mine == sorted(mine)
    assert c.call("EXISTS", "q") == 0
    assert blocked_clients(c) == 0


def test_lmove_and_exec_wake_waiters(c, connect):
    w1, w2 = connect(), connect()
    w1.send("BLPOP", "dest", "0")
    wait_blocked(c, 1)
    c.call("RPUSH", "src", "x")
    assert c.call("LMOVE", "src", "dest", "LEFT", "LEFT") == b"x"
    assert w1.read() == [b"dest", b"x"]
    w2.send("BLPOP", "t", "0")
    wait_blocked(c, 1)
    assert c.call("MULTI") == OK
    c.call("RPUSH", "t", "1", "2")
    c.call("LLEN", "t")
    # The waiter is served after the whole transaction, as in Redis.
    assert c.call("EXEC") == [2, 2]
    assert w2.read() == [b"t", b"1"]
    assert c.call("LRANGE", "t", "0", "-1") == [b"2"]


def test_blmove_waiter_chains_to_the_next(c, connect):
    mover, popper = connect(), connect()
    mover.send("BLMOVE", "a", "b", "RIGHT", "LEFT", "0")
    wait_blocked(c, 1)
    popper.send("BLPOP", "b", "0")
    wait_blocked(c, 2)
    c.call("RPUSH", "a", "v")
    assert mover.read() == b"v"
    assert popper.read() == [b"b", b"v"]
    assert c.call("EXISTS", "a", "b") == 0


def test_a_key_emptied_in_the_same_transaction_wakes_nobody(c, connect):
    waiter = connect()
    waiter.send("BLPOP", "q", "0")
    wait_blocked(c, 1)
    c.call("MULTI")
    c.call("RPUSH", "q", "a")
    c.call("DEL", "q")
    assert c.call("EXEC") == [1, 1]
    assert blocked_clients(c) == 1
    c.call("RPUSH", "q", "b")
    assert waiter.read() == [b"q", b"b"]


def test_a_key_of_another_type_keeps_waiters_blocked(c, connect):
    waiter = connect()
    waiter.send("BLPOP", "k", "0")
    wait_blocked(c, 1)
    c.call("SET", "k", "string")
    assert blocked_clients(c) == 1
    c.call("DEL", "k")
    c.call("RPUSH", "k", "x")
    assert waiter.read() == [b"k", b"x"]


def test_inside_multi_blocking_commands_do_not_block(c):
    c.call("MULTI")
    c.call("BLPOP", "q", "0")
    c.call("BLMOVE", "q", "d", "LEFT", "LEFT", "0")
    c.call("RPUSH", "q", "a")
    c.call("BRPOP", "q", "0")
    assert c.call("EXEC") == [None, None, 1, [b"q", b"a"]]


def test_disconnected_and_killed_waiters_leave(c, connect):
    gone, killed = connect(), connect()
    gone.send("BLPOP", "q", "0")
    killed.send("CLIENT", "ID")
    killed_id = killed.read()
    killed.send("BLPOP", "q", "0")
    wait_blocked(c, 2)
    gone.close()
    wait_blocked(c, 1)
    assert c.call("CLIENT", "KILL", "ID", str(killed_id)) == 1
    wait_blocked(c, 0)
    assert killed.is_closed()
    c.call("RPUSH", "q", "a")
    assert c.call("LRANGE", "q", "0", "-1") == [b"a"], "nobody took the element"


def test_commands_pipelined_after_a_blocking_one_wait_for_it(c, connect):
    waiter = connect()
    waiter.send_raw(b"BLPOP q 0\r\nPING\r\n")
    wait_blocked(c, 1)
    c.call("RPUSH", "q", "a")
    assert waiter.read() == [b"q", b"a"]
    assert waiter.read() == Status("PONG")


def test_bzpop_immediate_pops(c):
    c.call("ZADD", "b", "1", "x", "2.5", "y", "3", "z")
    assert c.call("BZPOPMIN", "a", "b", "0") == [b"b", b"x", b"1"]
    assert c.call("BZPOPMAX", "a", "b", "0") == [b"b", b"z", b"3"]
    c.call("HELLO", "3")
    assert c.call("BZPOPMIN", "b", "0") == [b"b", b"y", Double("2.5")]
    assert c.call("EXISTS", "b") == 0


def test_bzpop_timeouts_and_errors(c):
    c.send("BZPOPMIN", "a", "0.01")
    assert c.read_raw() == b"*-1\r\n"
    assert c.call("BZPOPMAX", "a", "-1") == Err("ERR timeout is negative")
    assert c.call("BZPOPMAX", "a", "abc") == Err("ERR timeout is not a float or out of range")
    assert c.call("BZPOPMIN", "a") == Err("ERR wrong number of arguments for 'bzpopmin' command")
    c.call("SET", "str", "v")
    c.call("ZADD", "z", "1", "x")
    assert c.call("BZPOPMIN", "missing", "str", "z", "0") == WRONGTYPE
    assert c.call("BZPOPMIN", "z", "str", "0") == [b"z", b"x", b"1"]
    c.call("HELLO", "3")
    assert c.call("BZPOPMAX", "a", "0.01") is None


def test_bzpop_inside_multi_does_not_block(c):
    c.call("MULTI")
    c.call("BZPOPMIN", "z", "0")
    c.call("ZADD", "z", "1", "a")
    c.call("BZPOPMAX", "z", "0")
    c.send("EXEC")
    assert c.read_raw() == b"*3\r\n*-1\r\n:1\r\n*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n"


def test_zadd_and_zunionstore_wake_bzpop_waiters_in_arrival_order(c, connect):
    waiters = [connect() for _ in range(3)]
    for n, (w, command) in enumerate(zip(waiters, ["BZPOPMIN", "BZPOPMAX", "BZPOPMIN"])):
        w.send(command, "other", "z", "0")
        wait_blocked(c, n + 1)
    assert c.call("ZADD", "z", "1", "a", "2", "b") == 2
    assert waiters[0].read() == [b"z", b"a", b"1"]
    assert waiters[1].read() == [b"z", b"b", b"2"]
    assert blocked_clients(c) == 1
    c.call("ZADD", "src", "5", "c")
    assert c.call("ZUNIONSTORE", "z", "1", "src") == 1
    assert waiters[2].read() == [b"z", b"c", b"5"]
    assert c.call("EXISTS", "z") == 0


def test_waiters_for_another_type_do_not_hold_up_the_key(c, connect):
    """A BLPOP waiter ahead of a BZPOPMIN waiter on a key that becomes a
    sorted set stays blocked, and the sorted-set waiter is served."""
    list_waiter, zset_waiter = connect(), connect()
    list_waiter.send("BLPOP", "k", "0")
    wait_blocked(c, 1)
    zset_waiter.send("BZPOPMIN", "k", "0")
    wait_blocked(c, 2)
    c.call("ZADD", "k", "1", "m")
    assert zset_waiter.read() == [b"k", b"m", b"1"]
    assert blocked_clients(c) == 1
    c.call("RPUSH", "k", "e")
    assert list_waiter.read() == [b"k", b"e"]


def test_client_list_flags_blocked_clients(c, connect):
    waiter = connect()
    waiter_id = waiter.call("CLIENT", "ID")
    waiter.send("BZPOPMIN", "z", "0")
    wait_blocked(c, 1)
    [line] = [x for x in c.call("CLIENT", "LIST").decode().splitlines()
              if x.startswith(f"id={waiter_id} ")]
    assert " flags=b " in line
    c.call("ZADD", "z", "1", "a")
    assert waiter.read() == [b"z", b"a", b"1"]
    assert " flags=N " in waiter.call("CLIENT", "INFO").decode()


def test_blmpop_bzmpop_brpoplpush_immediate_and_timeouts(c):
    c.call("RPUSH", "l", "a", "b", "c")
    assert c.call("BLMPOP", "0", "2", "missing", "l", "RIGHT", "COUNT", "2") == [b"l", [b"c", b"b"]]
    assert c.call("BRPOPLPUSH", "l", "d", "0") == b"a"
    assert c.call("LRANGE", "d", "0", "-1") == [b"a"]
    c.call("ZADD", "z", "1", "x", "2", "y")
    assert c.call("BZMPOP", "0", "1", "z", "MAX", "COUNT", "5") == [b"z", [[b"y", b"2"], [b"x", b"1"]]]
    for command in (("BLMPOP", "0.01", "1", "l", "LEFT"), ("BZMPOP", "0.01", "1", "z", "MIN"),
                    ("BRPOPLPUSH", "l", "d", "0.01")):
        c.send(*command)
        assert c.read_raw() == b"*-1\r\n"
    assert c.call("BLMPOP", "-1", "1", "l", "LEFT") == Err("ERR timeout is negative")
    assert c.call("BZMPOP", "x", "1", "z", "MIN") == Err("ERR timeout is not a float or out of range")
    assert c.call("BRPOPLPUSH", "l", "d", "x") == Err("ERR timeout is not a float or out of range")
    # Arguments are checked before the timeout, as in Redis.
    assert c.call("BLMPOP", "x", "0", "l", "LEFT") == Err("ERR numkeys should be greater than 0")
    c.call("SET", "str", "v")
    c.call("RPUSH", "l", "a")
    assert c.call("BRPOPLPUSH", "l", "str", "0") == WRONGTYPE


def test_mpop_inside_multi_does_not_block(c):
    c.call("MULTI")
    c.call("BLMPOP", "0", "1", "l", "LEFT")
    c.call("BZMPOP", "0", "1", "z", "MIN")
    c.call("BRPOPLPUSH", "l", "d", "0")
    c.send("EXEC")
    assert c.read_raw() == b"*3\r\n*-1\r\n*-1\r\n$-1\r\n"


def test_blmpop_and_bzmpop_waiters_are_served_with_their_count(c, connect):
    lists, zsets, mover = connect(), connect(), connect()
    lists.send("BLMPOP", "0", "2", "q", "other", "LEFT", "COUNT", "2")
    wait_blocked(c, 1)
    zsets.send("BZMPOP", "0", "1", "z", "MAX", "COUNT", "2")
    wait_blocked(c, 2)
    mover.send("BRPOPLPUSH", "src", "q", "0")
    wait_blocked(c, 3)
    assert c.call("ZADD", "z", "1", "a", "2", "b", "3", "c") == 3
    assert zsets.read() == [b"z", [[b"c", b"3"], [b"b", b"2"]]]
    # The element BRPOPLPUSH pushes to q is served to the BLMPOP waiter.
    assert c.call("RPUSH", "src", "x") == 1
    assert mover.read() == b"x"
    assert lists.read() == [b"q", [b"x"]]
    assert blocked_clients(c) == 0


def test_move_and_swapdb_serve_blocked_clients(c, connect):
    waiter = connect()
    waiter.call("SELECT", "1")
    waiter.send("BLPOP", "q", "0")
    wait_blocked(c, 1)
    c.call("RPUSH", "q", "a")
    assert c.call("MOVE", "q", "1") == 1
    assert waiter.read() == [b"q", b"a"]
    waiter.send("BZPOPMIN", "z", "0")
    wait_blocked(c, 1)
    c.call("ZADD", "z", "7", "m")
    assert c.call("SWAPDB", "0", "1") == OK
    assert waiter.read() == [b"z", b"m", b"7"]
    assert blocked_clients(c) == 0
