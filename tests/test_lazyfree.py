"""Lazy freeing: the lazyfree-lazy-* directives and the INFO fields that show the lazyfree queue.

Each test reads `lazyfreed_objects` before and after: it counts the objects the background
thread freed, so whether a removal went there shows in it, in keel as in Redis 7. Tests wait for
the queue to drain (`lazyfree_pending_objects` back to 0) before reading it.
"""

import time

import pytest

from support import OK, Err, config_dict, info

LAZYFREE_DIRECTIVES = [
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "replica-lazy-flush",
]

# Enough fields that both servers free the hash in the background when lazy: Redis past 64
# elements, keel past 64 KB.
BIG_HASH_FIELDS = 2000


def make_big_hash(c, key):
    for start in range(0, BIG_HASH_FIELDS, 500):
        args = []
        for i in range(start, start + 500):
            args += [f"field:{i}", "v" * 64]
        assert c.call("HSET", key, *args) == 500


def drained(c) -> dict:
    """INFO memory once nothing waits in the lazyfree queue."""
    deadline = time.monotonic() + 30
    while True:
        memory = info(c, "memory")
        if memory["lazyfree_pending_objects"] == "0" or time.monotonic() > deadline:
            return memory
        time.sleep(0.01)


def freed(c) -> int:
    return int(drained(c)["lazyfreed_objects"])


def test_directives_default_to_redis_7s(c):
    got = config_dict(c.call("CONFIG", "GET", "lazyfree-*"))
    got.update(config_dict(c.call("CONFIG", "GET", "replica-lazy-flush")))
    assert got == {name.encode(): b"no" for name in LAZYFREE_DIRECTIVES}


@pytest.mark.parametrize("name", LAZYFREE_DIRECTIVES)
def test_directives_are_set_at_run_time(c, restore_config, name):
    restore_config(name)
    assert c.call("CONFIG", "SET", name, "yes") == OK
    assert c.call("CONFIG", "GET", name) == [name.encode(), b"yes"]
    assert c.call("CONFIG", "SET", name, "maybe") == Err(
        f"ERR CONFIG SET failed (possibly related to argument '{name}') - "
        "argument must be 'yes' or 'no'")
    assert c.call("CONFIG", "GET", name) == [name.encode(), b"yes"]
    assert c.call("CONFIG", "SET", name, "no") == OK
    assert c.call("CONFIG", "GET", name) == [name.encode(), b"no"]


def test_info_shows_the_queue_idle(c):
    memory = drained(c)
    assert memory["lazyfree_pending_objects"] == "0"
    assert int(memory["lazyfreed_objects"]) >= 0


@pytest.mark.keel_differs(reason="lazyfree_pending_bytes is keel's own field")
def test_info_shows_the_bytes_waiting(c):
    assert drained(c)["lazyfree_pending_bytes"] == "0"


@pytest.mark.parametrize("lazy", ["yes", "no"])
def test_del_frees_in_the_background_with_lazy_user_del(c, restore_config, lazy):
    restore_config("lazyfree-lazy-user-del")
    assert c.call("CONFIG", "SET", "lazyfree-lazy-user-del", lazy) == OK
    make_big_hash(c, "big")
    c.call("SET", "small", "v")
    before = freed(c)
    assert c.call("DEL", "big", "small", "missing") == 2
    assert c.call("EXISTS", "big", "small") == 0
    assert freed(c) == before + (1 if lazy == "yes" else 0), "only the big hash goes to the thread"


def test_unlink_frees_in_the_background_whatever_the_directive(c):
    assert c.call("CONFIG", "GET", "lazyfree-lazy-user-del") == [b"lazyfree-lazy-user-del", b"no"]
    make_big_hash(c, "big")
    before = freed(c)
    assert c.call("UNLINK", "big") == 1
    assert freed(c) == before + 1


@pytest.mark.parametrize("lazy", ["yes", "no"])
def test_set_over_a_big_value_follows_lazy_server_del(c, restore_config, lazy):
    restore_config("lazyfree-lazy-server-del")
    assert c.call("CONFIG", "SET", "lazyfree-lazy-server-del", lazy) == OK
    make_big_hash(c, "big")
    before = freed(c)
    assert c.call("SET", "big", "now a string") == OK
    assert c.call("GET", "big") == b"now a string"
    assert freed(c) == before + (1 if lazy == "yes" else 0)


@pytest.mark.parametrize("lazy", ["yes", "no"])
def test_expired_big_values_follow_lazy_expire(c, restore_config, lazy):
    restore_config("lazyfree-lazy-expire")
    assert c.call("CONFIG", "SET", "lazyfree-lazy-expire", lazy) == OK
    make_big_hash(c, "big")
    before = freed(c)
    assert c.call("PEXPIRE", "big", 1) == 1
    time.sleep(0.01)
    # A reader meets it expired, or active expiry took it first: both follow the directive.
    assert c.call("EXISTS", "big") == 0
    assert freed(c) == before + (1 if lazy == "yes" else 0)
    assert int(info(c, "stats")["expired_keys"]) >= 1


@pytest.mark.parametrize("lazy", ["yes", "no"])
def test_flushall_follows_lazy_user_flush(c, restore_config, lazy):
    restore_config("lazyfree-lazy-user-flush")
    assert c.call("CONFIG", "SET", "lazyfree-lazy-user-flush", lazy) == OK
    for i in range(100):
        c.call("SET", f"k{i}", "v")
    before = freed(c)
    assert c.call("FLUSHALL") == OK
    assert c.call("DBSIZE") == 0
    # Redis counts a flushed database's keys as its lazyfree objects.
    assert freed(c) == before + (100 if lazy == "yes" else 0)


@pytest.mark.parametrize("mode,counted", [("ASYNC", 100), ("SYNC", 0)])
def test_a_flush_mode_overrides_lazy_user_flush(c, restore_config, mode, counted):
    restore_config("lazyfree-lazy-user-flush")
    lazy = "no" if mode == "ASYNC" else "yes"
    assert c.call("CONFIG", "SET", "lazyfree-lazy-user-flush", lazy) == OK
    for i in range(100):
        c.call("SET", f"k{i}", "v")
    before = freed(c)
    assert c.call("FLUSHDB", mode) == OK
    assert c.call("DBSIZE") == 0
    assert freed(c) == before + counted


def test_config_resetstat_resets_lazyfreed_objects(c):
    make_big_hash(c, "big")
    assert c.call("UNLINK", "big") == 1
    assert freed(c) >= 1
    assert c.call("CONFIG", "RESETSTAT") == OK
    assert freed(c) == 0
