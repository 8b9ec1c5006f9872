"""Hostile clients, RSS sampler and end-of-run checks for bench/soak.sh.

    soak_hostile.py hostile NAME PORT SECONDS OUT.txt [--skip-freezers]
        repeats a cycle of hostile behaviours against one server until
        SECONDS have passed; counts each step's outcomes (ok, the server's
        error reply by prefix, closed by the server, timeout, other
        exceptions) and writes them to OUT.txt. Never aborts on an error.
        --skip-freezers leaves out the two steps a redis-server cannot take
        (a negative RANDMEMBER count of -10^12 makes it loop and allocate
        GBs; SETRANGE at offset 500,000,000 allocates 500 MB).
    soak_hostile.py sample SECONDS OUT.csv NAME=PORT:PID...
        once a second, per server: VmRSS from /proc/PID/status and INFO
        memory's used_memory, used_memory_dataset, mem_clients_normal,
        maxmemory; one CSV row each.
    soak_hostile.py finish OUT.csv OUT.svg BOUND_KB BOUND_TEXT NAME=PORT...
        max RSS per server against the bound (the first server's), a final
        PING and SET/GET on each ("still serving"), and an SVG plot of RSS
        over time. Exits 1 if a check fails.

Standard library only.
"""
import collections
import socket
import sys
import time

TIMEOUT = 10.0


# --- RESP -------------------------------------------------------------------

def cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class ServerError(Exception):
    pass


class ClosedByServer(Exception):
    pass


class Reader:
    def __init__(self, sock):
        self.f = sock.makefile("rb")

    def line(self):
        line = self.f.readline()
        if not line:
            raise ClosedByServer()
        return line[:-2]

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise ServerError(rest.split(b" ", 1)[0].decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            if len(data) < n + 2:
                raise ClosedByServer()
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ServerError("PROTOCOL")


def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(TIMEOUT)
    s.connect(("127.0.0.1", port))
    return s


def call(port, *args):
    with connect(port) as s:
        s.sendall(cmd(*args))
        return Reader(s).reply()


# --- hostile steps --------------------------------------------------------
# Each step returns an outcome string or raises; run_step() classifies.

def randmember_negative(port):
    """SRANDMEMBER/HRANDFIELD/ZRANDMEMBER key -10^12 on a small key."""
    call(port, "DEL", "hostile:set", "hostile:hash", "hostile:zset")
    call(port, "SADD", "hostile:set", "a", "b", "c")
    call(port, "HSET", "hostile:hash", "a", "1", "b", "2")
    call(port, "ZADD", "hostile:zset", "1", "a", "2", "b")
    outcomes = []
    for c, key in (("SRANDMEMBER", "hostile:set"), ("HRANDFIELD", "hostile:hash"),
                   ("ZRANDMEMBER", "hostile:zset")):
        outcomes.append(classify(lambda: call(port, c, key, "-1000000000000")))
    return "/".join(outcomes)


def pubsub_stuck_subscriber(port):
    """A subscriber that never reads; a publisher sends 64 x 1 MB."""
    sub = connect(port, rcvbuf=4096)
    try:
        sub.sendall(cmd("SUBSCRIBE", "hostile:chan"))
        Reader(sub).reply()
        msg = b"m" * (1 << 20)
        with connect(port) as pub:
            r = Reader(pub)
            for _ in range(64):
                pub.sendall(cmd("PUBLISH", "hostile:chan", msg))
                r.reply()
        return "ok"
    finally:
        sub.close()


def multi_unread_then_drop(port):
    """MULTI, 100k 200-byte SETs written without reading a reply, then the
    connection is shut down."""
    s = connect(port)
    try:
        value = b"v" * 200
        batch = b"".join(cmd("SET", "hostile:multi:%d" % i, value) for i in range(1000))
        s.sendall(cmd("MULTI"))
        for _ in range(100):
            s.sendall(batch)
        return "ok"
    finally:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def setrange_huge(port):
    call(port, "SETRANGE", "hostile:setrange", "500000000", "x")
    call(port, "DEL", "hostile:setrange")
    return "ok"


def idle_connections(port, n=2000, hold=5.0):
    """n connections opened, held idle for `hold` seconds, then closed."""
    conns = []
    try:
        for _ in range(n):
            conns.append(connect(port))
        time.sleep(hold)
        # still open? a PING on the last one
        conns[-1].sendall(cmd("PING"))
        Reader(conns[-1]).reply()
        return "ok"
    finally:
        for c in conns:
            c.close()


def slow_lrange_reader(port, elements=50000, size=200, read_for=5.0):
    """A ~10 MB LRANGE reply read 16 KB every 10 ms, then dropped."""
    with connect(port) as s:
        r = Reader(s)
        s.sendall(cmd("DEL", "hostile:list"))
        r.reply()
        item = b"l" * size
        for _ in range(elements // 1000):
            s.sendall(cmd("RPUSH", "hostile:list", *([item] * 1000)))
        for _ in range(elements // 1000):
            r.reply()
    s = connect(port, rcvbuf=16384)
    try:
        s.sendall(cmd("LRANGE", "hostile:list", "0", "-1"))
        end = time.time() + read_for
        got = 0
        while time.time() < end:
            data = s.recv(16384)
            if not data:
                break
            got += len(data)
            time.sleep(0.01)
        return "ok"
    finally:
        s.close()


def slow_big_argument(port, total=20 << 20, piece=1 << 20, sent=15 << 20, pause=0.2):
    """SET with a 20 MB value sent 1 MB every 200 ms, dropped at 15 MB."""
    s = connect(port)
    try:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$11\r\nhostile:big\r\n$%d\r\n" % total)
        chunk = b"b" * piece
        for _ in range(sent // piece):
            s.sendall(chunk)
            time.sleep(pause)
        return "ok"
    finally:
        s.close()


def classify(fn):
    try:
        return fn()
    except ServerError as e:
        return "err_" + str(e)
    except ClosedByServer:
        return "closed_by_server"
    except (socket.timeout, TimeoutError):
        return "timeout"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except Exception as e:  # counted, never fatal
        return "exception_" + type(e).__name__


def hostile(name, port, seconds, out_path, skip_freezers):
    steps = []
    if not skip_freezers:
        steps.append(("randmember_negative_count", randmember_negative))
    steps += [
        ("pubsub_unread_64x1MB", pubsub_stuck_subscriber),
        ("multi_100k_unread_drop", multi_unread_then_drop),
    ]
    if not skip_freezers:
        steps.append(("setrange_500MB", setrange_huge))
    steps += [
        ("idle_2000_connections", idle_connections),
        ("slow_lrange_reader", slow_lrange_reader),
        ("slow_20MB_argument_drop", slow_big_argument),
    ]
    counts = collections.defaultdict(collections.Counter)
    start = time.time()
    end = start + seconds
    cycles = 0
    log = open(out_path.rsplit(".", 1)[0] + ".csv", "w")
    log.write("t_start,t_end,step,outcome\n")
    while time.time() < end:
        for step, fn in steps:
            if time.time() >= end:
                break
            t0 = time.time() - start
            outcome = classify(lambda: fn(port))
            counts[step][outcome] += 1
            log.write(f"{t0:.1f},{time.time() - start:.1f},{step},{outcome}\n")
            log.flush()
            time.sleep(1.0)
        else:
            cycles += 1
    log.close()
    with open(out_path, "w") as out:
        out.write(f"{name}: hostile cycles completed: {cycles}\n")
        if skip_freezers:
            out.write(f"{name}: skipped (would freeze or allocate GBs): "
                      "randmember_negative_count, setrange_500MB\n")
        for step, _ in steps:
            c = counts.get(step, {})
            out.write(f"{name}: {step}: " + (", ".join(
                f"{k}={v}" for k, v in sorted(c.items())) or "not run") + "\n")
    print(open(out_path).read(), end="")


# --- sampler ----------------------------------------------------------------

def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def info_memory(port):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        try:
            s.sendall(cmd("INFO", "memory"))
            text = Reader(s).reply().decode()
        finally:
            s.close()
    except Exception:
        return {}
    fields = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k] = v.strip()
    return fields


def parse_servers(args, with_pid):
    servers = []
    for a in args:
        name, rest = a.split("=", 1)
        if with_pid:
            port, pid = rest.split(":")
            servers.append((name, int(port), int(pid)))
        else:
            servers.append((name, int(rest)))
    return servers


def sample(seconds, path, servers):
    start = time.time()
    with open(path, "w") as out:
        out.write("t,server,rss_kb,used_memory,dataset,clients,maxmemory\n")
        tick = 0
        while time.time() - start < seconds:
            t = time.time() - start
            for name, port, pid in servers:
                m = info_memory(port)
                out.write(f"{t:.1f},{name},{rss_kb(pid) or ''},{m.get('used_memory', '')},"
                          f"{m.get('used_memory_dataset', '')},"
                          f"{m.get('mem_clients_normal', '')},{m.get('maxmemory', '')}\n")
            out.flush()
            tick += 1
            time.sleep(max(0.0, start + tick - time.time()))


# --- finish -----------------------------------------------------------------

def still_serving(port):
    try:
        if call(port, "PING") != b"PONG":
            return False
        token = b"soak-%d" % time.time_ns()
        if call(port, "SET", "soak:final", token) != b"OK":
            return False
        return call(port, "GET", "soak:final") == token
    except Exception as e:
        print(f"  final check error: {e!r}")
        return False


def svg_plot(rows, names, bound_mb, maxmemory_mb, path):
    w, h, ml, mr, mt, mb = 900, 420, 70, 160, 30, 50
    pw, ph = w - ml - mr, h - mt - mb
    tmax = max((t for t, _, _ in rows), default=1) or 1
    ymax = max([r / 1024 for _, _, r in rows] + [bound_mb or 0, maxmemory_mb or 0, 1]) * 1.1
    x = lambda t: ml + pw * t / tmax
    y = lambda v: mt + ph * (1 - v / ymax)
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{ml}" y="18" font-size="14">RSS over time (bench/soak.sh)</text>']
    for i in range(6):
        v = ymax * i / 5
        o.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{ml - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
        t = tmax * i / 5
        o.append(f'<text x="{x(t):.1f}" y="{mt + ph + 18}" text-anchor="middle">{t:.0f}</text>')
    o.append(f'<line x1="{ml}" x2="{ml}" y1="{mt}" y2="{mt + ph}" stroke="black"/>')
    o.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}" stroke="black"/>')
    o.append(f'<text x="{ml + pw / 2}" y="{h - 10}" text-anchor="middle">time (s)</text>')
    o.append(f'<text x="16" y="{mt + ph / 2}" text-anchor="middle" '
             f'transform="rotate(-90 16 {mt + ph / 2})">RSS (MB)</text>')
    legend = []
    for i, name in enumerate(names):
        pts = " ".join(f"{x(t):.1f},{y(r / 1024):.1f}" for t, n, r in rows if n == name)
        c = colors[i % len(colors)]
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{pts}"/>')
        legend.append((c, f"{name} RSS", ""))
    for v, c, label in ((bound_mb, "#d62728", f"{names[0]} RSS bound"),
                        (maxmemory_mb, "#888", "maxmemory")):
        if v:
            o.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'stroke="{c}" stroke-dasharray="6,4"/>')
            legend.append((c, f"{label} {v:.0f} MB", "6,4"))
    for i, (c, label, dash) in enumerate(legend):
        ly = mt + 10 + 20 * i
        o.append(f'<line x1="{ml + pw + 10}" x2="{ml + pw + 34}" y1="{ly}" y2="{ly}" stroke="{c}" '
                 f'stroke-width="2" stroke-dasharray="{dash or "none"}"/>')
        o.append(f'<text x="{ml + pw + 40}" y="{ly + 4}">{label}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def finish(csv_path, svg_path, bound_kb, bound_text, servers):
    rows, maxmem = [], {}
    peak = collections.defaultdict(lambda: (0, 0.0))
    peak_used = collections.Counter()
    with open(csv_path) as f:
        next(f)
        for line in f:
            t, name, rss, used, _dataset, _clients, mm = line.rstrip("\n").split(",")
            if rss:
                rows.append((float(t), name, int(rss)))
                if int(rss) > peak[name][0]:
                    peak[name] = (int(rss), float(t))
            if used:
                peak_used[name] = max(peak_used[name], int(used))
            if mm:
                maxmem[name] = int(mm)
    ok = True
    names = [n for n, _ in servers]
    for i, (name, port) in enumerate(servers):
        p, at = peak[name]
        line = (f"{name}: max RSS {p} KB ({p / 1024:.1f} MB) at t={at:.0f} s, "
                f"max used_memory {peak_used[name] / 1048576:.1f} MB")
        if i == 0:
            within = p <= bound_kb
            ok &= within
            line += (f"; bound {bound_text} = {bound_kb} KB ({bound_kb / 1024:.0f} MB): "
                     + ("within" if within else "EXCEEDED"))
        print(line)
    for name, port in servers:
        serving = still_serving(port)
        ok &= serving
        print(f"{name}: still serving at the end (PING, SET/GET): {'yes' if serving else 'NO'}")
    mm = maxmem.get(names[0])
    svg_plot(rows, names, bound_kb / 1024, mm / 1048576 if mm else None, svg_path)
    print(f"RSS plot: {svg_path}")
    return ok


def main():
    mode = sys.argv[1]
    if mode == "hostile":
        name, port, seconds, out = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
        hostile(name, port, seconds, out, "--skip-freezers" in sys.argv[6:])
    elif mode == "sample":
        sample(float(sys.argv[2]), sys.argv[3], parse_servers(sys.argv[4:], True))
    elif mode == "finish":
        ok = finish(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5],
                    parse_servers(sys.argv[6:], False))
        sys.exit(0 if ok else 1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
