"""Fixtures for the black-box suite.

Every test runs against the server chosen with `--server=keel|redis`. The
expected behaviour is Redis 7's: each test must pass against real
redis-server. Where keel deliberately differs, mark the test with
`@pytest.mark.keel_differs(reason="...")`; it is then skipped on redis.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support import OK, REPO_ROOT, RespConn, ServerProcess, config_dict, run_server_to_exit


def pytest_addoption(parser):
    parser.addoption("--server", choices=("keel", "redis"), default="keel",
                     help="server implementation to test (default: keel)")
    parser.addoption("--keel-bin", default=str(REPO_ROOT / "target" / "release" / "keel-server"),
                     help="path to the keel-server binary")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--server") != "redis":
        return
    for item in items:
        marker = item.get_closest_marker("keel_differs")
        if marker is not None:
            reason = marker.kwargs.get("reason", "keel deliberately differs from Redis")
            item.add_marker(pytest.mark.skip(reason=f"keel_differs: {reason}"))


def pytest_make_parametrize_id(config, val, argname):
    """Show argument lists in test ids as the command line they form."""
    if isinstance(val, (tuple, list)) and all(isinstance(x, str) for x in val):
        return " ".join(val) if val else "(none)"
    return None


@pytest.fixture(scope="session")
def server_kind(pytestconfig) -> str:
    return pytestconfig.getoption("--server")


@pytest.fixture(scope="session")
def keel_bin(pytestconfig) -> Path:
    return Path(pytestconfig.getoption("--keel-bin")).resolve()


def _check_keel_bin(kind, keel_bin):
    if kind == "keel" and not os.access(keel_bin, os.X_OK):
        pytest.fail(f"keel binary not found at {keel_bin} (build it with `cargo build --release`)",
                    pytrace=False)


@pytest.fixture(scope="session")
def server(server_kind, keel_bin):
    """The server under test, shared by the whole session."""
    _check_keel_bin(server_kind, keel_bin)
    srv = ServerProcess(server_kind, keel_bin=keel_bin)
    srv.start()
    yield srv
    rc = srv.stop()
    srv.cleanup()
    if server_kind == "keel" and rc != 0:
        pytest.fail(f"keel-server exited with status {rc} after SIGTERM (expected 0)", pytrace=False)


@pytest.fixture
def flushed(server):
    """Start each test from an empty server."""
    with server.conn() as c:
        reply = c.call("FLUSHALL")
        assert reply == OK, reply


@pytest.fixture
def r(server, flushed):
    """redis-py client (RESP2, bytes replies)."""
    client = server.redis(decode_responses=False)
    yield client
    client.close()


@pytest.fixture
def r3(server, flushed):
    """redis-py client speaking RESP3."""
    client = server.redis(decode_responses=False, protocol=3)
    yield client
    client.close()


@pytest.fixture
def c(server, flushed):
    """Exact RESP client: replies keep their RESP type and full error text."""
    conn = server.conn()
    yield conn
    conn.close()


@pytest.fixture
def connect(server, flushed):
    """Factory for extra exact RESP connections to the server under test."""
    conns = []

    def make() -> RespConn:
        conn = server.conn()
        conns.append(conn)
        return conn

    yield make
    for conn in conns:
        conn.close()


@pytest.fixture
def restore_config(server):
    """Call with CONFIG names a test changes on the shared server; they are put back after it."""
    saved = {}

    def remember(*names):
        with server.conn() as conn:
            for name in names:
                saved.update(config_dict(conn.call("CONFIG", "GET", name)))

    yield remember
    with server.conn() as conn:
        for name, value in saved.items():
            assert conn.call("CONFIG", "SET", name, value) == OK


@pytest.fixture
def start_server(server_kind, keel_bin):
    """Factory: start an extra server of the chosen kind with custom settings.

    start_server({"requirepass": "x"}) or start_server(config_text="databases 4\\n").
    Servers still running at the end of the test are stopped.
    """
    _check_keel_bin(server_kind, keel_bin)
    started = []

    def start(directives=None, config_text=None, extra_args=()) -> ServerProcess:
        srv = ServerProcess(server_kind, keel_bin=keel_bin, directives=directives,
                            config_text=config_text, extra_args=extra_args)
        started.append(srv)
        return srv.start()

    yield start
    for srv in started:
        srv.cleanup()


@pytest.fixture
def run_to_exit(server_kind, keel_bin):
    """Run the chosen server with arguments it must reject; returns (exit code, output)."""
    _check_keel_bin(server_kind, keel_bin)

    def run(*args):
        return run_server_to_exit(server_kind, keel_bin, args)

    return run
