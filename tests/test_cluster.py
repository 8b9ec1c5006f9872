"""Cluster mode (`cluster-enabled yes`, issue 22): primaries of the chosen kind form one
cluster and are driven as Redis Cluster clients and tools drive them.

The redis-server cluster is formed as operators form one, with `redis-cli --cluster create`
(nodes meet over the cluster bus); the keel one with `keel-cluster create`, which pushes the
topology to every node (keel has no cluster bus). Everything else is the same test against
both: redis-py's `RedisCluster` (100k keys routed by slot, multi-key commands over a hash tag,
pipelines across nodes, pub/sub and sharded pub/sub), the redirections with their exact texts
(MOVED, ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN), `redis-cli -c`, `redis-cli --cluster check` and
`reshard`, the shapes of CLUSTER INFO, NODES, SLOTS and SHARDS, a slot moved by hand with
Redis's own protocol (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE), the admin commands'
errors, uncovered slots, `nodes.conf` (a restart keeps the node's view; redis-server's file
loads and the other way round; garbage stops start-up), and replicas: READONLY reads, and a
replica taking over from a primary killed with SIGKILL (promoted with CLUSTER FAILOVER TAKEOVER
on Redis, `keel-cluster failover` on keel). The tests marked keel_differs cover what only keel
has: CLUSTER SETTOPOLOGY (a whole topology with an epoch; older ones are refused), CLUSTER MEET
refused (so `redis-cli --cluster create` stops there), and keel-cluster's check, reshard,
add-node, del-node and rebalance.

The shared three-primary cluster lives for the whole module; each test finds which node owns
what from CLUSTER SLOTS rather than assuming a layout, since some tests move slots and one
restarts a node. Every node gets its own free `cluster-port` (the bus port, port+10000 by
default, may not be free or even valid).
"""

from __future__ import annotations

import shutil
import subprocess
import threading

import pytest
import redis
from redis.cluster import ClusterNode, LoadBalancingStrategy, RedisCluster
from redis.crc import key_slot

from support import IO_TIMEOUT, OK, Err, ServerProcess, Status, free_port, info_dict, wait_for

SLOTS = 16384
REDIS_CLI = shutil.which("redis-cli") or "redis-cli"
TOOL_TIMEOUT = 60.0
# Cluster state changes on redis-server travel over the bus; generous, as the machine is shared.
SETTLE_TIMEOUT = 30.0

CROSSSLOT = Err("CROSSSLOT Keys in request don't hash to the same slot")
TRYAGAIN = Err("TRYAGAIN Multiple keys request during rehashing of slot")
CLUSTER_DOWN = Err("CLUSTERDOWN The cluster is down")
SLOT_NOT_SERVED = Err("CLUSTERDOWN Hash slot not served")
NO_CLUSTER = Err("ERR This instance has cluster support disabled")


# ---- helpers ---------------------------------------------------------------------------------


def cluster_directives(**extra) -> dict:
    """Directives of a cluster node: cluster mode, and a bus port known to be free."""
    return {"cluster-enabled": "yes", "cluster-port": free_port(), **extra}


def keel_cluster_bin(keel_bin):
    return keel_bin.parent / "keel-cluster"


def call(node, *args):
    """One command on a new exact connection to `node` (a ServerProcess)."""
    with node.conn() as c:
        return c.call(*args)


def cluster_info(node) -> dict:
    return info_dict(call(node, "CLUSTER", "INFO"))


def nodes_lines(node) -> list[list[str]]:
    """CLUSTER NODES, as the fields of each line."""
    text = call(node, "CLUSTER", "NODES")
    assert isinstance(text, bytes), text
    text = text.decode()
    assert text.endswith("\n"), text
    return [line.split(" ") for line in text.splitlines()]


def slots_view(node):
    """CLUSTER SLOTS, sorted, as (start, end, ((ip, port, id), ...)) tuples."""
    reply = call(node, "CLUSTER", "SLOTS")
    assert isinstance(reply, list), reply
    return sorted((r[0], r[1], tuple((n[0], n[1], n[2]) for n in r[2:])) for r in reply)


def run_tool(*argv, timeout=TOOL_TIMEOUT):
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout + p.stderr


def key_in_slot(slot_predicate, prefix="k") -> str:
    """The first key `prefix:N` whose slot satisfies `slot_predicate`."""
    for i in range(1_000_000):
        key = f"{prefix}:{i}"
        if slot_predicate(key_slot(key.encode())):
            return key
    raise AssertionError("no key found")


def topology_text(entries) -> str:
    """CLUSTER SETTOPOLOGY's text: one CLUSTER NODES line per (id, port, bus port, config epoch,
    slot ranges) entry, every node a primary."""
    lines = []
    for node_id, port, bus_port, epoch, ranges in entries:
        slots = " ".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)
        lines.append(f"{node_id} 127.0.0.1:{port}@{bus_port} master - 0 0 {epoch} connected {slots}"
                     .rstrip())
    return "\n".join(lines) + "\n"


class Cluster:
    """Nodes (ServerProcess instances) formed into one cluster."""

    def __init__(self, kind, nodes):
        self.kind = kind
        self.nodes = nodes

    def by_port(self, port):
        return next(n for n in self.nodes if n.port == port)

    def node_id(self, node) -> str:
        return call(node, "CLUSTER", "MYID").decode()

    def owner_of_slot(self, slot):
        """The node serving `slot`, from the first node's CLUSTER SLOTS."""
        for start, end, members in slots_view(self.nodes[0]):
            if start <= slot <= end:
                return self.by_port(members[0][1])
        raise AssertionError(f"slot {slot} is not served")

    def owner(self, key):
        return self.owner_of_slot(key_slot(key.encode()))

    def not_owner(self, key):
        owner = self.owner(key)
        return next(n for n in self.nodes if n is not owner)

    def client(self, **kw) -> RedisCluster:
        kw.setdefault("socket_timeout", IO_TIMEOUT)
        kw.setdefault("socket_connect_timeout", IO_TIMEOUT)
        return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", self.nodes[0].port)], **kw)

    def flushall(self):
        for node in self.nodes:
            assert call(node, "FLUSHALL") == OK

    def is_healthy(self):
        """True once every node reports cluster_state:ok and all give the same CLUSTER SLOTS,
        covering every slot."""
        views = []
        for node in self.nodes:
            if cluster_info(node).get("cluster_state") != "ok":
                return False
            # (A replica still loading its primary's data answers -LOADING.)
            if isinstance(call(node, "CLUSTER", "SLOTS"), Err):
                return False
            views.append(slots_view(node))
        if any(v != views[0] for v in views):
            return False
        return sum(end - start + 1 for start, end, _ in views[0]) == SLOTS

    def wait_healthy(self):
        wait_for(self.is_healthy, SETTLE_TIMEOUT,
                 "every node to report cluster_state:ok and the same CLUSTER SLOTS")


def start_nodes(kind, keel_bin, count, directives=None):
    nodes = []
    try:
        for _ in range(count):
            nodes.append(ServerProcess(kind, keel_bin=keel_bin,
                                       directives=cluster_directives(**(directives or {}))).start())
    except BaseException:
        for node in nodes:
            node.cleanup()
        raise
    return nodes


def form_cluster(kind, keel_bin, nodes) -> Cluster:
    """Makes one cluster of `nodes` with the kind's own tool, slots spread evenly."""
    addresses = [f"127.0.0.1:{n.port}" for n in nodes]
    if kind == "redis":
        code, out = run_tool(REDIS_CLI, "--cluster", "create", *addresses, "--cluster-yes")
        assert code == 0, f"redis-cli --cluster create failed ({code}):\n{out}"
    else:
        tool = keel_cluster_bin(keel_bin)
        assert tool.exists(), f"{tool} is missing (build it with `cargo build --release`)"
        code, out = run_tool(tool, "create", *addresses)
        assert code == 0, f"keel-cluster create failed ({code}):\n{out}"
    cluster = Cluster(kind, nodes)
    cluster.wait_healthy()
    return cluster


def stop_node(node):
    rc = node.stop()
    if node.kind == "keel":
        assert rc == 0, f"keel-server exited with {rc} after SIGTERM:\n{node.log_tail()}"


# ---- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(server_kind, keel_bin):
    """Three primaries of the chosen kind in one cluster, formed with the kind's own tool."""
    nodes = start_nodes(server_kind, keel_bin, 3)
    try:
        yield form_cluster(server_kind, keel_bin, nodes)
        for node in nodes:
            stop_node(node)
    finally:
        for node in nodes:
            node.cleanup()


@pytest.fixture
def healthy(cluster):
    """The shared cluster, healthy and empty at the start of the test."""
    cluster.wait_healthy()
    cluster.flushall()
    return cluster


@pytest.fixture
def rc(healthy):
    client = healthy.client(decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def lone_node(start_server):
    """A cluster node on its own: it knows only itself and serves no slot."""
    return start_server(cluster_directives())


# ---- clients: redis-py's RedisCluster --------------------------------------------------------


def test_hundred_thousand_keys_spread_over_every_primary(healthy, rc):
    count = 100_000
    data = {f"key:{i}": f"value:{i}" for i in range(count)}
    # MSET per slot, pipelined per node (redis-py splits by slot).
    assert all(rc.mset_nonatomic(data))
    values = rc.mget_nonatomic(list(data))
    missing = [k for k, v in zip(data, values) if v != data[k]]
    assert not missing, f"{len(missing)} keys did not read back, e.g. {missing[:5]}"

    # Single-key commands, routed one by one, and pipelined SET/GET across every slot.
    for i in range(300):
        assert rc.set(f"single:{i}", i) is True
        assert rc.get(f"single:{i}") == str(i)
    pipe = rc.pipeline(transaction=False)
    for i in range(count):
        pipe.set(f"key:{i}", f"again:{i}")
    assert all(r is True for r in pipe.execute())
    pipe = rc.pipeline(transaction=False)
    for i in range(count):
        pipe.get(f"key:{i}")
    got = pipe.execute()
    assert got == [f"again:{i}" for i in range(count)]

    # Keyspace commands act on the node: each holds about a third, and only its own slots.
    sizes = [call(n, "DBSIZE") for n in healthy.nodes]
    assert sum(sizes) == count + 300, sizes
    assert all(s > (count + 300) / 5 for s in sizes), sizes
    for node in healthy.nodes:
        owned = {s for start, end, m in slots_view(node) if m[0][1] == node.port
                 for s in range(start, end + 1)}
        with node.conn() as c:
            for _ in range(20):
                key = c.call("RANDOMKEY")
                assert key_slot(key) in owned, (node.port, key)
            cursor, keys = c.call("SCAN", 0, "COUNT", 100)
            assert keys and all(key_slot(k) in owned for k in keys)
    healthy.flushall()


def test_mget_mset_over_a_hash_tag(healthy, rc):
    keys = [f"{{user1}}:{f}" for f in ("a", "b", "c", "d")]
    assert len({key_slot(k.encode()) for k in keys}) == 1
    assert rc.mset({k: k.upper() for k in keys}) is True
    assert rc.mget(keys) == [k.upper() for k in keys]
    assert rc.mget(keys + ["{user1}:missing"]) == [k.upper() for k in keys] + [None]
    owner = healthy.owner(keys[0])
    assert call(owner, "MGET", *keys) == [k.upper().encode() for k in keys]
    assert call(owner, "EXISTS", *keys) == 4
    assert rc.delete(*keys[:2]) == 2
    # Every key is on the owner, none on the other nodes.
    for node in healthy.nodes:
        assert call(node, "DBSIZE") == (2 if node is owner else 0)


def test_cross_slot_commands_are_refused(healthy, rc):
    a, b = "foo", "bar"  # slots 12182 and 5061
    assert key_slot(a.encode()) != key_slot(b.encode())
    for node in healthy.nodes:
        # CROSSSLOT comes before any redirection, on every node.
        assert call(node, "MSET", a, "1", b, "2") == CROSSSLOT
        assert call(node, "MGET", a, b) == CROSSSLOT
        assert call(node, "DEL", a, b) == CROSSSLOT
    with pytest.raises(redis.exceptions.RedisClusterException):
        rc.mset({a: "1", b: "2"})
    assert rc.get(a) is None and rc.get(b) is None
    # The non-atomic forms split by slot.
    assert all(rc.mset_nonatomic({a: "1", b: "2"}))
    assert rc.mget_nonatomic([a, b]) == ["1", "2"]


def test_scripts_and_transactions_stay_in_one_slot(healthy):
    node = healthy.nodes[0]
    mine = [key_in_slot(lambda s: healthy.owner_of_slot(s) is node, p) for p in ("tx", "ty")]
    assert key_slot(mine[0].encode()) != key_slot(mine[1].encode())
    theirs = key_in_slot(lambda s: healthy.owner_of_slot(s) is not node, "tz")
    slot = key_slot(theirs.encode())
    moved = Err(f"MOVED {slot} 127.0.0.1:{healthy.owner(theirs).port}")
    with node.conn() as c:
        assert c.call("EVAL", "return redis.call('set', KEYS[1], ARGV[1])", 1, mine[0], "v") == OK
        assert c.call("EVAL", "return 1", 2, *mine) == CROSSSLOT
        assert c.call("EVAL", "return 1", 1, theirs) == moved
        assert c.call("EVAL", "return 1", 0) == 1
        # In a transaction: each command is checked as it is queued, and EXEC checks them all.
        assert c.call("MULTI") == OK
        assert c.call("SET", mine[0], "1") == Status("QUEUED")
        assert c.call("SET", mine[1], "2") == Status("QUEUED")
        assert c.call("EXEC") == CROSSSLOT
        assert c.call("MULTI") == OK
        assert c.call("GET", theirs) == moved
        assert c.call("EXEC") == Err("EXECABORT Transaction discarded because of previous errors.")
        assert c.call("MULTI") == OK
        assert c.call("SET", mine[0], "1") == Status("QUEUED")
        assert c.call("INCR", mine[0]) == Status("QUEUED")
        assert c.call("EXEC") == [OK, 2]
        assert c.call("GET", mine[1]) is None


def test_pipeline_across_slots(healthy, rc):
    keys = [f"pipe:{i}" for i in range(60)]
    assert len({healthy.owner(k).port for k in keys}) == 3
    pipe = rc.pipeline()
    for i, k in enumerate(keys):
        pipe.set(k, i)
        pipe.incr(k)
        pipe.get(k)
    replies = pipe.execute()
    assert replies == [x for i in range(60) for x in (True, i + 1, str(i + 1))]

    # An error in one command comes back in its place; the others still run.
    assert rc.set("pipe:text", "abc")
    pipe = rc.pipeline()
    pipe.incr("pipe:0")
    pipe.incr("pipe:text")
    pipe.get("pipe:59")
    first, error, last = pipe.execute(raise_on_error=False)
    assert first == 2 and last == "60"
    assert isinstance(error, redis.exceptions.ResponseError)
    assert str(error) == "value is not an integer or out of range"


def read_messages(pubsub, count, get):
    """`count` messages (not subscribe confirmations) from `get`, polled."""
    got = []

    def more():
        while True:
            message = get()
            if message is None:
                return len(got) >= count
            if message["type"] in ("message", "smessage"):
                got.append((message["channel"], message["data"]))
    wait_for(more, 10, f"{count} messages")
    return got


def test_pubsub_through_redis_cluster(healthy, rc):
    p = rc.pubsub()
    try:
        p.subscribe("news")
        wait_for(lambda: p.get_message(timeout=0.1), 10, "the subscribe confirmation")
        # redis-py sends PUBLISH to the node of the channel's slot, where it subscribed.
        assert rc.publish("news", "hello") == 1
        assert read_messages(p, 1, lambda: p.get_message(timeout=0.1)) == [("news", "hello")]
    finally:
        p.close()


def test_publish_reaches_subscribers_on_every_node(healthy, server_kind):
    """In Redis Cluster a PUBLISH on any node reaches the subscribers of every node (it is
    broadcast over the bus); PUBLISH's reply counts the receiving node's subscribers only.
    keel has no bus: a PUBLISH reaches the subscribers of the node it is sent to (sharded
    pub/sub, SPUBLISH/SSUBSCRIBE, is the cluster-wide form; docs/cluster.md)."""
    subscriber_node, publisher_node = healthy.nodes[0], healthy.nodes[1]
    with subscriber_node.conn() as sub, publisher_node.conn() as pub:
        assert sub.call("SUBSCRIBE", "everywhere") == [b"subscribe", b"everywhere", 1]
        assert pub.call("PUBLISH", "everywhere", "hi") == 0
        if server_kind == "keel":
            assert sub.call("PING") == [b"pong", b""]
            assert call(subscriber_node, "PUBLISH", "everywhere", "local") == 1
            assert sub.read() == [b"message", b"everywhere", b"local"]
            return
        sub.sock.settimeout(5)
        assert sub.read() == [b"message", b"everywhere", b"hi"]


def test_sharded_pubsub_through_redis_cluster(healthy, rc):
    # One shard channel on each primary.
    channels = []
    for node in healthy.nodes:
        channels.append(key_in_slot(lambda s, n=node: healthy.owner_of_slot(s) is n, "orders"))
    p = rc.pubsub()
    try:
        for ch in channels:
            p.ssubscribe(ch)
        confirmed = []

        def all_confirmed():
            for node_pubsub in p.node_pubsub_mapping.values():
                message = node_pubsub.get_message(timeout=0.01)
                if message is not None and message["type"] == "ssubscribe":
                    confirmed.append(message["channel"])
            return len(confirmed) == 3
        wait_for(all_confirmed, 10, "every SSUBSCRIBE to be confirmed")
        assert sorted(confirmed) == sorted(channels)
        for i, ch in enumerate(channels):
            assert rc.spublish(ch, f"m{i}") == 1
        got = read_messages(p, 3, lambda: p.get_sharded_message(timeout=0.1))
        assert sorted(got) == sorted((ch, f"m{i}") for i, ch in enumerate(channels))
    finally:
        p.disconnect()
        p.close()

    # Raw: the owner serves a shard channel, the others redirect; one slot per command.
    ch = "{%s}raw" % channels[0]
    slot = key_slot(ch.encode())
    owner = healthy.owner(ch)
    other = healthy.not_owner(ch)
    assert call(other, "SPUBLISH", ch, "x") == Err(f"MOVED {slot} 127.0.0.1:{owner.port}")
    with other.conn() as c:
        assert c.call("SSUBSCRIBE", ch) == Err(f"MOVED {slot} 127.0.0.1:{owner.port}")
    with owner.conn() as c:
        assert c.call("SSUBSCRIBE", ch, channels[1]) == CROSSSLOT
        assert c.call("SSUBSCRIBE", ch) == [b"ssubscribe", ch.encode(), 1]
        assert call(owner, "SPUBLISH", ch, "raw") == 1
        assert c.read() == [b"smessage", ch.encode(), b"raw"]


# ---- redirections on raw connections ---------------------------------------------------------


def test_moved_to_the_owner(healthy):
    for key in ("foo", "bar", "user1000", "{user1000}.following"):
        slot = key_slot(key.encode())
        owner = healthy.owner(key)
        assert call(owner, "SET", key, "v") == OK
        for node in healthy.nodes:
            if node is owner:
                assert call(node, "GET", key) == b"v"
            else:
                moved = Err(f"MOVED {slot} 127.0.0.1:{owner.port}")
                assert call(node, "GET", key) == moved
                assert call(node, "SET", key, "w") == moved
                # A key the node does not hold is redirected too: routing is by slot.
                assert call(node, "EXISTS", key) == moved
    # Commands without keys are served anywhere.
    for node in healthy.nodes:
        assert call(node, "PING") == Status("PONG")
        assert call(node, "DBSIZE") == (sum(1 for k in ("foo", "bar", "user1000",
                                                         "{user1000}.following")
                                             if healthy.owner(k) is node))


def test_keyslot(healthy):
    node = healthy.nodes[1]
    assert call(node, "CLUSTER", "KEYSLOT", "foo") == 12182
    assert call(node, "CLUSTER", "KEYSLOT", "bar") == 5061
    assert call(node, "CLUSTER", "KEYSLOT", "") == 0
    user = call(node, "CLUSTER", "KEYSLOT", "user1000")
    assert call(node, "CLUSTER", "KEYSLOT", "{user1000}.following") == user
    assert call(node, "CLUSTER", "KEYSLOT", "{user1000}.followers") == user
    # Hash tags: the first {...} with something inside; `{}` hashes the whole key.
    assert (call(node, "CLUSTER", "KEYSLOT", "foo{bar}{zap}")
            == call(node, "CLUSTER", "KEYSLOT", "bar"))
    assert (call(node, "CLUSTER", "KEYSLOT", "foo{{bar}}zap")
            == call(node, "CLUSTER", "KEYSLOT", "{bar"))
    assert call(node, "CLUSTER", "KEYSLOT", "foo{}{bar}") == key_slot(b"foo{}{bar}")
    assert call(node, "CLUSTER", "KEYSLOT", "{}") == key_slot(b"{}")
    for i in range(200):
        key = f"any:{i}:\xff{{x{i}"
        assert call(node, "CLUSTER", "KEYSLOT", key) == key_slot(key.encode())
    assert call(node, "CLUSTER", "KEYSLOT") == Err(
        "ERR wrong number of arguments for 'cluster|keyslot' command")


# ---- redis-cli --------------------------------------------------------------------------------


def test_redis_cli_follows_moved(healthy):
    key = "foo"
    other = healthy.not_owner(key)
    moved = f"MOVED {key_slot(b'foo')} 127.0.0.1:{healthy.owner(key).port}"
    code, out = run_tool(REDIS_CLI, "-p", other.port, "set", key, "from-cli")
    assert (code, out.strip()) == (0, moved)
    assert run_tool(REDIS_CLI, "-c", "-p", other.port, "set", key, "from-cli") == (0, "OK\n")
    assert run_tool(REDIS_CLI, "-c", "-p", other.port, "get", key) == (0, "from-cli\n")
    assert call(healthy.owner(key), "GET", key) == b"from-cli"


def test_redis_cli_cluster_check(healthy):
    for node in healthy.nodes:
        code, out = run_tool(REDIS_CLI, "--cluster", "check", f"127.0.0.1:{node.port}")
        assert code == 0, out
        assert "[OK] All nodes agree about slots configuration." in out, out
        assert "[OK] All 16384 slots covered." in out, out
        assert "[ERR]" not in out and "[WARNING]" not in out, out
        assert "3 masters" in out or out.count("M: ") == 3, out


def owned_slots(node) -> set[int]:
    """The slots `node` serves, by its own CLUSTER SLOTS."""
    return {s for start, end, members in slots_view(node) if members[0][1] == node.port
            for s in range(start, end + 1)}


def assert_reads_back(cluster, data):
    """Every key of `data` reads back through a new RedisCluster client, and each node holds
    exactly the keys of its slots."""
    client = cluster.client(decode_responses=True)
    try:
        values = client.mget_nonatomic(list(data))
    finally:
        client.close()
    missing = [k for k, v in zip(data, values) if v != data[k]]
    assert not missing, f"{len(missing)} keys did not read back, e.g. {missing[:5]}"
    for node in cluster.nodes:
        owned = owned_slots(node)
        assert call(node, "DBSIZE") == sum(1 for k in data if key_slot(k.encode()) in owned)


def test_redis_cli_cluster_reshard(healthy, rc):
    """Redis's own tool moves slots with Redis's protocol (SETSLOT IMPORTING/MIGRATING,
    GETKEYSINSLOT, MIGRATE, SETSLOT NODE on every node)."""
    data = {f"re:{i}": str(i) for i in range(3000)}
    assert all(rc.mset_nonatomic(data))
    source, target = healthy.nodes[0], healthy.nodes[1]
    before_source, before_target = owned_slots(source), owned_slots(target)
    code, out = run_tool(REDIS_CLI, "--cluster", "reshard", f"127.0.0.1:{source.port}",
                         "--cluster-from", healthy.node_id(source),
                         "--cluster-to", healthy.node_id(target),
                         "--cluster-slots", 200, "--cluster-yes")
    assert code == 0, out
    healthy.wait_healthy()
    moved = before_source - owned_slots(source)
    assert len(moved) == 200 and owned_slots(target) == before_target | moved
    assert_reads_back(healthy, data)
    code, out = run_tool(REDIS_CLI, "--cluster", "check", f"127.0.0.1:{target.port}")
    assert code == 0 and "[OK] All 16384 slots covered." in out, out


def test_writes_during_a_reshard_are_kept(healthy, rc, keel_bin):
    """A RedisCluster client keeps writing while slots move (it follows ASK and MOVED, and
    retries TRYAGAIN); every write it saw acknowledged reads back afterwards."""
    source, target = healthy.nodes[1], healthy.nodes[2]
    before_source = owned_slots(source)
    acknowledged, errors = [], []
    stop = threading.Event()

    def write():
        client = healthy.client(decode_responses=True)
        try:
            i = 0
            while not stop.is_set():
                # Keys over every slot, existing ones rewritten too.
                key = f"live:{i % 5000}"
                try:
                    client.set(key, i)
                    acknowledged.append((key, i))
                except redis.exceptions.RedisError as e:
                    errors.append(repr(e))
                i += 1
        finally:
            client.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_for(lambda: len(acknowledged) > 200, SETTLE_TIMEOUT, "the writer to start")
        # The kind's own tool (redis-cli's reshard against keel is tested above).
        if healthy.kind == "redis":
            argv = [REDIS_CLI, "--cluster", "reshard", f"127.0.0.1:{source.port}",
                    "--cluster-from", healthy.node_id(source), "--cluster-to",
                    healthy.node_id(target), "--cluster-slots", 500, "--cluster-yes"]
        else:
            argv = [keel_cluster_bin(keel_bin), "reshard", f"127.0.0.1:{source.port}",
                    "--from", healthy.node_id(source), "--to", healthy.node_id(target),
                    "--slots", 500]
        during = len(acknowledged)
        code, out = run_tool(*argv)
        assert code == 0, out
        wait_for(lambda: len(acknowledged) > during + 200, SETTLE_TIMEOUT, "more writes")
    finally:
        stop.set()
        writer.join()
    assert errors == []
    healthy.wait_healthy()
    assert len(before_source - owned_slots(source)) == 500
    latest = dict(acknowledged)
    assert_reads_back(healthy, {k: str(v) for k, v in latest.items()})


# ---- CLUSTER INFO, NODES, SLOTS, SHARDS ------------------------------------------------------


INFO_FIELDS = ["cluster_state", "cluster_slots_assigned", "cluster_slots_ok",
               "cluster_slots_pfail", "cluster_slots_fail", "cluster_known_nodes",
               "cluster_size", "cluster_current_epoch", "cluster_my_epoch"]


def test_cluster_info(healthy):
    for node in healthy.nodes:
        text = call(node, "CLUSTER", "INFO")
        assert isinstance(text, bytes) and text.endswith(b"\r\n"), text
        fields = info_dict(text)
        # The fields clients read, in Redis's order (the message counters after them are the
        # bus's).
        assert list(fields)[:len(INFO_FIELDS)] == INFO_FIELDS, list(fields)
        assert {k: fields[k] for k in INFO_FIELDS[:7]} == {
            "cluster_state": "ok", "cluster_slots_assigned": "16384", "cluster_slots_ok": "16384",
            "cluster_slots_pfail": "0", "cluster_slots_fail": "0", "cluster_known_nodes": "3",
            "cluster_size": "3"}
        me = next(line for line in nodes_lines(node) if "myself" in line[2].split(","))
        assert fields["cluster_my_epoch"] == me[6]
        epochs = [int(line[6]) for line in nodes_lines(node)]
        assert int(fields["cluster_current_epoch"]) >= max(epochs)


def parse_ranges(fields):
    """Slot fields of a CLUSTER NODES line as (start, end) pairs (migrating/importing skipped)."""
    out = []
    for f in fields:
        if f.startswith("["):
            continue
        a, _, b = f.partition("-")
        out.append((int(a), int(b or a)))
    return out


def test_cluster_nodes_format(healthy):
    ids = {node.port: healthy.node_id(node) for node in healthy.nodes}
    buses = {node.port: call(node, "CONFIG", "GET", "cluster-port")[1].decode()
             for node in healthy.nodes}
    assert all(len(i) == 40 and all(c in "0123456789abcdef" for c in i) for i in ids.values())
    assert len(set(ids.values())) == 3
    views = []
    for node in healthy.nodes:
        lines = nodes_lines(node)
        assert len(lines) == 3
        mine = [line for line in lines if "myself" in line[2].split(",")]
        assert len(mine) == 1 and mine[0][0] == ids[node.port]
        view = {}
        for line in lines:
            assert len(line) >= 9, line
            node_id, address, flags, primary, ping, pong, epoch, link = line[:8]
            host_port, _, bus_port = address.partition("@")
            ip, _, port = host_port.partition(":")
            port = int(port)
            assert ip == "127.0.0.1" and ids[port] == node_id, line
            # The bus port is the one configured (cluster-port), as Redis announces it.
            assert bus_port == buses[port], line
            assert set(flags.split(",")) == ({"myself", "master"} if port == node.port
                                             else {"master"}), flags
            assert primary == "-"
            assert ping.isdigit() and pong.isdigit() and epoch.isdigit()
            assert link == "connected"
            view[node_id] = (address, sorted(parse_ranges(line[8:])))
        views.append(view)
        # The same slots as CLUSTER SLOTS gives.
        from_slots = {}
        for start, end, members in slots_view(node):
            from_slots.setdefault(members[0][2].decode(), []).append((start, end))
        assert {i: sorted(r) for i, r in from_slots.items()} == {i: v[1] for i, v in view.items()}
    assert views[0] == views[1] == views[2]
    covered = sorted(r for v in views[0].values() for r in v[1])
    assert sum(b - a + 1 for a, b in covered) == SLOTS
    assert all(covered[i][1] + 1 == covered[i + 1][0] for i in range(len(covered) - 1))


def test_cluster_slots_shape(healthy):
    replies = [call(node, "CLUSTER", "SLOTS") for node in healthy.nodes]
    ids = {node.port: healthy.node_id(node).encode() for node in healthy.nodes}
    for reply in replies:
        assert isinstance(reply, list) and len(reply) >= 3
        assert [r[0] for r in reply] == sorted(r[0] for r in reply), "ranges in slot order"
        for entry in reply:
            start, end, primary, *replicas = entry
            assert isinstance(start, int) and isinstance(end, int) and 0 <= start <= end < SLOTS
            assert replicas == []
            ip, port, node_id, *metadata = primary
            assert ip == b"127.0.0.1" and ids[port] == node_id
            # Redis 7.0 adds a (here empty) map of extra networking metadata.
            assert metadata == [[]], primary
    assert sorted(replies[0]) == sorted(replies[1]) == sorted(replies[2])


SHARD_NODE_FIELDS = [b"id", b"port", b"ip", b"endpoint", b"role", b"replication-offset",
                     b"health"]


def test_cluster_shards_shape(healthy):
    ids = {node.port: healthy.node_id(node).encode() for node in healthy.nodes}
    views = []
    for node in healthy.nodes:
        reply = call(node, "CLUSTER", "SHARDS")
        assert isinstance(reply, list) and len(reply) == 3, reply
        view = []
        for shard in reply:
            assert shard[0::2] == [b"slots", b"nodes"], shard
            slots, members = shard[1], shard[3]
            assert slots and len(slots) % 2 == 0 and all(isinstance(s, int) for s in slots)
            assert len(members) == 1
            fields = dict(zip(members[0][0::2], members[0][1::2]))
            assert members[0][0::2] == SHARD_NODE_FIELDS, members[0]
            assert ids[fields[b"port"]] == fields[b"id"]
            assert fields[b"ip"] == fields[b"endpoint"] == b"127.0.0.1"
            assert fields[b"role"] == b"master" and fields[b"health"] == b"online"
            assert isinstance(fields[b"replication-offset"], int)
            view.append((tuple(slots), fields[b"id"], fields[b"port"]))
        views.append(sorted(view))
    assert views[0] == views[1] == views[2]
    # The same slots as CLUSTER SLOTS.
    from_slots = {}
    for start, end, members in slots_view(healthy.nodes[0]):
        from_slots.setdefault(members[0][2], []).append((start, end))
    assert {node_id: sorted(zip(slots[0::2], slots[1::2])) for slots, node_id, _ in views[0]} == {
        i: sorted(r) for i, r in from_slots.items()}


# ---- a single node -----------------------------------------------------------------------------


def test_single_node_owning_every_slot_is_a_cluster(lone_node):
    assert cluster_info(lone_node)["cluster_state"] == "fail"
    assert call(lone_node, "GET", "foo") == SLOT_NOT_SERVED
    assert call(lone_node, "CLUSTER", "ADDSLOTSRANGE", 0, SLOTS - 1) == OK
    wait_for(lambda: cluster_info(lone_node)["cluster_state"] == "ok", SETTLE_TIMEOUT,
             "cluster_state:ok")
    fields = cluster_info(lone_node)
    assert (fields["cluster_slots_assigned"], fields["cluster_known_nodes"],
            fields["cluster_size"]) == ("16384", "1", "1")
    reply = call(lone_node, "CLUSTER", "SLOTS")
    assert len(reply) == 1 and reply[0][:2] == [0, SLOTS - 1]
    assert reply[0][2][1:3] == [lone_node.port, call(lone_node, "CLUSTER", "MYID")]

    client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", lone_node.port)],
                          decode_responses=True, socket_timeout=IO_TIMEOUT)
    try:
        data = {f"one:{i}": str(i) for i in range(2000)}
        assert all(client.mset_nonatomic(data))
        assert client.mget_nonatomic(list(data)) == list(data.values())
        assert client.mset({"{t}a": "1", "{t}b": "2"}) is True
        assert client.mget("{t}a", "{t}b") == ["1", "2"]
        pipe = client.pipeline()
        for i in range(100):
            pipe.incr(f"one:{i}")
        assert pipe.execute() == [i + 1 for i in range(100)]
        assert client.dbsize() == 2002
    finally:
        client.close()
    assert call(lone_node, "MSET", "foo", "1", "bar", "2") == CROSSSLOT


# ---- moving a slot by hand -------------------------------------------------------------------


def test_slot_migration_with_setslot_and_migrate(healthy):
    keys = [f"{{mig}}:{i}" for i in range(1, 5)]
    slot = key_slot(keys[0].encode())
    source = healthy.owner(keys[0])
    target, third = [n for n in healthy.nodes if n is not source]
    source_id, target_id = healthy.node_id(source), healthy.node_id(target)
    source_addr, target_addr = f"127.0.0.1:{source.port}", f"127.0.0.1:{target.port}"
    ask = Err(f"ASK {slot} {target_addr}")
    with source.conn() as src, target.conn() as dst:
        for k in keys:
            assert src.call("SET", k, f"v{k}") == OK

        assert dst.call("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id) == OK
        assert src.call("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id) == OK
        me = next(line for line in nodes_lines(source) if "myself" in line[2])
        assert f"[{slot}->-{target_id}]" in me
        me = next(line for line in nodes_lines(target) if "myself" in line[2])
        assert f"[{slot}-<-{source_id}]" in me

        # Everything is still on the source: it serves as before.
        assert src.call("GET", keys[0]) == f"v{keys[0]}".encode()
        assert src.call("MGET", *keys) == [f"v{k}".encode() for k in keys]
        # A key the source does not hold is asked of the target, reads and writes alike.
        assert src.call("GET", "{mig}:new") == ask
        assert src.call("SET", "{mig}:new", "x") == ask

        assert src.call("MIGRATE", "127.0.0.1", target.port, "", 0, 5000,
                        "KEYS", keys[0], keys[1]) == OK
        assert src.call("EXISTS", keys[0]) == ask
        assert src.call("GET", keys[0]) == ask
        assert src.call("GET", keys[2]) == f"v{keys[2]}".encode()
        # Some keys here and some moved: try again later; all moved: ask the target.
        assert src.call("MGET", keys[0], keys[2]) == TRYAGAIN
        assert src.call("MGET", keys[0], keys[1]) == ask
        # The source may not give the slot away while it holds keys of it.
        assert src.call("CLUSTER", "SETSLOT", slot, "NODE", target_id) == Err(
            f"ERR Can't assign hashslot {slot} to a different node while I still hold keys "
            "for this hash slot.")

        # The target serves the importing slot only after ASKING, for one command.
        assert dst.call("GET", keys[0]) == Err(f"MOVED {slot} {source_addr}")
        assert dst.call("ASKING") == OK
        assert dst.call("GET", keys[0]) == f"v{keys[0]}".encode()
        assert dst.call("GET", keys[0]) == Err(f"MOVED {slot} {source_addr}")
        assert dst.call("ASKING") == OK
        assert dst.call("MGET", keys[0], keys[1]) == [f"v{k}".encode() for k in keys[:2]]
        assert dst.call("ASKING") == OK
        assert dst.call("MGET", keys[0], keys[2]) == TRYAGAIN
        assert dst.call("ASKING") == OK
        assert dst.call("SET", "{mig}:new", "x") == OK
        # Third parties still send clients to the source.
        assert call(third, "GET", keys[0]) == Err(f"MOVED {slot} {source_addr}")

        assert src.call("MIGRATE", "127.0.0.1", target.port, "", 0, 5000,
                        "KEYS", keys[2], keys[3]) == OK
        assert src.call("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        # All gone from the source: every key of the slot is asked of the target now.
        assert src.call("MGET", *keys) == ask

        # Ownership flips: the target first, then the source, then everyone else.
        assert dst.call("CLUSTER", "SETSLOT", slot, "NODE", target_id) == OK
        assert src.call("CLUSTER", "SETSLOT", slot, "NODE", target_id) == OK
        assert call(third, "CLUSTER", "SETSLOT", slot, "NODE", target_id) == OK

        moved = Err(f"MOVED {slot} {target_addr}")
        assert src.call("GET", keys[0]) == moved
        assert call(third, "GET", keys[0]) == moved
        assert dst.call("MGET", *keys) == [f"v{k}".encode() for k in keys]
        assert dst.call("GET", "{mig}:new") == b"x"
        assert dst.call("CLUSTER", "COUNTKEYSINSLOT", slot) == 5
        assert sorted(dst.call("CLUSTER", "GETKEYSINSLOT", slot, 10)) == sorted(
            k.encode() for k in keys + ["{mig}:new"])
        assert len(dst.call("CLUSTER", "GETKEYSINSLOT", slot, 2)) == 2
        assert src.call("CLUSTER", "GETKEYSINSLOT", slot, 10) == []
        for line in nodes_lines(source) + nodes_lines(target):
            assert not any(f.startswith("[") for f in line[8:]), line

    healthy.wait_healthy()
    assert healthy.owner_of_slot(slot) is target
    for node in healthy.nodes:
        assert healthy.owner_of_slot(slot).port == target.port
        assert (slot, slot, ((b"127.0.0.1", target.port, target_id.encode()),)) in slots_view(node)
    client = healthy.client(decode_responses=True)
    try:
        assert client.mget(keys) == [f"v{k}" for k in keys]
    finally:
        client.close()


def test_blocked_client_is_redirected_when_its_slot_moves(healthy):
    """A client blocked on a key gets MOVED once the key's slot is given to another node."""
    source = healthy.nodes[1]
    key = key_in_slot(lambda s: healthy.owner_of_slot(s) is source, "blocked")
    slot = key_slot(key.encode())
    target = next(n for n in healthy.nodes if n is not source)
    target_id, source_id = healthy.node_id(target), healthy.node_id(source)
    with source.conn() as blocked:
        blocked.send("BLPOP", key, 0)
        wait_for(lambda: info_dict(call(source, "INFO", "clients"))["blocked_clients"] == "1",
                 SETTLE_TIMEOUT, "the client to block")
        assert call(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id) == OK
        assert call(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id) == OK
        for node in [target, source] + [n for n in healthy.nodes if n not in (source, target)]:
            assert call(node, "CLUSTER", "SETSLOT", slot, "NODE", target_id) == OK
        blocked.sock.settimeout(5)
        assert blocked.read() == Err(f"MOVED {slot} 127.0.0.1:{target.port}")
    healthy.wait_healthy()
    assert healthy.owner_of_slot(slot) is target


# ---- admin commands' errors ------------------------------------------------------------------


def test_admin_errors_in_a_cluster(healthy):
    node = healthy.nodes[0]
    other = healthy.nodes[1]
    me, other_id = healthy.node_id(node), healthy.node_id(other)
    mine = next(s for s in range(SLOTS) if healthy.owner_of_slot(s) is node)
    theirs = next(s for s in range(SLOTS) if healthy.owner_of_slot(s) is other)
    unknown = "0123456789abcdef0123456789abcdef01234567"
    with node.conn() as c:
        assert c.call("CLUSTER", "ADDSLOTS", mine) == Err(f"ERR Slot {mine} is already busy")
        assert c.call("CLUSTER", "ADDSLOTS", theirs) == Err(f"ERR Slot {theirs} is already busy")
        assert c.call("CLUSTER", "ADDSLOTSRANGE", mine, mine + 1) == Err(
            f"ERR Slot {mine} is already busy")
        for bad in ("16384", "-1", "x", "99999999999999999999"):
            assert c.call("CLUSTER", "ADDSLOTS", bad) == Err("ERR Invalid or out of range slot")
            assert c.call("CLUSTER", "DELSLOTS", bad) == Err("ERR Invalid or out of range slot")
            assert c.call("CLUSTER", "SETSLOT", bad, "STABLE") == Err(
                "ERR Invalid or out of range slot")
        assert c.call("CLUSTER", "ADDSLOTSRANGE", 10, 5) == Err(
            "ERR start slot number 10 is greater than end slot number 5")
        assert c.call("CLUSTER", "SETSLOT", theirs, "MIGRATING", other_id) == Err(
            f"ERR I'm not the owner of hash slot {theirs}")
        assert c.call("CLUSTER", "SETSLOT", mine, "MIGRATING", unknown) == Err(
            f"ERR I don't know about node {unknown}")
        assert c.call("CLUSTER", "SETSLOT", mine, "IMPORTING", other_id) == Err(
            f"ERR I'm already the owner of hash slot {mine}")
        assert c.call("CLUSTER", "SETSLOT", theirs, "IMPORTING", unknown) == Err(
            f"ERR I don't know about node {unknown}")
        assert c.call("CLUSTER", "SETSLOT", mine, "NODE", unknown) == Err(
            f"ERR Unknown node {unknown}")
        assert c.call("CLUSTER", "SETSLOT", mine, "BOGUS") == Err(
            "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
        assert c.call("CLUSTER", "FORGET", me) == Err(
            "ERR I tried hard but I can't forget myself...")
        assert c.call("CLUSTER", "FORGET", unknown) == Err(f"ERR Unknown node {unknown}")
        assert c.call("CLUSTER", "REPLICATE", me) == Err("ERR Can't replicate myself")
        assert c.call("CLUSTER", "REPLICATE", unknown) == Err(f"ERR Unknown node {unknown}")
        assert c.call("CLUSTER", "REPLICAS", other_id) == []
        assert c.call("CLUSTER", "SLAVES", other_id) == []
        assert c.call("CLUSTER", "REPLICAS", unknown) == Err(f"ERR Unknown node {unknown}")
        assert c.call("CLUSTER", "COUNT-FAILURE-REPORTS", other_id) == 0
        assert c.call("CLUSTER", "COUNT-FAILURE-REPORTS", unknown) == Err(
            f"ERR Unknown node {unknown}")
        assert c.call("CLUSTER", "COUNTKEYSINSLOT", SLOTS) == Err("ERR Invalid slot")
        assert c.call("CLUSTER", "COUNTKEYSINSLOT", -1) == Err("ERR Invalid slot")
        assert c.call("CLUSTER", "COUNTKEYSINSLOT", "x") == Err(
            "ERR value is not an integer or out of range")
        assert c.call("CLUSTER", "COUNTKEYSINSLOT", mine) == 0
        for args in ((0, -1), (SLOTS, 1), (-1, 1)):
            assert c.call("CLUSTER", "GETKEYSINSLOT", *args) == Err(
                "ERR Invalid slot or number of keys")
        for args in (("x", 1), (0, "x")):
            assert c.call("CLUSTER", "GETKEYSINSLOT", *args) == Err(
                "ERR value is not an integer or out of range")
        assert c.call("CLUSTER", "NOSUCH") == Err(
            "ERR unknown subcommand 'NOSUCH'. Try CLUSTER HELP.")
        help_lines = c.call("CLUSTER", "HELP")
        assert isinstance(help_lines, list) and help_lines[0].startswith(Status("CLUSTER"))

        # One database only, and no replication outside the cluster's own.
        assert c.call("SELECT", 1) == Err("ERR SELECT is not allowed in cluster mode")
        assert c.call("SELECT", 0) == OK
        assert c.call("SWAPDB", 0, 1) == Err("ERR SWAPDB is not allowed in cluster mode")
        key = key_in_slot(lambda s: healthy.owner_of_slot(s) is node, "mv")
        assert c.call("SET", key, "1") == OK
        assert c.call("MOVE", key, 1) == Err("ERR MOVE is not allowed in cluster mode")
        assert c.call("REPLICAOF", "127.0.0.1", other.port) == Err(
            "ERR REPLICAOF not allowed in cluster mode.")
        assert c.call("READONLY") == OK
        assert c.call("READWRITE") == OK
        assert c.call("ASKING") == OK
    # Nothing above changed the cluster.
    healthy.wait_healthy()
    assert healthy.owner_of_slot(mine) is node and healthy.owner_of_slot(theirs) is other


def test_admin_errors_on_a_lone_node(lone_node):
    with lone_node.conn() as c:
        me = c.call("CLUSTER", "MYID").decode()
        assert c.call("CLUSTER", "ADDSLOTS", 5, 6, 5) == Err("ERR Slot 5 specified multiple times")
        assert c.call("CLUSTER", "ADDSLOTSRANGE", 1, 5, 3, 8) == Err(
            "ERR Slot 3 specified multiple times")
        assert c.call("CLUSTER", "DELSLOTS", 5) == Err("ERR Slot 5 is already unassigned")
        assert c.call("CLUSTER", "DELSLOTSRANGE", 5, 9) == Err("ERR Slot 5 is already unassigned")
        # A failed command changes nothing.
        assert info_dict(c.call("CLUSTER", "INFO"))["cluster_slots_assigned"] == "0"
        assert c.call("CLUSTER", "ADDSLOTS", 5, 6) == OK
        assert c.call("CLUSTER", "DELSLOTS", 5, 5) == Err("ERR Slot 5 specified multiple times")
        assert c.call("CLUSTER", "DELSLOTS", 6, 7) == Err("ERR Slot 7 is already unassigned")
        assert info_dict(c.call("CLUSTER", "INFO"))["cluster_slots_assigned"] == "2"
        assert c.call("CLUSTER", "DELSLOTSRANGE", 5, 6) == OK
        assert c.call("CLUSTER", "SETSLOT", 5, "MIGRATING", me) == Err(
            "ERR I'm not the owner of hash slot 5")
        assert c.call("CLUSTER", "SETSLOT", 5, "NODE", "nosuchnode") == Err(
            "ERR Unknown node nosuchnode")
        assert c.call("CLUSTER", "FORGET", me) == Err(
            "ERR I tried hard but I can't forget myself...")
        assert c.call("CLUSTER", "ADDSLOTSRANGE", 0, 99) == OK
        assert c.call("CLUSTER", "COUNTKEYSINSLOT", 50) == 0
        assert c.call("CLUSTER", "FLUSHSLOTS") == OK
        assert info_dict(c.call("CLUSTER", "INFO"))["cluster_slots_assigned"] == "0"
        assert c.call("CLUSTER", "SLOTS") == []


def test_cluster_commands_without_cluster_mode(c):
    for args in (("CLUSTER", "INFO"), ("CLUSTER", "NODES"), ("CLUSTER", "SLOTS"),
                 ("CLUSTER", "SHARDS"), ("CLUSTER", "MYID"), ("CLUSTER", "KEYSLOT", "foo"),
                 ("CLUSTER", "ADDSLOTS", "1"), ("CLUSTER", "COUNTKEYSINSLOT", "1"),
                 ("READONLY",), ("READWRITE",), ("ASKING",)):
        assert c.call(*args) == NO_CLUSTER, args
    # Outside cluster mode, SELECT works as ever.
    assert c.call("SELECT", 1) == OK


# ---- uncovered slots ---------------------------------------------------------------------------


def test_uncovered_slot_fails_the_node(healthy):
    node = healthy.nodes[0]
    key = key_in_slot(lambda s: healthy.owner_of_slot(s) is node, "down")
    slot = key_slot(key.encode())
    other_key = key_in_slot(lambda s: s != slot and healthy.owner_of_slot(s) is node, "up")
    assert call(node, "SET", other_key, "still") == OK
    assert call(node, "CLUSTER", "DELSLOTS", slot) == OK
    try:
        wait_for(lambda: cluster_info(node)["cluster_state"] == "fail", SETTLE_TIMEOUT,
                 "cluster_state:fail")
        fields = cluster_info(node)
        assert fields["cluster_slots_assigned"] == str(SLOTS - 1)
        assert fields["cluster_slots_ok"] == str(SLOTS - 1)
        # A key of the unassigned slot is not served; with full coverage required (the
        # default) the node refuses every other key too.
        assert call(node, "GET", key) == SLOT_NOT_SERVED
        assert call(node, "SET", key, "x") == SLOT_NOT_SERVED
        assert call(node, "GET", other_key) == CLUSTER_DOWN
        assert call(node, "MSET", other_key, "x") == CLUSTER_DOWN

        # Without it, only the uncovered slot is refused.
        assert call(node, "CONFIG", "SET", "cluster-require-full-coverage", "no") == OK
        try:
            wait_for(lambda: cluster_info(node)["cluster_state"] == "ok", SETTLE_TIMEOUT,
                     "cluster_state:ok")
            assert call(node, "GET", key) == SLOT_NOT_SERVED
            assert call(node, "GET", other_key) == b"still"
        finally:
            # (Redis re-evaluates the state only on the next change of the cluster, here the
            # ADDSLOTS below.)
            assert call(node, "CONFIG", "SET", "cluster-require-full-coverage", "yes") == OK
    finally:
        assert call(node, "CLUSTER", "ADDSLOTS", slot) == OK
    healthy.wait_healthy()
    assert call(node, "GET", other_key) == b"still"
    assert call(node, "GET", key) is None


def test_blocked_client_is_unblocked_when_the_cluster_fails(healthy):
    """A client blocked on a key gets CLUSTERDOWN once its node's cluster fails."""
    node = healthy.nodes[2]
    key = key_in_slot(lambda s: healthy.owner_of_slot(s) is node, "waiting")
    slot = key_in_slot(lambda s: s != key_slot(key.encode()) and healthy.owner_of_slot(s) is node)
    slot = key_slot(slot.encode())
    with node.conn() as blocked:
        blocked.send("BLPOP", key, 0)
        wait_for(lambda: info_dict(call(node, "INFO", "clients"))["blocked_clients"] == "1",
                 SETTLE_TIMEOUT, "the client to block")
        assert call(node, "CLUSTER", "DELSLOTS", slot) == OK
        try:
            blocked.sock.settimeout(5)
            assert blocked.read() == CLUSTER_DOWN
        finally:
            assert call(node, "CLUSTER", "ADDSLOTS", slot) == OK
    healthy.wait_healthy()


# ---- nodes.conf --------------------------------------------------------------------------------


def test_restart_keeps_id_and_slots(healthy):
    node = healthy.nodes[2]
    node_id = healthy.node_id(node)
    before = slots_view(node)
    lines = {line[0]: (line[1], line[8:]) for line in nodes_lines(node)}
    key = key_in_slot(lambda s: healthy.owner_of_slot(s) is node, "kept")
    assert call(node, "SET", key, "v") == OK
    assert call(node, "SAVE") == OK  # the key too, though the test is about nodes.conf

    stop_node(node)
    assert (node.workdir / "nodes.conf").exists()
    node.start()
    assert healthy.node_id(node) == node_id
    healthy.wait_healthy()
    assert slots_view(node) == before
    assert {line[0]: (line[1], line[8:]) for line in nodes_lines(node)} == lines
    assert cluster_info(node)["cluster_known_nodes"] == "3"
    assert call(node, "GET", key) == b"v"


def test_cluster_config_file_format_and_reload(start_server):
    node = start_server(cluster_directives(**{"cluster-config-file": "my-nodes.conf"}))
    node_id = call(node, "CLUSTER", "MYID").decode()
    assert call(node, "CLUSTER", "ADDSLOTSRANGE", 0, 99, 200, 200) == OK
    path = node.workdir / "my-nodes.conf"

    def saved():
        lines = path.read_text().splitlines() if path.exists() else []
        return lines if any(line.endswith(" 0-99 200") for line in lines) else None
    lines = wait_for(saved, SETTLE_TIMEOUT, "the slots in my-nodes.conf")
    # Redis's format: the node's CLUSTER NODES line, then the epochs.
    assert len(lines) == 2, lines
    fields = lines[0].split(" ")
    assert fields[0] == node_id and fields[2] == "myself,master" and fields[3] == "-", fields
    assert fields[1].split("@")[0].endswith(f":{node.port}"), fields
    assert fields[7:] == ["connected", "0-99", "200"], fields
    assert lines[1] == "vars currentEpoch 0 lastVoteEpoch 0", lines[1]

    stop_node(node)
    node.start()
    assert call(node, "CLUSTER", "MYID").decode() == node_id
    view = slots_view(node)
    assert [r[:2] for r in view] == [(0, 99), (200, 200)]
    assert all(r[2][0][1:] == (node.port, node_id.encode()) for r in view), view


@pytest.mark.parametrize("direction", ["redis-to-tested", "tested-to-redis"])
def test_nodes_conf_is_redis_format(direction, server_kind, keel_bin):
    """A node starts from a nodes.conf another kind wrote (redis-server's, for the server under
    test, and the other way round): the same id, slots and epochs, at its own address."""
    writer_kind, reader_kind = {"redis-to-tested": ("redis", server_kind),
                                "tested-to-redis": (server_kind, "redis")}[direction]
    writer = ServerProcess(writer_kind, keel_bin=keel_bin, directives=cluster_directives()).start()
    try:
        writer_id = call(writer, "CLUSTER", "MYID").decode()
        assert call(writer, "CLUSTER", "ADDSLOTSRANGE", 0, 16383) == OK
        assert call(writer, "CLUSTER", "BUMPEPOCH") == Status("BUMPED 1")
        assert call(writer, "CLUSTER", "SAVECONFIG") == OK
        stop_node(writer)
        text = (writer.workdir / "nodes.conf").read_text()
    finally:
        writer.cleanup()
    node = ServerProcess(reader_kind, keel_bin=keel_bin, directives=cluster_directives())
    try:
        (node.workdir / "nodes.conf").write_text(text)
        node.start()
        assert call(node, "CLUSTER", "MYID").decode() == writer_id
        wait_for(lambda: cluster_info(node)["cluster_state"] == "ok", SETTLE_TIMEOUT,
                 "cluster_state:ok")
        fields = cluster_info(node)
        assert (fields["cluster_slots_assigned"], fields["cluster_current_epoch"],
                fields["cluster_my_epoch"]) == ("16384", "1", "1")
        # The node's own address is the one it now listens on (ports from its configuration,
        # not from the file).
        bus_port = call(node, "CONFIG", "GET", "cluster-port")[1].decode()
        me = next(line for line in nodes_lines(node) if "myself" in line[2].split(","))
        reply = call(node, "CLUSTER", "SLOTS")
        assert (me[1].rpartition(":")[2], reply[0][:2], reply[0][2][1:3]) == (
            f"{node.port}@{bus_port}", [0, 16383], [node.port, writer_id.encode()])
        assert call(node, "SET", "foo", "bar") == OK
    finally:
        node.cleanup()


GARBAGE = "this is not\na nodes.conf file at all\n"


def test_garbage_nodes_conf_stops_startup(server_kind, keel_bin):
    srv = ServerProcess(server_kind, keel_bin=keel_bin, directives=cluster_directives())
    try:
        (srv.workdir / "nodes.conf").write_text(GARBAGE)
        with pytest.raises(RuntimeError) as failure:
            srv.start()
        assert srv.proc.returncode != 0
        # Redis: "Unrecoverable error: corrupted cluster config file."; keel names the file too.
        assert "Unrecoverable error: corrupted cluster config file" in str(failure.value), (
            str(failure.value))
        assert (srv.workdir / "nodes.conf").read_text() == GARBAGE
    finally:
        srv.cleanup()


# ---- keel's own: a topology pushed whole ------------------------------------------------------


@pytest.fixture
def pushed(start_server):
    """Three keel nodes made into a cluster by CLUSTER SETTOPOLOGY alone (epoch 5)."""
    nodes = [start_server(cluster_directives()) for _ in range(3)]
    ids = [call(n, "CLUSTER", "MYID").decode() for n in nodes]
    buses = [int(call(n, "CONFIG", "GET", "cluster-port")[1]) for n in nodes]
    ranges = [[(0, 5460)], [(5461, 10922)], [(10923, 16383)]]
    entries = [(ids[i], nodes[i].port, buses[i], i + 1, ranges[i]) for i in range(3)]
    text = topology_text(entries)
    for n in nodes:
        assert call(n, "CLUSTER", "SETTOPOLOGY", 5, text) == OK
    cluster = Cluster("keel", nodes)
    cluster.wait_healthy()
    return cluster, entries, text


@pytest.mark.keel_differs(reason="CLUSTER SETTOPOLOGY is keel's: no cluster bus")
def test_settopology_forms_a_cluster_and_refuses_stale_pushes(pushed):
    cluster, entries, text = pushed
    a = cluster.nodes[0]
    assert cluster_info(a)["cluster_current_epoch"] == "5"
    # The same push again is a no-op; an older one is refused, as is another at the same epoch.
    assert call(a, "CLUSTER", "SETTOPOLOGY", 5, text) == OK
    stale = call(a, "CLUSTER", "SETTOPOLOGY", 4, text)
    assert isinstance(stale, Err) and stale.startswith("ERR") and "stale topology" in stale, stale
    moved = [entries[0][:4] + ([(0, 5459)],), entries[1][:4] + ([(5460, 10922)],), entries[2]]
    same_epoch = call(a, "CLUSTER", "SETTOPOLOGY", 5, topology_text(moved))
    assert isinstance(same_epoch, Err), same_epoch
    assert slots_view(a)[0][:2] == (0, 5460)
    # A newer one is taken, and kept across a restart; the older stays refused after it.
    for n in cluster.nodes:
        assert call(n, "CLUSTER", "SETTOPOLOGY", 6, topology_text(moved)) == OK
    cluster.wait_healthy()
    key = key_in_slot(lambda s: s == 5460, "edge")
    assert call(a, "GET", key) == Err(f"MOVED 5460 127.0.0.1:{cluster.nodes[1].port}")
    stop_node(a)
    a.start()
    assert call(a, "CLUSTER", "SETTOPOLOGY", 5, text).startswith("ERR")
    assert "stale topology" in call(a, "CLUSTER", "SETTOPOLOGY", 5, text)
    cluster.wait_healthy()
    assert cluster_info(a)["cluster_current_epoch"] == "6"
    # Bad input.
    assert call(a, "CLUSTER", "SETTOPOLOGY", 7, "garbage").startswith("ERR Invalid topology")
    assert call(a, "CLUSTER", "SETTOPOLOGY", "x", text).startswith("ERR")
    without_a = topology_text(entries[1:])
    assert isinstance(call(a, "CLUSTER", "SETTOPOLOGY", 7, without_a), Err)
    assert cluster_info(a)["cluster_current_epoch"] == "6"


@pytest.mark.keel_differs(reason="CLUSTER SETTOPOLOGY is keel's: no cluster bus")
def test_settopology_leaving_slots_uncovered_fails_the_cluster(pushed):
    cluster, entries, text = pushed
    holed = [entries[0], entries[1], entries[2][:4] + ([(10923, 16000)],)]
    for n in cluster.nodes:
        assert call(n, "CLUSTER", "SETTOPOLOGY", 6, topology_text(holed)) == OK
    for n in cluster.nodes:
        fields = cluster_info(n)
        assert fields["cluster_state"] == "fail"
        assert fields["cluster_slots_assigned"] == str(16001)
        assert call(n, "GET", "foo") == CLUSTER_DOWN  # slot 12182, still assigned
        assert call(n, "GET", key_in_slot(lambda s: s > 16000, "hole")) == SLOT_NOT_SERVED
    for n in cluster.nodes:
        assert call(n, "CLUSTER", "SETTOPOLOGY", 7, text) == OK
    cluster.wait_healthy()


@pytest.mark.keel_differs(reason="keel has no cluster bus to meet over")
def test_cluster_meet_is_refused(lone_node):
    reply = call(lone_node, "CLUSTER", "MEET", "127.0.0.1", free_port())
    assert isinstance(reply, Err) and reply.startswith("ERR"), reply
    assert cluster_info(lone_node)["cluster_known_nodes"] == "1"


@pytest.mark.keel_differs(reason="keel has no cluster bus to meet over")
def test_redis_cli_cluster_create_stops_at_meet(start_server):
    """Of Redis's own tool, only what needs CLUSTER MEET fails against keel (`create` and
    `add-node`); `check`, `info`, `reshard`, `rebalance`, `fix` and `del-node` work."""
    nodes = [start_server(cluster_directives()) for _ in range(3)]
    code, out = run_tool(REDIS_CLI, "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in nodes],
                         "--cluster-yes")
    assert code != 0, out
    assert "Sending CLUSTER MEET messages to join the cluster" in out, out
    assert "CLUSTER MEET needs a cluster bus" in out, out


@pytest.mark.keel_differs(reason="keel-cluster is keel's control plane")
def test_keel_cluster_check(healthy, keel_bin):
    tool = keel_cluster_bin(keel_bin)
    for node in healthy.nodes:
        code, out = run_tool(tool, "check", f"127.0.0.1:{node.port}")
        assert code == 0, out
        assert "[OK] All nodes agree about slots configuration." in out, out
        assert "[OK] All 16384 slots covered." in out, out


@pytest.mark.keel_differs(reason="keel-cluster is keel's control plane")
def test_keel_cluster_check_reports_uncovered_slots(pushed, keel_bin):
    cluster, entries, text = pushed
    tool = keel_cluster_bin(keel_bin)
    code, out = run_tool(tool, "check", f"127.0.0.1:{cluster.nodes[0].port}")
    assert code == 0, out
    assert "[OK] All 16384 slots covered." in out, out
    holed = [entries[0], entries[1], entries[2][:4] + ([(10923, 16000)],)]
    for n in cluster.nodes:
        assert call(n, "CLUSTER", "SETTOPOLOGY", 6, topology_text(holed)) == OK
    code, out = run_tool(tool, "check", f"127.0.0.1:{cluster.nodes[0].port}")
    assert code != 0, out
    assert "[OK] All 16384 slots covered." not in out, out


@pytest.mark.keel_differs(reason="keel-cluster is keel's control plane")
def test_keel_cluster_reshard(healthy, rc, keel_bin):
    data = {f"kr:{i}": str(i) for i in range(3000)}
    assert all(rc.mset_nonatomic(data))
    source, target = healthy.nodes[2], healthy.nodes[0]
    before_source, before_target = owned_slots(source), owned_slots(target)
    code, out = run_tool(keel_cluster_bin(keel_bin), "reshard", f"127.0.0.1:{target.port}",
                         "--from", healthy.node_id(source), "--to", healthy.node_id(target),
                         "--slots", 300)
    assert code == 0, out
    healthy.wait_healthy()
    moved = before_source - owned_slots(source)
    assert len(moved) == 300 and owned_slots(target) == before_target | moved
    assert_reads_back(healthy, data)
    for tool in ([keel_cluster_bin(keel_bin), "check"], [REDIS_CLI, "--cluster", "check"]):
        code, out = run_tool(*tool, f"127.0.0.1:{source.port}")
        assert code == 0 and "[OK] All 16384 slots covered." in out, out


@pytest.mark.keel_differs(reason="keel-cluster is keel's control plane")
def test_keel_cluster_add_node_del_node_rebalance(start_server, keel_bin):
    tool = keel_cluster_bin(keel_bin)
    nodes = [start_server(cluster_directives()) for _ in range(5)]
    three = form_cluster("keel", keel_bin, nodes[:3])
    data = {f"an:{i}": str(i) for i in range(3000)}
    client = three.client(decode_responses=True)
    try:
        assert all(client.mset_nonatomic(data))
    finally:
        client.close()

    for new in nodes[3:]:
        code, out = run_tool(tool, "add-node", f"127.0.0.1:{new.port}",
                             f"127.0.0.1:{nodes[0].port}")
        assert code == 0, out
    five = Cluster("keel", nodes)
    five.wait_healthy()
    for node in nodes:
        assert cluster_info(node)["cluster_known_nodes"] == "5"
    assert owned_slots(nodes[3]) == owned_slots(nodes[4]) == set()

    # A node that serves no slot is removed; one that serves slots is not.
    gone = five.node_id(nodes[4])
    code, out = run_tool(tool, "del-node", f"127.0.0.1:{nodes[1].port}", gone)
    assert code == 0, out
    four = Cluster("keel", nodes[:4])
    four.wait_healthy()
    for node in nodes[:4]:
        assert cluster_info(node)["cluster_known_nodes"] == "4"
        assert gone.encode() not in call(node, "CLUSTER", "NODES")
    code, out = run_tool(tool, "del-node", f"127.0.0.1:{nodes[1].port}", four.node_id(nodes[0]))
    assert code != 0, out
    four.wait_healthy()
    assert cluster_info(nodes[1])["cluster_known_nodes"] == "4"

    code, out = run_tool(tool, "rebalance", f"127.0.0.1:{nodes[1].port}")
    assert code == 0, out
    four.wait_healthy()
    # Even, within Redis's rebalance threshold (2%).
    counts = [len(owned_slots(n)) for n in nodes[:4]]
    assert all(abs(n - SLOTS / 4) <= SLOTS / 4 * 0.02 for n in counts), counts
    assert_reads_back(four, data)
    for check in ([tool, "check"], [REDIS_CLI, "--cluster", "check"]):
        code, out = run_tool(*check, f"127.0.0.1:{nodes[3].port}")
        assert code == 0 and "[OK] All 16384 slots covered." in out, out


# ---- replicas, and losing a primary ------------------------------------------------------------


@pytest.fixture
def replicated(server_kind, keel_bin):
    """Six nodes of the chosen kind: three primaries with one replica each, formed with the
    kind's own tool."""
    # (Redis: replicas sync at once, and pings, which carry replication offsets, are more
    # frequent.)
    nodes = start_nodes(server_kind, keel_bin, 6, {"repl-diskless-sync-delay": 0,
                                                   "cluster-node-timeout": 5000})
    try:
        addresses = [f"127.0.0.1:{n.port}" for n in nodes]
        if server_kind == "redis":
            code, out = run_tool(REDIS_CLI, "--cluster", "create", *addresses,
                                 "--cluster-replicas", 1, "--cluster-yes")
        else:
            code, out = run_tool(keel_cluster_bin(keel_bin), "create", *addresses,
                                 "--replicas", 1)
        assert code == 0, out
        cluster = Cluster(server_kind, nodes)
        wait_for(lambda: all(replication_settled(n) for n in nodes), SETTLE_TIMEOUT,
                 "every replica to load its primary's data")
        cluster.wait_healthy()
        wait_for(lambda: all(replica_count(n) == 3 for n in nodes), SETTLE_TIMEOUT,
                 "every node to know every replica")
        yield cluster
    finally:
        for node in nodes:
            node.cleanup()


def replication_settled(node) -> bool:
    """A primary, or a replica whose link to its primary is up (it has loaded its data)."""
    fields = replication_info(node)
    return fields.get("role") == "master" or fields.get("master_link_status") == "up"


def replica_count(node) -> int:
    """How many replicas `node` lists in CLUSTER NODES."""
    return sum("slave" in line[2].split(",") for line in nodes_lines(node))


def slots_list_replicas(node) -> bool:
    """Whether each range of `node`'s CLUSTER SLOTS lists its replica (Redis lists a replica
    once it knows its replication offset, from the replica's pings, and that it is not 0)."""
    return all(len(entry) == 4 for entry in call(node, "CLUSTER", "SLOTS"))


def replication_info(node) -> dict:
    return info_dict(call(node, "INFO", "replication"))


def in_sync(primary, replica) -> bool:
    r = replication_info(replica)
    return (r.get("master_link_status") == "up"
            and r.get("slave_repl_offset") == replication_info(primary)["master_repl_offset"])


def test_replicas_serve_reads_and_take_over(replicated, server_kind, keel_bin):
    cluster = replicated
    ids = {cluster.node_id(n): n for n in cluster.nodes}
    lines = nodes_lines(cluster.nodes[0])
    primaries = [ids[line[0]] for line in lines if "master" in line[2].split(",")]
    replica_of = {ids[line[3]]: ids[line[0]] for line in lines if "slave" in line[2].split(",")}
    assert len(primaries) == 3 and sorted(replica_of, key=id) == sorted(primaries, key=id)
    for line in lines:
        if "slave" in line[2].split(","):
            assert line[8:] == [] and line[7] == "connected", line
    for node in cluster.nodes:
        assert cluster_info(node)["cluster_known_nodes"] == "6"
        assert cluster_info(node)["cluster_size"] == "3"
    for primary, replica in replica_of.items():
        listed = call(cluster.nodes[0], "CLUSTER", "REPLICAS", cluster.node_id(primary))
        assert [e.split(b" ")[0].decode() for e in listed] == [cluster.node_id(replica)]
        assert replication_info(replica)["role"] == "slave"

    data = {f"rep:{i}": str(i) for i in range(2000)}
    client = cluster.client(decode_responses=True)
    try:
        assert all(client.mset_nonatomic(data))
    finally:
        client.close()
    for primary, replica in replica_of.items():
        wait_for(lambda: in_sync(primary, replica), SETTLE_TIMEOUT, "replicas in sync")
    wait_for(lambda: all(slots_list_replicas(n) for n in cluster.nodes), SETTLE_TIMEOUT,
             "CLUSTER SLOTS to list every replica")
    for node in cluster.nodes:
        for entry in call(node, "CLUSTER", "SLOTS"):
            primary = cluster.by_port(entry[2][1])
            replica = replica_of[primary]
            assert entry[3] == [b"127.0.0.1", replica.port, cluster.node_id(replica).encode(),
                                []], entry
        for shard in call(node, "CLUSTER", "SHARDS"):
            members = [dict(zip(m[0::2], m[1::2])) for m in shard[3]]
            assert [m[b"role"] for m in members] == [b"master", b"replica"], shard
            primary = cluster.by_port(members[0][b"port"])
            assert members[1][b"port"] == replica_of[primary].port
            assert all(m[b"health"] == b"online" for m in members), shard

    # A replica redirects to its primary, unless READONLY (reads only, its primary's slots).
    primary = primaries[0]
    replica = replica_of[primary]
    key = key_in_slot(lambda s: s in owned_slots(primary), "rep")
    foreign = key_in_slot(lambda s: s not in owned_slots(primary), "rep")
    slot = key_slot(key.encode())
    with replica.conn() as c:
        assert c.call("GET", key) == Err(f"MOVED {slot} 127.0.0.1:{primary.port}")
        assert c.call("READONLY") == OK
        assert c.call("GET", key) == data[key].encode()
        assert c.call("SET", key, "x") == Err(f"MOVED {slot} 127.0.0.1:{primary.port}")
        owner = cluster.owner(foreign)
        assert c.call("GET", foreign) == Err(
            f"MOVED {key_slot(foreign.encode())} 127.0.0.1:{owner.port}")
        assert c.call("READWRITE") == OK
        assert c.call("GET", key) == Err(f"MOVED {slot} 127.0.0.1:{primary.port}")
    client = cluster.client(decode_responses=True,
                            load_balancing_strategy=LoadBalancingStrategy.RANDOM_REPLICA)
    try:
        assert client.mget_nonatomic(list(data)) == list(data.values())
    finally:
        client.close()

    # The primary is lost; its replica is promoted by the kind's own means.
    lost_slots = owned_slots(primary)
    primary.kill()
    live = [n for n in cluster.nodes if n is not primary]
    if server_kind == "redis":
        assert call(replica, "CLUSTER", "FAILOVER", "TAKEOVER") == OK
    else:
        code, out = run_tool(keel_cluster_bin(keel_bin), "failover",
                             f"127.0.0.1:{primaries[1].port}", cluster.node_id(replica))
        assert code == 0, out
    survivors = Cluster(server_kind, [primaries[1]] + [n for n in live if n is not primaries[1]])
    survivors.wait_healthy()
    wait_for(lambda: all(survivors.owner_of_slot(s) is replica for s in (min(lost_slots),
                                                                          max(lost_slots))),
             SETTLE_TIMEOUT, "the replica to serve its primary's slots")
    assert owned_slots(replica) == lost_slots
    assert replication_info(replica)["role"] == "master"
    client = survivors.client(decode_responses=True)
    try:
        assert client.mget_nonatomic(list(data)) == list(data.values())
        assert client.set(key, "after") is True
        assert client.get(key) == "after"
    finally:
        client.close()


@pytest.mark.keel_differs(reason="keel's own INFO fields and metrics: keys per slot")
def test_keys_per_slot_in_info_and_metrics(start_server):
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    metrics_port = free_port()
    node = start_server(cluster_directives(**{"metrics-port": metrics_port}))
    assert call(node, "CLUSTER", "ADDSLOTSRANGE", 0, 16383) == OK
    keys = ["{a}1", "{a}2", "{a}3", "{b}1"]
    for key in keys:
        assert call(node, "SET", key, "v") == OK
    slot_a, slot_b = key_slot(b"a"), key_slot(b"b")
    with node.conn() as c:
        fields = info_dict(c.call("INFO", "cluster"))
    assert fields["cluster_enabled"] == "1"
    assert fields["cluster_slots_served"] == "16384"
    assert fields["cluster_slots_with_keys"] == "2"
    assert fields["cluster_slot_keys_max"] == f"slot={slot_a},keys=3"
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    family = next(f for f in text_string_to_metric_families(text) if f.name == "keel_cluster_slot_keys")
    assert {s.labels["slot"]: s.value for s in family.samples} == {str(slot_a): 3, str(slot_b): 1}
    assert call(node, "DEL", "{b}1") == 1
    assert call(node, "CLUSTER", "COUNTKEYSINSLOT", slot_b) == 0


def test_keel_keyspace_visits_every_primary(healthy, rc, keel_bin):
    import json

    for i in range(600):
        rc.set(f"ks:user:{i}", "x" * 20)
    for i in range(150):
        rc.set(f"ks:session:{i}", "y" * 40)
    report = subprocess.run([str(keel_bin.parent / "keel-keyspace"), "-p", str(healthy.nodes[1].port),
                             "-q", "--json"], capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    assert report.returncode == 0, report.stderr
    parsed = json.loads(report.stdout)
    keys = {p["pattern"]: p["keys"]["value"] for p in parsed["patterns"]}
    assert keys == {"ks:user:*": 600, "ks:session:*": 150}
    assert parsed["population"] == 750
    assert "3 primaries of the cluster" in parsed["server"]["addr"]


def test_no_cluster_scripts_are_refused_in_cluster_mode(lone_node):
    script = "#!lua flags=no-cluster\nreturn 1"
    refusal = "ERR Can not run script on cluster, 'no-cluster' flag is set."
    assert call(lone_node, "EVAL", script, 0) == Err(refusal)
    assert call(lone_node, "EVAL", "return 1", 0) == 1
    library = "#!lua name=nocluster\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'no-cluster'}}"
    assert call(lone_node, "FUNCTION", "LOAD", library) == b"nocluster"
    assert call(lone_node, "FCALL", "f", 0) == Err(refusal)
