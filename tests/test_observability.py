"""Observability: SLOWLOG, LATENCY HISTOGRAM, INFO latencystats and their
configuration, checked against Redis 7's reply shapes; keel's background-work
histograms and its Prometheus endpoint (keel only)."""

import re
import socket
import time
import urllib.error
import urllib.request

import pytest

from support import (OK, Err, RespMap, Status, config_dict, free_port, info, info_dict,
                     pipeline_big_sets_concurrently)

# The bucket keys Redis 7's LATENCY HISTOGRAM can report, in microseconds.
REDIS_BUCKETS = [1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816,
                 67633, 135266, 270532, 541065]

OBSERVABILITY_CONFIG = ("slowlog-log-slower-than", "slowlog-max-len", "latency-tracking",
                        "latency-tracking-info-percentiles")

KEEL_ONLY_WORK = pytest.mark.keel_differs(
    reason="background-work histograms are keel's own (eviction, expiry, lazyfree, backpressure)")
KEEL_ONLY_METRICS = pytest.mark.keel_differs(reason="redis-server has no metrics endpoint")


@pytest.fixture
def observed(c, restore_config):
    """A connection with every command slow-logged, on an empty slow log and fresh statistics."""
    restore_config(*OBSERVABILITY_CONFIG)
    assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "0") == OK
    assert c.call("CONFIG", "SET", "slowlog-max-len", "128") == OK
    assert c.call("CONFIG", "RESETSTAT") == OK
    assert c.call("SLOWLOG", "RESET") == OK
    return c


def slowlog(conn, count=-1):
    return conn.call("SLOWLOG", "GET", count)


def histograms(reply) -> dict:
    """LATENCY HISTOGRAM's reply (RESP2 flat arrays or RESP3 maps) as
    {name: (calls, [(bucket, cumulative), ...])}."""
    def pairs(x):
        return list(x) if isinstance(x, RespMap) else list(zip(x[::2], x[1::2]))
    out = {}
    for name, body in pairs(reply):
        fields = dict(pairs(body))
        buckets = [(k, v) for k, v in pairs(fields[b"histogram_usec"])]
        out.setdefault(name.decode(), []).append((fields[b"calls"], buckets))
    return {name: entries[0] for name, entries in out.items()}


def assert_redis_histogram(calls, buckets):
    keys = [k for k, _ in buckets]
    counts = [v for _, v in buckets]
    assert set(keys) <= set(REDIS_BUCKETS), keys
    assert keys == sorted(keys)
    assert counts == sorted(counts) and len(set(counts)) == len(counts), "cumulative, each adds"
    assert counts[-1] == calls


# -- configuration --------------------------------------------------------------------


def test_defaults(c):
    got = config_dict(c.call("CONFIG", "GET", "*slowlog*"))
    assert got == {b"slowlog-log-slower-than": b"10000", b"slowlog-max-len": b"128"}
    got = config_dict(c.call("CONFIG", "GET", "latency-tracking*"))
    assert got == {b"latency-tracking": b"yes",
                   b"latency-tracking-info-percentiles": b"50 99 99.9"}


@pytest.mark.parametrize("name,value,why", [
    ("slowlog-log-slower-than", "-5", "argument must be between -1 and 9223372036854775807 inclusive"),
    ("slowlog-log-slower-than", "x", "argument couldn't be parsed into an integer"),
    ("slowlog-max-len", "-1", "argument must be between 0 and 9223372036854775807 inclusive"),
    ("latency-tracking", "maybe", "argument must be 'yes' or 'no'"),
    ("latency-tracking-info-percentiles", "101",
     "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"),
    ("latency-tracking-info-percentiles", "50 abc", "Invalid latency-tracking-info-percentiles parameters"),
])
def test_config_set_errors(c, restore_config, name, value, why):
    restore_config(name)
    assert c.call("CONFIG", "SET", name, value) == Err(
        f"ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")


def test_percentiles_round_trip_as_redis_prints_them(c, restore_config):
    restore_config("latency-tracking-info-percentiles")
    assert c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "1e1 5.0 99.990") == OK
    assert c.call("CONFIG", "GET", "latency-tracking-info-percentiles") == [
        b"latency-tracking-info-percentiles", b"10 5 99.99"]
    assert c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "") == OK
    assert c.call("CONFIG", "GET", "latency-tracking-info-percentiles") == [
        b"latency-tracking-info-percentiles", b""]


# -- SLOWLOG ----------------------------------------------------------------------------


def test_slowlog_entries_newest_first_with_every_field(observed):
    c = observed
    assert c.call("CLIENT", "SETNAME", "observer") == OK
    assert c.call("SET", "k", "v") == OK
    assert c.call("GET", "k") == b"v"
    before = int(time.time())
    entries = slowlog(c)
    assert [e[3] for e in entries] == [[b"GET", b"k"], [b"SET", b"k", b"v"],
                                       [b"CLIENT", b"SETNAME", b"observer"], [b"SLOWLOG", b"RESET"]]
    ids = [e[0] for e in entries]
    assert ids == list(range(ids[0], ids[0] - 4, -1)), "ids count down by one, newest first"
    port = c.sock.getsockname()[1]
    for entry in entries:
        assert len(entry) == 6
        id_, when, duration, _, peer, name = entry
        assert isinstance(id_, int) and isinstance(duration, int) and duration >= 0
        assert abs(when - before) <= 2
        assert peer == f"127.0.0.1:{port}".encode()
    assert [e[5] for e in entries] == [b"observer", b"observer", b"observer", b""]


def test_slowlog_get_counts(observed):
    c = observed
    for i in range(12):
        c.call("SET", f"k{i}", i)
    assert len(slowlog(c, 1)) == 1
    assert slowlog(c, 0) == []
    assert len(c.call("SLOWLOG", "GET")) == 10, "ten by default"
    length = c.call("SLOWLOG", "LEN")
    assert len(slowlog(c, -1)) == length + 1, "LEN itself was logged after it replied"
    assert len(slowlog(c, 1000)) == length + 2


def test_slowlog_shortens_long_commands_as_redis_does(observed):
    c = observed
    c.call("SET", "k", "x" * 200)
    c.call("DEL", *[f"key{i}" for i in range(40)])
    deleted, stored = slowlog(c, 2)
    assert stored[3] == [b"SET", b"k", b"x" * 128 + b"... (72 more bytes)"]
    assert len(deleted[3]) == 32
    assert deleted[3][:31] == [b"DEL"] + [f"key{i}".encode() for i in range(30)]
    assert deleted[3][31] == b"... (10 more arguments)"


def test_slowlog_hides_passwords(observed, connect):
    c = observed
    c.call("AUTH", "secret")
    other = connect()
    other.call("HELLO", "3", "AUTH", "default", "secret")
    args = [e[3] for e in slowlog(c, 2)]
    assert [b"HELLO", b"3", b"AUTH", b"(redacted)", b"(redacted)"] in args
    assert [b"AUTH", b"(redacted)"] in args


def test_slowlog_len_max_len_and_reset(observed):
    c = observed
    assert c.call("CONFIG", "SET", "slowlog-max-len", "3") == OK
    for i in range(5):
        c.call("SET", f"k{i}", i)
    assert c.call("SLOWLOG", "LEN") == 3
    newest_id = slowlog(c, 1)[0][0]
    assert c.call("SLOWLOG", "RESET") == OK
    entries = slowlog(c)
    assert [e[3] for e in entries] == [[b"SLOWLOG", b"RESET"]]
    assert entries[0][0] == newest_id + 2, "ids go on after a reset (the GET took one)"


def test_slowlog_threshold(observed):
    c = observed
    assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1") == OK
    c.call("SLOWLOG", "RESET")
    c.call("SET", "k", "v")
    assert c.call("SLOWLOG", "LEN") == 0, "negative disables the log"
    assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000000") == OK
    c.call("SET", "k", "v")
    assert c.call("SLOWLOG", "LEN") == 0, "only commands of 10 s and more"


def test_slowlog_logs_transaction_commands_but_not_exec(observed):
    c = observed
    assert c.pipeline([("MULTI",), ("SET", "a", "1"), ("GET", "a"), ("EXEC",)])[-1] == [OK, b"1"]
    assert [e[3] for e in slowlog(c, 3)] == [[b"GET", b"a"], [b"SET", b"a", b"1"], [b"MULTI"]]


def test_debug_sleep_counts_its_pause(observed):
    c = observed
    assert c.call("DEBUG", "SLEEP", "0.02") == OK
    [entry] = slowlog(c, 1)
    assert entry[3] == [b"DEBUG", b"SLEEP", b"0.02"] and entry[2] >= 20_000
    replies = c.pipeline([("MULTI",), ("DEBUG", "SLEEP", "0.02"), ("SET", "a", "1"), ("EXEC",)])
    assert replies[-1] == [OK, OK]
    durations = {e[3][0]: e[2] for e in slowlog(c, 3)}
    assert durations[b"DEBUG"] >= 20_000 and durations[b"SET"] < 20_000


def test_blocked_command_counts_once_it_is_served(observed, connect):
    c = observed
    assert c.call("BLPOP", "nothing", "0.05") is None
    assert not any(e[3][0] == b"BLPOP" for e in slowlog(c)), "a timed-out pop is not logged"
    assert histograms(c.call("LATENCY", "HISTOGRAM", "blpop")) == {}
    c.send("BLPOP", "list", "5")
    pusher = connect()
    while int(info(pusher, "clients")["blocked_clients"]) == 0:
        time.sleep(0.01)
    assert pusher.call("RPUSH", "list", "x") == 1
    assert c.read() == [b"list", b"x"]
    assert [e[3] for e in slowlog(c) if e[3][0] == b"BLPOP"] == [[b"BLPOP", b"list", b"5"]]
    assert histograms(c.call("LATENCY", "HISTOGRAM", "blpop"))["blpop"][0] == 1
    assert "calls=2," in info(c, "commandstats")["cmdstat_blpop"], "both calls are counted"


@pytest.mark.parametrize("args,error", [
    (("SLOWLOG",), "ERR wrong number of arguments for 'slowlog' command"),
    (("SLOWLOG", "FOO"), "ERR unknown subcommand 'FOO'. Try SLOWLOG HELP."),
    (("SLOWLOG", "GET", "-2"), "ERR count should be greater than or equal to -1"),
    (("SLOWLOG", "GET", "x"), "ERR count should be greater than or equal to -1"),
    (("SLOWLOG", "GET", "1", "2"),
     "ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP."),
    (("SLOWLOG", "LEN", "x"), "ERR wrong number of arguments for 'slowlog|len' command"),
    (("SLOWLOG", "RESET", "x"), "ERR wrong number of arguments for 'slowlog|reset' command"),
    (("SLOWLOG", "HELP", "x"), "ERR wrong number of arguments for 'slowlog|help' command"),
    (("LATENCY",), "ERR wrong number of arguments for 'latency' command"),
    (("LATENCY", "FOO"), "ERR unknown subcommand 'FOO'. Try LATENCY HELP."),
    (("LATENCY", "HELP", "x"), "ERR wrong number of arguments for 'latency|help' command"),
])
def test_errors(c, args, error):
    assert c.call(*args) == Err(error)


@pytest.mark.parametrize("container,subcommands", [
    ("SLOWLOG", ["GET", "LEN", "RESET", "HELP"]),
    ("LATENCY", ["HISTOGRAM", "HELP"]),
])
def test_help(c, container, subcommands):
    lines = c.call(container, "HELP")
    assert all(isinstance(line, Status) for line in lines)
    assert lines[0] == Status(f"{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    starts = {line.split(" ")[0] for line in lines[1:] if not line.startswith(" ")}
    assert set(subcommands) <= starts


@pytest.mark.parametrize("name,arity,flags", [
    ("slowlog|get", -2, {"admin", "loading", "stale"}),
    ("slowlog|len", 2, {"admin", "loading", "stale"}),
    ("slowlog|reset", 2, {"admin", "loading", "stale"}),
    ("latency|histogram", -2, {"admin", "noscript", "loading", "stale"}),
])
def test_command_info(c, name, arity, flags):
    [entry] = c.call("COMMAND", "INFO", name)
    assert (entry[0], entry[1]) == (name.encode(), arity)
    assert set(entry[2]) == {Status(f) for f in flags}


# -- LATENCY HISTOGRAM and INFO latencystats -------------------------------------------------


def test_latency_histogram_reply_and_counts(observed):
    c = observed
    for _ in range(3):
        c.call("SET", "a", "1")
    c.call("GET", "a")
    got = histograms(c.call("LATENCY", "HISTOGRAM", "set", "GET"))
    assert set(got) == {"set", "get"}
    assert got["set"][0] == 3 and got["get"][0] == 1
    for calls, buckets in got.values():
        assert_redis_histogram(calls, buckets)


def test_latency_histogram_resp3_maps(observed, connect):
    c3 = connect()
    c3.call("HELLO", "3")
    c3.call("SET", "a", "1")
    reply = c3.call("LATENCY", "HISTOGRAM", "set")
    assert isinstance(reply, RespMap)
    [(name, body)] = reply
    assert name == b"set" and isinstance(body, RespMap)
    fields = body.to_dict()
    assert list(fields) == [b"calls", b"histogram_usec"] and isinstance(fields[b"histogram_usec"], RespMap)
    assert_redis_histogram(fields[b"calls"], list(fields[b"histogram_usec"]))


def test_latency_histogram_names(observed):
    c = observed
    c.call("SET", "a", "1")
    c.call("CONFIG", "GET", "maxmemory")
    everything = histograms(c.call("LATENCY", "HISTOGRAM"))
    assert {"set", "config|resetstat", "config|get", "slowlog|reset"} <= set(everything)
    assert histograms(c.call("LATENCY", "HISTOGRAM", "nosuchcommand")) == {}
    assert set(histograms(c.call("LATENCY", "HISTOGRAM", "config"))) == {
        "config|get", "config|resetstat"}, "a container stands for its subcommands"
    assert set(histograms(c.call("LATENCY", "HISTOGRAM", "config|get"))) == {"config|get"}
    twice = c.call("LATENCY", "HISTOGRAM", "set", "set")
    assert [twice[0], twice[2]] == [b"set", b"set"], "a name given twice is listed twice"


def test_latency_tracking_switch(observed):
    c = observed
    c.call("SET", "a", "1")
    assert c.call("CONFIG", "SET", "latency-tracking", "no") == OK
    c.call("SET", "a", "1")
    assert histograms(c.call("LATENCY", "HISTOGRAM", "set"))["set"][0] == 1
    lines = [k for k in info_dict(c.call("INFO", "latencystats")) if not k.startswith("latency_percentiles_usec_keel-")]
    assert lines == [], "no command lines while tracking is off"
    assert c.call("CONFIG", "SET", "latency-tracking", "yes") == OK
    c.call("SET", "a", "1")
    assert histograms(c.call("LATENCY", "HISTOGRAM", "set"))["set"][0] == 2


LATENCY_LINE = re.compile(r"^latency_percentiles_usec_([a-z|\-]+):(.*)$")


def test_info_latencystats_format(observed):
    c = observed
    for _ in range(5):
        c.call("SET", "a", "1")
    text = c.call("INFO", "latencystats").decode()
    assert text.startswith("# Latencystats\r\n")
    lines = [line for line in text.split("\r\n")[1:] if line]
    names = [LATENCY_LINE.match(line).group(1) for line in lines]
    assert {"set", "config|resetstat", "slowlog|reset"} <= set(names)
    for line in lines:
        assert re.fullmatch(r"p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}",
                            LATENCY_LINE.match(line).group(2)), line
    assert "latencystats" not in c.call("INFO").decode().lower(), "not a default section"
    assert "# Latencystats" in c.call("INFO", "everything").decode()


def test_info_latencystats_follows_the_percentile_setting(observed):
    c = observed
    for _ in range(5):
        c.call("SET", "a", "1")
    c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "99.99 0 100 12.5")
    value = info(c, "latencystats")["latency_percentiles_usec_set"]
    fields = dict(kv.split("=") for kv in value.split(","))
    assert list(fields) == ["p99.99", "p0", "p100", "p12.5"]
    assert all(re.fullmatch(r"\d+\.\d{3}", v) for v in fields.values())
    assert float(fields["p0"]) <= float(fields["p12.5"]) <= float(fields["p99.99"]) <= float(fields["p100"])
    c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "")
    assert info(c, "latencystats")["latency_percentiles_usec_set"] == ""


def test_resetstat_clears_histograms(observed):
    c = observed
    c.call("SET", "a", "1")
    assert c.call("CONFIG", "RESETSTAT") == OK
    assert histograms(c.call("LATENCY", "HISTOGRAM", "set")) == {}


# -- keel's background work ---------------------------------------------------------


BACKGROUND = ["keel-eviction-batch", "keel-expire-pass", "keel-lazyfree", "keel-backpressure-pause"]
# keel-defrag-step is covered by test_defrag.py.


@KEEL_ONLY_WORK
def test_background_work_histograms(start_server):
    # Evicted values go to the lazyfree thread only with lazyfree-lazy-eviction.
    srv = start_server({"maxmemory": "4mb", "maxmemory-policy": "allkeys-random",
                        "maxmemory-clients": "512kb", "expire-tick": "10",
                        "lazyfree-lazy-eviction": "yes"})
    with srv.conn() as conn:
        conn.call("HSET", "big", *[x for i in range(3000) for x in (f"f{i}", "v" * 30)])
        conn.call("DEL", "big")
        conn.call("SET", "brief", "1", "PX", "1")
        # Twelve connections, all open before any sends, so that their
        # buffers fill the client budget together and a read must pause. Six
        # started one by one sometimes ran apart, and no pause came (about
        # one run in ten).
        pipeline_big_sets_concurrently(srv.port, 12, 4, b"v" * 400_000, timeout=120)
        # Writes that find the dataset over the limit evict inline; when
        # they keep up, the background task may find nothing left to do. A
        # lower limit leaves it to the background task.
        assert conn.call("CONFIG", "SET", "maxmemory", "2mb") == OK
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            got = histograms(conn.call("LATENCY", "HISTOGRAM", *BACKGROUND))
            if set(got) == set(BACKGROUND):
                break
            time.sleep(0.05)
        assert set(got) == set(BACKGROUND)
        for calls, buckets in got.values():
            assert calls > 0 and buckets[-1][1] <= calls
        everything = histograms(conn.call("LATENCY", "HISTOGRAM"))
        assert set(BACKGROUND) <= set(everything), "the no-argument form includes them"
        stats = info(conn, "stats")
        assert int(stats["evicted_keys"]) > 0 and int(stats["backpressure_events"]) > 0
        names = {k.removeprefix("latency_percentiles_usec_") for k in info(conn, "latencystats")}
        assert set(BACKGROUND) <= names


# -- Prometheus --------------------------------------------------------------------------


def scrape(port, path="/metrics", method="GET"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.headers["Content-Type"], response.read().decode()


def families(text):
    from prometheus_client.parser import text_string_to_metric_families
    return {f.name: f for f in text_string_to_metric_families(text)}


def sample(family, **labels):
    """The value of the one sample of a counter or gauge family with these labels."""
    [value] = [s.value for s in family.samples if s.labels == labels]
    return value


@KEEL_ONLY_METRICS
def test_metrics_agree_with_info(start_server):
    port = free_port()
    srv = start_server({"metrics-port": port, "databases": "4"})
    with srv.conn() as conn:
        for i in range(25):
            conn.call("SET", f"k{i}", i)
        conn.call("GET", "k1")
        conn.call("GET", "missing")
        conn.call("SELECT", "2")
        conn.call("SET", "x", "1", "PX", "1")
        conn.call("SET", "y", "1", "EX", "100")
        while int(info(conn, "stats")["expired_keys"]) < 1:
            time.sleep(0.01)
        status, content_type, text = scrape(port)
        stats = info(conn, "stats")
        commands = info(conn, "commandstats")
        histogram = histograms(conn.call("LATENCY", "HISTOGRAM", "set"))["set"]
        dbsizes = {}
        for db in range(4):
            conn.call("SELECT", db)
            dbsizes[str(db)] = conn.call("DBSIZE")
    assert status == 200 and content_type == "text/plain; version=0.0.4; charset=utf-8"
    got = families(text)
    set_calls = int(commands["cmdstat_set"].split(",")[0].removeprefix("calls="))
    assert sample(got["keel_commands"], cmd="set") == set_calls == 27
    assert sample(got["keel_commands"], cmd="get") == 2
    assert {db: sample(got["keel_db_keys"], db=db) for db in dbsizes} == dbsizes
    assert sample(got["keel_db_expiring_keys"], db="2") == 1
    assert sample(got["keel_expired_keys"]) == int(stats["expired_keys"]) == 1
    assert sample(got["keel_evicted_keys"]) == int(stats["evicted_keys"]) == 0
    assert sample(got["keel_keyspace_hits"]) == int(stats["keyspace_hits"])
    assert sample(got["keel_keyspace_misses"]) == int(stats["keyspace_misses"])
    assert sample(got["keel_backpressure_pauses"]) == int(stats["backpressure_events"])
    assert got["keel_memory_dataset_bytes"].type == "gauge"
    duration = got["keel_command_duration_seconds"]
    assert duration.type == "histogram"
    buckets = [(s.labels["le"], s.value) for s in duration.samples
               if s.name.endswith("_bucket") and s.labels["cmd"] == "set"]
    assert buckets[-1] == ("+Inf", 27) and histogram[0] == 27
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    by_bound = {round(float(le) * 1e6): v for le, v in buckets[:-1]}
    assert all(by_bound[k] == v for k, v in histogram[1]), "the buckets LATENCY HISTOGRAM shows"
    work = got["keel_background_work_duration_seconds"]
    assert {s.labels["work"] for s in work.samples} == {
        "eviction-batch", "expire-pass", "lazyfree", "backpressure-pause", "defrag-step"}


@KEEL_ONLY_METRICS
def test_metrics_endpoint_answers_only_get_metrics(start_server):
    port = free_port()
    srv = start_server({"metrics-port": port})
    for path, method, status in [("/", "GET", 404), ("/metricsx", "GET", 404),
                                 ("/metrics", "POST", 405)]:
        with pytest.raises(urllib.error.HTTPError) as refused:
            scrape(port, path, method)
        assert refused.value.code == status
    assert scrape(port, "/metrics?x=1")[0] == 200
    for garbage in [b"garbage\r\n\r\n", b"\xff\xfe\x00\r\n\r\n", b"GET /metrics\r\n\r\n",
                    b"x" * 20000, b""]:
        reply = b""
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            try:
                s.sendall(garbage)
                s.shutdown(socket.SHUT_WR)
                while chunk := s.recv(65536):
                    reply += chunk
            except OSError:
                pass  # it answered before reading all of an oversized head
        assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") or reply == b"", (garbage, reply)
    with srv.conn() as conn:
        assert conn.call("PING") == Status("PONG"), "the server is unaffected"
        assert conn.call("CONFIG", "GET", "metrics-port") == [b"metrics-port", str(port).encode()]
        assert conn.call("CONFIG", "SET", "metrics-port", "0") == Err(
            "ERR CONFIG SET failed (possibly related to argument 'metrics-port') - can't set immutable config")


@KEEL_ONLY_METRICS
def test_metrics_are_off_by_default(c):
    assert c.call("CONFIG", "GET", "metrics-port") == [b"metrics-port", b"0"]
