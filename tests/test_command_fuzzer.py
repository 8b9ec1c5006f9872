"""The seeded command fuzzer (command_fuzzer.py) for a bounded number of commands.

Two fixed seeds, 10,000 commands each (about 5 s a seed), every check after
every command and a recount every 100. Nothing is skipped: any bug the
fuzzer finds fails the test, printing the seed and the shortest failing
sequence.
"""

from __future__ import annotations

import io

import pytest

import command_fuzzer
from support import Status

SEEDS = (1, 2)
COMMANDS = 10_000
SHRINK_SECONDS = 60.0

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("seed", SEEDS)
def test_command_fuzzer(seed, server_kind, keel_bin):
    if server_kind != "keel":
        pytest.skip("the fuzzer checks keel's own memory accounting")
    report = io.StringIO()
    outcome = command_fuzzer.fuzz(seed, COMMANDS, keel_bin=keel_bin,
                                  shrink_seconds=SHRINK_SECONDS, out=report)
    assert outcome.failure is None, report.getvalue()


def test_docs_arguments_are_read_as_argument_specs():
    """COMMAND DOCS `arguments` as Redis 7 sends them in RESP2 (here SET's expiration) become
    the specs the generator walks, so keel's own are used once it reports them."""
    reported = [[b"name", b"expiration", b"type", b"oneof", b"flags", [Status("optional")],
                 b"arguments", [
                     [b"name", b"seconds", b"type", b"integer", b"token", b"EX"],
                     [b"name", b"keepttl", b"type", b"pure-token", b"token", b"KEEPTTL"]]]]
    specs = command_fuzzer.docs_arguments(reported)
    assert specs == [{"name": "expiration", "type": "oneof", "flags": ["optional"], "arguments": [
        {"name": "seconds", "type": "integer", "token": "EX", "flags": []},
        {"name": "keepttl", "type": "pure-token", "token": "KEEPTTL", "flags": []}]}]
    generator = command_fuzzer.CommandGenerator(7, {"set": (["SET"], specs)}, {"set": -3})
    drawn = {tuple(arg.upper() for arg in generator.next()[1:2]) for _ in range(300)}
    assert {(), ("EX",), ("KEEPTTL",)} <= drawn
