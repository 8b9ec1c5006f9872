"""The server under test as a backend of twemproxy (nutcracker 0.5.0, Debian's package): three
nodes of the chosen kind behind one proxy pool (ketama over fnv1a_64, `{}` hash tags), driven
through the proxy with redis-py. Keys spread over every node, multi-key commands and pipelines
split across nodes come back whole and in order, backend errors pass through word for word, and
a node killed with SIGKILL is ejected so that every key is served again by the other two.
"""

import os
import shutil
import socket
import subprocess

import pytest
import redis

from support import IO_TIMEOUT, OK, START_TIMEOUT, Err, RespConn, free_port, wait_for

# Debian installs nutcracker in /usr/sbin, which is not on every user's PATH.
NUTCRACKER = shutil.which("nutcracker", path=os.pathsep.join(
    [os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"]))

pytestmark = pytest.mark.skipif(
    NUTCRACKER is None, reason="nutcracker (twemproxy) is not installed (scripts/test installs it)")

NODE_COUNT = 3
# nutcracker's fnv1a_64 places runs of similar short keys (`k:0` ... `k:9`) on the same node, so
# it takes a few thousand keys to be sure that every node holds some.
KEY_COUNT = 3000
SERVER_FAILURE_LIMIT = 2
# Long enough that an ejected node stays out for the rest of its test: after this nutcracker
# puts it back to probe it, and a request routed to it would fail again.
SERVER_RETRY_TIMEOUT_MS = 60_000
# Generous, so that a backend slowed down by a noisy machine is never ejected by mistake.
TIMEOUT_MS = 5_000


class Twemproxy:
    """A nutcracker process with one pool over `nodes` (ServerProcess instances)."""

    def __init__(self, nodes, workdir):
        self.port = free_port()
        self.stats_port = free_port()
        self.conf_path = workdir / "nutcracker.yml"
        self.log_path = workdir / "nutcracker.log"
        servers = "".join(f"    - 127.0.0.1:{node.port}:1 node{n}\n"
                          for n, node in enumerate(nodes, start=1))
        self.conf_path.write_text(
            "keel:\n"
            f"  listen: 127.0.0.1:{self.port}\n"
            "  hash: fnv1a_64\n"
            "  distribution: ketama\n"
            '  hash_tag: "{}"\n'
            "  redis: true\n"
            "  auto_eject_hosts: true\n"
            f"  server_retry_timeout: {SERVER_RETRY_TIMEOUT_MS}\n"
            f"  server_failure_limit: {SERVER_FAILURE_LIMIT}\n"
            f"  timeout: {TIMEOUT_MS}\n"
            "  servers:\n" + servers)
        self.proc = None

    def start(self):
        check = subprocess.run([NUTCRACKER, "-t", "-c", str(self.conf_path)],
                               capture_output=True, text=True, timeout=START_TIMEOUT)
        assert check.returncode == 0, check.stdout + check.stderr
        self.proc = subprocess.Popen(
            [NUTCRACKER, "-c", str(self.conf_path), "-o", str(self.log_path),
             "-s", str(self.stats_port), "-a", "127.0.0.1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(self._accepts_connections, START_TIMEOUT, "nutcracker to listen")
        return self

    def _accepts_connections(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"nutcracker exited with {self.proc.returncode}:\n{self.log()}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def client(self) -> redis.Redis:
        # No CLIENT SETINFO on connect: nutcracker closes connections that send it.
        return redis.Redis(host="127.0.0.1", port=self.port, lib_name=None, lib_version=None,
                           socket_timeout=IO_TIMEOUT, socket_connect_timeout=IO_TIMEOUT)

    def conn(self) -> RespConn:
        return RespConn(self.port)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def nodes(start_server):
    """Three backend servers of the kind under test (start_server stops them after the test)."""
    return [start_server() for _ in range(NODE_COUNT)]


@pytest.fixture
def proxy(nodes, tmp_path):
    proxy = Twemproxy(nodes, tmp_path)
    try:
        yield proxy.start()
    finally:
        proxy.stop()


@pytest.fixture
def client(proxy):
    client = proxy.client()
    yield client
    client.close()


def key_counts(nodes) -> list[int]:
    """DBSIZE of each backend, asked directly."""
    counts = []
    for node in nodes:
        with node.conn() as conn:
            counts.append(conn.call("DBSIZE"))
    return counts


def keys_by_node(nodes) -> list[set[bytes]]:
    """The keys each backend holds, asked directly."""
    held = []
    for node in nodes:
        with node.conn() as conn:
            held.append(set(conn.call("KEYS", "*")))
    return held


def numbered_keys(prefix) -> list[str]:
    return [f"{prefix}:{i}" for i in range(KEY_COUNT)]


def set_all(client, keys, value_of):
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, value_of(key))
    assert all(pipe.execute())


def test_commands_through_proxy(client, nodes):
    keys = numbered_keys("key")
    for key in keys:
        assert client.set(key, f"value of {key}")
    for key in keys:
        assert client.get(key) == f"value of {key}".encode()
    for start in range(0, len(keys), 100):
        chunk = keys[start:start + 100]
        assert client.mget(chunk) == [f"value of {key}".encode() for key in chunk]
    # One key at a time: nutcracker 0.5.0 sends a multi-key EXISTS whole to its first key's node.
    assert all(client.exists(key) == 1 for key in keys)

    for key in keys[:200]:
        assert client.incr(f"counter:{key}") == 1
        assert client.incr(f"counter:{key}", 41) == 42
        assert client.expire(f"counter:{key}", 100)
        assert 0 < client.ttl(f"counter:{key}") <= 100
    assert client.ttl(keys[0]) == -1
    assert client.ttl("missing") == -2

    assert client.delete(*keys[:1000]) == 1000
    assert client.mget(keys[:1000]) == [None] * 1000
    assert client.exists(keys[0]) == 0
    assert sum(key_counts(nodes)) == len(keys) - 1000 + 200


def test_keys_spread_over_every_node(client, nodes):
    keys = numbered_keys("spread")
    set_all(client, keys, lambda key: key)
    counts = key_counts(nodes)
    assert sum(counts) == len(keys)
    assert all(count >= 0.15 * len(keys) for count in counts), counts


def test_hash_tag_keeps_keys_on_one_node(client, nodes):
    keys = [f"{{user42}}:{field}" for field in ("a", "b", "c", "name", "email", "visits")]
    keys += [f"{{user42}}:item:{i}" for i in range(50)]
    set_all(client, keys, lambda key: key)
    assert sorted(key_counts(nodes)) == [0, 0, len(keys)]
    assert client.mget(keys) == [key.encode() for key in keys]


def test_mget_across_nodes(client, nodes):
    keys = numbered_keys("multi")
    set_all(client, keys, lambda key: f"value of {key}")
    held = keys_by_node(nodes)
    assert all(held), [len(node_keys) for node_keys in held]

    one_key_per_node = [min(node_keys).decode() for node_keys in held]
    assert client.mget(one_key_per_node + ["missing"]) == (
        [f"value of {key}".encode() for key in one_key_per_node] + [None])
    assert client.mget(keys) == [f"value of {key}".encode() for key in keys]
    assert client.delete(*one_key_per_node, "missing") == NODE_COUNT
    assert client.mget(one_key_per_node) == [None] * NODE_COUNT


def test_pipeline_through_proxy(client, nodes):
    pipe = client.pipeline(transaction=False)
    for i in range(500):
        pipe.set(f"pipe:{i}", i)
        pipe.incr(f"pipe:{i}")
        pipe.get(f"pipe:{i}")
        pipe.rpush(f"list:{i}", "x", "y")
        pipe.lrange(f"list:{i}", 0, -1)
    expected = []
    for i in range(500):
        expected += [True, i + 1, str(i + 1).encode(), 2, [b"x", b"y"]]
    assert pipe.execute() == expected
    counts = key_counts(nodes)
    assert sum(counts) == 1000 and all(counts), counts

    # An error in the middle of a pipeline comes back in its place; the rest still run.
    pipe = client.pipeline(transaction=False)
    pipe.set("pipe:text", "not a number")
    pipe.incr("pipe:text")
    pipe.get("pipe:0")
    replies = pipe.execute(raise_on_error=False)
    assert replies[0] is True and replies[2] == b"1"
    assert isinstance(replies[1], redis.ResponseError)
    assert str(replies[1]) == "value is not an integer or out of range"


def test_backend_errors_pass_through(proxy):
    with proxy.conn() as conn:
        assert conn.call("SET", "text", "hello") == OK
        assert conn.call("INCR", "text") == Err("ERR value is not an integer or out of range")
        assert conn.call("LPUSH", "text", "x") == Err(
            "WRONGTYPE Operation against a key holding the wrong kind of value")
        assert conn.call("RPUSH", "list", "x") == 1
        assert conn.call("GET", "list") == Err(
            "WRONGTYPE Operation against a key holding the wrong kind of value")
        assert conn.call("EXPIRE", "text", "soon") == Err(
            "ERR value is not an integer or out of range")
        # The connection stays usable after the errors.
        assert conn.call("GET", "text") == b"hello"


def test_killed_node_is_ejected(client, nodes):
    keys = numbered_keys("eject")
    set_all(client, keys, lambda key: f"before:{key}")
    held = keys_by_node(nodes)
    assert all(held), [len(node_keys) for node_keys in held]
    dead, survivors = nodes[1], [nodes[0], nodes[2]]
    lost = {key.decode() for key in held[1]}

    dead.kill()

    def every_key_served() -> bool:
        # Requests routed to the dead node fail (the proxy's "-ERR Connection refused", or a
        # dropped connection) until it has failed SERVER_FAILURE_LIMIT times and is ejected.
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
        try:
            replies = pipe.execute(raise_on_error=False)
        except redis.ConnectionError:
            return False
        return not any(isinstance(reply, redis.ResponseError) for reply in replies)

    wait_for(every_key_served, 20, "nutcracker to eject the killed node")

    # Ketama moves only the dead node's keys; the others keep their node and value.
    assert client.mget(keys) == [None if key in lost else f"before:{key}".encode()
                                 for key in keys]
    set_all(client, keys, lambda key: f"after:{key}")
    assert client.mget(keys) == [f"after:{key}".encode() for key in keys]
    assert sum(key_counts(survivors)) == len(keys)
