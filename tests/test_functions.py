"""Functions: FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/STATS/KILL and
FCALL/FCALL_RO as Redis 7.0 runs them: load errors, flags, the reply shapes
of LIST and STATS in RESP2 and RESP3, the restore policies, payloads that
travel between redis-server and the server under test, maxmemory, and a
looping function stopped by FUNCTION KILL.

Libraries are global to the server: every test starts and ends with
FUNCTION FLUSH (the `fc` fixture).
"""

import select
import time

import pytest

from support import OK, PONG, Err, ServerProcess, Status, info

OOM = "OOM command not allowed when used memory > 'maxmemory'."
BUSY_FUNCTION = Err("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
BUSY_SLACK = 10.0  # seconds: only so that a hung server fails the test


def library(name, *functions) -> str:
    """Library code registering `functions`, each (name, Lua body[, flags])."""
    lines = [f"#!lua name={name}"]
    for fn in functions:
        fname, body = fn[0], fn[1]
        if len(fn) > 2:
            flags = ", ".join(f"'{f}'" for f in fn[2])
            lines.append(f"redis.register_function{{function_name='{fname}', "
                         f"callback=function(keys, args) {body} end, flags={{{flags}}}}}")
        else:
            lines.append(f"redis.register_function('{fname}', function(keys, args) {body} end)")
    return "\n".join(lines)


def function_error(message, fname, line) -> Err:
    """The error FCALL replies when function `fname` raises `message` at `line`."""
    return Err(f"{message} script: {fname}, on @user_function:{line}.")


@pytest.fixture
def fc(c):
    """`c` on a server with no function libraries (none left behind either)."""
    assert c.call("FUNCTION", "FLUSH") == OK
    yield c
    c.call("FUNCTION", "FLUSH")


def by_library(listing):
    """FUNCTION LIST (RESP2) as {library_name: fields}, whatever the server's order."""
    out = {}
    for entry in listing:
        fields = dict(zip(entry[::2], entry[1::2]))
        out[fields[b"library_name"]] = fields
    return out


# --------------------------------------------------------------------------
# LOAD and FCALL
# --------------------------------------------------------------------------


def test_load_and_call(fc):
    code = library("mylib", ("echo_all", "return {#keys, #args, keys[1], args[1], args[2]}"),
                   ("incr_key", "return redis.call('INCR', keys[1])"))
    assert fc.call("FUNCTION", "LOAD", code) == b"mylib"
    assert fc.call("FCALL", "echo_all", "1", "k", "a1", "a2") == [1, 2, b"k", b"a1", b"a2"]
    assert fc.call("FCALL", "echo_all", "0") == [0, 0]
    assert fc.call("FCALL", "incr_key", "1", "fn:counter") == 1
    assert fc.call("FCALL", "incr_key", "1", "fn:counter") == 2
    assert fc.call("GET", "fn:counter") == b"2"
    assert fc.call("FCALL_RO", "echo_all", "0") == Err(
        "ERR Can not execute a script with write flag using *_ro command.")


def test_load_replace(fc):
    assert fc.call("FUNCTION", "LOAD", library("lib", ("f", "return 1"))) == b"lib"
    assert fc.call("FUNCTION", "LOAD", library("lib", ("f", "return 2"))) == Err("ERR Library 'lib' already exists")
    assert fc.call("FCALL", "f", "0") == 1
    assert fc.call("FUNCTION", "LOAD", "REPLACE", library("lib", ("f", "return 2"), ("g", "return 3"))) == b"lib"
    assert fc.call("FCALL", "f", "0") == 2
    assert fc.call("FCALL", "g", "0") == 3
    # REPLACE drops the functions the new code no longer registers.
    assert fc.call("FUNCTION", "LOAD", "replace", library("lib", ("g", "return 4"))) == b"lib"
    assert fc.call("FCALL", "f", "0") == Err("ERR Function not found")
    assert fc.call("FCALL", "g", "0") == 4
    # A function name stays unique across libraries, REPLACE or not.
    assert fc.call("FUNCTION", "LOAD", "REPLACE", library("other", ("g", "return 5"))) == Err(
        "ERR Function g already exists")
    assert fc.call("FUNCTION", "LOAD", "BOGUS", library("lib", ("g", "return 2"))) == Err(
        "ERR Unknown option given: BOGUS")


LOAD_ERRORS = {
    "missing shebang": ("redis.register_function('f', function() return 1 end)", "ERR Missing library metadata"),
    "no name": ("#!lua\nredis.register_function('f', function() return 1 end)", "ERR Library name was not given"),
    "empty name": ("#!lua name=\nredis.register_function('f', function() return 1 end)",
                   "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least "
                   "one character long"),
    "bad name": ("#!lua name=bad-name!\nredis.register_function('f', function() return 1 end)",
                 "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least "
                 "one character long"),
    "bad engine": ("#!python name=x\nredis.register_function('f', function() return 1 end)",
                   "ERR Engine 'python' not found"),
    "unknown metadata": ("#!lua name=x foo=bar\nredis.register_function('f', function() return 1 end)",
                         "ERR Invalid metadata value given: foo=bar"),
    "no functions registered": ("#!lua name=x\nreturn 1", "ERR No functions registered"),
    "syntax error": ("#!lua name=x\nreturn +", "ERR Error compiling function: user_function:2: unexpected symbol "
                                                "near '+'"),
    "bad function name": ("#!lua name=x\nredis.register_function('bad name', function() return 1 end)",
                          "ERR Error registering functions: ERR Library names can only contain letters, numbers, "
                          "or underscores(_) and must be at least one character long"),
    "single non-table argument": ("#!lua name=x\nredis.register_function('g')",
                                  "ERR Error registering functions: ERR calling redis.register_function with a "
                                  "single argument is only applicable to Lua table (representing named arguments)."),
    "callback not a function": ("#!lua name=x\nredis.register_function('g', 'notfunc')",
                                "ERR Error registering functions: ERR second argument to redis.register_function "
                                "must be a function"),
    "unknown flag": ("#!lua name=x\nredis.register_function{function_name='g', callback=function() return 1 end, "
                     "flags={'bogus'}}", "ERR Error registering functions: ERR unknown flag given"),
    "unknown named argument": ("#!lua name=x\nredis.register_function{function_name='g', "
                               "callback=function() return 1 end, bogus=1}",
                               "ERR Error registering functions: ERR unknown argument given to "
                               "redis.register_function"),
    "function registered twice": ("#!lua name=x\nredis.register_function('g', function() return 1 end)\n"
                                  "redis.register_function('g', function() return 1 end)",
                                  "ERR Error registering functions: ERR Function already exists in the library"),
    "redis.call at load time": ("#!lua name=x\nredis.call('SET', 'a', 'b')",
                                "ERR Error registering functions: ERR user_function:2: Script attempted to access "
                                "nonexistent global variable 'call'"),
    "unknown global at load time": ("#!lua name=x\nlocal v = nosuch",
                                    "ERR Error registering functions: ERR user_function:2: Script attempted to "
                                    "access nonexistent global variable 'nosuch'"),
    "global set at load time": ("#!lua name=x\nv = 1",
                                "ERR Error registering functions: ERR user_function:2: Attempt to modify a "
                                "readonly table"),
}


@pytest.mark.parametrize("code, error", LOAD_ERRORS.values(), ids=LOAD_ERRORS.keys())
def test_load_errors(fc, code, error):
    assert fc.call("FUNCTION", "LOAD", code) == Err(error)
    assert fc.call("FUNCTION", "LIST") == []


def test_case_of_engine_metadata_and_names(fc):
    """FUNCTION LOAD reads the engine and `name=` in any case; FCALL finds a
    function in any case; library names are case-sensitive."""
    register = "\nredis.register_function('{}', function() return 1 end)"
    assert fc.call("FUNCTION", "LOAD", "#!LUA name=up" + register.format("upf")) == b"up"
    assert fc.call("FUNCTION", "LOAD", "#!lua NAME=up2" + register.format("upf2")) == b"up2"
    assert fc.call("FUNCTION", "LOAD", "#!lua   name=up3  " + register.format("upf3")) == b"up3"
    assert fc.call("FCALL", "UPF", "0") == 1
    assert fc.call("FCALL_RO", "UpF2", "0") == Err("ERR Can not execute a script with write flag using *_ro command.")
    assert fc.call("FUNCTION", "DELETE", "UP") == Err("ERR Library not found")
    assert sorted(by_library(fc.call("FUNCTION", "LIST"))) == [b"up", b"up2", b"up3"]
    assert by_library(fc.call("FUNCTION", "LIST"))[b"up"][b"engine"] == b"LUA"
    # EVAL's shebang is case-sensitive.
    assert fc.call("EVAL", "#!LUA\nreturn 1", "0") == Err("ERR Unexpected engine in script shebang: #!LUA")


def test_load_that_loops_times_out(fc):
    """Library code gets function-load-timeout (500 ms) to register its functions."""
    started = time.monotonic()
    assert fc.call("FUNCTION", "LOAD", "#!lua name=x\nwhile true do end") == Err(
        "ERR Error registering functions: ERR FUNCTION LOAD timeout")
    assert time.monotonic() - started < BUSY_SLACK
    assert fc.call("PING") == PONG


def test_load_argument_errors(fc):
    assert fc.call("FUNCTION", "LOAD") == Err("ERR wrong number of arguments for 'function|load' command")
    assert fc.call("FUNCTION", "BOGUS") == Err("ERR unknown subcommand 'BOGUS'. Try FUNCTION HELP.")
    assert fc.call("FUNCTION") == Err("ERR wrong number of arguments for 'function' command")


def test_fcall_errors(fc):
    fc.call("FUNCTION", "LOAD", library("lib", ("f", "return 1")))
    assert fc.call("FCALL", "nosuch", "0") == Err("ERR Function not found")
    assert fc.call("FCALL_RO", "nosuch", "0") == Err("ERR Function not found")
    assert fc.call("FCALL", "f", "x") == Err("ERR Bad number of keys provided")
    assert fc.call("FCALL", "f", "-1") == Err("ERR Number of keys can't be negative")
    assert fc.call("FCALL", "f", "3", "a") == Err("ERR Number of keys can't be greater than number of args")
    assert fc.call("FCALL", "f") == Err("ERR wrong number of arguments for 'fcall' command")


def test_runtime_errors_name_the_function(fc):
    code = "\n".join([
        "#!lua name=errs",
        "redis.register_function('incr_it', function(keys, args) return redis.call('INCR', keys[1]) end)",
        "redis.register_function('custom', function(keys, args) return redis.error_reply('MY err') end)",
        "redis.register_function('unknown_global', function() return nosuch end)",
        "redis.register_function('set_global', function() x = 1 end)",
        "redis.register_function('watch', function() return redis.call('WATCH', 'x') end)",
    ])
    assert fc.call("FUNCTION", "LOAD", code) == b"errs"
    fc.call("SET", "fn:s", "abc")
    assert fc.call("FCALL", "incr_it", "1", "fn:s") == function_error(
        "ERR value is not an integer or out of range", "incr_it", 2)
    assert fc.call("FCALL", "custom", "0") == Err("MY err")
    assert fc.call("FCALL", "unknown_global", "0") == function_error(
        "ERR user_function:4: Script attempted to access nonexistent global variable 'nosuch'", "unknown_global", 4)
    assert fc.call("FCALL", "set_global", "0") == function_error(
        "ERR user_function:5: Attempt to modify a readonly table", "set_global", 5)
    assert fc.call("FCALL", "watch", "0") == function_error(
        "ERR This Redis command is not allowed from script", "watch", 6)


def test_flags_and_fcall_ro(fc):
    code = library("flagged",
                   ("reader", "return redis.call('GET', keys[1])", ["no-writes"]),
                   ("sneaky", "return redis.call('SET', keys[1], 'x')", ["no-writes"]),
                   ("writer", "return redis.call('SET', keys[1], args[1])"))
    assert fc.call("FUNCTION", "LOAD", code) == b"flagged"
    assert fc.call("FCALL", "writer", "1", "fn:k", "v") == OK
    assert fc.call("FCALL", "reader", "1", "fn:k") == b"v"
    assert fc.call("FCALL_RO", "reader", "1", "fn:k") == b"v"
    assert fc.call("FCALL_RO", "writer", "1", "fn:k", "w") == Err(
        "ERR Can not execute a script with write flag using *_ro command.")
    assert fc.call("FCALL", "sneaky", "1", "fn:k") == function_error(
        "ERR Write commands are not allowed from read-only scripts.", "sneaky", 3)
    assert fc.call("FCALL_RO", "sneaky", "1", "fn:k") == function_error(
        "ERR Write commands are not allowed from read-only scripts.", "sneaky", 3)
    assert fc.call("GET", "fn:k") == b"v"


def test_functions_over_maxmemory(fc, connect, restore_config):
    code = library("mm",
                   ("mm_read", "return redis.call('GET', keys[1])", ["no-writes"]),
                   ("mm_plain_read", "return redis.call('GET', keys[1])"),
                   ("mm_oom_write", "return redis.call('SET', keys[1], 'v')", ["allow-oom"]))
    assert fc.call("FUNCTION", "LOAD", code) == b"mm"
    fc.call("SET", "fn:filler", "x" * 100)
    restore_config("maxmemory", "maxmemory-policy")
    admin = connect()
    assert admin.call("CONFIG", "SET", "maxmemory-policy", "noeviction") == OK
    assert admin.call("CONFIG", "SET", "maxmemory", "1") == OK
    assert fc.call("FCALL", "mm_read", "1", "fn:filler") == b"x" * 100
    assert fc.call("FCALL_RO", "mm_read", "1", "fn:filler") == b"x" * 100
    # A function that may write is refused before it runs, even if it only reads.
    assert fc.call("FCALL", "mm_plain_read", "1", "fn:filler") == Err(OOM)
    assert fc.call("FCALL", "mm_oom_write", "1", "fn:k") == OK
    assert fc.call("FUNCTION", "LOAD", library("more", ("more_f", "return 1"))) == Err(OOM)


# --------------------------------------------------------------------------
# LIST, DELETE, FLUSH, STATS
# --------------------------------------------------------------------------

ALL_FLAGS_LIB = ("#!lua name=mlib\nredis.register_function{function_name='mf', callback=function() return 1 end, "
                 "description='desc', flags={'allow-cross-slot-keys','no-cluster','allow-stale','allow-oom',"
                 "'no-writes'}}")


def test_list_shape_resp2(fc):
    assert fc.call("FUNCTION", "LIST") == []
    assert fc.call("FUNCTION", "LOAD", ALL_FLAGS_LIB) == b"mlib"
    assert fc.call("FUNCTION", "LOAD", library("zlib", ("z1", "return 1"), ("z2", "return 2"))) == b"zlib"
    # Flags come in Redis's fixed order, as simple strings.
    mf = [b"name", b"mf", b"description", b"desc", b"flags",
          [Status("no-writes"), Status("allow-oom"), Status("allow-stale"), Status("no-cluster"),
           Status("allow-cross-slot-keys")]]
    assert fc.call("FUNCTION", "LIST", "LIBRARYNAME", "mlib") == [
        [b"library_name", b"mlib", b"engine", b"LUA", b"functions", [mf]]]
    assert fc.call("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "mlib") == [
        [b"library_name", b"mlib", b"engine", b"LUA", b"functions", [mf], b"library_code", ALL_FLAGS_LIB.encode()]]
    assert fc.call("FUNCTION", "LIST", "LIBRARYNAME", "mlib", "WITHCODE") == fc.call(
        "FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "mlib")
    listing = by_library(fc.call("FUNCTION", "LIST"))
    assert sorted(listing) == [b"mlib", b"zlib"]
    z_functions = sorted(listing[b"zlib"][b"functions"])
    assert z_functions == [[b"name", b"z1", b"description", None, b"flags", []],
                           [b"name", b"z2", b"description", None, b"flags", []]]
    assert sorted(by_library(fc.call("FUNCTION", "LIST", "LIBRARYNAME", "*lib"))) == [b"mlib", b"zlib"]
    assert sorted(by_library(fc.call("FUNCTION", "LIST", "LIBRARYNAME", "z*"))) == [b"zlib"]
    assert fc.call("FUNCTION", "LIST", "LIBRARYNAME", "nomatch") == []


def test_list_shape_resp3(fc):
    fc.call("FUNCTION", "LOAD", ALL_FLAGS_LIB)
    fc.call("HELLO", "3")
    fc.send("FUNCTION", "LIST", "WITHCODE")
    code = ALL_FLAGS_LIB.encode()
    assert fc.read_raw() == (
        b"*1\r\n%4\r\n$12\r\nlibrary_name\r\n$4\r\nmlib\r\n$6\r\nengine\r\n$3\r\nLUA\r\n"
        b"$9\r\nfunctions\r\n*1\r\n%3\r\n$4\r\nname\r\n$2\r\nmf\r\n$11\r\ndescription\r\n$4\r\ndesc\r\n"
        b"$5\r\nflags\r\n~5\r\n+no-writes\r\n+allow-oom\r\n+allow-stale\r\n+no-cluster\r\n"
        b"+allow-cross-slot-keys\r\n$12\r\nlibrary_code\r\n" + b"$" + str(len(code)).encode() + b"\r\n" + code
        + b"\r\n")


def test_list_errors(fc):
    assert fc.call("FUNCTION", "LIST", "LIBRARYNAME") == Err("ERR library name argument was not given")
    assert fc.call("FUNCTION", "LIST", "BOGUS") == Err("ERR Unknown argument BOGUS")
    assert fc.call("FUNCTION", "LIST", "WITHCODE", "WITHCODE") == Err("ERR Unknown argument WITHCODE")
    assert fc.call("FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b") == Err(
        "ERR Unknown argument LIBRARYNAME")


def test_delete(fc):
    fc.call("FUNCTION", "LOAD", library("dlib", ("d1", "return 1")))
    fc.call("FUNCTION", "LOAD", library("keep", ("k1", "return 2")))
    assert fc.call("FUNCTION", "DELETE", "dlib") == OK
    assert fc.call("FUNCTION", "DELETE", "dlib") == Err("ERR Library not found")
    assert fc.call("FCALL", "d1", "0") == Err("ERR Function not found")
    assert fc.call("FCALL", "k1", "0") == 2
    assert fc.call("FUNCTION", "DELETE") == Err("ERR wrong number of arguments for 'function|delete' command")
    assert fc.call("FUNCTION", "DELETE", "a", "b") == Err(
        "ERR wrong number of arguments for 'function|delete' command")
    # The name and its functions are free again.
    assert fc.call("FUNCTION", "LOAD", library("dlib", ("d1", "return 3"))) == b"dlib"
    assert fc.call("FCALL", "d1", "0") == 3


@pytest.mark.parametrize("mode", [(), ("SYNC",), ("ASYNC",)])
def test_flush(fc, mode):
    fc.call("FUNCTION", "LOAD", library("flib", ("ff", "return 1")))
    assert fc.call("FUNCTION", "FLUSH", *mode) == OK
    assert fc.call("FUNCTION", "LIST") == []
    assert fc.call("FCALL", "ff", "0") == Err("ERR Function not found")


def test_flush_errors(fc):
    assert fc.call("FUNCTION", "FLUSH", "BAD") == Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")


def test_stats_shape(fc):
    assert fc.call("FUNCTION", "STATS") == [
        b"running_script", None, b"engines", [b"LUA", [b"libraries_count", 0, b"functions_count", 0]]]
    fc.call("FUNCTION", "LOAD", library("s1", ("s1a", "return 1"), ("s1b", "return 1")))
    fc.call("FUNCTION", "LOAD", library("s2", ("s2a", "return 1")))
    assert fc.call("FUNCTION", "STATS") == [
        b"running_script", None, b"engines", [b"LUA", [b"libraries_count", 2, b"functions_count", 3]]]
    fields = info(fc, "memory")
    assert (fields["number_of_functions"], fields["number_of_libraries"]) == ("3", "2")
    assert int(fields["used_memory_vm_functions"]) > 0
    fc.call("HELLO", "3")
    fc.send("FUNCTION", "STATS")
    assert fc.read_raw() == (b"%2\r\n$14\r\nrunning_script\r\n_\r\n$7\r\nengines\r\n%1\r\n$3\r\nLUA\r\n"
                             b"%2\r\n$15\r\nlibraries_count\r\n:2\r\n$15\r\nfunctions_count\r\n:3\r\n")


def test_kill_when_idle(fc):
    assert fc.call("FUNCTION", "KILL") == Err("NOTBUSY No scripts in execution right now.")


# --------------------------------------------------------------------------
# DUMP and RESTORE
# --------------------------------------------------------------------------

LIB_A = library("la", ("fa", "return 'a'"))
LIB_B = library("lb", ("fb", "return 'b'"))


def test_dump_restore_round_trip_and_policies(fc):
    assert fc.call("FUNCTION", "LOAD", LIB_A) == b"la"
    assert fc.call("FUNCTION", "LOAD", LIB_B) == b"lb"
    payload = fc.call("FUNCTION", "DUMP")
    assert isinstance(payload, bytes)
    # Default policy is APPEND: a library that exists is an error and nothing
    # changes. The error names the payload's first clash; the payload's order
    # is the server's hash order.
    clash = (Err("ERR Library la already exists"), Err("ERR Library lb already exists"))
    assert fc.call("FUNCTION", "RESTORE", payload) in clash
    assert fc.call("FUNCTION", "RESTORE", payload, "APPEND") in clash
    assert fc.call("FUNCTION", "RESTORE", payload, "REPLACE") == OK
    assert fc.call("FUNCTION", "RESTORE", payload, "FLUSH") == OK
    assert sorted(by_library(fc.call("FUNCTION", "LIST"))) == [b"la", b"lb"]

    assert fc.call("FUNCTION", "FLUSH") == OK
    assert fc.call("FUNCTION", "RESTORE", payload) == OK
    assert fc.call("FCALL", "fa", "0") == b"a"
    assert fc.call("FCALL", "fb", "0") == b"b"
    assert fc.call("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "la")[0][-1] == LIB_A.encode()

    # APPEND is all or nothing.
    assert fc.call("FUNCTION", "DELETE", "la") == OK
    assert fc.call("FUNCTION", "RESTORE", payload, "APPEND") == Err("ERR Library lb already exists")
    assert sorted(by_library(fc.call("FUNCTION", "LIST"))) == [b"lb"]

    # REPLACE replaces libraries of the same name but keeps the others.
    assert fc.call("FUNCTION", "LOAD", library("la", ("fz", "return 'z'"))) == b"la"
    assert fc.call("FUNCTION", "LOAD", library("lq", ("fq", "return 'q'"))) == b"lq"
    assert fc.call("FUNCTION", "RESTORE", payload, "REPLACE") == OK
    assert sorted(by_library(fc.call("FUNCTION", "LIST"))) == [b"la", b"lb", b"lq"]
    assert fc.call("FCALL", "fz", "0") == Err("ERR Function not found")
    assert fc.call("FCALL", "fa", "0") == b"a"
    assert fc.call("FCALL", "fq", "0") == b"q"

    # FLUSH drops everything first.
    assert fc.call("FUNCTION", "RESTORE", payload, "flush") == OK
    assert sorted(by_library(fc.call("FUNCTION", "LIST"))) == [b"la", b"lb"]


def test_restore_replace_still_refuses_a_function_of_another_library(fc):
    fc.call("FUNCTION", "LOAD", LIB_A)
    payload = fc.call("FUNCTION", "DUMP")
    fc.call("FUNCTION", "FLUSH")
    fc.call("FUNCTION", "LOAD", library("lc", ("fa", "return 'c'")))
    assert fc.call("FUNCTION", "RESTORE", payload, "APPEND") == Err("ERR Function fa already exists")
    assert fc.call("FUNCTION", "RESTORE", payload, "REPLACE") == Err("ERR Function fa already exists")
    assert sorted(by_library(fc.call("FUNCTION", "LIST"))) == [b"lc"]
    assert fc.call("FCALL", "fa", "0") == b"c"


def test_restore_errors(fc):
    fc.call("FUNCTION", "LOAD", LIB_A)
    payload = fc.call("FUNCTION", "DUMP")
    fc.call("FUNCTION", "FLUSH")
    bad_payload = Err("ERR DUMP payload version or checksum are wrong")
    assert fc.call("FUNCTION", "RESTORE", "xx") == bad_payload
    assert fc.call("FUNCTION", "RESTORE", payload[:-1]) == bad_payload
    assert fc.call("FUNCTION", "RESTORE", payload[:-3] + b"\x00\x00\x00") == bad_payload
    assert fc.call("FUNCTION", "RESTORE", payload, "BOGUS") == Err(
        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    assert fc.call("FUNCTION", "RESTORE", payload, "FLUSH", "APPEND") == Err(
        "ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP.")
    assert fc.call("FUNCTION", "RESTORE") == Err("ERR wrong number of arguments for 'function|restore' command")
    assert fc.call("FUNCTION", "LIST") == []


def test_dump_of_no_libraries(fc):
    payload = fc.call("FUNCTION", "DUMP")
    # Only the trailer: RDB version 10 and a CRC64.
    assert payload == b"\n\x00]\x9b\\@\x0f\x7f\xa2\xda"
    assert fc.call("FUNCTION", "RESTORE", payload) == OK
    assert fc.call("FUNCTION", "LIST") == []


@pytest.fixture
def reference_redis(server_kind):
    """A real redis-server beside the server under test (skipped when that is redis)."""
    if server_kind == "redis":
        pytest.skip("the server under test is redis-server itself")
    srv = ServerProcess("redis").start()
    yield srv
    srv.cleanup()


def test_dump_from_redis_restores_here(fc, reference_redis):
    with reference_redis.conn() as ref:
        assert ref.call("FUNCTION", "LOAD", LIB_A) == b"la"
        assert ref.call("FUNCTION", "LOAD", ALL_FLAGS_LIB) == b"mlib"
        payload = ref.call("FUNCTION", "DUMP")
        expected = by_library(ref.call("FUNCTION", "LIST", "WITHCODE"))
    assert fc.call("FUNCTION", "RESTORE", payload) == OK
    assert by_library(fc.call("FUNCTION", "LIST", "WITHCODE")) == expected
    assert fc.call("FCALL", "fa", "0") == b"a"
    assert fc.call("FCALL_RO", "mf", "0") == 1


def test_dump_from_here_restores_into_redis(fc, reference_redis):
    assert fc.call("FUNCTION", "LOAD", LIB_B) == b"lb"
    assert fc.call("FUNCTION", "LOAD", ALL_FLAGS_LIB) == b"mlib"
    payload = fc.call("FUNCTION", "DUMP")
    with reference_redis.conn() as ref:
        assert ref.call("FUNCTION", "RESTORE", payload) == OK
        assert by_library(ref.call("FUNCTION", "LIST", "WITHCODE")) == by_library(
            fc.call("FUNCTION", "LIST", "WITHCODE"))
        assert ref.call("FCALL", "fb", "0") == b"b"
    # And the empty dump.
    fc.call("FUNCTION", "FLUSH")
    with reference_redis.conn() as ref:
        assert ref.call("FUNCTION", "RESTORE", fc.call("FUNCTION", "DUMP"), "FLUSH") == OK
        assert ref.call("FUNCTION", "LIST") == []


# --------------------------------------------------------------------------
# A looping function: BUSY and FUNCTION KILL
# --------------------------------------------------------------------------


def test_looping_function_is_killed_with_function_kill(start_server):
    srv = start_server()
    admin = srv.conn(timeout=BUSY_SLACK)
    assert admin.call("CONFIG", "SET", "busy-reply-threshold", "200") == OK
    code = library("loop", ("spin", "local i = 0 while true do i = i + 1 end"))
    assert admin.call("FUNCTION", "LOAD", code) == b"loop"
    looper = srv.conn(timeout=BUSY_SLACK)
    looper.send("FCALL", "spin", "1", "fn:key", "arg")

    deadline = time.monotonic() + BUSY_SLACK
    while True:
        if select.select([looper.sock], [], [], 0)[0]:
            raise AssertionError(f"the function replied before the server got busy: {looper.read()!r}")
        with srv.conn(timeout=BUSY_SLACK) as probe:
            reply = probe.call("PING")
        if reply == BUSY_FUNCTION:
            break
        assert reply == PONG, reply
        assert time.monotonic() < deadline, "the function never made the server busy"
        time.sleep(0.02)

    others = [srv.conn(timeout=BUSY_SLACK) for _ in range(3)]
    started = time.monotonic()
    for other in others:
        other.send("PING")
        other.send("GET", "fn:key")
    for other in others:
        assert [other.read(), other.read()] == [BUSY_FUNCTION, BUSY_FUNCTION]
    assert time.monotonic() - started < BUSY_SLACK

    # FUNCTION STATS still answers, naming the running function.
    stats = admin.call("FUNCTION", "STATS")
    assert stats[0] == b"running_script" and stats[2:] == [
        b"engines", [b"LUA", [b"libraries_count", 1, b"functions_count", 1]]]
    running = dict(zip(stats[1][::2], stats[1][1::2]))
    assert running[b"name"] == b"spin"
    assert running[b"command"] == [b"FCALL", b"spin", b"1", b"fn:key", b"arg"]
    assert isinstance(running[b"duration_ms"], int) and running[b"duration_ms"] >= 0

    assert admin.call("SCRIPT", "KILL") == BUSY_FUNCTION
    assert admin.call("FUNCTION", "KILL") == OK
    assert looper.read() == function_error("ERR Script killed by user with SCRIPT KILL...", "spin", 2)
    for conn in others + [looper, admin]:
        assert conn.call("PING") == PONG
        conn.close()
