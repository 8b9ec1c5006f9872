"""The latency monitor: latency-monitor-threshold, LATENCY LATEST, HISTORY,
RESET, GRAPH and DOCTOR, with a spike made by DEBUG SLEEP (the `command`
event), and bad input. keel's own events (eviction-cycle, expire-cycle,
keel-lazyfree, keel-backpressure-pause) are covered by the server's unit
tests, which inject the clock."""

import time

import pytest

from support import OK, Err, Verbatim


@pytest.fixture
def monitor(c, restore_config):
    restore_config("latency-monitor-threshold")
    assert c.call("LATENCY", "RESET") >= 0
    yield c
    c.call("LATENCY", "RESET")


def test_threshold_is_a_config_directive(monitor):
    c = monitor
    assert c.call("CONFIG", "SET", "latency-monitor-threshold", "150") == OK
    assert c.call("CONFIG", "GET", "latency-monitor-threshold") == [
        b"latency-monitor-threshold", b"150"]
    prefix = "ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold') - "
    assert c.call("CONFIG", "SET", "latency-monitor-threshold", "-1") == Err(
        prefix + "argument must be between 0 and 9223372036854775807 inclusive")
    assert c.call("CONFIG", "SET", "latency-monitor-threshold", "abc") == Err(
        prefix + "argument couldn't be parsed into an integer")


def test_without_spikes(monitor):
    c = monitor
    c.call("CONFIG", "SET", "latency-monitor-threshold", "0")
    assert c.call("LATENCY", "LATEST") == []
    assert c.call("LATENCY", "HISTORY", "command") == []
    assert c.call("LATENCY", "GRAPH", "command") == Err("ERR No samples available for event 'command'")
    assert c.call("LATENCY", "RESET") == 0
    assert c.call("LATENCY", "RESET", "command", "nosuch") == 0
    assert bytes(c.call("LATENCY", "DOCTOR")).startswith(
        b"I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance.")
    c.call("CONFIG", "SET", "latency-monitor-threshold", "100")
    assert bytes(c.call("LATENCY", "DOCTOR")) == (
        b"Dave, no latency spike was observed during the lifetime of this Redis instance, "
        b"not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, "
        b"and think things over.\n")


def test_a_slow_command_is_a_spike(monitor):
    c = monitor
    c.call("CONFIG", "SET", "latency-monitor-threshold", "100")
    before = int(time.time())
    assert c.call("DEBUG", "SLEEP", "0.05") == OK, "under the threshold"
    assert c.call("LATENCY", "LATEST") == []
    assert c.call("DEBUG", "SLEEP", "0.2") == OK
    after = int(time.time())
    [[event, at, latest, worst]] = c.call("LATENCY", "LATEST")
    assert event == b"command"
    assert before <= at <= after
    assert 200 <= latest == worst < 1000
    [[history_at, history_latency]] = c.call("LATENCY", "HISTORY", "command")
    assert (history_at, history_latency) == (at, latest)
    graph = c.call("LATENCY", "GRAPH", "command")
    assert isinstance(graph, (Verbatim, bytes))
    lines = bytes(graph).decode().split("\n")
    assert lines[0] == f"command - high {latest} ms, low {latest} ms (all time high {worst} ms)"
    assert lines[1] == "-" * 80
    assert lines[2:7] == [" ", " ", " ", "_", " "], "one sample: a low bar, then a blank row"
    assert lines[7].isdigit() and lines[8] == "s", "its label: seconds ago"
    doctor = bytes(c.call("LATENCY", "DOCTOR")).decode()
    assert doctor.startswith("Dave, I have observed latency spikes in this Redis instance.")
    assert f"1. command: 1 latency spikes (average {latest}ms, mean deviation 0ms" in doctor
    assert c.call("LATENCY", "RESET", "command", "nosuch") == 1
    assert c.call("LATENCY", "LATEST") == []


def test_bad_arity_and_unknown_subcommands(c):
    for args in (["HISTORY"], ["GRAPH"], ["LATEST", "x"], ["DOCTOR", "x"], ["HISTORY", "a", "b"]):
        name = args[0].lower()
        assert c.call("LATENCY", *args) == Err(
            f"ERR wrong number of arguments for 'latency|{name}' command")
    assert c.call("LATENCY", "NOSUCH") == Err("ERR unknown subcommand 'NOSUCH'. Try LATENCY HELP.")
