#!/usr/bin/env python3
"""What a 1,000-node topology costs a keel node: the size of the map, the time
to take a push (CLUSTER SETTOPOLOGY, nodes.conf written and fsynced), the size
of the replies clients read at start-up, and the memory the view takes.

usage: .venv/bin/python bench/cluster-scale.py KEEL_SERVER_BINARY [PRIMARIES] [REPLICAS_EACH]

Starts one keel node in cluster mode on a free port, builds a topology of
PRIMARIES primaries (default 500) with REPLICAS_EACH replicas each (default 1)
that includes this node as the first primary, pushes it a few times at growing
epochs, and prints the figures. The other nodes need not exist: a node never
contacts its peers.
"""

import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support import OK, RespConn, free_port  # noqa: E402

SLOTS = 16384


def node_id():
    return "%040x" % random.getrandbits(160)


def topology_text(me, primaries, replicas_each):
    per = SLOTS / primaries
    lines, first = [], 0
    for i in range(primaries):
        last = SLOTS - 1 if i == primaries - 1 else round((i + 1) * per) - 1
        pid = me if i == 0 else node_id()
        port = 7000 + i
        lines.append(f"{pid} 10.0.{i // 250}.{i % 250}:{port}@{port + 10000} master - 0 0 {i + 1} connected {first}-{last}")
        for r in range(replicas_each):
            rport = 20000 + i * replicas_each + r
            lines.append(f"{node_id()} 10.1.{i // 250}.{i % 250}:{rport}@{rport + 10000} slave {pid} 0 0 {i + 1} connected")
        first = last + 1
    return "\n".join(lines) + "\n"


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    binary = os.path.abspath(sys.argv[1])
    primaries = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    replicas_each = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    workdir = tempfile.mkdtemp(prefix="keel-cluster-scale-")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--cluster-enabled", "yes", "--save", ""],
                            cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        c = RespConn(port)
        me = c.call("CLUSTER", "MYID").decode()
        rss_before = rss_kb(proc.pid)
        text = topology_text(me, primaries, replicas_each)
        pushes = []
        for epoch in range(1, 6):
            started = time.perf_counter()
            reply = c.call("CLUSTER", "SETTOPOLOGY", epoch, text)
            assert reply == OK, reply
            pushes.append((time.perf_counter() - started) * 1000)
        rss_after = rss_kb(proc.pid)
        c.close()
        sizes = {}
        for name in ("NODES", "SLOTS", "SHARDS"):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"*2\r\n$7\r\nCLUSTER\r\n$%d\r\n%s\r\n*1\r\n$4\r\nPING\r\n" % (len(name), name.encode()))
            data = b""
            while not data.endswith(b"+PONG\r\n"):
                data += s.recv(1 << 20)
            s.close()
            sizes[name] = len(data) - len(b"+PONG\r\n")
        conf = os.path.getsize(os.path.join(workdir, "nodes.conf"))
        nodes = primaries * (1 + replicas_each)
        print(f"nodes: {nodes} ({primaries} primaries x {replicas_each} replica(s))")
        print(f"topology text pushed: {len(text)} bytes; nodes.conf: {conf} bytes")
        print(f"push (parse, validate, fsync nodes.conf, swap): median {statistics.median(pushes):.1f} ms, "
              f"max {max(pushes):.1f} ms over {len(pushes)} pushes")
        print(f"RSS: {rss_before} kB before, {rss_after} kB after ({rss_after - rss_before} kB for the views)")
        for name, size in sizes.items():
            print(f"CLUSTER {name} reply: {size} bytes")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
