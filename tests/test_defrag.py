"""Active defragmentation: CONFIG SET activedefrag yes moves the keys that a
mass deletion left scattered over sparse allocator pages, so the pages go
back to the system, with nothing lost.

Debian's redis-server is built against the system's jemalloc and refuses
`activedefrag yes` (it needs the jemalloc shipped in Redis's sources); keel's
works with stock jemalloc 5.3, so the tests that run it are keel's own.
"""

from __future__ import annotations

import random
import time

import pytest

KEYS = 200_000
VALUE = b"v" * 60
KEPT = KEYS // 10


def write(pipe, kind, key):
    """A string, or a small hash (a listpack in its own buffer)."""
    if kind == "string":
        pipe.set(key, VALUE)
    else:
        pipe.hset(key, mapping={"a": VALUE[:20], "b": VALUE[20:]})


def read_all(r, kind, keys):
    pipe = r.pipeline(transaction=False)
    for key in keys:
        if kind == "string":
            pipe.get(key)
        else:
            pipe.hmget(key, ["a", "b"])
    replies = pipe.execute()
    return [reply if kind == "string" else b"".join(reply) for reply in replies]


def fill_then_delete_most(r, kind):
    """KEYS keys, then all but a random tenth deleted: the survivors are
    spread over every page the keys took."""
    pipe = r.pipeline(transaction=False)
    for i in range(KEYS):
        write(pipe, kind, f"key:{i:08d}")
        if i % 2000 == 1999:
            pipe.execute()
    pipe.execute()
    order = list(range(KEYS))
    random.Random(7).shuffle(order)
    for n, i in enumerate(order[KEPT:]):
        pipe.delete(f"key:{i:08d}")
        if n % 2000 == 1999:
            pipe.execute()
    pipe.execute()
    return sorted(order[:KEPT])


def wait_for(condition, what, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.keel_differs(reason="Debian's redis-server refuses activedefrag yes: it needs the "
                          "jemalloc shipped in Redis's sources")
@pytest.mark.parametrize("kind", ["string", "hash"])
def test_active_defrag_returns_the_pages_a_mass_deletion_left_sparse(start_server, kind):
    srv = start_server()
    r = srv.redis(decode_responses=False)
    kept = fill_then_delete_most(r, kind)
    assert r.dbsize() == KEPT
    assert r.execute_command("MEMORY", "PURGE") == b"OK"
    before = r.info("memory")
    assert before["allocator_frag_ratio"] > 2, before
    assert before["allocator_frag_bytes"] == (before["allocator_active"]
                                              - before["allocator_allocated"])
    stats = r.info("stats")
    assert (stats["active_defrag_hits"], stats["active_defrag_misses"]) == (0, 0), "off by default"
    assert before["active_defrag_running"] == 0

    for name, value in [("active-defrag-ignore-bytes", "1mb"),
                        ("active-defrag-threshold-lower", "5"), ("activedefrag", "yes")]:
        assert r.config_set(name, value)
    wait_for(lambda: r.info("stats")["active_defrag_hits"] > 0, "the first blocks to move")
    wait_for(lambda: r.info("memory")["active_defrag_running"] == 0, "the walk to stop")
    assert r.execute_command("MEMORY", "PURGE") == b"OK"
    after = r.info("memory")
    stats = r.info("stats")

    # A pass moved most of the survivors, and one after it found nothing to
    # move: every key was offered at least twice.
    assert stats["active_defrag_hits"] >= KEPT // 2, stats
    assert stats["active_defrag_hits"] + stats["active_defrag_misses"] >= 2 * KEPT, stats
    assert stats["active_defrag_key_hits"] == stats["active_defrag_hits"]
    steps = r.execute_command("LATENCY", "HISTOGRAM", "keel-defrag-step")
    assert steps[0] == b"keel-defrag-step" and steps[1][1] > 0, steps
    # Measured with 300,000 strings less 90%: active pages 39.2 MB -> 13.3
    # MB, fragmentation 28.1 MB -> 2.8 MB, resident 44.7 MB -> 18.8 MB; with
    # 200,000 small hashes, active 34.0 MB -> 11.8 MB.
    assert after["allocator_active"] < 0.5 * before["allocator_active"], (before, after)
    assert after["allocator_frag_bytes"] < before["allocator_frag_bytes"] / 4, (before, after)
    assert after["allocator_resident"] < before["allocator_resident"], (before, after)

    assert r.dbsize() == KEPT
    assert read_all(r, kind, [f"key:{i:08d}" for i in kept]) == [VALUE] * KEPT
    r.close()


def test_activedefrag_settings_round_trip(r, restore_config, server_kind):
    """The thresholds are accepted and read back as Redis's are; enabling it
    is where Debian's Redis and keel part."""
    restore_config("activedefrag", "active-defrag-threshold-lower", "active-defrag-cycle-max")
    assert r.config_set("active-defrag-threshold-lower", "7")
    assert r.config_set("active-defrag-cycle-max", "30")
    assert r.config_get("active-defrag-*")["active-defrag-threshold-lower"] == "7"
    assert r.config_get("active-defrag-cycle-max")["active-defrag-cycle-max"] == "30"
    if server_kind == "keel":
        assert r.config_set("activedefrag", "yes")
        assert r.config_get("activedefrag") == {"activedefrag": "yes"}
    else:
        with pytest.raises(Exception, match="Active defragmentation cannot be enabled"):
            r.config_set("activedefrag", "yes")
    assert r.config_set("activedefrag", "no")
