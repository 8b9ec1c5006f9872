"""redis-cli, the stock client, talking to the server."""

import shutil
import subprocess

import pytest

from support import OK, encode_command

REDIS_CLI = shutil.which("redis-cli")

pytestmark = pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")


def cli(port, *args, stdin=None):
    """Run redis-cli against the server; returns its standard output."""
    proc = subprocess.run([REDIS_CLI, "-h", "127.0.0.1", "-p", str(port), *args], input=stdin,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_ping(server, c):
    assert cli(server.port, "ping") == b"PONG\n"


def test_set_get_in_other_db(server, c):
    assert cli(server.port, "-n", "2", "set", "k", "hello world") == b"OK\n"
    assert cli(server.port, "-n", "2", "get", "k") == b"hello world\n"
    assert c.call("GET", "k") is None
    c.call("SELECT", "2")
    assert c.call("GET", "k") == b"hello world"


def test_scan_with_pattern(server, c):
    keys = [f"k{i}" for i in range(300)] + [f"other{i}" for i in range(50)]
    c.call("MSET", *[x for k in keys for x in (k, "v")])
    out = cli(server.port, "--scan", "--pattern", "k*")
    assert sorted(out.decode().split()) == sorted(k for k in keys if k.startswith("k"))


def test_commands_from_stdin(server, c):
    script = b"SET a 1\nINCR a\nGET a\nGET missing\nNOSUCH x\nMGET a missing\n"
    assert cli(server.port, stdin=script) == (
        b"OK\n2\n2\n\n"
        b"ERR unknown command 'NOSUCH', with args beginning with: 'x' \n\n"
        b"2\n\n")
    assert c.call("GET", "a") == b"2"


def test_mass_insert_with_pipe(server, c):
    count = 20_000
    payload = b"".join(encode_command("SET", f"mass:{i}", f"value-{i}") for i in range(count))
    out = cli(server.port, "--pipe", stdin=payload).decode()
    assert "errors: 0" in out and f"replies: {count}" in out
    assert c.call("DBSIZE") == count
    assert c.call("GET", f"mass:{count - 1}") == f"value-{count - 1}".encode()


def test_info_output(server, c):
    out = cli(server.port, "info", "server").decode()
    assert out.startswith("# Server")
    assert "redis_version:" in out


def test_auth_option(start_server):
    srv = start_server({"requirepass": "pw"})
    assert b"NOAUTH" in cli(srv.port, "get", "k")
    assert cli(srv.port, "--no-auth-warning", "-a", "pw", "set", "k", "v") == b"OK\n"
    with srv.conn() as conn:
        assert conn.call("AUTH", "pw") == OK
        assert conn.call("GET", "k") == b"v"
