"""Failover with redis-sentinel (Debian's package): it monitors a primary of the kind under test
with two replicas of that kind, finds the replicas through the primary's INFO replication, and
when the primary is killed with SIGKILL under a write load it promotes one (REPLICAOF NO ONE in
a MULTI with CONFIG REWRITE and CLIENT KILL), points the other at it, and redis-py's Sentinel
client finds the new primary. Every write the new primary acknowledged is still there at the
end, on it and on the other replica.
"""

import shutil
import subprocess
import threading
import time

import pytest
import redis
from redis.sentinel import Sentinel

from support import OK, free_port, info, wait_for
from test_persistence import launch  # noqa: F401 (fixture)
from test_replication import follow, replication, wait_in_sync

DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 10_000


@pytest.fixture
def sentinel(tmp_path):
    """A redis-sentinel process; start(primary_port) writes its config and launches it."""
    if shutil.which("redis-sentinel") is None:
        pytest.fail("redis-sentinel not installed (scripts/test installs it)", pytrace=False)
    started = []

    def start(primary_port):
        port = free_port()
        conf = tmp_path / "sentinel.conf"
        conf.write_text("\n".join([
            f"port {port}", "bind 127.0.0.1", f"dir {tmp_path}",
            f"sentinel monitor main 127.0.0.1 {primary_port} 1",
            f"sentinel down-after-milliseconds main {DOWN_AFTER_MS}",
            f"sentinel failover-timeout main {FAILOVER_TIMEOUT_MS}",
            "sentinel parallel-syncs main 1", ""]))
        log = open(tmp_path / "sentinel.log", "wb")
        proc = subprocess.Popen(["redis-sentinel", str(conf)], stdout=log, stderr=subprocess.STDOUT)
        started.append((proc, log))
        client = redis.Redis(port=port)
        wait_for(lambda: _pings(client), 10, "sentinel to start")
        return port, client

    yield start
    for proc, log in started:
        proc.kill()
        proc.wait()
        log.close()


def _pings(client) -> bool:
    try:
        return client.ping()
    except redis.ConnectionError:
        return False


class AcknowledgedWrites(threading.Thread):
    """Writes through redis-py's Sentinel client until stopped, retrying through the failover,
    and remembers each write acknowledged and by which primary."""

    def __init__(self, sentinel_port):
        super().__init__(daemon=True)
        self.client = Sentinel([("127.0.0.1", sentinel_port)], socket_timeout=2).master_for(
            "main", socket_timeout=2)
        self.acknowledged = []  # (key, primary port)
        self.stop_event = threading.Event()

    def run(self):
        i = 0
        while not self.stop_event.is_set():
            key = f"w:{i}"
            try:
                self.client.set(key, i)
                port = self.client.connection_pool.get_master_address()[1]
                self.acknowledged.append((key, port))
                i += 1
            except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError):
                time.sleep(0.05)


def test_sentinel_fails_over_to_a_replica(launch, tmp_path, sentinel):
    folders = [tmp_path / name for name in ("a", "b", "c")]
    for folder in folders:
        folder.mkdir()
    primary = launch(folders[0], config={"repl-diskless-sync-delay": "0"})
    replicas = [launch(folder, config={"replica-priority": priority, "repl-diskless-sync-delay": "0"})
                for folder, priority in zip(folders[1:], ("100", "50"))]
    for replica in replicas:
        follow(replica, primary)
        wait_in_sync(primary, replica)
    sentinel_port, client = sentinel(primary.port)
    wait_for(lambda: len(client.sentinel_slaves("main")) == 2, 20,
             "sentinel to find both replicas through INFO replication")
    assert client.sentinel_master("main")["port"] == primary.port

    writes = AcknowledgedWrites(sentinel_port)
    writes.start()
    wait_for(lambda: len(writes.acknowledged) > 200, 20, "writes before the failover")
    primary.proc.kill()
    primary.proc.wait()
    killed_at = time.monotonic()

    def promoted():
        port = client.sentinel_get_master_addr_by_name("main")[1]
        return port if int(port) != primary.port else None
    new_port = int(wait_for(promoted, DOWN_AFTER_MS / 1000 + FAILOVER_TIMEOUT_MS / 1000,
                            "sentinel to promote a replica"))
    # replica-priority: the lower one is preferred, as Sentinel orders them.
    assert new_port == replicas[1].port
    new_primary, other = replicas[1], replicas[0]
    wait_for(lambda: any(port == new_port for _, port in writes.acknowledged), 20,
             "redis-py's Sentinel client to write to the new primary")
    failover_seconds = time.monotonic() - killed_at
    print(f"failover: {failover_seconds:.2f} s from SIGKILL to a write acknowledged by the new primary")
    wait_for(lambda: sum(port == new_port for _, port in writes.acknowledged) > 200, 20,
             "writes after the failover")
    writes.stop_event.set()
    writes.join(timeout=10)

    with new_primary.conn() as c:
        assert c.call("ROLE")[0] == b"master"
    with other.conn() as c:
        wait_for(lambda: replication(c).get("master_port") == str(new_port), 20,
                 "sentinel to point the other replica at the new primary")
    wait_in_sync(new_primary, other)
    after = [key for key, port in writes.acknowledged if port == new_port]
    for srv in (new_primary, other):
        with srv.conn() as c:
            values = c.pipeline([("GET", key) for key in after])
            missing = [key for key, value in zip(after, values) if value is None]
            assert not missing, f"{len(missing)} acknowledged writes lost on {srv.port}: {missing[:5]}"
    with new_primary.conn() as c:
        assert info(c, "replication")["connected_slaves"] == "1"
        assert c.call("SET", "still-writable", "yes") == OK
    assert failover_seconds < DOWN_AFTER_MS / 1000 + FAILOVER_TIMEOUT_MS / 1000
