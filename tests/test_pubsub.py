"""Pub/sub (SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB),
shard pub/sub (SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, PUBSUB SHARDCHANNELS and
SHARDNUMSUB) and keyspace notifications (notify-keyspace-events), compared
exactly."""

import time

import pytest

from support import OK, Err, Status

ONLY_PUBSUB = ("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
               "are allowed in this context")


def subscribe(conn, command, *names):
    """Sends a (P)SUBSCRIBE and returns its per-name confirmations."""
    conn.send(command, *names)
    return [conn.read() for _ in names]


def test_subscribe_publish_and_unsubscribe(connect):
    sub, pub = connect(), connect()
    assert subscribe(sub, "SUBSCRIBE", "news", "sport") == [
        [b"subscribe", b"news", 1], [b"subscribe", b"sport", 2]]
    assert pub.call("PUBLISH", "news", "hello") == 1
    assert pub.call("PUBLISH", "weather", "rain") == 0
    assert sub.read() == [b"message", b"news", b"hello"]
    assert pub.call("PUBSUB", "NUMSUB", "news", "weather") == [b"news", 1, b"weather", 0]
    assert sorted(pub.call("PUBSUB", "CHANNELS")) == [b"news", b"sport"]
    assert pub.call("PUBSUB", "CHANNELS", "n*") == [b"news"]
    sub.send("UNSUBSCRIBE", "news")
    assert sub.read() == [b"unsubscribe", b"news", 1]
    sub.send("UNSUBSCRIBE")
    assert sub.read() == [b"unsubscribe", b"sport", 0]
    sub.send("UNSUBSCRIBE")
    assert sub.read() == [b"unsubscribe", None, 0]
    assert sub.call("GET", "x") is None, "back to normal commands"


def test_pattern_subscriptions_get_pmessage(connect):
    sub, pub = connect(), connect()
    assert subscribe(sub, "PSUBSCRIBE", "user:*") == [[b"psubscribe", b"user:*", 1]]
    assert pub.call("PUBSUB", "NUMPAT") == 1
    assert pub.call("PUBLISH", "user:42", "login") == 1
    assert sub.read() == [b"pmessage", b"user:*", b"user:42", b"login"]
    sub.send("PUNSUBSCRIBE")
    assert sub.read() == [b"punsubscribe", b"user:*", 0]


def test_resp2_subscriber_may_only_ping_and_manage_subscriptions(connect):
    sub = connect()
    subscribe(sub, "SUBSCRIBE", "c")
    assert sub.call("GET", "k") == Err(ONLY_PUBSUB)
    assert sub.call("PING") == [b"pong", b""]
    assert sub.call("PING", "hi") == [b"pong", b"hi"]
    assert sub.call("RESET") is not None
    assert sub.call("GET", "k") is None, "RESET left every channel"


def test_disconnected_subscriber_is_forgotten(connect):
    sub, pub = connect(), connect()
    subscribe(sub, "SUBSCRIBE", "c")
    sub.close()
    for _ in range(100):
        if pub.call("PUBSUB", "NUMSUB", "c") == [b"c", 0]:
            break
        time.sleep(0.01)
    assert pub.call("PUBLISH", "c", "x") == 0


@pytest.fixture
def notifications(connect, restore_config):
    restore_config("notify-keyspace-events")
    conn = connect()
    assert conn.call("CONFIG", "SET", "notify-keyspace-events", "KEx") == OK
    return conn


def test_expired_keys_are_notified_without_being_read(connect, notifications):
    sub = connect()
    subscribe(sub, "SUBSCRIBE", "__keyevent@0__:expired", "__keyspace@0__:session")
    assert notifications.call("SET", "session", "v", "PX", "50") == OK
    # Nobody reads the key: active expiry must find it and say so.
    got = [sub.read(), sub.read()]
    assert [b"message", b"__keyevent@0__:expired", b"session"] in got
    assert [b"message", b"__keyspace@0__:session", b"expired"] in got


def test_notify_keyspace_events_config(notifications):
    assert notifications.call("CONFIG", "GET", "notify-keyspace-events") == [b"notify-keyspace-events", b"xKE"]
    assert notifications.call("CONFIG", "SET", "notify-keyspace-events", "x") == OK
    assert notifications.call("CONFIG", "GET", "notify-keyspace-events") == [b"notify-keyspace-events", b"x"]
    assert notifications.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == OK
    assert notifications.call("CONFIG", "GET", "notify-keyspace-events") == [b"notify-keyspace-events", b"AKE"]
    bad = notifications.call("CONFIG", "SET", "notify-keyspace-events", "Q")
    assert isinstance(bad, Err)


def test_resp3_subscriber_gets_pushes_and_may_run_any_command(connect):
    from support import Push

    sub, pub = connect(), connect()
    sub.call("HELLO", "3")
    sub.send("SUBSCRIBE", "c")
    confirmation = sub.read()
    assert isinstance(confirmation, Push) and confirmation == [b"subscribe", b"c", 1]
    assert sub.call("SET", "k", "v") == OK, "RESP3 allows any command while subscribed"
    assert pub.call("PUBLISH", "c", "hi") == 1
    message = sub.read()
    assert isinstance(message, Push) and message == [b"message", b"c", b"hi"]


@pytest.mark.parametrize("subscribe_cmd, unsubscribe_cmd, name", [
    ("SUBSCRIBE", "UNSUBSCRIBE", "news"),
    ("PSUBSCRIBE", "PUNSUBSCRIBE", "n*"),
])
def test_publish_after_unsubscribe_without_arguments_reaches_nobody(
        connect, subscribe_cmd, unsubscribe_cmd, name):
    sub, pub = connect(), connect()
    subscribe(sub, subscribe_cmd, name, "other")
    sub.send(unsubscribe_cmd)
    assert [sub.read(), sub.read()][-1][2] == 0
    assert pub.call("PUBLISH", "news", "late") == 0
    assert sub.call("PING") == Status("PONG"), "no message came before PING's reply"


@pytest.mark.parametrize("leave", [["UNSUBSCRIBE"], ["UNSUBSCRIBE", "chan1"], ["RESET"]])
def test_publish_right_after_an_unread_unsubscribe_reaches_nobody(connect, leave):
    """Redis runs requests in arrival order: an UNSUBSCRIBE sent before a
    PUBLISH, its reply not yet read, has left the channel when the PUBLISH
    runs (Redis's "PUBLISH/SUBSCRIBE after UNSUBSCRIBE without arguments").
    keel runs connections in parallel; this used to fail a few times in a
    hundred."""
    pub = connect()
    reached = 0
    for _ in range(200):
        sub = connect()
        subscribe(sub, "SUBSCRIBE", "chan1", "chan2")
        sub.send(*leave)
        reached += pub.call("PUBLISH", "chan1", "hello")
        sub.close()
    assert reached == 0


def test_shard_channels_publish_and_unsubscribe(connect):
    sub, pub = connect(), connect()
    assert subscribe(sub, "SSUBSCRIBE", "orders", "stock") == [
        [b"ssubscribe", b"orders", 1], [b"ssubscribe", b"stock", 2]]
    assert pub.call("SPUBLISH", "orders", "o1") == 1
    assert pub.call("SPUBLISH", "nobody", "x") == 0
    assert pub.call("PUBLISH", "orders", "x") == 0, "a shard channel is not a channel"
    assert sub.read() == [b"smessage", b"orders", b"o1"]
    assert sorted(pub.call("PUBSUB", "SHARDCHANNELS")) == [b"orders", b"stock"]
    assert pub.call("PUBSUB", "SHARDCHANNELS", "o*") == [b"orders"]
    assert pub.call("PUBSUB", "SHARDNUMSUB", "orders", "nobody") == [b"orders", 1, b"nobody", 0]
    assert pub.call("PUBSUB", "CHANNELS") == []
    assert pub.call("PUBSUB", "NUMSUB", "orders") == [b"orders", 0]
    sub.send("SUNSUBSCRIBE", "orders", "never")
    assert [sub.read(), sub.read()] == [
        [b"sunsubscribe", b"orders", 1], [b"sunsubscribe", b"never", 1]]
    sub.send("SUNSUBSCRIBE")
    assert sub.read() == [b"sunsubscribe", b"stock", 0]
    assert pub.call("SPUBLISH", "stock", "late") == 0
    sub.send("SUNSUBSCRIBE")
    assert sub.read() == [b"sunsubscribe", None, 0]
    assert sub.call("GET", "x") is None, "back to normal commands"


def test_shard_and_plain_subscriptions_are_counted_apart(connect):
    sub, pub = connect(), connect()
    subscribe(sub, "SUBSCRIBE", "a")
    subscribe(sub, "PSUBSCRIBE", "*")
    assert subscribe(sub, "SSUBSCRIBE", "a") == [[b"ssubscribe", b"a", 1]]
    assert pub.call("SPUBLISH", "a", "s") == 1, "patterns never match shard channels"
    assert sub.read() == [b"smessage", b"a", b"s"]
    sub.send("UNSUBSCRIBE")
    assert sub.read() == [b"unsubscribe", b"a", 1], "the pattern still counts, the shard does not"
    sub.send("SUNSUBSCRIBE")
    assert sub.read() == [b"sunsubscribe", b"a", 0]
    assert sub.call("GET", "x") == Err(ONLY_PUBSUB), "still subscribed to a pattern"


def test_a_shard_subscriber_is_in_resp2_subscribed_mode(connect):
    sub = connect()
    subscribe(sub, "SSUBSCRIBE", "s")
    assert sub.call("GET", "k") == Err(ONLY_PUBSUB)
    assert sub.call("PING") == [b"pong", b""]
    sub.send("SUNSUBSCRIBE", "s")
    assert sub.read() == [b"sunsubscribe", b"s", 0]
    assert sub.call("GET", "k") is None


def test_resp3_shard_pushes(connect):
    from support import Push

    sub, pub = connect(), connect()
    sub.call("HELLO", "3")
    sub.send("SSUBSCRIBE", "s")
    confirmation = sub.read()
    assert isinstance(confirmation, Push) and confirmation == [b"ssubscribe", b"s", 1]
    assert pub.call("SPUBLISH", "s", "hi") == 1
    message = sub.read()
    assert isinstance(message, Push) and message == [b"smessage", b"s", b"hi"]
    sub.send("SUNSUBSCRIBE")
    assert sub.read() == [b"sunsubscribe", b"s", 0]


def test_shard_commands_reject_bad_arity(c):
    wrong = "ERR wrong number of arguments for '{}' command"
    assert c.call("SSUBSCRIBE") == Err(wrong.format("ssubscribe"))
    assert c.call("SPUBLISH", "a") == Err(wrong.format("spublish"))
    assert c.call("SPUBLISH", "a", "b", "c") == Err(wrong.format("spublish"))
    assert c.call("PUBSUB", "SHARDCHANNELS", "a", "b") == Err(
        "ERR unknown subcommand or wrong number of arguments for 'SHARDCHANNELS'. Try PUBSUB HELP.")
    assert c.call("PUBSUB", "SHARDNUMSUB") == []
    assert c.call("COMMAND", "GETKEYS", "SSUBSCRIBE", "a", "b") == Err(
        "ERR The command has no key arguments"), "shard channels are not keys"


def test_reset_leaves_shard_channels(connect):
    sub, pub = connect(), connect()
    subscribe(sub, "SSUBSCRIBE", "s")
    assert sub.call("RESET") == Status("RESET")
    assert pub.call("SPUBLISH", "s", "x") == 0
    assert pub.call("PUBSUB", "SHARDNUMSUB", "s") == [b"s", 0]


def test_info_counts_shard_channels(connect):
    from support import info

    sub, pub = connect(), connect()
    subscribe(sub, "SSUBSCRIBE", "s1", "s2")
    assert info(pub, "stats")["pubsubshard_channels"] == "2"


def test_a_shard_subscriber_that_does_not_read_is_cut_off(start_server):
    srv = start_server({"client-output-buffer-limit": "pubsub 1mb 0 0"})
    with srv.conn() as sub, srv.conn() as pub:
        assert sub.call("SSUBSCRIBE", "s") == [b"ssubscribe", b"s", 1]
        payload = "x" * 100_000
        delivered = sum(pub.call("SPUBLISH", "s", payload) for _ in range(200))
        assert delivered < 200, "the subscriber was disconnected at its pubsub limit"
        assert pub.call("PUBSUB", "SHARDNUMSUB", "s") in ([b"s", 0], [b"s", 1])
