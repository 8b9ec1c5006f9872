"""Seeded command fuzzer: random commands with extreme arguments against a keel
with a small maxmemory, checking after each one that keel keeps its memory
promises.

    python tests/command_fuzzer.py --seed 1 --commands 100000 [--keel-bin PATH | --port P]

It starts keel-server itself (`SERVER_DIRECTIVES`: maxmemory 8 MB, a 16 MB
client budget, a fixed proto-max-bulk-len of 32 MB so that arguments larger
than maxmemory still reach the commands' own checks, DEBUG refused as by
keel's default), fills a small key pool
with one key of every type and encoding, and sends commands drawn from the
commands keel lists in `COMMAND INFO`. Arguments follow each command's
argument specs: `ARGUMENT_SYNTAX` below where it has the command (it bounds
blocking timeouts and keeps CLIENT REPLY on, which Redis's own specs do not),
else keel's own `COMMAND DOCS` `arguments`; the syntax is written in
Redis's documentation syntax and parsed into the same tree (key, string,
integer, double, pattern, unix-time, pure-token, oneof, block, multiple,
optional). Values mix ordinary ones with extremes: i64 min and max and one
past them, huge counts, nan, inf, empty strings, garbage, 1 MB strings
(rarely), and keys of every type, so wrong-type paths run too. A few percent
of commands are mutated (an argument dropped, added or given the wrong type).

After every `--check-every` commands (default 1) it checks that:

- keel answers: the fuzzed command gets a reply within `REPLY_TIMEOUT`, its
  connection is only closed by QUIT or by keel's reply limit (a reply that
  would pass the client budget, e.g. HRANDFIELD with a count of -10^12,
  closes the connection and counts in INFO's
  client_output_buffer_limit_disconnections; the fuzzer reconnects), and a
  second connection gets PONG;
- `used_memory_dataset` <= maxmemory, with no tolerance: README says the
  dataset stays within maxmemory after every write;
- the process's RSS (/proc/PID/status VmRSS) <= maxmemory + maxmemory-clients
  + the fixed overhead README states: the RSS of the idle keel measured right
  after it starts (about 6.5 MB), `ALLOCATOR_SLACK` and the bytes waiting in
  the lazyfree queue (INFO's lazyfree_pending_bytes), once freed memory has
  gone back to the system: an RSS
  over it fails only if it is still over `RSS_SETTLE_SECONDS` later (jemalloc
  keeps freed pages for about a second, and a request of megabytes frees
  tens of them);

and every `--recount-every` commands that INFO's accounting agrees with a
recount: the sum of `MEMORY USAGE` over `SCAN` of every database must be <=
`used_memory_dataset`, and not more than `RECOUNT_SLACK_PER_KEY` bytes per key
below it. The dataset also counts the tables holding the keys, of which
MEMORY USAGE gives each key only its own slot and index share: a shard's
first slot chunk has 16 slots, so a key alone in its shard leaves 15 empty
slots and the rest of the smallest index counted in the dataset alone
(measured: 275 bytes for one key, ~200 per key for 20 keys with TTLs, 11 per
key for 5,000), and a shard's deadline index is charged by an upper bound
that starts at a whole B-tree root node (640 bytes, see
`keel_store::size_class::btree_bound`), which a key with a TTL alone in its
shard does not share: measured up to 595 bytes per key with a handful of
keys. The recount is only judged when the dataset figure and the key count,
read by one INFO, are the same before and after it (a key may expire or be
evicted meanwhile) and SCAN found every key INFO keyspace counts (a key past
its TTL is counted in both until the expiry pass reclaims it, within 250 ms,
but SCAN skips it).

On a failure it prints the seed, the command number and the failed check,
then shrinks: it replays the last `LOG_WINDOW` commands on fresh servers,
first the shortest failing suffix, then removing chunks of commands and of
each command's arguments while the same check still fails (delta debugging;
each replay is tried twice, as background eviction races the checks), within
`--shrink-seconds`, and prints the shortest sequence it found as
redis-cli lines. It exits with status 1. With --port it fuzzes a running keel
(which it flushes) and cannot shrink, since that needs fresh servers.

Left out of the stream, as they would stop the test rather than test keel:
SHUTDOWN; the SUBSCRIBE family (a subscribed
connection's replies no longer pair with commands; PUBLISH and PUBSUB are
fuzzed); CLIENT KILL (it could close the checking connection); CONFIG REWRITE
(it writes files); MIGRATE (it connects to whatever host its arguments name);
ACL SETUSER, DELUSER, LOAD and SAVE (a random rule could turn the default user
off or take its commands away, and with it the fuzzer's own connection);
CONFIG SET of anything but the encoding, eviction and
tracking settings in `ARGUMENT_SYNTAX` (maxmemory and its kin are the bounds
being checked; the slow log's length is memory the operator chooses to
spend). Blocking commands run on the fuzzing connection with timeouts drawn
from short ones (1 to 20 ms) and invalid ones, never 0, so they return
quickly; they are never mutated, since a mutation can turn a key into a
valid long timeout (`BZPOPMAX key 500000000` blocks, as in Redis). QUIT and RESET are fuzzed: after QUIT the fuzzer reconnects. An open
MULTI is ended by EXEC or DISCARD after a few queued commands. FLUSHALL and
FLUSHDB are drawn 20 times less often than other commands. DEBUG is fuzzed
as keel runs by default, with enable-debug-command no: every DEBUG is refused.

"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from pathlib import Path

from support import (PONG, REPO_ROOT, ConnectionClosed, Err, RespConn, ServerProcess, Status,
                     info, info_dict, info_fields)

MAXMEMORY = 8 << 20
MAXMEMORY_CLIENTS = 16 << 20
PROTO_MAX_BULK_LEN = 32 << 20
SERVER_DIRECTIVES = {"maxmemory": MAXMEMORY, "maxmemory-clients": MAXMEMORY_CLIENTS,
                     "proto-max-bulk-len": PROTO_MAX_BULK_LEN, "enable-debug-command": "no"}

REPLY_TIMEOUT = 10.0
# keel's jemalloc returns freed pages after dirty_decay_ms (1 s); measured, four 10 MB
# LPUSHes left 30 MB resident, 10.9 MB 1 s later and the idle 6.8 MB within 5 s.
RSS_SETTLE_SECONDS = 5.0
# What README states as the allocator's slack beyond the idle RSS: freed
# memory held in partly used pages, statistics and histograms allocated on a
# command's first use. Runs of 100,000 commands went up to 8.3 MB past
# the budgets and the idle RSS (bench/results/2026-11-25-command-fuzzer.md).
ALLOCATOR_SLACK = 16 << 20
# What `Session.run` returns when keel's reply limit closed the fuzzing connection.
CLOSED_BY_REPLY_LIMIT = object()
RECOUNT_SLACK_PER_KEY = 1024
# Commands kept for shrinking; an older cause shows as a sequence that no longer fails.
LOG_WINDOW = 10_000
SHRINK_SECONDS = 300.0
# Background eviction and expiry race the checks, so a replay that passes is tried again.
REPLAY_ATTEMPTS = 2
DEFAULT_KEEL_BIN = REPO_ROOT / "target" / "release" / "keel-server"

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
ONE_MB = b"x" * (1 << 20)  # shared, so the command log holds references, not copies

# --------------------------------------------------------------------------
# Argument specs
# --------------------------------------------------------------------------

# Redis's documentation syntax: `name:type` is an argument of that type (`key`
# or `pattern` alone is an argument of that type), `[...]` optional, `(...)` a block, `a | b` one of them, a
# trailing `...` one or more; any other word is a pure token, sent as written.
BLOCKING_TIMEOUT = "(0.001 | 0.01 | 0.02 | -1 | -inf | inf | nan | 1e300 | abc)"
EXPIRY_CONDITION = "[NX | XX | GT | LT]"
CONFIG_PARAMETER = ("(maxmemory-policy | maxmemory-eviction-cpu-percent | hash-max-listpack-entries"
                    " | hash-max-listpack-value | set-max-intset-entries | set-max-listpack-entries"
                    " | set-max-listpack-value | zset-max-listpack-entries | zset-max-listpack-value"
                    " | list-max-listpack-size | lfu-log-factor | lfu-decay-time"
                    " | slowlog-log-slower-than | notify-keyspace-events | latency-tracking)")
CONFIG_VALUE = ("(value:integer | value:string | noeviction | allkeys-lru | allkeys-lfu | allkeys-random"
                " | volatile-ttl | allkeys-s3fifo | yes | no | KEA | Ex)")
SCAN_OPTIONS = "[MATCH pattern] [COUNT count:integer]"
STORE_OPTIONS = "[WEIGHTS weight:double...] [AGGREGATE (SUM | MIN | MAX)]"
LIMIT = "[LIMIT offset:integer count:integer]"
SIDE = "(LEFT | RIGHT)"
COMMAND_NAME = "(get | set | config | zunionstore | memory | blpop | nosuch)"
RESTORE = ("key ttl:integer serialized-value:string [REPLACE] [ABSTTL] [IDLETIME seconds:integer]"
           " [FREQ frequency:integer]")
GEO_UNIT = "(M | KM | FT | MI)"
# Stream IDs: explicit ones, partial ones, the ends, and garbage.
STREAM_ID = ("(0 | 1 | 2-1 | 5 | 18446744073709551615-18446744073709551615 | 1-* | - | +"
             " | id:string)")
STREAM_TRIM = "[(MAXLEN | MINID) [= | ~] threshold:string [LIMIT count:integer]]"
# XREAD's BLOCK is in milliseconds: short waits, and invalid ones.
STREAM_BLOCK = "[BLOCK (1 | 10 | 20 | -1 | 0.5 | abc)]"
GEO_RADIUS = (f"radius:double {GEO_UNIT} [WITHCOORD] [WITHDIST] [WITHHASH]"
              " [COUNT count:integer [ANY]] [ASC | DESC]")
GEO_STORE = "[STORE key] [STOREDIST key]"
GEO_SHAPE = (f"(FROMMEMBER member:string | FROMLONLAT longitude:double latitude:double)"
             f" (BYRADIUS radius:double {GEO_UNIT} | BYBOX width:double height:double {GEO_UNIT})"
             " [ASC | DESC] [COUNT count:integer [ANY]]")

ARGUMENT_SYNTAX = {
    "append": "key value:string",
    "dump": "key",
    "restore": RESTORE,
    "restore-asking": RESTORE,
    "auth": "[username:string] password:string",
    "bitcount": "key [start:integer end:integer [BYTE | BIT]]",
    "bitfield": "key [(GET encoding:string offset:string | OVERFLOW (WRAP | SAT | FAIL)"
                " | SET encoding:string offset:string value:integer"
                " | INCRBY encoding:string offset:string increment:integer)...]",
    "bitfield_ro": "key [GET encoding:string offset:string...]",
    "bitop": "(AND | OR | XOR | NOT) destkey:key key...",
    "bitpos": "key bit:integer [start:integer [end:integer [BYTE | BIT]]]",
    "blpop": f"key... {BLOCKING_TIMEOUT}",
    "brpop": f"key... {BLOCKING_TIMEOUT}",
    "blmove": f"source:key destination:key {SIDE} {SIDE} {BLOCKING_TIMEOUT}",
    "bzpopmin": f"key... {BLOCKING_TIMEOUT}",
    "bzpopmax": f"key... {BLOCKING_TIMEOUT}",
    "brpoplpush": f"source:key destination:key {BLOCKING_TIMEOUT}",
    "blmpop": f"{BLOCKING_TIMEOUT} numkeys:integer key... {SIDE} [COUNT count:integer]",
    "bzmpop": f"{BLOCKING_TIMEOUT} numkeys:integer key... (MIN | MAX) [COUNT count:integer]",
    "lmpop": f"numkeys:integer key... {SIDE} [COUNT count:integer]",
    "zmpop": "numkeys:integer key... (MIN | MAX) [COUNT count:integer]",
    "lcs": "key1:key key2:key [LEN] [IDX] [MINMATCHLEN len:integer] [WITHMATCHLEN]",
    "substr": "key start:integer end:integer",
    "move": "key db:integer",
    "swapdb": "index1:integer index2:integer",
    "sort": f"key [BY pattern] {LIMIT} [GET pattern...] [ASC | DESC] [ALPHA]"
            " [STORE destination:key]",
    "sort_ro": f"key [BY pattern] {LIMIT} [GET pattern...] [ASC | DESC] [ALPHA]",
    "client": "",
    "client|id": "",
    "client|setname": "connection-name:string",
    "client|getname": "",
    "client|list": "[TYPE (NORMAL | MASTER | REPLICA | PUBSUB)] [ID client-id:integer...]",
    "client|info": "",
    "client|no-evict": "(ON | OFF | value:string)",
    "client|no-touch": "(ON | OFF | value:string)",
    "client|reply": "(ON | value:string)",
    "client|unpause": "",
    "client|unblock": "client-id:integer [TIMEOUT | ERROR | value:string]",
    "client|help": "",
    "command": "",
    "command|count": "",
    "command|info": f"[{COMMAND_NAME}...]",
    "command|docs": f"[{COMMAND_NAME}...]",
    "command|list": "[FILTERBY (MODULE name:string | ACLCAT category:string | PATTERN pattern)]",
    "command|getkeys": f"{COMMAND_NAME} [arg:key...]",
    "command|getkeysandflags": f"{COMMAND_NAME} [arg:key...]",
    "command|help": "",
    "config": "",
    "config|get": "parameter:pattern...",
    "config|set": f"({CONFIG_PARAMETER} {CONFIG_VALUE})...",
    "config|resetstat": "",
    "config|help": "",
    "dbsize": "",
    "lastsave": "",
    "debug": "(SLEEP seconds:double | OBJECT key | RELOAD | subcommand:string) [arg:string...]",
    "del": "key...",
    "unlink": "key...",
    "echo": "message:string",
    "exists": "key...",
    "expire": f"key seconds:integer {EXPIRY_CONDITION}",
    "pexpire": f"key milliseconds:integer {EXPIRY_CONDITION}",
    "expireat": f"key unix-time-seconds:unix-time {EXPIRY_CONDITION}",
    "pexpireat": f"key unix-time-milliseconds:unix-time {EXPIRY_CONDITION}",
    "flushdb": "[ASYNC | SYNC]",
    "flushall": "[ASYNC | SYNC]",
    "get": "key",
    "getbit": "key offset:integer",
    "getdel": "key",
    "getex": "key [EX seconds:integer | PX milliseconds:integer | EXAT unix-time-seconds:unix-time"
             " | PXAT unix-time-milliseconds:unix-time | PERSIST]",
    "getrange": "key start:integer end:integer",
    "getset": "key value:string",
    "hello": "[(2 | 3 | protover:integer) [AUTH username:string password:string]"
             " [SETNAME clientname:string]]",
    "hdel": "key field:string...",
    "hget": "key field:string",
    "hmget": "key field:string...",
    "hexists": "key field:string",
    "hstrlen": "key field:string",
    "hlen": "key",
    "hgetall": "key",
    "hkeys": "key",
    "hvals": "key",
    "hincrby": "key field:string increment:integer",
    "hincrbyfloat": "key field:string increment:double",
    "hrandfield": "key [count:integer [WITHVALUES]]",
    "hset": "key (field:string value:string)...",
    "hmset": "key (field:string value:string)...",
    "hsetnx": "key field:string value:string",
    "hscan": f"key cursor:integer {SCAN_OPTIONS}",
    "sadd": "key member:string...",
    "srem": "key member:string...",
    "sinter": "key...",
    "sintercard": "numkeys:integer key... [LIMIT limit:integer]",
    "sinterstore": "destination:key key...",
    "sunion": "key...",
    "sunionstore": "destination:key key...",
    "sdiff": "key...",
    "sdiffstore": "destination:key key...",
    "sismember": "key member:string",
    "smismember": "key member:string...",
    "scard": "key",
    "smembers": "key",
    "zadd": "key [NX | XX] [GT | LT] [CH] [INCR] (score:double member:string)...",
    "geoadd": "key [NX | XX] [CH] (longitude:double latitude:double member:string)...",
    "geodist": f"key member1:string member2:string [{GEO_UNIT}]",
    "geohash": "key [member:string...]",
    "geopos": "key [member:string...]",
    "georadius": f"key longitude:double latitude:double {GEO_RADIUS} {GEO_STORE}",
    "georadius_ro": f"key longitude:double latitude:double {GEO_RADIUS}",
    "georadiusbymember": f"key member:string {GEO_RADIUS} {GEO_STORE}",
    "georadiusbymember_ro": f"key member:string {GEO_RADIUS}",
    "geosearch": f"key {GEO_SHAPE} [WITHCOORD] [WITHDIST] [WITHHASH]",
    "geosearchstore": f"destination:key source:key {GEO_SHAPE} [STOREDIST]",
    "zincrby": "key increment:double member:string",
    "zrem": "key member:string...",
    "zcard": "key",
    "zscore": "key member:string",
    "zmscore": "key member:string...",
    "zrank": "key member:string",
    "zrevrank": "key member:string",
    "zrange": f"key start:string stop:string [BYSCORE | BYLEX] [REV] {LIMIT} [WITHSCORES]",
    "zrangestore": f"dst:key src:key min:string max:string [BYSCORE | BYLEX] [REV] {LIMIT}",
    "zrevrange": "key start:integer stop:integer [WITHSCORES]",
    "zrangebyscore": f"key min:string max:string [WITHSCORES] {LIMIT}",
    "zrevrangebyscore": f"key max:string min:string [WITHSCORES] {LIMIT}",
    "zrangebylex": f"key min:string max:string {LIMIT}",
    "zrevrangebylex": f"key max:string min:string {LIMIT}",
    "zcount": "key min:string max:string",
    "zlexcount": "key min:string max:string",
    "zpopmin": "key [count:integer]",
    "zpopmax": "key [count:integer]",
    "zremrangebyrank": "key start:integer stop:integer",
    "zremrangebyscore": "key min:string max:string",
    "zremrangebylex": "key min:string max:string",
    "zscan": f"key cursor:integer {SCAN_OPTIONS}",
    "zunion": f"numkeys:integer key... {STORE_OPTIONS} [WITHSCORES]",
    "zinter": f"numkeys:integer key... {STORE_OPTIONS} [WITHSCORES]",
    "zdiff": "numkeys:integer key... [WITHSCORES]",
    "zintercard": "numkeys:integer key... [LIMIT limit:integer]",
    "zunionstore": f"destination:key numkeys:integer key... {STORE_OPTIONS}",
    "zinterstore": f"destination:key numkeys:integer key... {STORE_OPTIONS}",
    "zdiffstore": "destination:key numkeys:integer key...",
    "zrandmember": "key [count:integer [WITHSCORES]]",
    "smove": "source:key destination:key member:string",
    "spop": "key [count:integer]",
    "srandmember": "key [count:integer]",
    "sscan": f"key cursor:integer {SCAN_OPTIONS}",
    "incr": "key",
    "decr": "key",
    "incrby": "key increment:integer",
    "decrby": "key decrement:integer",
    "incrbyfloat": "key increment:double",
    "info": "[(server | clients | memory | stats | keyspace | latencystats | commandstats | all"
            " | everything | default | nosuch)...]",
    "keys": "pattern",
    "latency": "",
    "latency|histogram": f"[{COMMAND_NAME}...]",
    "latency|doctor": "",
    "latency|graph": "event:string",
    "latency|history": "event:string",
    "latency|latest": "",
    "latency|reset": "[event:string...]",
    "latency|help": "",
    "lpush": "key element:string...",
    "rpush": "key element:string...",
    "lpushx": "key element:string...",
    "rpushx": "key element:string...",
    "lpop": "key [count:integer]",
    "rpop": "key [count:integer]",
    "llen": "key",
    "lrange": "key start:integer stop:integer",
    "lindex": "key index:integer",
    "lset": "key index:integer element:string",
    "linsert": "key (BEFORE | AFTER) pivot:string element:string",
    "lrem": "key count:integer element:string",
    "ltrim": "key start:integer stop:integer",
    "lpos": "key element:string [RANK rank:integer] [COUNT num-matches:integer] [MAXLEN len:integer]",
    "lmove": f"source:key destination:key {SIDE} {SIDE}",
    "rpoplpush": "source:key destination:key",
    "memory": "",
    "memory|usage": "key [SAMPLES count:integer]",
    "memory|stats": "",
    "memory|doctor": "",
    "memory|purge": "",
    "memory|malloc-stats": "",
    "lolwut": "[VERSION version:integer [arg:integer...]]",
    "wait": "numreplicas:integer timeout:integer",
    "memory|help": "",
    "mget": "key...",
    "pfadd": "key [element:string...]",
    "pfcount": "key...",
    "pfmerge": "key [key...]",
    "pfdebug": "(GETREG | DECODE | ENCODING | TODENSE | subcommand:string) key",
    "pfselftest": "",
    "mset": "(key value:string)...",
    "msetnx": "(key value:string)...",
    "multi": "",
    "exec": "",
    "discard": "",
    "watch": "key...",
    "unwatch": "",
    "object": "",
    "object|encoding": "key",
    "object|freq": "key",
    "object|idletime": "key",
    "object|refcount": "key",
    "object|help": "",
    "persist": "key",
    "ping": "[message:string]",
    "publish": "channel:string message:string",
    "pubsub": "",
    "pubsub|channels": "[pattern]",
    "pubsub|numsub": "[channel:string...]",
    "pubsub|numpat": "",
    "pubsub|shardchannels": "[pattern]",
    "pubsub|shardnumsub": "[shardchannel:string...]",
    "spublish": "shardchannel:string message:string",
    "pubsub|help": "",
    "quit": "",
    "randomkey": "",
    "role": "",
    "replconf": "(LISTENING-PORT port:integer | CAPA capability:string | RDB-ONLY flag:integer)",
    "rename": "key newkey:key",
    "copy": "source:key destination:key [DB destination-db:integer] [REPLACE]",
    "renamenx": "key newkey:key",
    "reset": "",
    "scan": f"cursor:integer {SCAN_OPTIONS} [TYPE (string | list | set | zset | hash | type:string)]",
    "select": "index:integer",
    "set": "key value:string [NX | XX] [GET] [EX seconds:integer | PX milliseconds:integer"
           " | EXAT unix-time-seconds:unix-time | PXAT unix-time-milliseconds:unix-time | KEEPTTL]",
    "setbit": "key offset:integer value:integer",
    "setnx": "key value:string",
    "setex": "key seconds:integer value:string",
    "psetex": "key milliseconds:integer value:string",
    "setrange": "key offset:integer value:string",
    "slowlog": "",
    "slowlog|get": "[count:integer]",
    "slowlog|len": "",
    "slowlog|reset": "",
    "slowlog|help": "",
    "strlen": "key",
    "time": "",
    "touch": "key...",
    "ttl": "key",
    "pttl": "key",
    "expiretime": "key",
    "pexpiretime": "key",
    "type": "key",
    "eval": "script:string numkeys:integer [key...] [arg:string...]",
    "evalsha": "sha1:string numkeys:integer [key...] [arg:string...]",
    "eval_ro": "script:string numkeys:integer [key...] [arg:string...]",
    "evalsha_ro": "sha1:string numkeys:integer [key...] [arg:string...]",
    "fcall": "function:string numkeys:integer [key...] [arg:string...]",
    "fcall_ro": "function:string numkeys:integer [key...] [arg:string...]",
    "script": "",
    "script|load": "script:string",
    "script|exists": "sha1:string...",
    "script|flush": "[ASYNC | SYNC]",
    "script|kill": "",
    "script|debug": "(YES | SYNC | NO)",
    "script|help": "",
    "function": "",
    "acl|list": "",
    "acl|users": "",
    "acl|whoami": "",
    "acl|help": "",
    # Outside cluster mode (the fuzzer's server) these only refuse.
    "asking": "",
    "readonly": "",
    "readwrite": "",
    "cluster|bumpepoch": "",
    "cluster|flushslots": "",
    "cluster|help": "",
    "cluster|info": "",
    "cluster|links": "",
    "cluster|myid": "",
    "cluster|nodes": "",
    "cluster|saveconfig": "",
    "cluster|shards": "",
    "cluster|slots": "",
    "function|load": "[REPLACE] function-code:string",
    "function|list": "[LIBRARYNAME library-name-pattern:pattern] [WITHCODE]",
    "function|delete": "library-name:string",
    "function|flush": "[ASYNC | SYNC]",
    "function|dump": "",
    "function|restore": "serialized-value:string [FLUSH | APPEND | REPLACE]",
    "function|stats": "",
    "function|kill": "",
    "function|help": "",
    "xadd": f"key [NOMKSTREAM] {STREAM_TRIM} (* | {STREAM_ID}) (field:string value:string)...",
    "xlen": "key",
    "xrange": f"key {STREAM_ID} {STREAM_ID} [COUNT count:integer]",
    "xrevrange": f"key {STREAM_ID} {STREAM_ID} [COUNT count:integer]",
    "xdel": f"key {STREAM_ID}...",
    "xtrim": "key (MAXLEN | MINID) [= | ~] threshold:string [LIMIT count:integer]",
    "xsetid": f"key {STREAM_ID} [ENTRIESADDED entries-added:integer] [MAXDELETEDID {STREAM_ID}]",
    "xread": f"[COUNT count:integer] {STREAM_BLOCK} STREAMS key... ($ | {STREAM_ID})...",
    "xreadgroup": f"GROUP (g | group:string) (c | consumer:string) [COUNT count:integer] {STREAM_BLOCK}"
                  f" [NOACK] STREAMS key... (> | {STREAM_ID})...",
    "xgroup": "",
    "xgroup|create": f"key (g | group:string) ($ | {STREAM_ID}) [MKSTREAM] [ENTRIESREAD entries-read:integer]",
    "xgroup|setid": f"key (g | group:string) ($ | {STREAM_ID}) [ENTRIESREAD entries-read:integer]",
    "xgroup|destroy": "key (g | group:string)",
    "xgroup|createconsumer": "key (g | group:string) (c | consumer:string)",
    "xgroup|delconsumer": "key (g | group:string) (c | consumer:string)",
    "xgroup|help": "",
    "xack": f"key (g | group:string) {STREAM_ID}...",
    "xpending": f"key (g | group:string) [[IDLE min-idle-time:integer] {STREAM_ID} {STREAM_ID}"
                " count:integer [(c | consumer:string)]]",
    "xclaim": f"key (g | group:string) (c | consumer:string) min-idle-time:integer {STREAM_ID}..."
              f" [IDLE ms:integer] [TIME unix-time-milliseconds:unix-time] [RETRYCOUNT count:integer]"
              f" [FORCE] [JUSTID] [LASTID {STREAM_ID}]",
    "xautoclaim": f"key (g | group:string) (c | consumer:string) min-idle-time:integer {STREAM_ID}"
                  " [COUNT count:integer] [JUSTID]",
    "xinfo": "",
    "xinfo|stream": "key [FULL [COUNT count:integer]]",
    "xinfo|groups": "key",
    "xinfo|consumers": "key (g | group:string)",
    "xinfo|help": "",
}
# Commands that block: drawn with BLOCKING_TIMEOUT, and never mutated.
BLOCKING = {name for name, syntax in ARGUMENT_SYNTAX.items()
            if BLOCKING_TIMEOUT in syntax or STREAM_BLOCK in syntax}

# Commands keel has that the fuzzer never sends (the reasons are in the docstring).
# A pause, a monitor or CLIENT REPLY OFF would stop the fuzzer's replies.
EXCLUDED = {"shutdown", "save", "bgsave", "sync", "psync", "replicaof", "slaveof", "subscribe", "unsubscribe", "psubscribe", "punsubscribe",
            "ssubscribe", "sunsubscribe", "client|kill", "config|rewrite", "client|pause",
            "monitor", "migrate", "acl", "acl|setuser", "acl|deluser", "acl|load", "acl|save",
            "cluster", "cluster|settopology"}
RARE = {"flushall": 0.05, "flushdb": 0.05, "pfselftest": 0.01}
ARGUMENT_TYPES = {"key", "string", "integer", "double", "pattern", "unix-time"}


def parse_syntax(syntax: str) -> list[dict]:
    """The argument specs `syntax` describes, shaped as COMMAND DOCS gives them."""
    words = syntax.replace("[", " [ ").replace("]", " ] ").replace("(", " ( ").replace(")", " ) ")
    words = words.replace("...", " ... ").split()
    args, rest = _parse_sequence(words, 0, closer=None)
    assert rest == len(words), syntax
    return args


def _parse_sequence(words, i, closer):
    """Arguments up to `closer`; alternatives separated by `|` become one oneof."""
    alternatives, current = [], []
    while i < len(words) and words[i] != closer:
        word = words[i]
        i += 1
        if word == "|":
            alternatives.append(current)
            current = []
        elif word == "...":
            current[-1] = {**current[-1], "flags": current[-1].get("flags", []) + ["multiple"]}
        elif word in ("[", "("):
            inner, i = _parse_sequence(words, i, closer="]" if word == "[" else ")")
            i += 1
            arg = inner[0] if len(inner) == 1 else {"name": "block", "type": "block", "arguments": inner}
            current.append({**arg, "flags": ["optional"]} if word == "[" else arg)
        elif word in ARGUMENT_TYPES or ":" in word:
            name, _, kind = word.partition(":")
            assert (kind or name) in ARGUMENT_TYPES, word
            current.append({"name": name, "type": kind or name})
        else:
            current.append({"name": word.lower(), "type": "pure-token", "token": word})
    if not alternatives:
        return current, i
    alternatives.append(current)
    options = [a[0] if len(a) == 1 else {"name": "block", "type": "block", "arguments": a}
               for a in alternatives]
    return [{"name": "oneof", "type": "oneof", "arguments": options}], i


def _name(argv) -> str:
    return argv[0].lower() if isinstance(argv[0], str) else ""


# --------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------

TYPED_KEYS = {
    "str": [["SET", "str", "hello"]],
    "int": [["SET", "int", "12345"]],
    "volatile": [["SET", "volatile", "v", "EX", "100000"]],
    "list": [["RPUSH", "list", "a", "b", "c", "1", "2"]],
    "biglist": [["RPUSH", "biglist"] + [f"e{i}" for i in range(1000)]],
    "hash": [["HSET", "hash", "f1", "v1", "f2", "2"]],
    "bighash": [["HSET", "bighash"] + [f"f{i // 2}" for i in range(1200)]],
    "set": [["SADD", "set", "a", "b", "c"]],
    "intset": [["SADD", "intset", "1", "2", "3", "-4"]],
    "bigset": [["SADD", "bigset"] + [f"m{i}" for i in range(300)]],
    "zset": [["ZADD", "zset", "1", "a", "2", "b", "2", "c"]],
    "bigzset": [["ZADD", "bigzset"] + [x for i in range(300) for x in (str(i % 7), f"z{i}")]],
    "stream": [["XADD", "stream", "1", "f", "v"], ["XADD", "stream", "2", "f", "w", "g", "x"],
               ["XGROUP", "CREATE", "stream", "g", "0"],
               ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "stream", ">"]],
}
SETUP_COMMANDS = [argv for commands in TYPED_KEYS.values() for argv in commands]
KEY_POOL = list(TYPED_KEYS) + ["new1", "new2", "{t}new3", ""]

ORDINARY = {
    "string": ["a", "b", "hello", "12", "-5", "3.14", "1", "f1", "e5", "m7", "z3", "x" * 64, "y" * 65,
               "v" * 300, "-", "+", "(1", "[a", "(a", "-inf", "+inf", "0", "5"],
    "integer": ["0", "1", "2", "3", "5", "10", "100", "1000", "-1", "-2", "-10"],
    "double": ["0", "1", "1.5", "-2.5", "10", "0.001", "3e2", "-7"],
    "pattern": ["*", "k*", "?", "*s*", "[a-z]*", "h?sh", "big*", "new[12]"],
}
EXTREMES = {
    "string": ["", "\x00\xff", str(INT64_MAX), str(INT64_MIN), "nan", "inf", "*", "[", "(", "y" * 100_000],
    "integer": [str(INT64_MAX), str(INT64_MIN), str(INT64_MAX + 1), str(INT64_MIN - 1),
                str(INT64_MAX - 1), str(INT64_MIN + 1), "-1000000000000", "1000000000000",
                "2147483648", "4294967296", str(MAXMEMORY), str(2 * MAXMEMORY),
                str(PROTO_MAX_BULK_LEN - 1), "500000000", "", "abc", "1.5", "nan", "inf", " 1",
                "0x10", "+1", "-0"],
    "double": ["nan", "inf", "-inf", "+inf", "1e308", "-1e308", "1e309", "5e-324", "1e-320",
               str(INT64_MAX), "", "abc", "1.5.5", "0x10", "1e300", "-0"],
    "pattern": ["", "\\", "*[", "[^", "*" * 64, "a*a*a*a*a*a*a*a*a*b", "[z-a]*"],
}
EXTREME_SHARE = 0.3
# Commands change keys' types; every so often one typed key is made again, in
# whichever database is selected, so that every type stays in reach.
REPOPULATE_EVERY = 200
ONE_MB_SHARE = 0.003
MUTATION_SHARE = 0.03
UNKNOWN_COMMAND_SHARE = 0.002
TRANSACTION_END_SHARE = 0.2


class CommandGenerator:
    """Seeded commands over `commands` ({name: (argv prefix, argument specs)})."""

    def __init__(self, seed, commands: dict, arities: dict):
        self.rng = random.Random(seed)
        self.commands = commands
        self.arities = arities
        self.names = sorted(commands)
        self.weights = [RARE.get(name, 1.0) for name in self.names]
        self.in_transaction = False
        self.drawn = 0
        self.pending = collections.deque()

    def next(self) -> list:
        self.drawn += 1
        if self.drawn % REPOPULATE_EVERY == 0:
            key = self.rng.choice(list(TYPED_KEYS))
            self.pending.extend([["DEL", key]] + TYPED_KEYS[key])
        if self.pending:
            return self.pending.popleft()
        return self._draw()

    def observe(self, argv, reply):
        """Follows the transaction state from what keel answered."""
        name = _name(argv)
        if name == "multi" and reply == Status("OK"):
            self.in_transaction = True
        elif name in ("exec", "discard", "reset", "quit") or reply is CLOSED_BY_REPLY_LIMIT:
            self.in_transaction = False

    def _draw(self) -> list:
        rng = self.rng
        if self.in_transaction and rng.random() < TRANSACTION_END_SHARE:
            return [rng.choice(["EXEC", "EXEC", "DISCARD"])]
        if rng.random() < UNKNOWN_COMMAND_SHARE:
            return ["NOSUCHCOMMAND", self.value("string")]
        name = rng.choices(self.names, self.weights)[0]
        prefix, specs = self.commands[name]
        argv = list(prefix)
        for spec in specs:
            self._emit(spec, argv)
        if rng.random() < MUTATION_SHARE and name not in BLOCKING:
            self._mutate(argv, name)
        return argv

    def _emit(self, spec, argv):
        rng = self.rng
        flags = spec.get("flags", [])
        if "optional" in flags and rng.random() < 0.5:
            return
        repeat = self._repeat() if "multiple" in flags else 1
        for _ in range(repeat):
            if "token" in spec:
                token = spec["token"]
                argv.append(token.lower() if rng.random() < 0.1 else token)
            kind = spec["type"]
            if kind == "block":
                for inner in spec["arguments"]:
                    self._emit(inner, argv)
            elif kind == "oneof":
                self._emit(rng.choice(spec["arguments"]), argv)
            elif kind != "pure-token":
                argv.append(self.value(kind))

    def _repeat(self) -> int:
        roll = self.rng.random()
        if roll < 0.5:
            return 1
        if roll < 0.85:
            return self.rng.randint(2, 4)
        if roll < 0.98:
            return self.rng.randint(5, 20)
        return self.rng.randint(100, 1000)

    def value(self, kind):
        rng = self.rng
        if kind == "key":
            if rng.random() < EXTREME_SHARE / 4:
                return rng.choice(["k" * 1000, ONE_MB if rng.random() < 0.05 else "", "\x00"])
            return rng.choice(KEY_POOL)
        if kind == "unix-time":
            now = int(time.time())
            return str(rng.choice([now + 100, now - 100, now * 1000 + 100_000, 0, -1, 253402300800,
                                   INT64_MAX, INT64_MIN, now + rng.randint(1, 3)]))
        if kind == "string" and rng.random() < ONE_MB_SHARE:
            return ONE_MB
        pool = EXTREMES if rng.random() < EXTREME_SHARE else ORDINARY
        return rng.choice(pool[kind])

    def _mutate(self, argv, name):
        """One change that makes the command wrong: a missing, extra or ill-typed argument."""
        rng = self.rng
        fixed = len(self.commands[name][0])
        roll = rng.random()
        if roll < 0.3 and len(argv) > fixed:
            del argv[rng.randrange(fixed, len(argv))]
        elif roll < 0.6:
            argv.insert(rng.randint(fixed, len(argv)), self.value(rng.choice(list(EXTREMES))))
        elif roll < 0.8 and len(argv) > fixed:
            argv[rng.randrange(fixed, len(argv))] = self.value(rng.choice(list(EXTREMES)))
        else:
            del argv[max(1, abs(self.arities[name]) - 1):]


def command_table(conn) -> tuple[dict, dict]:
    """({name: (argv prefix, argument specs)}, {name: arity}) for every command keel lists,
    its subcommands included, minus `EXCLUDED`."""
    docs = {}
    for name, fields in _pairs(conn.call("COMMAND", "DOCS")):
        entry = dict(_pairs(fields))
        docs[name.decode()] = entry
        for sub, sub_fields in _pairs(entry.get(b"subcommands", [])):
            docs[sub.decode()] = dict(_pairs(sub_fields))
    arities = {}

    def walk(info_entry):
        arities[info_entry[0].decode()] = info_entry[1]
        for sub in info_entry[9]:
            walk(sub)

    for entry in conn.call("COMMAND"):
        walk(entry)
    names = sorted(set(arities) - EXCLUDED)
    missing = [n for n in names if b"arguments" not in docs.get(n, {}) and n not in ARGUMENT_SYNTAX]
    if missing:
        raise RuntimeError(f"no argument specs for {missing}: add them to ARGUMENT_SYNTAX or EXCLUDED")
    commands = {}
    for name in names:
        if name in ARGUMENT_SYNTAX:
            specs = parse_syntax(ARGUMENT_SYNTAX[name])
        else:
            specs = docs_arguments(docs[name][b"arguments"])
        commands[name] = (name.upper().split("|"), specs)
    return commands, arities


def docs_arguments(reported) -> list[dict]:
    """COMMAND DOCS `arguments` (RESP2: a flat field/value list per argument) as dicts."""
    specs = []
    for fields in reported:
        spec = {field.decode(): value for field, value in _pairs(fields)}
        spec = {k: v.decode() if isinstance(v, bytes) else v for k, v in spec.items()}
        spec["flags"] = [str(flag) for flag in spec.get("flags", [])]
        if "arguments" in spec:
            spec["arguments"] = docs_arguments(spec["arguments"])
        specs.append(spec)
    return specs


def _pairs(flat):
    return list(zip(flat[::2], flat[1::2]))


# --------------------------------------------------------------------------
# Running and checking
# --------------------------------------------------------------------------


class Failure(Exception):
    """A check failed; `check` names which, so a replay can tell it reproduced."""

    def __init__(self, check, detail):
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail


def rss_bytes(pid) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class Session:
    """One keel under test: the fuzzing connection, a checking connection and the checks."""

    def __init__(self, port, server=None):
        self.port = port
        self.server = server
        self.conn = RespConn(port, timeout=REPLY_TIMEOUT)
        self.checker = RespConn(port, timeout=REPLY_TIMEOUT)
        self.pid = int(info(self.checker, "server")["process_id"])
        self.rss_overhead = rss_bytes(self.pid)
        self.worst_recount_slack = 0
        self.worst_settled_rss = 0
        self.reply_limit_closes = self._reply_limit_closes()

    @classmethod
    def fresh(cls, keel_bin):
        server = ServerProcess("keel", keel_bin=keel_bin, directives=SERVER_DIRECTIVES).start()
        try:
            return cls(server.port, server)
        except BaseException:
            server.cleanup()
            raise

    def close(self):
        self.conn.close()
        self.checker.close()
        if self.server is not None:
            self.server.cleanup()

    def populate(self):
        assert self.checker.call("FLUSHALL") == Status("OK")
        for reply in self.checker.pipeline(SETUP_COMMANDS):
            assert not isinstance(reply, Err), reply

    def run(self, argv):
        """Sends one command and returns its reply; after QUIT, reconnects."""
        try:
            reply = self.conn.call(*argv)
            if _name(argv) == "quit":
                self.conn.close()
                self.conn = RespConn(self.port, timeout=REPLY_TIMEOUT)
            if [a.lower() for a in argv[:2] if isinstance(a, str)] == ["config", "resetstat"]:
                # The count of reply-limit closes starts again from 0.
                self.reply_limit_closes = self._reply_limit_closes()
            return reply
        except TimeoutError:
            self._check_alive()
            raise Failure("reply", f"no reply within {REPLY_TIMEOUT:g} s")
        except (ConnectionClosed, OSError) as error:
            self._check_alive()
            closes = self._reply_limit_closes()
            if closes == self.reply_limit_closes:
                raise Failure("reply", f"the connection was closed ({error})")
            self.reply_limit_closes = closes
            self.conn.close()
            self.conn = RespConn(self.port, timeout=REPLY_TIMEOUT)
            return CLOSED_BY_REPLY_LIMIT

    def _reply_limit_closes(self) -> int:
        return int(info(self.checker, "stats")["client_output_buffer_limit_disconnections"])

    def check(self, recount=False):
        memory = self._check_alive()
        dataset = int(memory["used_memory_dataset"])
        if dataset > MAXMEMORY:
            raise Failure("dataset", f"used_memory_dataset {dataset} > maxmemory {MAXMEMORY}")
        lazyfree = int(memory["lazyfree_pending_bytes"])
        limit = MAXMEMORY + MAXMEMORY_CLIENTS + self.rss_overhead + ALLOCATOR_SLACK + lazyfree
        rss = rss_bytes(self.pid)
        settled_by = time.monotonic() + RSS_SETTLE_SECONDS
        while rss > limit and time.monotonic() < settled_by:
            time.sleep(0.5)
            rss = rss_bytes(self.pid)
        if rss > limit:
            raise Failure("rss", f"RSS {rss} > {limit} (maxmemory {MAXMEMORY} + maxmemory-clients"
                                 f" {MAXMEMORY_CLIENTS} + idle RSS {self.rss_overhead} + allocator"
                                 f" slack {ALLOCATOR_SLACK} + lazyfree queue {lazyfree}),"
                                 f" {RSS_SETTLE_SECONDS:g} s after the command")
        self.worst_settled_rss = max(self.worst_settled_rss, rss)
        if recount:
            self._check_recount()

    def rss_summary(self) -> str:
        budgets = MAXMEMORY + MAXMEMORY_CLIENTS + self.rss_overhead
        return (f"idle RSS {self.rss_overhead}, highest RSS checked {self.worst_settled_rss},"
                f" {self.worst_settled_rss - budgets} past maxmemory + maxmemory-clients + idle RSS"
                f" (allocator slack allowed: {ALLOCATOR_SLACK})")

    def _check_alive(self) -> dict:
        """PING on the checking connection; returns INFO memory."""
        if self.server is not None and self.server.proc.poll() is not None:
            raise Failure("alive", f"keel exited with status {self.server.proc.returncode}:\n"
                                   f"{self.server.log_tail(2000)}")
        try:
            pong, memory = self.checker.pipeline([("PING",), ("INFO", "memory")])
        except (ConnectionClosed, OSError) as error:
            raise Failure("alive", f"no PONG on a second connection ({error!r})")
        if pong != PONG:
            raise Failure("alive", f"PING answered {pong!r}")
        return info_dict(memory)

    def _check_recount(self):
        before = self._dataset_and_keys()
        keys, total = self._recount()
        if self._dataset_and_keys() != before:
            return  # something expired, was reclaimed or was evicted meanwhile
        dataset, keyspace_keys = before
        if keys != keyspace_keys:
            return  # a key past its TTL, counted until the expiry pass reclaims it, SCAN no longer shows
        slack = dataset - total
        if total > dataset or slack > RECOUNT_SLACK_PER_KEY * keys:
            raise Failure("recount", f"sum of MEMORY USAGE over {keys} keys is {total},"
                                     f" used_memory_dataset is {dataset} (allowed: recount <= dataset"
                                     f" <= recount + {RECOUNT_SLACK_PER_KEY} x keys)")
        if keys:
            self.worst_recount_slack = max(self.worst_recount_slack, slack // keys)

    def _dataset_and_keys(self) -> tuple[int, int]:
        """used_memory_dataset and the keys INFO keyspace counts in every database (expired ones
        not yet reclaimed included). Both are compared before and after a recount: a key
        reclaimed after the last dataset read but before the key count used to be judged as a
        recount missing the reclaimed key's bytes."""
        fields = info(self.checker, "memory", "keyspace")
        keys = sum(int(info_fields(value)["keys"]) for name, value in fields.items()
                   if name.startswith("db") and name[2:].isdigit())
        return int(fields["used_memory_dataset"]), keys

    def _recount(self) -> tuple[int, int]:
        """(keys, sum of MEMORY USAGE) over every database, on the checking connection."""
        keyspace = info(self.checker, "keyspace")
        keys, total = 0, 0
        for db in (int(name[2:]) for name in keyspace):
            self.checker.call("SELECT", db)
            cursor = b"0"
            while True:
                cursor, names = self.checker.call("SCAN", cursor, "COUNT", 1000)
                usages = self.checker.pipeline([("MEMORY", "USAGE", name) for name in names])
                keys += sum(u is not None for u in usages)
                total += sum(u or 0 for u in usages)
                if cursor == b"0":
                    break
        self.checker.call("SELECT", 0)
        return keys, total


class Outcome:
    """What a run found: nothing (`failure` None), or the failure, the command it
    followed and the shortest failing sequence shrinking found (None if none did)."""

    def __init__(self, seed, commands, failure=None, number=None, shortest=None):
        self.seed = seed
        self.commands = commands
        self.failure = failure
        self.number = number
        self.shortest = shortest


def fuzz(seed, commands, keel_bin=None, port=None, check_every=1, recount_every=100,
         shrink_seconds=SHRINK_SECONDS, out=sys.stdout) -> Outcome:
    """Runs `commands` commands from `seed` with the checks; shrinks a failure if it can."""
    if port is not None:
        session = Session(port)
    else:
        session = Session.fresh(keel_bin)
    log = collections.deque(maxlen=LOG_WINDOW)
    started = time.monotonic()
    try:
        table, arities = command_table(session.checker)
        session.populate()
        generator = CommandGenerator(seed, table, arities)
        for number in range(1, commands + 1):
            log.append(generator.next())
            try:
                generator.observe(log[-1], session.run(log[-1]))
                if number % check_every == 0 or number == commands:
                    session.check(recount=number % recount_every == 0)
            except Failure as found:
                failure = found
                break
            if number % 100_000 == 0:
                print(f"seed {seed}: {number} commands in {time.monotonic() - started:.0f} s,"
                      f" worst recount slack {session.worst_recount_slack} B/key, {session.rss_summary()}",
                      file=out, flush=True)
        else:
            print(f"seed {seed}: {commands} commands passed every check in"
                  f" {time.monotonic() - started:.0f} s (worst recount slack"
                  f" {session.worst_recount_slack} B/key, {session.rss_summary()})", file=out, flush=True)
            return Outcome(seed, commands)
    finally:
        session.close()
    print(f"FAILED: seed {seed}, command {number}: {format_command(log[-1], limit=300)}\n"
          f"  check {failure.check}: {failure.detail}", file=out, flush=True)
    outcome = Outcome(seed, commands, failure, number)
    if port is not None:
        print("  not shrunk: shrinking needs fresh servers (--keel-bin)", file=out)
        return outcome

    def fails_at(sequence):
        return replay_fails(keel_bin, sequence, failure.check)

    outcome.shortest = shrink(list(log), fails_at, deadline=time.monotonic() + shrink_seconds)
    if outcome.shortest is None:
        print(f"  did not fail again when the last {len(log)} commands were replayed on a fresh keel",
              file=out)
    else:
        print(f"  shortest failing sequence ({len(outcome.shortest)} commands, after the key pool's"
              " setup):", file=out)
        for line in outcome.shortest:
            print(f"    {format_command(line)}", file=out)
    return outcome


def replay_fails(keel_bin, sequence, check) -> int | None:
    """Replays `sequence` on fresh keels, up to `REPLAY_ATTEMPTS` times; the number of commands
    run when `check` failed, or None."""
    for _ in range(REPLAY_ATTEMPTS):
        failed_at = _replay_once(keel_bin, sequence, check)
        if failed_at:
            return failed_at
    return None


def _replay_once(keel_bin, sequence, check) -> int | None:
    session = Session.fresh(keel_bin)
    try:
        session.populate()
        for number, argv in enumerate(sequence, 1):
            try:
                session.run(argv)
                session.check(recount=check == "recount")
            except Failure as failure:
                return number if failure.check == check else None
        return None
    finally:
        session.close()


def shrink(log, fails_at, deadline) -> list | None:
    """The shortest sequence found that still fails (`fails_at(sequence)` is the number of
    commands run when the check failed, or None): first the shortest failing suffix of `log`
    (doubling), then chunks of commands and of each command's arguments removed while it still
    fails, halving the chunk size."""
    size = 1
    while True:
        failed_at = fails_at(log[-size:])
        if failed_at:
            sequence = log[-size:][:failed_at]
            break
        if size >= len(log) or time.monotonic() > deadline:
            return None
        size = min(2 * size, len(log))
    chunk = len(sequence) // 2
    while chunk >= 1 and time.monotonic() < deadline:
        start, removed = 0, False
        while start < len(sequence) and time.monotonic() < deadline:
            candidate = sequence[:start] + sequence[start + chunk:]
            failed_at = fails_at(candidate) if candidate else None
            if failed_at:
                sequence, removed = candidate[:failed_at], True
            else:
                start += chunk
        if not removed:
            chunk //= 2
    for position in range(len(sequence)):
        sequence = _shrink_arguments(sequence, position, fails_at, deadline)
    return sequence


def _shrink_arguments(sequence, position, fails_at, deadline) -> list:
    """`sequence` with arguments of its command at `position` removed while it still fails."""
    argv = sequence[position]
    chunk = (len(argv) - 1) // 2
    while chunk >= 1 and time.monotonic() < deadline:
        start, removed = 1, False
        while start < len(argv) and time.monotonic() < deadline:
            candidate = argv[:start] + argv[start + chunk:]
            trial = sequence[:position] + [candidate] + sequence[position + 1:]
            failed_at = fails_at(trial)
            if failed_at and failed_at > position:
                argv, sequence, removed = candidate, trial[:failed_at], True
            else:
                start += chunk
        if not removed:
            chunk //= 2
    return sequence


def format_command(argv, limit=None) -> str:
    """A redis-cli line, cut at `limit` characters; a long argument of one repeated character
    is written as <'c' x N>."""
    words = []
    for arg in argv:
        text = arg.decode("latin-1") if isinstance(arg, bytes) else str(arg)
        if len(text) > 64 and text == text[0] * len(text):
            words.append(f"<{text[0]!r} x {len(text)}>")
        elif text and all(c.isprintable() and c not in ' "\'\\' for c in text):
            words.append(text)
        else:
            escaped = "".join(c if c.isprintable() and c not in '"\\' else f"\\x{ord(c):02x}" for c in text)
            words.append(f'"{escaped}"')
    line = " ".join(words)
    if limit is not None and len(line) > limit:
        return f"{line[:limit]}... ({len(argv)} arguments)"
    return line


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--commands", type=int, default=10_000)
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--keel-bin", type=Path, default=DEFAULT_KEEL_BIN,
                        help="keel-server to start (default: target/release/keel-server)")
    target.add_argument("--port", type=int, help="fuzz a running keel on this port (it is flushed)")
    parser.add_argument("--check-every", type=int, default=1, help="commands between checks")
    parser.add_argument("--recount-every", type=int, default=100,
                        help="commands between recounts (a multiple of --check-every)")
    parser.add_argument("--shrink-seconds", type=float, default=SHRINK_SECONDS)
    args = parser.parse_args(argv)
    print(f"seed {args.seed}, {args.commands} commands, checks every {args.check_every},"
          f" recount every {args.recount_every}",
          flush=True)
    outcome = fuzz(args.seed, args.commands, keel_bin=args.keel_bin.resolve(), port=args.port,
                   check_every=args.check_every, recount_every=args.recount_every,
                   shrink_seconds=args.shrink_seconds)
    return 0 if outcome.failure is None else 1


if __name__ == "__main__":
    sys.exit(main())
