"""ACL users, run against keel and redis-server alike: every kind of rule and how
ACL LIST shows it, authentication, the permission matrix (commands, subcommands,
first arguments, categories, read and write key patterns, channels, selectors),
MULTI/EXEC and scripts, ACL LOG, DRYRUN, DELUSER, the ACL file, `user` lines, and
the errors malformed rules get."""

import hashlib

import pytest
import redis

from support import OK, PONG, QUEUED, ConnectionClosed, Err, RespConn, Status, free_port, info


def sha(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


@pytest.fixture
def acl(server, flushed):
    """A connection as the default user; users a test makes are deleted after it."""
    conn = server.conn()
    conn.call("ACL", "LOG", "RESET")
    yield conn
    for name in conn.call("ACL", "USERS"):
        if name != b"default":
            conn.call("ACL", "DELUSER", name)
    conn.call("ACL", "LOG", "RESET")
    conn.close()


def login(server, user, password="pw") -> RespConn:
    conn = server.conn()
    assert conn.call("AUTH", user, password) == OK
    return conn


def rules_of(conn, user) -> str:
    line = next(u for u in conn.call("ACL", "LIST") if u.startswith(b"user %s " % user.encode()))
    return line.decode().split(" ", 2)[2]


def getuser(conn, user) -> dict:
    reply = conn.call("ACL", "GETUSER", user)
    return dict(zip(reply[::2], reply[1::2]))


def test_a_new_user_and_the_default_user(acl):
    assert acl.call("ACL", "SETUSER", "alice") == OK
    assert rules_of(acl, "alice") == "off resetchannels -@all"
    assert rules_of(acl, "default") == "on nopass ~* &* +@all"
    assert acl.call("ACL", "USERS") == [b"alice", b"default"]
    assert acl.call("ACL", "WHOAMI") == b"default"
    assert acl.call("ACL", "GETUSER", "nosuch") is None


@pytest.mark.parametrize("rules, shown", [
    (["on", ">pw"], f"on #{sha('pw')} resetchannels -@all"),
    (["on", ">pw", ">other", "<pw"], f"on #{sha('other')} resetchannels -@all"),
    (["on", f"#{sha('x')}", f"!{sha('x')}"], "on resetchannels -@all"),
    (["on", ">pw", "nopass"], "on nopass resetchannels -@all"),
    (["on", "nopass", "resetpass"], "on resetchannels -@all"),
    (["~a:*", "~b:*"], "off ~a:* ~b:* resetchannels -@all"),
    (["%R~r:*", "%W~w:*", "%RW~rw:*"], "off %R~r:* %W~w:* ~rw:* resetchannels -@all"),
    (["%R~k", "%W~k"], "off ~k resetchannels -@all"),
    (["~a", "allkeys"], "off ~* resetchannels -@all"),
    (["allkeys", "resetkeys", "~b"], "off ~b resetchannels -@all"),
    (["&news.*", "&alerts"], "off resetchannels &news.* &alerts -@all"),
    (["allchannels"], "off &* -@all"),
    (["allchannels", "resetchannels", "&c"], "off resetchannels &c -@all"),
    (["+get"], "off resetchannels -@all +get"),
    (["allcommands", "-get"], "off resetchannels +@all -get"),
    (["+@all", "-@dangerous"], "off resetchannels +@all -@dangerous"),
    (["nocommands", "+@read", "-@keyspace"], None),
    (["+config|get"], "off resetchannels -@all +config|get"),
    (["+@all", "-config|set"], "off resetchannels +@all -config|set"),
    (["+select|0"], "off resetchannels -@all +select|0"),
    (["+@all", "-@all", "+ping"], "off resetchannels -@all +ping"),
    (["~x", "(~y +get)", "(+set ~z)"],
     "off ~x resetchannels -@all (~y resetchannels -@all +get) (~z resetchannels -@all +set)"),
    (["(+get ~y)", "clearselectors"], "off resetchannels -@all"),
    (["on", ">pw", "~k", "+get", "(+set ~y)", "reset"], "off sanitize-payload resetchannels -@all"),
    (["skip-sanitize-payload"], "off skip-sanitize-payload resetchannels -@all"),
])
def test_rules_and_how_acl_list_shows_them(acl, rules, shown):
    assert acl.call("ACL", "SETUSER", "u", *rules) == OK
    if shown is None:  # the categories Redis picks, not a fixed string
        shown = rules_of(acl, "u")
        assert shown.startswith("off resetchannels -@all +@")
    assert rules_of(acl, "u") == shown
    # What ACL LIST shows sets the same user again.
    acl.call("ACL", "DELUSER", "u")
    assert acl.call("ACL", "SETUSER", "u", *shown.split(" ")) == OK
    assert rules_of(acl, "u") == shown


def test_a_selector_may_span_several_arguments(acl):
    assert acl.call("ACL", "SETUSER", "u", "(~a", "+get)") == OK
    assert rules_of(acl, "u") == "off resetchannels -@all (~a resetchannels -@all +get)"


def test_getuser_fields(acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "%R~r:*", "~k", "&ch", "+get", "(+set ~w)")
    fields = getuser(acl, "u")
    assert fields[b"flags"] == [b"on"]
    assert fields[b"passwords"] == [sha("pw").encode()]
    assert fields[b"commands"] == b"-@all +get"
    assert fields[b"keys"] == b"%R~r:* ~k"
    assert fields[b"channels"] == b"&ch"
    assert fields[b"selectors"] == [[b"commands", b"-@all +set", b"keys", b"~w", b"channels", b""]]


@pytest.mark.parametrize("rules, error", [
    (["+nosuch"], "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"),
    (["-@nosuch"], "ERR Error in ACL SETUSER modifier '-@nosuch': Unknown command or category name in ACL"),
    (["+config|nosuch"], "ERR Error in ACL SETUSER modifier '+config|nosuch': Unknown command or category name in ACL"),
    (["+select|"], "ERR Error in ACL SETUSER modifier '+select|': Syntax error"),
    (["+config|get|x"], "ERR Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported"),
    (["bogus"], "ERR Error in ACL SETUSER modifier 'bogus': Syntax error"),
    (["%X~k"], "ERR Error in ACL SETUSER modifier '%X~k': Syntax error"),
    (["#abc"], "ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"),
    (["<nosuch"], "ERR Error in ACL SETUSER modifier '<nosuch': The password you are trying to remove from the user does not exist"),
    (["allkeys", "~k"], "ERR Error in ACL SETUSER modifier '~k': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"),
    (["allchannels", "&c"], "ERR Error in ACL SETUSER modifier '&c': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"),
    (["(~a", "+get"], "ERR Unmatched parenthesis in acl selector starting at '(~a'."),
    (["(+nosuch)"], "ERR Error in ACL SETUSER modifier '(+nosuch)': Unknown command or category name in ACL"),
])
def test_malformed_rules_get_redis_errors_and_change_nothing(acl, rules, error):
    acl.call("ACL", "SETUSER", "u", "on", "+get")
    assert acl.call("ACL", "SETUSER", "u", "-get", *rules) == Err(error)
    assert rules_of(acl, "u") == "on resetchannels -@all +get"


def test_user_names_and_the_default_user_are_guarded(acl):
    assert acl.call("ACL", "SETUSER", "a b") == Err("ERR Usernames can't contain spaces or null characters")
    assert acl.call("ACL", "DELUSER", "default") == Err("ERR The 'default' user cannot be removed")
    acl.call("ACL", "SETUSER", "u")
    assert acl.call("ACL", "DELUSER", "u", "nosuch") == 1


def test_auth_with_a_user(server, acl):
    acl.call("ACL", "SETUSER", "alice", "on", ">pw", "+@all", "~*")
    acl.call("ACL", "SETUSER", "off-user", "off", ">pw", "+@all", "~*")
    conn = server.conn()
    wrong = Err("WRONGPASS invalid username-password pair or user is disabled.")
    assert conn.call("AUTH", "alice", "bad") == wrong
    assert conn.call("AUTH", "nosuch", "pw") == wrong
    assert conn.call("AUTH", "off-user", "pw") == wrong
    assert conn.call("AUTH", "alice", "pw") == OK
    assert conn.call("ACL", "WHOAMI") == b"alice"
    assert b" user=alice " in conn.call("CLIENT", "INFO")
    hello = server.conn()
    reply = hello.call("HELLO", "2", "AUTH", "alice", "pw")
    assert reply[reply.index(b"proto") + 1] == 2
    assert hello.call("ACL", "WHOAMI") == b"alice"
    assert server.conn().call("HELLO", "2", "AUTH", "alice", "bad") == wrong
    # One argument: the default user, which needs no password now.
    assert conn.call("AUTH", "pw") == Err(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?")
    assert conn.call("RESET") == Status("RESET")
    assert conn.call("ACL", "WHOAMI") == b"default"
    assert acl.call("CLIENT", "KILL", "USER", "nosuch") == Err("ERR No such user 'nosuch'")
    assert acl.call("CLIENT", "KILL", "USER", "alice") == 1
    for c in (conn, hello):
        c.close()


def test_redis_py_and_redis_cli_log_in_as_users(server, acl):
    acl.call("ACL", "SETUSER", "alice", "on", ">pw", "+@all", "~*")
    client = server.redis(username="alice", password="pw")
    assert client.acl_whoami() == "alice"
    with pytest.raises(redis.AuthenticationError):
        server.redis(username="alice", password="bad").ping()
    client.close()


def test_command_subcommand_and_first_argument_rules(server, acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "~*", "+get", "+config|get", "+select|0")
    u = login(server, "u")
    assert u.call("GET", "k") is None
    assert u.call("SET", "k", "v") == Err("NOPERM this user has no permissions to run the 'set' command")
    assert u.call("CONFIG", "GET", "maxmemory")
    assert u.call("CONFIG", "SET", "maxmemory", "0") == Err(
        "NOPERM this user has no permissions to run the 'config|set' command")
    assert u.call("SELECT", "0") == OK
    assert u.call("SELECT", "1") == Err("NOPERM this user has no permissions to run the 'select' command")
    # AUTH and HELLO are never denied.
    assert u.call("AUTH", "u", "pw") == OK
    # A change applies to connections already logged in.
    acl.call("ACL", "SETUSER", "u", "-get")
    assert u.call("GET", "k") == Err("NOPERM this user has no permissions to run the 'get' command")
    u.close()


def test_categories(server, acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "~*", "+@all", "-@dangerous")
    u = login(server, "u")
    assert u.call("SET", "k", "v") == OK
    assert u.call("FLUSHALL") == Err("NOPERM this user has no permissions to run the 'flushall' command")
    assert u.call("DEBUG", "SLEEP", "0") == Err("NOPERM this user has no permissions to run the 'debug' command")
    categories = acl.call("ACL", "CAT")
    assert categories[:3] == [b"keyspace", b"read", b"write"] and len(categories) == 21
    dangerous = set(acl.call("ACL", "CAT", "dangerous"))
    assert {b"flushall", b"debug", b"config|set", b"keys"} <= dangerous
    assert b"get" not in dangerous
    assert acl.call("ACL", "CAT", "nosuch") == Err("ERR Unknown category 'nosuch'")
    u.close()


@pytest.mark.parametrize("command, allowed", [
    (["GET", "r:1"], True),
    (["SET", "r:1", "v"], False),
    (["GET", "w:1"], False),
    (["SET", "w:1", "v"], True),
    (["EXISTS", "w:1"], True),  # EXISTS neither reads nor writes the value
    (["LMOVE", "rw:1", "w:1", "LEFT", "LEFT"], True),
    (["LMOVE", "w:1", "rw:1", "LEFT", "LEFT"], False),  # the source is read too
    (["COPY", "r:1", "w:2"], True),
    (["COPY", "w:1", "w:2"], False),
    (["SINTERSTORE", "w:dst", "r:a", "rw:b"], True),
    (["SINTERSTORE", "r:dst", "r:a"], False),
    (["MGET", "r:1", "rw:2", "w:3"], False),
    (["OTHER"], None),
])
def test_read_and_write_key_patterns(server, acl, command, allowed):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "+@all", "%R~r:*", "%W~w:*", "~rw:*")
    u = login(server, "u")
    if allowed is None:
        assert u.call("GET", "other") == Err(
            "NOPERM this user has no permissions to access one of the keys used as arguments")
        return
    reply = u.call(*command)
    denied = reply == Err("NOPERM this user has no permissions to access one of the keys used as arguments")
    assert denied != allowed, reply
    u.close()


def test_channel_rules(server, acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*", "resetchannels", "&news.*")
    u = login(server, "u")
    nope = Err("NOPERM this user has no permissions to access one of the channels used as arguments")
    assert u.call("PUBLISH", "news.sport", "x") == 0
    assert u.call("PUBLISH", "other", "x") == nope
    assert u.call("PSUBSCRIBE", "news.sp*") == nope  # a pattern only matches the rule literally
    assert u.call("SUBSCRIBE", "news.sport") == [b"subscribe", b"news.sport", 1]
    # Taking the channel away disconnects the subscriber, as in Redis.
    acl.call("ACL", "SETUSER", "u", "resetchannels", "&other")
    with pytest.raises((ConnectionClosed, ConnectionError, OSError)):
        u.call("PING")
    u.close()


def test_selectors_allow_what_the_root_does_not(server, acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "~a:*", "+get", "(~b:* +set)")
    u = login(server, "u")
    assert u.call("GET", "a:1") is None
    assert u.call("SET", "b:1", "v") == OK
    assert u.call("GET", "b:1") == Err("NOPERM this user has no permissions to access one of the keys used as arguments")
    assert u.call("SET", "a:1", "v") == Err("NOPERM this user has no permissions to access one of the keys used as arguments")
    u.close()


def test_dryrun(acl):
    acl.call("ACL", "SETUSER", "u", "on", "~k*", "+get", "&ch")
    assert acl.call("ACL", "DRYRUN", "u", "GET", "k1") == OK
    assert acl.call("ACL", "DRYRUN", "u", "GET", "x") == b"This user has no permissions to access the 'x' key"
    assert acl.call("ACL", "DRYRUN", "u", "SET", "k", "v") == b"This user has no permissions to run the 'set' command"
    assert acl.call("ACL", "DRYRUN", "nosuch", "GET", "k") == Err("ERR User 'nosuch' not found")
    assert acl.call("ACL", "DRYRUN", "u", "NOSUCH") == Err("ERR Command 'NOSUCH' not found")
    assert acl.call("ACL", "DRYRUN", "u", "GET") == Err("ERR wrong number of arguments for 'get' command")


def test_acl_log_records_denials_and_failed_logins(server, acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "~k", "+get", "+publish", "+multi")
    u = login(server, "u")
    u.call("SET", "k", "v")
    u.call("GET", "other")
    u.call("PUBLISH", "ch", "x")
    server.conn().call("AUTH", "u", "bad")
    u.call("MULTI")
    u.call("SET", "k", "v")
    entries = [dict(zip(e[::2], e[1::2])) for e in acl.call("ACL", "LOG")]
    summary = [(e[b"reason"], e[b"context"], e[b"object"], e[b"username"]) for e in entries]
    assert summary == [
        (b"command", b"multi", b"set", b"u"),
        (b"auth", b"toplevel", b"AUTH", b"u"),
        (b"channel", b"toplevel", b"ch", b"u"),
        (b"key", b"toplevel", b"other", b"u"),
        (b"command", b"toplevel", b"set", b"u"),
    ]
    newest = entries[0]
    assert newest[b"count"] == 1 and float(newest[b"age-seconds"]) >= 0
    assert b" user=u " in newest[b"client-info"]
    assert len(acl.call("ACL", "LOG", "2")) == 2
    assert acl.call("ACL", "LOG", "RESET") == OK
    assert acl.call("ACL", "LOG") == []
    u.close()


def test_a_password_guessed_ten_thousand_times_is_one_counted_entry(server, acl, server_kind):
    acl.call("ACL", "SETUSER", "u", "on", ">right", "+@all", "~*")
    guesser = server.conn()
    guesses = 10_000
    guesser.send_raw(b"".join(b"*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$5\r\nwrong\r\n" for _ in range(guesses)))
    bystander = server.conn()
    served = 0
    for _ in range(guesses):
        assert guesser.read() == Err("WRONGPASS invalid username-password pair or user is disabled.")
        if served < 100:
            assert bystander.call("PING") == PONG
            served += 1
    entries = acl.call("ACL", "LOG")
    assert len(entries) == 1
    entry = dict(zip(entries[0][::2], entries[0][1::2]))
    assert (entry[b"reason"], entry[b"count"]) == (b"auth", guesses)
    stats = info(acl, "stats")
    if server_kind == "keel" or "acl_access_denied_auth" in stats:  # Redis 7.2's field
        assert int(stats["acl_access_denied_auth"]) >= guesses
    assert login(server, "u", "right").call("PING") == PONG
    guesser.close()
    bystander.close()


def test_acl_counters_in_info(server, acl, server_kind):
    if server_kind == "redis":
        pytest.skip("keel_differs: INFO's acl_access_denied_* fields are Redis 7.2's")
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "~k", "+get", "+publish")
    before = info(acl, "stats")
    u = login(server, "u")
    u.call("SET", "k", "v")
    u.call("GET", "other")
    u.call("PUBLISH", "ch", "x")
    after = info(acl, "stats")
    for field in ("acl_access_denied_cmd", "acl_access_denied_key", "acl_access_denied_channel"):
        assert int(after[field]) == int(before[field]) + 1, field
    u.close()


def test_deleting_a_user_disconnects_its_clients(server, acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*")
    u = login(server, "u")
    bystander = server.conn()
    assert acl.call("ACL", "DELUSER", "u") == 1
    with pytest.raises((ConnectionClosed, ConnectionError, OSError)):
        u.call("PING")
    assert bystander.call("PING") == PONG
    u.close()
    bystander.close()


def test_multi_exec_checks_when_queued_and_again_at_exec(server, acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "~*", "+multi", "+exec", "+get", "+set")
    u = login(server, "u")
    assert u.call("MULTI") == OK
    assert u.call("DEL", "k") == Err("NOPERM this user has no permissions to run the 'del' command")
    assert u.call("EXEC") == Err("EXECABORT Transaction discarded because of previous errors.")
    assert u.call("MULTI") == OK
    assert u.call("SET", "k", "v") == QUEUED
    assert u.call("GET", "k") == QUEUED
    acl.call("ACL", "SETUSER", "u", "-get")
    assert u.call("EXEC") == [OK, Err(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. "
        "This command is no longer allowed for the following reason: no permission to execute the command or subcommand")]
    u.close()


def test_scripts_run_as_their_caller(server, acl):
    acl.call("ACL", "SETUSER", "u", "on", ">pw", "~k*", "+eval", "+get")
    u = login(server, "u")
    denied = u.call("EVAL", "return redis.call('set', 'k', '1')", "0")
    assert isinstance(denied, Err) and denied.startswith(
        "ERR The user executing the script can't run this command or subcommand")
    denied = u.call("EVAL", "return redis.call('get', 'x')", "0")
    assert denied.startswith("ERR The user executing the script can't access at least one of the keys")
    assert u.call("EVAL", "return redis.call('get', 'k1')", "0") is None
    entry = acl.call("ACL", "LOG", "1")[0]
    assert dict(zip(entry[::2], entry[1::2]))[b"context"] == b"lua"
    u.close()


def test_requirepass_is_the_default_users_password(server, acl, restore_config):
    restore_config("requirepass")
    assert acl.call("CONFIG", "SET", "requirepass", "secret") == OK
    assert rules_of(acl, "default") == f"on #{sha('secret')} ~* &* +@all"
    fresh = server.conn()
    assert fresh.call("GET", "k").startswith("NOAUTH")
    assert fresh.call("AUTH", "secret") == OK
    assert fresh.call("ACL", "WHOAMI") == b"default"
    assert acl.call("GET", "k") is None, "a connection that needed no password keeps working"
    assert acl.call("CONFIG", "SET", "requirepass", "") == OK
    assert rules_of(acl, "default") == "on nopass ~* &* +@all"
    fresh.close()


def test_genpass(acl):
    assert len(acl.call("ACL", "GENPASS")) == 64
    assert len(acl.call("ACL", "GENPASS", "5")) == 2
    assert acl.call("ACL", "GENPASS") != acl.call("ACL", "GENPASS")
    error = Err("ERR ACL GENPASS argument must be the number of bits for the output password, "
                "a positive number up to 4096")
    assert acl.call("ACL", "GENPASS", "0") == error
    assert acl.call("ACL", "GENPASS", "5000") == error
    assert acl.call("ACL", "GENPASS", "x") == Err("ERR value is not an integer or out of range")


def test_load_and_save_need_an_acl_file(acl):
    for sub in ("LOAD", "SAVE"):
        assert acl.call("ACL", sub).startswith("ERR This Redis instance is not configured to use an ACL file.")


def test_acl_file_round_trip(start_server, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text(f"user alice on #{sha('pw')} ~k:* resetchannels -@all +get\n")
    srv = start_server({"aclfile": str(path)})
    with srv.conn() as c:
        assert c.call("ACL", "USERS") == [b"alice", b"default"]
        alice = login(srv, "alice")
        assert alice.call("GET", "k:1") is None
        c.call("ACL", "SETUSER", "bob", "on", ">pw2", "+@all", "~*")
        assert c.call("ACL", "SAVE") == OK
        saved = path.read_text().splitlines()
        assert saved == [
            f"user alice on #{sha('pw')} ~k:* resetchannels -@all +get",
            f"user bob on #{sha('pw2')} ~* resetchannels +@all",
            "user default on nopass ~* &* +@all",
        ]
        # A wrong file changes nothing and says why.
        path.write_text("user carol on +nosuch\nbogus line\n")
        error = c.call("ACL", "LOAD")
        assert isinstance(error, Err)
        assert "Error in applying operation '+nosuch': Unknown command or category name in ACL" in error
        assert "should start with user keyword followed by the username" in error
        assert error.endswith("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
        assert c.call("ACL", "USERS") == [b"alice", b"bob", b"default"]
        # A good one replaces the users and disconnects those logged in as them.
        path.write_text("user carol on nopass +@all ~*\n")
        assert c.call("ACL", "LOAD") == OK
        assert c.call("ACL", "USERS") == [b"carol", b"default"]
        with pytest.raises((ConnectionClosed, ConnectionError, OSError)):
            alice.call("PING")
        alice.close()


def test_user_lines_in_the_config_file(start_server):
    srv = start_server(config_text=f"user alice on #{sha('pw')} ~* +@all\nuser default on >dpw ~* +@all\n")
    with srv.conn() as c:
        assert c.call("PING").startswith("NOAUTH")
        assert c.call("AUTH", "dpw") == OK
        assert c.call("ACL", "USERS") == [b"alice", b"default"]
    with login(srv, "alice") as alice:
        assert alice.call("ACL", "WHOAMI") == b"alice"


def test_a_bad_user_line_stops_the_server(run_to_exit, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text(f"port {free_port()}\nuser alice on +nosuch\n")
    code, output = run_to_exit(str(conf))
    assert code != 0
    assert "nosuch" in output or "Unknown command" in output
