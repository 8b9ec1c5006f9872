"""COMMAND INFO and COMMAND DOCS of every command keel serves, field by field against a
redis-server 7.0.15 started beside the server under test, in RESP2 and RESP3: flags, key
positions, ACL categories, tips, key specs and subcommands; summary, since, group, complexity,
doc_flags, deprecated_since, replaced_by, history and arguments.

Only orders Redis does not define are ignored: set members, map pairs, and subcommands (Redis
lists them in its hash table's order); and a container's subcommands that keel does not serve yet
(CLIENT CACHING, ...: the compat table in README.md lists them) are left out of Redis's reply,
as are keel's own ones Redis 7.0 does not have (CLIENT NO-TOUCH).
Nothing else is ignored: every command keel serves describes itself as Redis's does. On
--server=redis the reference is compared with itself.
"""

import pytest

from support import RespMap, RespSet, ServerProcess, Status

@pytest.fixture(scope="module")
def reference():
    srv = ServerProcess("redis").start()
    yield srv
    srv.stop()
    srv.cleanup()


def typed(x):
    """A RESP3 reply with its types kept and Redis's undefined orders removed."""
    if isinstance(x, RespMap):
        return ("map", tuple(sorted((k, typed(v)) for k, v in x)))
    if isinstance(x, RespSet):
        return ("set", tuple(sorted((typed(v) for v in x), key=repr)))
    if isinstance(x, list):
        return ("array", tuple(typed(v) for v in x))
    if isinstance(x, Status):
        return ("simple", str(x))
    return (type(x).__name__, x)


def info_resp2(entry):
    """A RESP2 COMMAND INFO entry with its subcommands in name order."""
    if entry is None:
        return None
    head, subs = entry[:9], entry[9]
    return head + [type(subs)(sorted((info_resp2(s) for s in subs), key=lambda s: s[0]))]


def docs_resp2(flat):
    """A RESP2 COMMAND DOCS entry (a flat array of pairs) with subcommands in name order."""
    pairs = [[flat[i], flat[i + 1]] for i in range(0, len(flat), 2)]
    for pair in pairs:
        if pair[0] == b"subcommands":
            subs = [(pair[1][i], docs_resp2(pair[1][i + 1])) for i in range(0, len(pair[1]), 2)]
            pair[1] = sorted(subs)
    return pairs


def difference(got, expected, path=""):
    """Where two normalized replies first differ, and how."""
    if isinstance(got, (tuple, list)) and isinstance(expected, (tuple, list)):
        for i, (g, e) in enumerate(zip(got, expected)):
            if g != e:
                return difference(g, e, f"{path}/{i}")
        if len(got) != len(expected):
            tail = got[len(expected):] or expected[len(got):]
            return f"at {path}: keel has {len(got)} items, redis {len(expected)}: {tail!r:.300}"
    return f"at {path}: keel {got!r:.300} redis {expected!r:.300}"


def commands(server):
    with server.conn() as c:
        return {n.decode() for n in c.call("COMMAND", "LIST")}


def mismatches(server, reference, protocol, ask, normalize):
    """`ask(conn, name, served)` for every command keel serves, where the two servers differ."""
    found = []
    served = commands(server) & commands(reference)  # keel's own ones have nothing to match
    with server.conn() as ours, reference.conn() as theirs:
        for c in (ours, theirs):
            c.call("HELLO", str(protocol))
        for name in sorted(n for n in served if "|" not in n):
            expected = normalize(ask(theirs, name, served))
            if expected is None:
                continue  # one of keel's own commands
            got = normalize(ask(ours, name, served))
            if got != expected:
                found.append(f"{name}: {difference(got, expected)}")
    return found


def info(conn, name, served):
    entry = conn.call("COMMAND", "INFO", name)[0]
    if entry is not None:
        entry[9] = type(entry[9])(s for s in entry[9] if s[0].decode() in served)
    return entry


def docs(conn, name, served):
    reply = conn.call("COMMAND", "DOCS", name)
    if not reply:
        return None
    if isinstance(reply, RespMap):
        entry = reply[0][1]
        for i, (field, value) in enumerate(entry):
            if field == b"subcommands":
                entry[i] = (field, RespMap((n, d) for n, d in value if n.decode() in served))
        return entry
    entry = reply[1]
    for i in range(0, len(entry), 2):
        if entry[i] == b"subcommands":
            subs = entry[i + 1]
            entry[i + 1] = [x for j in range(0, len(subs), 2) if subs[j].decode() in served
                            for x in subs[j:j + 2]]
    return entry


@pytest.mark.parametrize("protocol", [2, 3])
def test_command_info_matches_redis(server, reference, protocol):
    normalize = (lambda e: typed(info_resp2(e))) if protocol == 3 else info_resp2
    found = mismatches(server, reference, protocol, info, normalize)
    assert not found, f"{len(found)} commands differ:\n" + "\n".join(found)


@pytest.mark.parametrize("protocol", [2, 3])
def test_command_docs_match_redis(server, reference, protocol):
    def normalize(entry):
        if entry is None:
            return None
        return typed(entry) if protocol == 3 else docs_resp2(entry)

    found = mismatches(server, reference, protocol, docs, normalize)
    assert not found, f"{len(found)} commands differ:\n" + "\n".join(found)


def plain(x):
    if isinstance(x, RespMap):
        return {k: plain(v) for k, v in x}
    if isinstance(x, list):
        return [plain(v) for v in x]
    return x


def test_key_specs_in_redis_shape(server, flushed):
    """A spot check that reads like Redis's documentation of ZUNIONSTORE's key specs."""
    with server.conn() as c:
        c.call("HELLO", "3")
        specs = c.call("COMMAND", "INFO", "zunionstore")[0][8]
    assert isinstance(specs, RespSet)
    assert plain(specs) == [
        {b"flags": [Status("OW"), Status("update")],
         b"begin_search": {b"type": b"index", b"spec": {b"index": 1}},
         b"find_keys": {b"type": b"range",
                        b"spec": {b"lastkey": 0, b"keystep": 1, b"limit": 0}}},
        {b"flags": [Status("RO"), Status("access")],
         b"begin_search": {b"type": b"index", b"spec": {b"index": 2}},
         b"find_keys": {b"type": b"keynum",
                        b"spec": {b"keynumidx": 0, b"firstkey": 1, b"keystep": 1}}},
    ]
