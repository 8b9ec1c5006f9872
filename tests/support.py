"""Shared helpers for the black-box suite: an exact RESP client and server processes.

`RespConn` keeps every detail of a reply that redis-py hides (simple string vs
bulk string, the full error text including its code, RESP3 types), so tests can
compare replies byte-for-byte with what real redis-server sends.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Generous limits: they only exist so that a broken server cannot hang the suite.
IO_TIMEOUT = 20.0
START_TIMEOUT = 20.0
STOP_TIMEOUT = 20.0


# --------------------------------------------------------------------------
# Reply types
# --------------------------------------------------------------------------


class _TaggedStr(str):
    """A str that only compares equal to the same tagged type."""

    def __eq__(self, other):
        return type(other) is type(self) and str.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({str.__repr__(self)})"


class Status(_TaggedStr):
    """A RESP simple string (`+OK`)."""


class Err(_TaggedStr):
    """A RESP error, with its code (`ERR ...`, `WRONGPASS ...`)."""


class Double(_TaggedStr):
    """A RESP3 double (`,1.5`), kept as the text the server sent."""


class Verbatim(bytes):
    """A RESP3 verbatim string; the value excludes the `txt:` prefix."""

    def __eq__(self, other):
        return type(other) is Verbatim and bytes.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = bytes.__hash__


class Push(list):
    """A RESP3 out-of-band push message."""


class RespMap(list):
    """A RESP3 map, as a list of (key, value) pairs (keys may be unhashable)."""

    def to_dict(self):
        return {_hashable(k): v for k, v in self}


class RespSet(list):
    """A RESP3 set, kept in server order."""


def _hashable(x):
    return tuple(_hashable(i) for i in x) if isinstance(x, list) else x


OK = Status("OK")
PONG = Status("PONG")
QUEUED = Status("QUEUED")


class ConnectionClosed(Exception):
    """The server closed the connection."""


# --------------------------------------------------------------------------
# RESP encoding / decoding
# --------------------------------------------------------------------------


def _b(x) -> bytes:
    if isinstance(x, bytes):
        return x
    if isinstance(x, (int, float)):
        return repr(x).encode() if isinstance(x, float) else str(x).encode()
    return str(x).encode()


def encode_command(*args) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = _b(a)
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


def pipeline_big_sets(port, prefix, count, value, start=None) -> bytes:
    """Pipelines `count` SETs of `value` to keys `prefix:0`, `prefix:1`, ...
    on a new connection, sending from one thread while reading every reply
    on another (a server applying backpressure stops reading until replies
    are consumed); returns the replies. With `start` (a threading.Barrier),
    sends only once every connection sharing it is open."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        if start is not None:
            start.wait()
        payload = b"".join(encode_command("SET", f"{prefix}:{i}", value) for i in range(count))
        sender = threading.Thread(target=s.sendall, args=(payload,))
        sender.start()
        replies = b""
        while replies.count(b"\r\n") < count:
            chunk = s.recv(65536)
            if not chunk:
                break
            replies += chunk
        sender.join()
        return replies


def pipeline_big_sets_concurrently(port, connections, count, value, timeout) -> dict:
    """`pipeline_big_sets` on `connections` connections at once (all connect
    before any sends), keys prefixed by the connection's number; returns each
    one's replies by number (none for a connection still waiting after
    `timeout` seconds)."""
    replies = {}
    start = threading.Barrier(connections)

    def send(n):
        replies[n] = pipeline_big_sets(port, f"c{n}", count, value, start)

    senders = [threading.Thread(target=send, args=(n,)) for n in range(connections)]
    for s in senders:
        s.start()
    for s in senders:
        s.join(timeout=timeout)
    return replies


class RespConn:
    """A minimal, exact RESP2/RESP3 client on a plain socket."""

    def __init__(self, port, host="127.0.0.1", timeout=IO_TIMEOUT):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self._keep = False  # set while read_raw() needs the buffer left in place

    # -- context manager --------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # -- sending ----------------------------------------------------------
    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def send(self, *args):
        self.sock.sendall(encode_command(*args))

    def call(self, *args):
        self.send(*args)
        return self.read()

    def pipeline(self, commands):
        """Send all commands at once, then read one reply per command."""
        self.sock.sendall(b"".join(encode_command(*c) for c in commands))
        return [self.read() for _ in commands]

    # -- receiving --------------------------------------------------------
    def _fill(self):
        if self.pos > 1 << 20 and not self._keep:
            del self.buf[: self.pos]
            self.pos = 0
        try:
            data = self.sock.recv(1 << 16)
        except ConnectionResetError:
            data = b""
        if not data:
            raise ConnectionClosed("connection closed by server")
        self.buf += data

    def _line(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos : i])
                self.pos = i + 2
                return line
            self._fill()

    def _exact(self, n: int) -> bytes:
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + n])
        assert self.buf[self.pos + n : self.pos + n + 2] == b"\r\n", "bulk not CRLF-terminated"
        self.pos += n + 2
        return data

    def read(self):
        line = self._line()
        if not line:
            raise AssertionError("empty RESP line")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Status(rest.decode(errors="surrogateescape"))
        if t == b"-":
            return Err(rest.decode(errors="surrogateescape"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if t == b"_":
            return None
        if t == b",":
            return Double(rest.decode())
        if t == b"#":
            return rest == b"t"
        if t == b"(":
            return int(rest)
        if t == b"=":
            data = self._exact(int(rest))
            return Verbatim(data[4:])
        if t == b"%":
            return RespMap((self.read(), self.read()) for _ in range(int(rest)))
        if t == b"~":
            return RespSet(self.read() for _ in range(int(rest)))
        if t == b">":
            return Push(self.read() for _ in range(int(rest)))
        if t == b"|":
            for _ in range(2 * int(rest)):
                self.read()
            return self.read()
        if t == b"!":
            return Err(self._exact(int(rest)).decode())
        raise AssertionError(f"unknown RESP type in line {line!r}")

    def read_raw(self) -> bytes:
        """The raw bytes of the next complete reply."""
        self._keep = True
        try:
            start = self.pos
            self.read()
            return bytes(self.buf[start : self.pos])
        finally:
            self._keep = False

    def read_exact_bytes(self, n: int) -> bytes:
        """The next n raw bytes of the reply stream, unparsed."""
        while len(self.buf) - self.pos < n:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return data

    def read_until_closed(self, limit=1 << 20) -> bytes:
        """Return every byte the server still sends until it closes the connection."""
        out = bytes(self.buf[self.pos :])
        self.buf.clear()
        self.pos = 0
        while len(out) < limit:
            try:
                data = self.sock.recv(1 << 16)
            except ConnectionResetError:
                break
            if not data:
                break
            out += data
        return out

    def is_closed(self) -> bool:
        """True if the server has closed this connection (waits up to the IO timeout)."""
        try:
            self.read_until_closed()
        except socket.timeout:
            return False
        return True


# --------------------------------------------------------------------------
# Server processes
# --------------------------------------------------------------------------


_handed_out_ports: set[int] = set()


def free_port() -> int:
    """A free loopback port (bind to port 0, read it, close), never one this process handed
    out before: a test that asks for two ports (a plain and a TLS port) before starting the
    server could otherwise be given the same one twice. With KEEL_TEST_PORTS=first-last set,
    one from that range instead (parallel runs keep to their own ranges), not one handed out
    before while others remain."""
    port_range = os.environ.get("KEEL_TEST_PORTS")
    if port_range:
        first, last = (int(p) for p in port_range.split("-"))
        candidates = list(range(first, last + 1))
        random.shuffle(candidates)
        candidates.sort(key=lambda p: p in _handed_out_ports)
        for port in candidates:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out_ports.add(port)
            return port
        raise RuntimeError(f"no free port in KEEL_TEST_PORTS={port_range}")
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port != 6379 and port not in _handed_out_ports:
            _handed_out_ports.add(port)
            return port


# keel uses redis.conf directive names; the only one Redis spells differently.
_REDIS_DIRECTIVE_NAMES = {"threads": "io-threads"}


def _directive_args(directives: dict) -> list[str]:
    args = []
    for k, v in directives.items():
        args += [f"--{k}", str(v)]
    return args


class ServerProcess:
    """A keel-server or redis-server on a free loopback port.

    `directives` are redis.conf names (`{"maxmemory": "1gb"}`); `config_text`
    becomes a config file passed as the first argument.
    """

    def __init__(self, kind, keel_bin=None, directives=None, config_text=None, extra_args=()):
        assert kind in ("keel", "redis"), kind
        self.kind = kind
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{kind}-test-"))
        self.log_path = self.workdir / "server.log"
        self.proc = None
        directives = dict(directives or {})
        if kind == "redis":
            directives = {_REDIS_DIRECTIVE_NAMES.get(k, k): v for k, v in directives.items()}
        base = {"port": self.port, "bind": "127.0.0.1", "enable-debug-command": "yes"}
        if kind == "redis":
            base.update({"save": "", "appendonly": "no",
                         "dir": str(self.workdir), "daemonize": "no"})
        # Caller directives come last so they win over the defaults (except port).
        args = _directive_args({**base, **directives, "port": self.port})
        args += list(extra_args)
        if config_text is not None:
            conf = self.workdir / "server.conf"
            conf.write_text(config_text)
            args = [str(conf)] + args
        exe = keel_bin if kind == "keel" else shutil.which("redis-server") or "redis-server"
        self.argv = [str(exe)] + args

    def start(self):
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.workdir)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.proc.returncode} while starting:\n"
                                   f"{' '.join(self.argv)}\n{self.log_tail()}")
            try:
                with RespConn(self.port, timeout=2) as c:
                    c.call("PING")  # any reply (even NOAUTH) means it is serving
                return self
            except (OSError, ConnectionClosed):
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError(f"{self.kind} did not answer PING within {START_TIMEOUT}s:\n"
                                       f"{self.log_tail()}")
                time.sleep(0.05)

    def log_tail(self, n=4000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def conn(self, **kw) -> RespConn:
        return RespConn(self.port, **kw)

    def redis(self, **kw):
        import redis

        kw.setdefault("socket_timeout", IO_TIMEOUT)
        kw.setdefault("socket_connect_timeout", IO_TIMEOUT)
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def wait(self, timeout=STOP_TIMEOUT):
        """Wait for the process to exit by itself; returns its exit code."""
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._close_log()

    def stop(self) -> int:
        """SIGTERM, wait; SIGKILL if it does not exit in time. Returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
                raise RuntimeError(f"{self.kind} did not exit within {STOP_TIMEOUT}s of SIGTERM")
        self._close_log()
        return self.proc.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT)
        self._close_log()

    def _close_log(self):
        log = getattr(self, "_log", None)
        if log is not None and not log.closed:
            log.close()

    def cleanup(self):
        self.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)


def run_server_to_exit(kind, keel_bin, args, timeout=START_TIMEOUT):
    """Run a server that is expected to refuse to start; returns (exit code, output)."""
    exe = keel_bin if kind == "keel" else "redis-server"
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([str(exe)] + list(args), capture_output=True, timeout=timeout,
                           cwd=d, stdin=subprocess.DEVNULL)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def config_dict(reply) -> dict:
    """CONFIG GET's reply (flat array in RESP2) as {name: value}."""
    return dict(zip(reply[::2], reply[1::2]))


def info_dict(text) -> dict:
    """Parse an INFO reply into {field: value} (section headers dropped)."""
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out



def info(conn, *sections) -> dict:
    """INFO's fields for `sections`, read over a raw connection."""
    return info_dict(conn.call("INFO", *sections))

def info_fields(value: str) -> dict:
    """Parse `keys=1,expires=0,avg_ttl=0` into a dict."""
    return dict(kv.split("=", 1) for kv in value.split(","))


def wait_for(predicate, timeout=30.0, what="condition"):
    """Polls `predicate` until it returns a true value, and returns that value; fails the test
    if `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)
