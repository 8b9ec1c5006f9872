"""A fresh connection's PING, timed in three parts, for the bench/ probes.

On a small machine under load, a probe at normal priority waits for a core
itself, before it sends and after the reply has arrived, and a plain timer
counts that wait as the server's. The kernel stamps the reply with the time
it reached the probe's socket (SO_TIMESTAMPNS), which splits the two: from
just before the PING is sent to that stamp is the server's part (waiting in
the accept queue, being accepted, reading, executing, writing), plus at
most the probe's own time inside send(), so never less than the server's;
the rest is the probe's. The probe's time spent runnable but waiting for
a core (the scheduler's run delay, /proc/thread-self/schedstat) is
measured too, to show where that rest went.
"""

import socket
import struct
import time
from dataclasses import dataclass

# Linux's SO_TIMESTAMPNS (struct timespec stamps); Python does not name it.
SO_TIMESTAMPNS = 35

# Linux stamps arriving packets only while some socket asks for stamps, and
# turns stamping on in a deferred work item once the first one asks: a
# probe's own socket, opened just before its PING, would often find it
# still off. A socket asking for the probe's whole life keeps it on.
_KEEPS_STAMPING_ON = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
_KEEPS_STAMPING_ON.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
time.sleep(0.05)


@dataclass
class Ping:
    """One probe's times, in milliseconds."""

    connect_ms: float  # connect() returning: the kernel's handshake
    server_ms: float  # PING sent -> PONG at the probe's socket
    ping_ms: float  # connect() called -> PONG read by the probe
    probe_wait_ms: float  # of ping_ms, the probe waiting for a core


def run_delay_ns():
    """How long this thread has waited runnable for a core, in all."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1])


def ping_fresh_connection(port):
    """Opens a connection to loopback `port`, sends PING, times its PONG."""
    waited_before = run_delay_ns()
    started = time.time_ns()
    s = socket.create_connection(("127.0.0.1", port))
    connected = time.time_ns()
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sending = time.time_ns()
    s.sendall(b"PING\r\n")
    reply, ancillary, _, _ = s.recvmsg(16, socket.CMSG_SPACE(16))
    read = time.time_ns()
    waited = run_delay_ns() - waited_before
    s.close()
    assert reply == b"+PONG\r\n", reply
    arrived = next(
        sec * 10**9 + nsec
        for level, kind, data in ancillary
        if (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS)
        for sec, nsec in [struct.unpack("qq", data)]
    )
    return Ping(
        connect_ms=(connected - started) / 1e6,
        server_ms=(arrived - sending) / 1e6,
        ping_ms=(read - started) / 1e6,
        probe_wait_ms=waited / 1e6,
    )
