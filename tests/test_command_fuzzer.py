"""The seeded command fuzzer (command_fuzzer.py) for a bounded number of commands.

Two fixed seeds, 3,000 commands each, every check after every command and a
recount every 100. No known issue is skipped: while keel has the bugs listed
in `command_fuzzer.KNOWN_ISSUES`, this test may find them and fail, printing
the seed and the shortest failing sequence.
"""

from __future__ import annotations

import io

import pytest

import command_fuzzer

SEEDS = (1, 2)
COMMANDS = 3_000
SHRINK_SECONDS = 60.0

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("seed", SEEDS)
def test_command_fuzzer(seed, server_kind, keel_bin):
    if server_kind != "keel":
        pytest.skip("the fuzzer checks keel's own memory accounting")
    report = io.StringIO()
    outcome = command_fuzzer.fuzz(seed, COMMANDS, keel_bin=keel_bin, shrink_seconds=SHRINK_SECONDS,
                                  out=report)
    assert outcome.failure is None, report.getvalue()
