"""Pub/sub (SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB)
and keyspace notifications (notify-keyspace-events), compared exactly."""

import time

import pytest

from support import OK, Err

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
