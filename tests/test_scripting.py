"""Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT as Redis 7.0
runs them. redis-py's Lock and register_script, a token-bucket rate limiter
hit by 200 clients, atomicity against concurrent readers and transactions,
scripts that build key names at run time, the sandbox and its errors, the
conversions between Lua and RESP2/RESP3 both ways, the `redis` library and
the bundled cjson/cmsgpack/bit/struct, the script cache and its INFO fields,
shebang flags, maxmemory, and long scripts (BUSY, SCRIPT KILL, UNKILLABLE).

Errors raised by `redis.call` carry a suffix naming the script by the SHA1
of its body and the line: `... script: <sha1>, on @user_script:<line>.`;
`script_error` builds it.
"""

import hashlib
import select
import threading
import time

import pytest
from redis.exceptions import LockNotOwnedError

from support import OK, PONG, ConnectionClosed, Err, Status, info, wait_for

OOM = "OOM command not allowed when used memory > 'maxmemory'."
BUSY_SCRIPT = Err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
NOSCRIPT = Err("NOSCRIPT No matching script. Please use EVAL.")
QUEUED = Status("QUEUED")
NOT_ALLOWED = "ERR This Redis command is not allowed from script"


def sha1(text) -> str:
    if isinstance(text, str):
        text = text.encode()
    return hashlib.sha1(text).hexdigest()


def script_error(message, body, line=1) -> Err:
    """The error EVAL replies when `body` raises `message` at `line`."""
    return Err(f"{message} script: {sha1(body)}, on @user_script:{line}.")


def raw(conn, *command) -> bytes:
    """The reply's bytes as the server sent them."""
    conn.send(*command)
    return conn.read_raw()


def run_threads(target, count):
    """Runs target(n) on `count` threads; re-raises the first failure."""
    errors = []

    def guarded(n):
        try:
            target(n)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    if errors:
        raise errors[0]


# --------------------------------------------------------------------------
# redis-py: Lock and register_script
# --------------------------------------------------------------------------


def test_lock_acquire_extend_reacquire_release(r):
    lock = r.lock("lock:a", timeout=10)
    assert lock.acquire(blocking=False)
    token = lock.local.token
    assert r.get("lock:a") == token
    assert 9000 < r.pttl("lock:a") <= 10000
    other = r.lock("lock:a", timeout=10)
    assert not other.acquire(blocking=False)
    assert lock.owned() and not other.owned()

    assert lock.extend(50)  # adds to the remaining TTL
    assert 50000 < r.pttl("lock:a") <= 60000
    assert lock.extend(5, replace_ttl=True)
    assert 4000 < r.pttl("lock:a") <= 5000
    assert lock.reacquire()  # back to the lock's own timeout
    assert 9000 < r.pttl("lock:a") <= 10000

    lock.release()
    assert r.exists("lock:a") == 0
    assert other.acquire(blocking=False)
    other.release()


def test_lock_release_extend_reacquire_by_non_owner_raise(r):
    lock = r.lock("lock:b", timeout=10)
    assert lock.acquire(blocking=False)
    r.set("lock:b", "someone-else")  # the lock changed hands (e.g. it expired and was taken)
    with pytest.raises(LockNotOwnedError):
        lock.extend(10)
    with pytest.raises(LockNotOwnedError):
        lock.reacquire()
    with pytest.raises(LockNotOwnedError):
        lock.release()
    assert r.get("lock:b") == b"someone-else"


def test_lock_protects_a_counter_across_threads(server, flushed):
    def work(n):
        client = server.redis()
        try:
            for _ in range(20):
                with client.lock("lock:counter", timeout=5, blocking_timeout=5):
                    value = int(client.get("counter:locked") or 0)
                    client.set("counter:locked", value + 1)
        finally:
            client.close()

    run_threads(work, 10)
    r = server.redis()
    assert r.get("counter:locked") == b"200"
    assert r.exists("lock:counter") == 0
    r.close()


def test_register_script_reloads_after_script_flush(r):
    body = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
    incrby = r.register_script(body)
    assert incrby.sha == sha1(body)
    assert incrby(keys=["reg:n"], args=[5]) == 5
    assert r.script_exists(incrby.sha) == [True]
    assert r.script_flush() is True
    assert r.script_exists(incrby.sha) == [False]
    # EVALSHA gets NOSCRIPT, redis-py loads the script and retries.
    assert incrby(keys=["reg:n"], args=[2]) == 7
    assert r.script_exists(incrby.sha) == [True]


def test_register_script_in_a_pipeline(r):
    r.script_flush()
    body = "return redis.call('RPUSH', KEYS[1], ARGV[1])"
    push = r.register_script(body)
    with r.pipeline() as pipe:
        push(keys=["reg:l"], args=["a"], client=pipe)
        push(keys=["reg:l"], args=["b"], client=pipe)
        pipe.lrange("reg:l", 0, -1)
        assert pipe.execute() == [1, 2, [b"a", b"b"]]


# --------------------------------------------------------------------------
# Concurrency: a rate limiter, atomicity, undeclared keys
# --------------------------------------------------------------------------

TOKEN_BUCKET = """
local capacity = tonumber(ARGV[1])
local refill_per_ms = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or capacity
local last = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - last) * refill_per_ms)
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
return {allowed, tokens}
"""


def test_token_bucket_with_200_concurrent_clients_is_exact(server, flushed):
    """200 clients x 5 calls against 600 tokens: the clock passed to the
    script never moves, so nothing refills and exactly 600 calls pass."""
    clients, calls, capacity = 200, 5, 600
    results = [None] * clients
    start = threading.Barrier(clients)

    def work(n):
        client = server.redis()
        try:
            limiter = client.register_script(TOKEN_BUCKET)
            start.wait(timeout=60)
            results[n] = [limiter(keys=["bucket:api"], args=[capacity, 1, 1_000_000, 1])
                          for _ in range(calls)]
        finally:
            client.close()

    run_threads(work, clients)
    replies = [reply for per_client in results for reply in per_client]
    assert len(replies) == clients * calls
    allowed = sum(1 for ok, _ in replies if ok == 1)
    refused = sum(1 for ok, _ in replies if ok == 0)
    assert (allowed, refused) == (600, 400)
    # Each allowed call left a distinct number of tokens: 599 down to 0.
    assert sorted(left for ok, left in replies if ok == 1) == list(range(600))
    assert all(left == 0 for ok, left in replies if ok == 0)
    r = server.redis()
    assert r.hget("bucket:api", "tokens") == b"0"
    r.close()


# Moves ARGV[1] units from KEYS[1] to KEYS[2] and from KEYS[3] to KEYS[4],
# reading all four before writing any.
MOVE_UNITS = """
local v = {}
for i = 1, 4 do v[i] = tonumber(redis.call('GET', KEYS[i])) end
local n = tonumber(ARGV[1])
redis.call('SET', KEYS[1], v[1] - n)
redis.call('SET', KEYS[2], v[2] + n)
redis.call('SET', KEYS[3], v[3] - n)
redis.call('SET', KEYS[4], v[4] + n)
return {v[1] - n, v[2] + n, v[3] - n, v[4] + n}
"""


def test_script_is_atomic_for_concurrent_readers_and_transactions(server, flushed):
    """Scripts move a unit k1->k2 and k3->k4 while transactions move one back
    (k2->k1, k4->k3) and readers MGET all four: every snapshot has
    k1 == k3, k2 == k4 and k1 + k2 == TOTAL, so no reader ever sees part of
    a script or of a transaction."""
    keys = ["atom:alpha", "atom:beta:7", "{atom}:gamma", "atom:delta:12345"]
    total = 1_000_000
    script_clients, script_rounds = 4, 250
    tx_clients, tx_rounds = 2, 250
    r = server.redis()
    r.mset({keys[0]: total, keys[1]: 0, keys[2]: total, keys[3]: 0})
    writers_done = threading.Event()
    snapshots = []
    bad = []

    def read(n):
        client = server.redis()
        seen = 0
        try:
            while not writers_done.is_set() or seen < 50:
                a, b, c, d = (int(x) for x in client.mget(keys))
                seen += 1
                if not (a == c and b == d and a + b == total):
                    bad.append((a, b, c, d))
        finally:
            snapshots.append(seen)
            client.close()

    def move_by_script(n):
        client = server.redis()
        try:
            move = client.register_script(MOVE_UNITS)
            for _ in range(script_rounds):
                a, b, c, d = move(keys=keys, args=[1])
                assert a == c and b == d and a + b == total, (a, b, c, d)
        finally:
            client.close()

    def move_back_in_transaction(n):
        client = server.redis()
        try:
            for _ in range(tx_rounds):
                with client.pipeline(transaction=True) as pipe:
                    pipe.decr(keys[1]).incr(keys[0]).decr(keys[3]).incr(keys[2])
                    pipe.execute()
        finally:
            client.close()

    readers = [threading.Thread(target=read, args=(n,)) for n in range(3)]
    for t in readers:
        t.start()
    try:
        run_threads(lambda n: (move_by_script if n < script_clients else move_back_in_transaction)(n),
                    script_clients + tx_clients)
    finally:
        writers_done.set()
        for t in readers:
            t.join(timeout=60)
    assert bad == []
    assert len(snapshots) == 3 and min(snapshots) >= 50
    moved = script_clients * script_rounds - tx_clients * tx_rounds
    assert [int(x) for x in r.mget(keys)] == [total - moved, moved, total - moved, moved]
    r.close()


UNDECLARED_INCR = """
local key = 'undeclared:' .. ARGV[1]
local after = redis.call('INCRBY', key, ARGV[2])
return {after, tonumber(redis.call('GET', key))}
"""


def test_script_with_undeclared_key_writes_and_reads_it(c, server_kind):
    stats = (lambda: int(info(c, "stats")["keel_scripts_undeclared_keys"])) if server_kind == "keel" else None
    before = stats() if stats else None
    assert c.call("EVAL", UNDECLARED_INCR, "0", "alone", "5") == [5, 5]
    assert c.call("EVAL", UNDECLARED_INCR, "0", "alone", "2") == [7, 7]
    assert c.call("GET", "undeclared:alone") == b"7"
    body = "redis.call('SET', 'undeclared:' .. ARGV[1], ARGV[2]) return redis.call('GET', 'undeclared:' .. ARGV[1])"
    assert c.call("EVAL", body, "0", "s", "hello") == b"hello"
    assert c.call("GET", "undeclared:s") == b"hello"
    if stats:
        # keel counts the scripts that touched keys they did not declare in
        # KEYS (it has to run them under a wider lock); a script that only
        # touches its declared keys does not count.
        after = stats()
        assert after >= before + 3
        assert c.call("EVAL", "return redis.call('INCR', KEYS[1])", "1", "declared:k") == 1
        assert stats() == after


def test_scripts_with_undeclared_keys_run_concurrently_with_declared_writes(server, flushed):
    """20 clients increment one undeclared key through a script while 10
    others increment declared keys by script and directly: every count is
    exact and each script reads back the value it wrote."""
    undeclared_clients, declared_clients, rounds = 20, 10, 40

    def work(n):
        client = server.redis()
        try:
            if n < undeclared_clients:
                script = client.register_script(UNDECLARED_INCR)
                for _ in range(rounds):
                    after, read_back = script(args=["shared", 1])
                    assert after == read_back
            else:
                script = client.register_script("return redis.call('INCR', KEYS[1])")
                for i in range(rounds):
                    script(keys=[f"declared:{n % 3}"])
                    client.incr("declared:direct")
        finally:
            client.close()

    run_threads(work, undeclared_clients + declared_clients)
    r = server.redis()
    assert r.get("undeclared:shared") == str(undeclared_clients * rounds).encode()
    assert sum(int(r.get(f"declared:{i}")) for i in range(3)) == declared_clients * rounds
    assert r.get("declared:direct") == str(declared_clients * rounds).encode()
    r.close()


def test_eval_inside_multi(c):
    c.call("SET", "tx:s", "abc")
    assert c.call("MULTI") == OK
    body = "return redis.call('INCR', KEYS[1])"
    for command in [("EVAL", body, "1", "tx:k"), ("EVALSHA", "0" * 40, "0"), ("EVAL", body, "1", "tx:s"),
                    ("EVAL", "return +", "0"), ("EVALSHA", sha1(body), "1", "tx:k")]:
        assert c.call(*command) == QUEUED
    assert c.call("EXEC") == [
        1, NOSCRIPT, script_error("ERR value is not an integer or out of range", body),
        Err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'"), 2]


def test_select_inside_a_script_does_not_change_the_callers_database(c):
    body = "redis.call('SELECT', '1') redis.call('SET', 'sel:k', 'one') return redis.call('GET', 'sel:k')"
    assert c.call("EVAL", body, "0") == b"one"
    assert c.call("GET", "sel:k") is None
    assert c.call("SELECT", "1") == OK
    assert c.call("GET", "sel:k") == b"one"
    c.call("DEL", "sel:k")
    c.call("SELECT", "0")


# --------------------------------------------------------------------------
# Bad input and the sandbox
# --------------------------------------------------------------------------


def test_eval_argument_errors(c):
    assert c.call("EVAL", "return 1") == Err("ERR wrong number of arguments for 'eval' command")
    assert c.call("EVAL", "return 1", "-1") == Err("ERR Number of keys can't be negative")
    assert c.call("EVAL", "return 1", "2", "a") == Err("ERR Number of keys can't be greater than number of args")
    assert c.call("EVAL", "return 1", "x") == Err("ERR value is not an integer or out of range")
    assert c.call("EVAL", "return {KEYS[1], KEYS[2], ARGV[1], #KEYS, #ARGV}", "2", "k1", "k2", "a1") == [
        b"k1", b"k2", b"a1", 2, 1]


def test_keys_and_argv_are_binary_safe(c):
    value = b"a\x00b\r\n\xff"
    assert c.call("EVAL", "redis.call('SET', KEYS[1], ARGV[1]) return {#ARGV[1], redis.call('GET', KEYS[1])}",
                  "1", b"bin:\x00key", value) == [len(value), value]
    assert c.call("GET", b"bin:\x00key") == value


@pytest.mark.parametrize("body, message", [
    ("return 1 +", "user_script:1: unexpected symbol near '<eof>'"),
    ("return +", "user_script:1: unexpected symbol near '+'"),
    ("local x = \n\n = 2", "user_script:3: unexpected symbol near '='"),
    ("if true then", "user_script:1: 'end' expected near '<eof>'"),
])
def test_syntax_error(c, body, message):
    assert c.call("EVAL", body, "0") == Err(f"ERR Error compiling script (new function): {message}")
    assert c.call("SCRIPT", "LOAD", body) == Err(f"ERR Error compiling script (new function): {message}")


@pytest.mark.parametrize("command", [
    ("WATCH", "k"), ("UNWATCH",), ("MULTI",), ("EXEC",), ("DISCARD",),
    ("BLPOP", "k", "0"), ("BLPOP", "k", "1"), ("BRPOPLPUSH", "a", "b", "0"), ("BZPOPMIN", "z", "0"),
    ("WAIT", "0", "0"), ("SUBSCRIBE", "ch"), ("MONITOR",), ("AUTH", "x"), ("HELLO",),
    ("EVAL", "return 1", "0"), ("SCRIPT", "LOAD", "return 1"), ("FUNCTION", "LIST"), ("FCALL", "f", "0"),
    ("CLIENT", "ID"), ("CONFIG", "GET", "maxmemory"), ("SHUTDOWN",), ("DEBUG", "SLEEP", "0"),
])
def test_commands_not_allowed_from_scripts(c, command):
    args = ", ".join(f"'{a}'" for a in command)
    body = f"return redis.call({args})"
    assert c.call("EVAL", body, "0") == script_error(NOT_ALLOWED, body)
    body = f"return redis.pcall({args})"
    assert c.call("EVAL", body, "0") == Err(NOT_ALLOWED)


@pytest.mark.parametrize("name", ["XREAD", "xread"])
def test_xread_block_is_refused_in_scripts(c, name):
    """The error names the command as the script spelled it."""
    body = f"return redis.call('{name}', 'BLOCK', '0', 'STREAMS', 'xs', '$')"
    assert c.call("EVAL", body, "0") == script_error(
        f"ERR {name} command is not allowed with BLOCK option from scripts", body)


@pytest.mark.parametrize("call, message", [
    ("redis.call()", "ERR Please specify at least one argument for this redis lib call"),
    ("redis.call({})", "ERR Lua redis lib command arguments must be strings or integers"),
    ("redis.call('GET', {})", "ERR Lua redis lib command arguments must be strings or integers"),
    ("redis.call('GET', nil)", "ERR Lua redis lib command arguments must be strings or integers"),
    ("redis.call('SET', 'k', true)", "ERR Lua redis lib command arguments must be strings or integers"),
    ("redis.call('NOSUCH')", "ERR Unknown Redis command called from script"),
    ("redis.call('GET')", "ERR Wrong number of args calling Redis command from script"),
    ("redis.call('GET', 'a', 'b')", "ERR Wrong number of args calling Redis command from script"),
    ("redis.call('PING', 'a', 'b')", "ERR wrong number of arguments for 'ping' command"),
])
def test_redis_call_argument_errors(c, call, message):
    body = f"return {call}"
    assert c.call("EVAL", body, "0") == script_error(message, body)
    pbody = "return " + call.replace("redis.call", "redis.pcall")
    assert c.call("EVAL", pbody, "0") == Err(message)


def test_redis_call_converts_numbers_to_strings(c):
    assert c.call("EVAL", "redis.call('SET', KEYS[1], 3) return redis.call('GET', KEYS[1])", "1", "num") == b"3"
    assert c.call("EVAL", "redis.call('SET', KEYS[1], 0.1) return redis.call('GET', KEYS[1])", "1",
                  "num") == b"0.10000000000000001"
    assert c.call("EVAL", "redis.call('SET', KEYS[1], 2^53) return redis.call('GET', KEYS[1])", "1",
                  "num") == b"9007199254740992"
    assert c.call("EVAL", "redis.call('SET', KEYS[1], 1e20) return redis.call('GET', KEYS[1])", "1",
                  "num") == b"1e+20"


def test_command_errors_raised_and_caught(c):
    c.call("SET", "err:s", "abc")
    body = "return redis.call('INCR', KEYS[1])"
    assert c.call("EVAL", body, "1", "err:s") == script_error("ERR value is not an integer or out of range", body)
    body = "return redis.call('HGET', KEYS[1], 'f')"
    assert c.call("EVAL", body, "1", "err:s") == script_error(
        "WRONGTYPE Operation against a key holding the wrong kind of value", body)
    assert c.call("EVAL", "return redis.pcall('INCR', KEYS[1])", "1", "err:s") == Err(
        "ERR value is not an integer or out of range")
    body = "local e = redis.pcall('INCR', KEYS[1]) return type(e) .. '|' .. e.err"
    assert c.call("EVAL", body, "1", "err:s") == b"table|ERR value is not an integer or out of range"
    # A line number other than 1.
    body = "local a = 1\nlocal b = 2\nreturn redis.call('INCR', KEYS[1])"
    assert c.call("EVAL", body, "1", "err:s") == script_error(
        "ERR value is not an integer or out of range", body, line=3)


def test_lua_error_function(c):
    body = "error('boom')"
    assert c.call("EVAL", body, "0") == script_error("ERR user_script:1: boom", body)
    body = "error('boom', 0)"
    assert c.call("EVAL", body, "0") == script_error("ERR boom", body)
    body = "error({err='TABLE err'})"
    assert c.call("EVAL", body, "0") == script_error("TABLE err", body)


def test_deep_recursion_is_an_error_and_the_server_lives(c):
    body = "local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(1000000)"
    assert c.call("EVAL", body, "0") == script_error("ERR user_script:1: stack overflow", body)
    body = "local function f(n) return f(n + 1) + 1 end return f(1)"
    assert c.call("EVAL", body, "0") == script_error("ERR user_script:1: stack overflow", body)
    assert c.call("PING") == PONG
    assert c.call("EVAL", "local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(1000)",
                  "0") == 1000


def test_100mb_string_built_in_lua(c):
    """Redis builds it (Lua's heap is not limited) and the memory goes back
    once Lua collects it."""
    assert c.call("EVAL", "local s = string.rep('x', 100 * 1024 * 1024) return #s", "0") == 100 * 1024 * 1024
    assert c.call("PING") == PONG
    c.call("EVAL", "collectgarbage('collect') return 0", "0")
    assert int(info(c, "memory")["used_memory_vm_eval"]) < 64 * 1024 * 1024
    assert c.call("SCRIPT", "FLUSH") == OK


def test_nonexistent_global(c):
    body = "return nosuch"
    assert c.call("EVAL", body, "0") == script_error(
        "ERR user_script:1: Script attempted to access nonexistent global variable 'nosuch'", body)


def test_setting_a_global(c):
    body = "x = 1"
    assert c.call("EVAL", body, "0") == script_error("ERR user_script:1: Attempt to modify a readonly table", body)
    body = "redis = nil"
    assert c.call("EVAL", body, "0") == script_error("ERR user_script:1: Attempt to modify a readonly table", body)
    body = "local t = {} t.x = 1 return t.x"  # local tables stay writable
    assert c.call("EVAL", body, "0") == 1


@pytest.mark.parametrize("name", [
    "os", "io", "loadfile", "dofile", "require", "module", "print", "debug", "setfenv", "getfenv", "newproxy"])
def test_absent_globals(c, name):
    body = f"return type({name})"
    assert c.call("EVAL", body, "0") == script_error(
        f"ERR user_script:1: Script attempted to access nonexistent global variable '{name}'", body)


def test_os_exit_is_not_reachable(c):
    body = "os.exit(1)"
    assert c.call("EVAL", body, "0") == script_error(
        "ERR user_script:1: Script attempted to access nonexistent global variable 'os'", body)
    assert c.call("PING") == PONG


def test_present_globals(c):
    body = ("return {type(redis.call), type(loadstring), type(collectgarbage), type(string.dump), _VERSION, "
            "type(table), type(string), type(math), type(cjson), type(bit), type(struct), type(cmsgpack)}")
    assert c.call("EVAL", body, "0") == [
        b"function", b"function", b"function", b"function", b"Lua 5.1",
        b"table", b"table", b"table", b"table", b"table", b"table", b"table"]


def test_lua_pcall_catches_redis_call_errors_as_strings(c):
    c.call("SET", "pc:s", "abc")
    assert c.call("EVAL", "local ok, e = pcall(redis.call, 'INCR', KEYS[1]) return {tostring(ok), type(e), e}", "1",
                  "pc:s") == [b"false", b"string", b"ERR value is not an integer or out of range"]
    assert c.call("EVAL", "local ok, e = pcall(redis.call, 'NOSUCH') return {tostring(ok), e}", "0") == [
        b"false", b"ERR Unknown Redis command called from script"]
    assert c.call("EVAL", "local ok, e = pcall(function() return nosuch end) return {tostring(ok), e}", "0") == [
        b"false", b"user_script:1: Script attempted to access nonexistent global variable 'nosuch'"]


def test_loadstring_refuses_bytecode(c):
    """Precompiled chunks could step outside the sandbox: loadstring only takes source."""
    body = "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), e}"
    assert c.call("EVAL", body, "0") == [b"nil", b"[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'"]
    assert c.call("EVAL", "local f, e = loadstring('return +') return {tostring(f), e}", "0") == [
        b"nil", b"[string \"return +\"]:1: unexpected symbol near '+'"]
    assert c.call("EVAL", "return loadstring('return 1 + 1')()", "0") == 2


def test_unpack_of_too_many_values(c):
    body = "local t = {} for i = 1, 100000 do t[i] = 'x' end return #{unpack(t)}"
    assert c.call("EVAL", body, "0") == script_error("ERR user_script:1: too many results to unpack", body)
    body = "local t = {'RPUSH', KEYS[1]} for i = 1, 7000 do t[#t + 1] = 'x' end return redis.call(unpack(t))"
    assert c.call("EVAL", body, "1", "unpack:l") == 7000


def nested_tables(depth, innermost="7"):
    return f"local t = {{}} local c = t for i = 1, {depth} do c[1] = {{}} c = c[1] end c[1] = {innermost} return t"


def read_nested_reply(conn):
    """Reads a reply of one-element arrays nested in each other without
    recursing: returns (depth, the innermost reply's line)."""
    depth = 0
    while (chunk := conn.read_exact_bytes(4)) == b"*1\r\n":
        depth += 1
    while not chunk.endswith(b"\r\n"):
        chunk += conn.read_exact_bytes(1)
    return depth, chunk[:-2]


def test_deeply_nested_reply(c):
    """A table nested deeper than Lua's C stack allows (LUAI_MAXCSTACK, 8000
    slots) is cut off with an error where the conversion runs out of stack:
    7995 levels in Redis."""
    c.send("EVAL", nested_tables(1000), "0")
    assert read_nested_reply(c) == (1001, b":7")
    c.send("EVAL", nested_tables(10000), "0")
    assert read_nested_reply(c) == (7995, b"-ERR reached lua stack limit")
    assert c.call("PING") == PONG


def test_bundled_libraries_refuse_bad_input(c):
    body = "return cjson.decode(string.rep('[', 100000))"
    assert c.call("EVAL", body, "0") == script_error(
        "ERR user_script:1: Found too many nested data structures (1001) at character 1001", body)
    body = nested_tables(10000, innermost="{}").replace("return t", "return cjson.encode(t)")
    assert c.call("EVAL", body, "0") == script_error(
        "ERR user_script:1: Cannot serialise, excessive nesting (1001)", body)
    # cmsgpack encodes what is nested deeper than 16 levels as nil.
    body = nested_tables(10000, innermost="{}").replace("return t", "return #cmsgpack.pack(t)")
    assert c.call("EVAL", body, "0") == 17
    for data, message in [("\\221\\255\\255\\255\\255", "Missing bytes in input."),
                          ("\\146\\1", "Missing bytes in input."),
                          ("\\193", "Bad data format in input.")]:
        body = f"return cmsgpack.unpack('{data}')"
        assert c.call("EVAL", body, "0") == script_error(f"ERR user_script:1: {message}", body)
    body = "return struct.unpack('>I4', 'ab')"
    assert c.call("EVAL", body, "0") == script_error(
        "ERR user_script:1: bad argument #2 to 'unpack' (data string too short)", body)
    body = "return struct.pack('>i99', 1)"
    assert c.call("EVAL", body, "0") == script_error("ERR user_script:1: integral size 99 is larger than limit of 32",
                                                     body)
    assert c.call("PING") == PONG


# --------------------------------------------------------------------------
# Lua -> RESP
# --------------------------------------------------------------------------

# (script, RESP2 bytes, RESP3 bytes)
LUA_TO_RESP = {
    "integer": ("return 42", b":42\r\n", b":42\r\n"),
    "float truncated": ("return 3.99", b":3\r\n", b":3\r\n"),
    "negative float truncated": ("return -3.99", b":-3\r\n", b":-3\r\n"),
    "string": ("return 'str'", b"$3\r\nstr\r\n", b"$3\r\nstr\r\n"),
    "true": ("return true", b":1\r\n", b":1\r\n"),
    "false": ("return false", b"$-1\r\n", b"_\r\n"),
    "nil": ("return nil", b"$-1\r\n", b"_\r\n"),
    "nil truncates an array": ("return {1, 2, nil, 4}", b"*2\r\n:1\r\n:2\r\n", b"*2\r\n:1\r\n:2\r\n"),
    "nested table": (
        "return {1, 'two', 3.7, true, false, {5, {6}}}",
        b"*6\r\n:1\r\n$3\r\ntwo\r\n:3\r\n:1\r\n$-1\r\n*2\r\n:5\r\n*1\r\n:6\r\n",
        b"*6\r\n:1\r\n$3\r\ntwo\r\n:3\r\n:1\r\n_\r\n*2\r\n:5\r\n*1\r\n:6\r\n"),
    "hash part ignored": ("return {1, 2, a=3}", b"*2\r\n:1\r\n:2\r\n", b"*2\r\n:1\r\n:2\r\n"),
    "only a hash part": ("return {a=1}", b"*0\r\n", b"*0\r\n"),
    "err table": ("return {err='My Error'}", b"-My Error\r\n", b"-My Error\r\n"),
    "err table with newlines": ("return {err='x\\r\\ny'}", b"-x  y\r\n", b"-x  y\r\n"),
    "err that is not a string": ("return {err=1}", b"*0\r\n", b"*0\r\n"),
    "ok table": ("return {ok='Fine'}", b"+Fine\r\n", b"+Fine\r\n"),
    "error_reply": ("return redis.error_reply('bad thing')", b"-bad thing\r\n", b"-bad thing\r\n"),
    "error_reply with a dash": ("return redis.error_reply('-CUSTOM thing')", b"-CUSTOM thing\r\n",
                                b"-CUSTOM thing\r\n"),
    "error_reply empty": ("return redis.error_reply('')", b"-ERR \r\n", b"-ERR \r\n"),
    "error_reply not a string": ("return redis.error_reply(1)", b"-ERR wrong number or type of arguments\r\n",
                                 b"-ERR wrong number or type of arguments\r\n"),
    "status_reply": ("return redis.status_reply('FINE')", b"+FINE\r\n", b"+FINE\r\n"),
    "status_reply without argument": ("return redis.status_reply()", b"-ERR wrong number or type of arguments\r\n",
                                      b"-ERR wrong number or type of arguments\r\n"),
    "errors and statuses nested": ("return {1, {err='inner'}, {ok='s'}}", b"*3\r\n:1\r\n-inner\r\n+s\r\n",
                                   b"*3\r\n:1\r\n-inner\r\n+s\r\n"),
    "double": ("return {double=3.5}", b"$3\r\n3.5\r\n", b",3.5\r\n"),
    "double integral": ("return {double=3}", b"$1\r\n3\r\n", b",3\r\n"),
    "double 17 digits": ("return {double=0.1}", b"$19\r\n0.10000000000000001\r\n", b",0.10000000000000001\r\n"),
    "double infinite": ("return {double=1/0}", b"$3\r\ninf\r\n", b",inf\r\n"),
    "map": ("return {map={a=1}}", b"*2\r\n$1\r\na\r\n:1\r\n", b"%1\r\n$1\r\na\r\n:1\r\n"),
    "map of array": ("return {map={a={1, 2}}}", b"*2\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n",
                     b"%1\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n"),
    "set": ("return {set={a=true}}", b"*1\r\n$1\r\na\r\n", b"~1\r\n$1\r\na\r\n"),
    "big number": ("return {big_number='12345678901234567890'}", b"$20\r\n12345678901234567890\r\n",
                   b"(12345678901234567890\r\n"),
    "verbatim": ("return {verbatim_string={format='txt', string='hi'}}", b"$2\r\nhi\r\n", b"=6\r\ntxt:hi\r\n"),
    "verbatim mkd": ("return {verbatim_string={format='mkd', string='hi'}}", b"$2\r\nhi\r\n", b"=6\r\nmkd:hi\r\n"),
    "true after setresp 3": ("redis.setresp(3) return true", b":1\r\n", b"#t\r\n"),
    "false after setresp 3": ("redis.setresp(3) return false", b":0\r\n", b"#f\r\n"),
    "map after setresp 3": ("redis.setresp(3) return {map={a=1}}", b"*2\r\n$1\r\na\r\n:1\r\n",
                            b"%1\r\n$1\r\na\r\n:1\r\n"),
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("body, resp2, resp3", LUA_TO_RESP.values(), ids=LUA_TO_RESP.keys())
def test_lua_to_resp(c, protocol, body, resp2, resp3):
    if protocol == 3:
        c.call("HELLO", "3")
    assert raw(c, "EVAL", body, "0") == (resp3 if protocol == 3 else resp2)


# --------------------------------------------------------------------------
# RESP -> Lua: a script describes what redis.call gave it, deterministically
# --------------------------------------------------------------------------

DESCRIBE = """
local function d(v)
  local t = type(v)
  if t == 'table' then
    if type(v.err) == 'string' then return 'err:' .. v.err end
    local keys = {}
    for k in pairs(v) do table.insert(keys, k) end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do table.insert(parts, tostring(k) .. '=' .. d(v[k])) end
    return '{' .. table.concat(parts, ',') .. '}'
  end
  return t .. ':' .. tostring(v)
end
if ARGV[1] == '3' then redis.setresp(3) end
local args = {}
for i = 2, #ARGV do args[i - 1] = ARGV[i] end
return d(redis.pcall(unpack(args)))
"""

# (command, as Lua sees it with RESP2, with RESP3)
RESP_TO_LUA = {
    "bulk": (("GET", "rl:str"), "string:v", "string:v"),
    "null bulk": (("GET", "rl:missing"), "boolean:false", "nil:nil"),
    "status": (("SET", "rl:other", "1"), "{ok=string:OK}", "{ok=string:OK}"),
    "status PONG": (("PING",), "{ok=string:PONG}", "{ok=string:PONG}"),
    "integer": (("INCR", "rl:int"), "number:11", "number:11"),
    "array": (("LRANGE", "rl:list", "0", "-1"), "{1=string:a,2=string:b}", "{1=string:a,2=string:b}"),
    "empty array": (("LRANGE", "rl:missing", "0", "-1"), "{}", "{}"),
    "null array": (("LPOP", "rl:missing", "2"), "boolean:false", "nil:nil"),
    "error": (("HGET", "rl:str", "f"), "err:WRONGTYPE Operation against a key holding the wrong kind of value",
              "err:WRONGTYPE Operation against a key holding the wrong kind of value"),
    "map": (("HGETALL", "rl:hash"), "{1=string:f,2=string:v}", "{map={f=string:v}}"),
    "set": (("SMEMBERS", "rl:set"), "{1=string:m}", "{set={m=boolean:true}}"),
    "double": (("ZSCORE", "rl:zset", "m"), "string:1.5", "{double=number:1.5}"),
    "null double": (("ZSCORE", "rl:zset", "nomember"), "boolean:false", "nil:nil"),
    "array of pairs with doubles": (("ZRANGE", "rl:zset", "0", "-1", "WITHSCORES"), "{1=string:m,2=string:1.5}",
                                    "{1={1=string:m,2={double=number:1.5}}}"),
}


@pytest.mark.parametrize("client_protocol", [2, 3])
@pytest.mark.parametrize("command, resp2, resp3", RESP_TO_LUA.values(), ids=RESP_TO_LUA.keys())
def test_resp_to_lua(c, client_protocol, command, resp2, resp3):
    """What a script sees depends on redis.setresp, not on the client's protocol."""
    c.call("SET", "rl:str", "v")
    c.call("SET", "rl:int", "10")
    c.call("RPUSH", "rl:list", "a", "b")
    c.call("HSET", "rl:hash", "f", "v")
    c.call("SADD", "rl:set", "m")
    c.call("ZADD", "rl:zset", "1.5", "m")
    if client_protocol == 3:
        c.call("HELLO", "3")
    assert c.call("EVAL", DESCRIBE, "0", "2", *command) == resp2.encode()
    c.call("SET", "rl:int", "10")
    assert c.call("EVAL", DESCRIBE, "0", "3", *command) == resp3.encode()


def test_resp3_verbatim_to_lua(c):
    body = ("redis.setresp(3) local r = redis.call('INFO', 'server') "
            "return {type(r), r.verbatim_string.format, string.sub(r.verbatim_string.string, 1, 8)}")
    assert c.call("EVAL", body, "0") == [b"table", b"txt", b"# Server"]
    body = "local r = redis.call('INFO', 'server') return {type(r), string.sub(r, 1, 8)}"
    assert c.call("EVAL", body, "0") == [b"string", b"# Server"]


# --------------------------------------------------------------------------
# The redis library and the bundled libraries
# --------------------------------------------------------------------------


def test_sha1hex(c):
    assert c.call("EVAL", "return redis.sha1hex('')", "0") == b"da39a3ee5e6b4b0d3255bfef95601890afd80709"
    assert c.call("EVAL", "return redis.sha1hex('abc')", "0") == b"a9993e364706816aba3e25717850c26c9cd0d89d"
    assert c.call("EVAL", "return redis.sha1hex(1)", "0") == sha1("1").encode()
    body = "return redis.sha1hex()"
    assert c.call("EVAL", body, "0") == script_error("ERR wrong number of arguments", body)


def test_log(c):
    assert c.call("EVAL", "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
                  "0") == [0, 1, 2, 3]
    assert c.call("EVAL", "return redis.log(redis.LOG_DEBUG, 'from', 'a test')", "0") is None
    body = "return redis.log(redis.LOG_WARNING)"
    assert c.call("EVAL", body, "0") == script_error("ERR redis.log() requires two arguments or more.", body)
    body = "return redis.log(99, 'x')"
    assert c.call("EVAL", body, "0") == script_error("ERR Invalid debug level.", body)
    body = "return redis.log('x', 'x')"
    assert c.call("EVAL", body, "0") == script_error("ERR First argument must be a number (log level).", body)


def test_redis_version(c):
    version, num = c.call("EVAL", "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}", "0")
    major, minor, patch = (int(x) for x in version.decode().split("."))
    assert num == (major << 16) | (minor << 8) | patch
    assert (major, minor) == (7, 0)
    assert c.call("EVAL", "return {type(redis.REDIS_VERSION), type(redis.REDIS_VERSION_NUM)}", "0") == [
        b"string", b"number"]


def test_setresp_errors(c):
    assert c.call("EVAL", "return redis.setresp(2)", "0") is None
    for arg in ("4", "1", "'x'"):
        body = f"return redis.setresp({arg})"
        assert c.call("EVAL", body, "0") == script_error("ERR RESP version must be 2 or 3.", body)
    for args in ("", "2, 3"):
        body = f"return redis.setresp({args})"
        assert c.call("EVAL", body, "0") == script_error("ERR redis.setresp() requires one argument.", body)


def test_set_repl_and_replicate_commands(c):
    assert c.call("EVAL", "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, "
                          "redis.REPL_ALL}", "0") == [0, 1, 2, 2, 3]
    assert c.call("EVAL", "redis.set_repl(redis.REPL_NONE) redis.set_repl(redis.REPL_ALL) "
                          "return redis.call('SET', KEYS[1], 'v')", "1", "repl:k") == OK
    assert c.call("EVAL", "return redis.replicate_commands()", "0") == 1
    body = "return redis.set_repl(99)"
    assert c.call("EVAL", body, "0") == script_error(
        "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.", body)
    body = "return redis.set_repl()"
    assert c.call("EVAL", body, "0") == script_error("ERR redis.set_repl() requires two arguments.", body)


def test_breakpoint_and_debug_outside_the_debugger(c):
    assert c.call("EVAL", "return redis.breakpoint()", "0") is None
    assert c.call("EVAL", "return redis.debug('x', 1)", "0") is None


def test_math_randomseed_repeats_redis_sequence(c):
    """Redis 7.0 does not reseed before each script (consecutive runs get
    different numbers), but math.randomseed gives the same sequence every
    time, from Redis's own rand48."""
    body = "math.randomseed(7) return {math.random(1000000), math.random(1000000)}"
    assert c.call("EVAL", body, "0") == [266445, 682036]
    assert c.call("EVAL", body, "0") == [266445, 682036]
    body = "math.randomseed(42) return {math.random(1000000), math.random(1000000)}"
    assert c.call("EVAL", body, "0") == [744526, 342702]
    first, second = c.call("EVAL", "local x = math.random() return {x >= 0 and x < 1, math.random(10) <= 10}", "0")
    assert (first, second) == (1, 1)


def test_cjson(c):
    assert c.call("EVAL", "return cjson.encode({1, 2, 'x'})", "0") == b'[1,2,"x"]'
    assert c.call("EVAL", "return cjson.encode({a=1})", "0") == b'{"a":1}'
    body = ("local t = cjson.decode('{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}') "
            "return {t.a[1], t.a[2], t.c, tostring(t.a[3].b == cjson.null)}")
    assert c.call("EVAL", body, "0") == [1, 2, b"d", b"true"]
    body = "return cjson.decode('{bad')"
    assert c.call("EVAL", body, "0") == script_error(
        "ERR user_script:1: Expected object key string but found invalid token at character 2", body)


def test_cmsgpack(c):
    assert c.call("EVAL", "return cmsgpack.pack({1, 2, 3})", "0") == b"\x93\x01\x02\x03"
    assert c.call("EVAL", "return cmsgpack.unpack(cmsgpack.pack({1, 'a', {2}}))", "0") == [1, b"a", [2]]
    assert c.call("EVAL", "return {cmsgpack.unpack(cmsgpack.pack(1, 'two'))}", "0") == [1, b"two"]


def test_bit(c):
    assert c.call("EVAL", "return {bit.band(0xff, 0x0f), bit.bor(1, 2), bit.bxor(3, 1), bit.lshift(1, 10), "
                          "bit.rshift(1024, 3), bit.tohex(255), bit.bnot(0)}", "0") == [
        15, 3, 2, 1024, 128, b"000000ff", -1]


def test_struct(c):
    assert c.call("EVAL", "return struct.pack('>I2', 258)", "0") == b"\x01\x02"
    assert c.call("EVAL", "return {struct.unpack('>I2', struct.pack('>I2', 258))}", "0") == [258, 3]
    assert c.call("EVAL", "return struct.size('>I4i2')", "0") == 6


# --------------------------------------------------------------------------
# The script cache
# --------------------------------------------------------------------------


def test_script_load_exists_flush(c):
    assert c.call("SCRIPT", "FLUSH") == OK
    body = "return 'cached'"
    assert c.call("SCRIPT", "LOAD", body) == sha1(body).encode()
    assert c.call("SCRIPT", "LOAD", body) == sha1(body).encode()
    assert c.call("SCRIPT", "EXISTS", sha1(body), "f" * 40, sha1(body).upper()) == [1, 0, 1]
    assert c.call("EVALSHA", sha1(body), "0") == b"cached"
    assert c.call("EVALSHA", sha1(body).upper(), "0") == b"cached"
    assert c.call("EVALSHA_RO", sha1(body), "0") == b"cached"
    for mode in ((), ("SYNC",), ("ASYNC",)):
        assert c.call("SCRIPT", "LOAD", body) == sha1(body).encode()
        assert c.call("SCRIPT", "FLUSH", *mode) == OK
        assert c.call("SCRIPT", "EXISTS", sha1(body)) == [0]
        assert c.call("EVALSHA", sha1(body), "0") == NOSCRIPT
        assert c.call("EVALSHA_RO", sha1(body), "0") == NOSCRIPT
    # EVAL caches what it runs.
    assert c.call("EVAL", body, "0") == b"cached"
    assert c.call("SCRIPT", "EXISTS", sha1(body)) == [1]
    assert c.call("EVALSHA", "xyz", "0") == NOSCRIPT


def test_script_subcommand_errors(c):
    assert c.call("SCRIPT", "EXISTS") == Err("ERR wrong number of arguments for 'script|exists' command")
    assert c.call("SCRIPT", "LOAD") == Err("ERR wrong number of arguments for 'script|load' command")
    assert c.call("SCRIPT", "FLUSH", "BAD") == Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    assert c.call("SCRIPT", "FLUSH", "SYNC", "ASYNC") == Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    assert c.call("SCRIPT", "KILL") == Err("NOTBUSY No scripts in execution right now.")
    assert c.call("SCRIPT", "NOSUCH") == Err("ERR unknown subcommand 'NOSUCH'. Try SCRIPT HELP.")
    assert c.call("SCRIPT") == Err("ERR wrong number of arguments for 'script' command")
    assert c.call("EVALSHA", "x" * 40) == Err("ERR wrong number of arguments for 'evalsha' command")


def test_info_memory_script_fields(c):
    assert c.call("SCRIPT", "FLUSH") == OK
    fields = info(c, "memory")
    for name in ("used_memory_lua", "used_memory_vm_eval", "used_memory_scripts_eval", "number_of_cached_scripts",
                 "used_memory_vm_functions", "used_memory_vm_total", "used_memory_functions",
                 "used_memory_scripts", "number_of_functions", "number_of_libraries"):
        assert int(fields[name]) >= 0, name
    assert fields["number_of_cached_scripts"] == "0"
    assert fields["used_memory_lua"] == fields["used_memory_vm_eval"]
    empty_size = int(fields["used_memory_scripts_eval"])
    for i in range(5):
        c.call("SCRIPT", "LOAD", f"return 'info {i}'")
    c.call("EVAL", "return 'info eval'", "0")
    fields = info(c, "memory")
    assert fields["number_of_cached_scripts"] == "6"
    assert int(fields["used_memory_scripts_eval"]) > empty_size
    assert c.call("SCRIPT", "FLUSH") == OK
    fields = info(c, "memory")
    assert fields["number_of_cached_scripts"] == "0"
    assert int(fields["used_memory_scripts_eval"]) == empty_size


# --------------------------------------------------------------------------
# Shebang flags, EVAL_RO, maxmemory
# --------------------------------------------------------------------------


def test_shebang_flags(c):
    body = "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'v')"
    assert c.call("EVAL", body, "1", "sb:k") == script_error(
        "ERR Write commands are not allowed from read-only scripts.", body, line=2)
    assert c.call("EVAL", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", "1", "sb:k") is None
    assert c.call("EVAL", "#!lua\nreturn 1", "0") == 1
    assert c.call("EVAL", "#!lua flags=\nreturn 1", "0") == 1
    assert c.call("EVAL", "#!lua flags=no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\n"
                          "return 1", "0") == 1
    assert c.call("EVAL", "#!lua flags=bogus\nreturn 1", "0") == Err("ERR Unexpected flag in script shebang: bogus")
    assert c.call("EVAL", "#!lua name=foo\nreturn 1", "0") == Err("ERR Unknown lua shebang option: name=foo")
    assert c.call("EVAL", "#!luajit\nreturn 1", "0") == Err("ERR Unexpected engine in script shebang: #!luajit")
    assert c.call("EVAL", "#!\nreturn 1", "0") == Err("ERR Unexpected engine in script shebang: #!")


def test_eval_ro(c):
    c.call("SET", "ro:k", "v")
    body = "return redis.call('SET', KEYS[1], 'x')"
    assert c.call("EVAL_RO", body, "1", "ro:k") == script_error(
        "ERR Write commands are not allowed from read-only scripts.", body)
    assert c.call("EVAL_RO", "return redis.pcall('SET', KEYS[1], 'x')", "1", "ro:k") == Err(
        "ERR Write commands are not allowed from read-only scripts.")
    assert c.call("EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "ro:k") == b"v"
    sha = c.call("SCRIPT", "LOAD", body).decode()
    assert c.call("EVALSHA_RO", sha, "1", "ro:k") == script_error(
        "ERR Write commands are not allowed from read-only scripts.", body)
    assert c.call("GET", "ro:k") == b"v"


@pytest.fixture
def over_maxmemory(c, connect, restore_config):
    """Puts the shared server over maxmemory (noeviction) for the test."""
    restore_config("maxmemory", "maxmemory-policy")
    c.call("SET", "mm:filler", "x" * 100)
    admin = connect()
    assert admin.call("CONFIG", "SET", "maxmemory-policy", "noeviction") == OK
    assert admin.call("CONFIG", "SET", "maxmemory", "1") == OK


def test_scripts_over_maxmemory(c, over_maxmemory):
    body = "return redis.call('SET', KEYS[1], 'v')"
    assert c.call("EVAL", body, "1", "mm:k") == script_error(OOM, body)
    # Without a shebang a script may run and read; with one it must say no-writes.
    assert c.call("EVAL", "return redis.call('GET', KEYS[1])", "1", "mm:filler") == b"x" * 100
    assert c.call("EVAL", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", "1", "mm:filler") == b"x" * 100
    assert c.call("EVAL", "#!lua\nreturn redis.call('GET', KEYS[1])", "1", "mm:filler") == Err(OOM)
    assert c.call("EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "mm:filler") == b"x" * 100
    assert c.call("EVAL", "#!lua flags=allow-oom\nreturn redis.call('SET', KEYS[1], 'v')", "1", "mm:k") == OK


# --------------------------------------------------------------------------
# Long scripts: BUSY, SCRIPT KILL, UNKILLABLE
# --------------------------------------------------------------------------

BUSY_SLACK = 10.0  # seconds: only so that a hung server fails the test


@pytest.fixture
def busy_server(start_server):
    """A server of its own whose scripts count as busy after 200 ms."""
    srv = start_server()
    with srv.conn() as admin:
        assert admin.call("CONFIG", "SET", "busy-reply-threshold", "200") == OK
        assert admin.call("CONFIG", "GET", "lua-time-limit") == [b"lua-time-limit", b"200"]
    return srv


def wait_until_busy(srv, looper, expected=BUSY_SCRIPT):
    """Pings on fresh connections until the server answers BUSY; fails at
    once if the looping script replied (it ended, or never started)."""
    def busy():
        if select.select([looper.sock], [], [], 0)[0]:
            raise AssertionError(f"the script replied before the server got busy: {looper.read()!r}")
        with srv.conn(timeout=BUSY_SLACK) as probe:
            reply = probe.call("PING")
        assert reply in (PONG, expected), reply
        return reply == expected

    wait_for(busy, timeout=BUSY_SLACK)


def test_busy_script_then_script_kill(busy_server):
    body = "local i = 0 while true do i = i + 1 end"
    looper = busy_server.conn(timeout=BUSY_SLACK)
    looper.send("EVAL", body, "0")
    wait_until_busy(busy_server, looper)
    others = [busy_server.conn(timeout=BUSY_SLACK) for _ in range(5)]
    started = time.monotonic()
    for other in others:
        other.send("PING")
        other.send("GET", "busy:k")
        other.send("SET", "busy:k", "v")
    for other in others:
        assert [other.read() for _ in range(3)] == [BUSY_SCRIPT] * 3
    assert time.monotonic() - started < BUSY_SLACK
    admin = others[0]
    assert admin.call("FUNCTION", "KILL") == BUSY_SCRIPT
    assert admin.call("SCRIPT", "KILL") == OK
    assert looper.read() == script_error("ERR Script killed by user with SCRIPT KILL...", body)
    for other in others:
        assert other.call("PING") == PONG
        other.close()
    assert looper.call("GET", "busy:k") is None
    looper.close()


def test_busy_script_that_wrote_is_unkillable_until_shutdown_nosave(busy_server):
    body = "redis.call('SET', KEYS[1], 'written') while true do end"
    looper = busy_server.conn(timeout=BUSY_SLACK)
    looper.send("EVAL", body, "1", "busy:w")
    wait_until_busy(busy_server, looper)
    admin = busy_server.conn(timeout=BUSY_SLACK)
    assert admin.call("SCRIPT", "KILL") == Err(
        "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait "
        "the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
    assert admin.call("PING") == BUSY_SCRIPT
    assert admin.call("SHUTDOWN") == BUSY_SCRIPT
    admin.send("SHUTDOWN", "NOSAVE")
    with pytest.raises(ConnectionClosed):
        admin.read()
    with pytest.raises(ConnectionClosed):
        looper.read()
    busy_server.wait(timeout=BUSY_SLACK)
    admin.close()
    looper.close()


# --------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------


@pytest.mark.keel_differs(reason="keel limits the Lua heap; Redis lets a script grow it until the machine "
                                 "runs out of memory (a 1e8-element table takes ~2 GB and ~10 s there)")
def test_huge_lua_table_is_refused_and_the_server_lives(c):
    body = "local t = {} for i = 1, 100000000 do t[i] = i end return #t"
    reply = c.call("EVAL", body, "0")
    assert isinstance(reply, Err) and reply.startswith("ERR") and "memory" in reply.lower(), reply
    assert c.call("PING") == PONG
    assert c.call("EVAL", "return 1", "0") == 1
    c.call("EVAL", "collectgarbage('collect') return 0", "0")
    assert int(info(c, "memory")["used_memory_vm_eval"]) < 64 * 1024 * 1024


@pytest.mark.keel_differs(reason="lua-maxmemory is keel's own: Redis does not limit the Lua heap")
def test_lua_maxmemory_bounds_each_lua_state(c, restore_config):
    restore_config("lua-maxmemory")
    assert c.call("CONFIG", "SET", "lua-maxmemory", "32mb") == OK
    assert c.call("CONFIG", "GET", "lua-maxmemory") == [b"lua-maxmemory", b"33554432"]
    big = "return #string.rep('x', 64 * 1024 * 1024)"
    reply = c.call("EVAL", big, "0")
    assert isinstance(reply, Err) and "not enough memory" in reply, reply
    assert c.call("EVAL", "return #string.rep('x', 1024 * 1024)", "0") == 1024 * 1024
    lib = "#!lua name=big\nredis.register_function('big', function() return #string.rep('x', 64 * 1024 * 1024) end)"
    assert c.call("FUNCTION", "LOAD", "REPLACE", lib) == b"big"
    reply = c.call("FCALL", "big", "0")
    assert isinstance(reply, Err) and "not enough memory" in reply, reply
    assert c.call("CONFIG", "SET", "lua-maxmemory", "512mb") == OK
    assert c.call("EVAL", big, "0") == 64 * 1024 * 1024
    assert c.call("FCALL", "big", "0") == 64 * 1024 * 1024
    assert c.call("FUNCTION", "DELETE", "big") == OK


def test_errorstats_count_a_script_error_once(c, restore_config):
    """An error a command replies inside a script is counted once, by the
    command; the script's reply that carries it is not counted again (INFO
    errorstats, total_error_replies, commandstats)."""
    assert c.call("CONFIG", "RESETSTAT") == OK
    assert c.call("EVAL", "return redis.error_reply('MY_ERR_CODE custom')", "0") == Err("MY_ERR_CODE custom")
    reply = c.call("EVAL", "return redis.call('select', 99)", "0")
    assert isinstance(reply, Err) and reply.startswith("ERR DB index is out of range script:"), reply
    assert isinstance(c.call("EVAL", "return redis.call('nosuchcommand')", "0"), Err)
    assert isinstance(c.call("INCR"), Err)
    errors = info(c, "errorstats")
    assert errors == {"errorstat_ERR": "count=3", "errorstat_MY_ERR_CODE": "count=1"}, errors
    assert info(c, "stats")["total_error_replies"] == "4"
    commands = info(c, "commandstats")
    assert commands["cmdstat_select"].endswith("rejected_calls=0,failed_calls=1")
    assert commands["cmdstat_eval"].endswith("rejected_calls=0,failed_calls=3")


def test_client_reply_off_drops_a_script_reply(c):
    c.send("CLIENT", "REPLY", "OFF")
    c.send("EVAL", "return 1", "0")
    c.send("CLIENT", "REPLY", "SKIP")
    c.send("EVAL", "return 2", "0")
    assert c.call("CLIENT", "REPLY", "ON") == OK
    assert c.call("EVAL", "return 3", "0") == 3
