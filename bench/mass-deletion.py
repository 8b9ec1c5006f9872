#!/usr/bin/env python3
"""Memory after a mass deletion, keel beside redis-server: what active
defragmentation gives back.

usage: .venv/bin/python bench/mass-deletion.py KEEL_BIN [KEYS] [OUT] [string|hash]

For each server (redis-server, then keel-server): KEYS keys (default
1,000,000; 13-byte keys), each a 60-byte string or (with `hash`) a small
hash of two fields holding the same 60 bytes, then a random 90% of them deleted,
MEMORY PURGE, then `activedefrag yes` with `active-defrag-ignore-bytes 1mb`
and `active-defrag-threshold-lower 5` (Debian's redis-server refuses it),
and the allocator's figures once the walk has stopped (or after 10 s for a
server that does not defragment), after another MEMORY PURGE. Every kept key
is read back. Prints a table, and writes it to OUT (default
bench/results/mass-deletion-<timestamp>.txt).
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support import ServerProcess  # noqa: E402

FIELDS = ["used_memory", "allocator_active", "used_memory_rss"]
VALUE = b"v" * 60
BATCH = 2000


def memory(r):
    info = r.info("memory")
    return {name: info[name] for name in FIELDS}


def write(pipe, value_kind, key):
    if value_kind == "string":
        pipe.set(key, VALUE)
    else:
        pipe.hset(key, mapping={"a": VALUE[:20], "b": VALUE[20:]})


def read_back(r, value_kind, keys):
    pipe = r.pipeline(transaction=False)
    for key in keys:
        if value_kind == "string":
            pipe.get(key)
        else:
            pipe.hmget(key, ["a", "b"])
    replies = pipe.execute()
    return [reply if value_kind == "string" else b"".join(reply) for reply in replies]


def run(kind, keel_bin, keys, value_kind):
    srv = ServerProcess(kind, keel_bin=keel_bin).start()
    r = srv.redis(decode_responses=False)
    rows = {}
    try:
        pipe = r.pipeline(transaction=False)
        for i in range(keys):
            write(pipe, value_kind, f"key:{i:08d}")
            if i % BATCH == BATCH - 1:
                pipe.execute()
        pipe.execute()
        rows["filled"] = memory(r)
        order = list(range(keys))
        random.Random(1).shuffle(order)
        kept = sorted(order[: keys // 10])
        for n, i in enumerate(order[keys // 10:]):
            pipe.delete(f"key:{i:08d}")
            if n % BATCH == BATCH - 1:
                pipe.execute()
        pipe.execute()
        r.execute_command("MEMORY", "PURGE")
        rows["90% deleted"] = memory(r)
        r.config_set("active-defrag-ignore-bytes", "1mb")
        r.config_set("active-defrag-threshold-lower", "5")
        try:
            r.config_set("activedefrag", "yes")
            note = ""
        except Exception as e:  # Debian's Redis: needs Redis's own jemalloc
            note = f"activedefrag refused: {e}"
        started = time.monotonic()
        while time.monotonic() - started < 300:
            time.sleep(0.5)
            stats, running = r.info("stats"), r.info("memory").get("active_defrag_running", 0)
            hits = stats.get("active_defrag_hits", 0)
            if running == 0 and (hits > 0 or time.monotonic() - started > 10):
                break
        took = time.monotonic() - started
        r.execute_command("MEMORY", "PURGE")
        rows[f"after ({took:.0f} s)"] = memory(r)
        intact = read_back(r, value_kind, [f"key:{i:08d}" for i in kept]) == [VALUE] * len(kept)
        hits = r.info("stats").get("active_defrag_hits", 0)
        return rows, f"{note} active_defrag_hits={hits} kept keys intact={intact}".strip()
    finally:
        r.close()
        srv.cleanup()


def main():
    keel_bin = os.path.abspath(sys.argv[1])
    keys = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    out = sys.argv[3] if len(sys.argv) > 3 else time.strftime(
        "bench/results/mass-deletion-%Y%m%d-%H%M%S.txt")
    value_kind = sys.argv[4] if len(sys.argv) > 4 else "string"
    lines = [f"# mass deletion {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
             f"{keys} keys of {value_kind} values, keel={keel_bin}", "",
             "| server | step | used_memory | allocator_active | used_memory_rss |",
             "|---|---|---|---|---|"]
    notes = []
    for kind in ("redis", "keel"):
        rows, note = run(kind, keel_bin, keys, value_kind)
        for step, m in rows.items():
            figures = " | ".join(f"{m[name] / 1e6:.1f} MB" for name in FIELDS)
            lines.append(f"| {kind} | {step} | {figures} |")
        notes.append(f"- {kind}: {note}")
    text = "\n".join(lines + [""] + notes) + "\n"
    print(text, end="")
    with open(out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
