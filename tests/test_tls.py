"""TLS on `tls-port`, run against keel and redis-server alike: certificates made
here with the openssl CLI (a CA, a server certificate, a client certificate, and
a client certificate from another CA), trusted and refused clients, plain text
on the TLS port, `tls-auth-clients`, certificates reloaded with CONFIG SET,
redis-py and redis-cli, and a hostile peer that never finishes its handshake."""

import shutil
import socket
import ssl
import subprocess
import time

import pytest
import redis

from support import OK, PONG, Err, free_port, wait_for


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_cert(d, name, ca, subject, extensions):
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", subject, cwd=d)
    (d / f"{name}.ext").write_text(extensions + "\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", "30", "-extfile", f"{name}.ext", cwd=d)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                "-days", "30", "-subj", f"/CN=keel test {ca}", cwd=d)
    server_ext = "subjectAltName=DNS:localhost,IP:127.0.0.1"
    make_cert(d, "server", "ca", "/CN=localhost", server_ext)
    make_cert(d, "server2", "ca", "/CN=localhost", server_ext)
    make_cert(d, "client", "ca", "/CN=client", "extendedKeyUsage=clientAuth")
    make_cert(d, "untrusted", "other-ca", "/CN=intruder", "extendedKeyUsage=clientAuth")
    return d


@pytest.fixture
def tls_server(start_server, certs):
    """Starts a server with a TLS port; returns (server, tls port)."""

    def start(**directives):
        port = free_port()
        settings = {"tls-port": port, "tls-cert-file": certs / "server.crt",
                    "tls-key-file": certs / "server.key", "tls-ca-cert-file": certs / "ca.crt",
                    "loglevel": "verbose", **directives}
        return start_server(settings), port

    return start


def tls_context(certs, client="client"):
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    if client:
        context.load_cert_chain(str(certs / f"{client}.crt"), str(certs / f"{client}.key"))
    return context


def tls_call(port, context, *command, timeout=5):
    """Sends one command over TLS and returns the raw reply bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as conn:
            args = [a if isinstance(a, bytes) else str(a).encode() for a in command]
            conn.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
            return conn.recv(65536)


def refused(port, context) -> bool:
    """True if the server refuses this client: the handshake fails, or the
    connection ends before a reply."""
    try:
        return tls_call(port, context, "PING") == b""
    except (ssl.SSLError, ConnectionError, OSError):
        return True


def test_a_trusted_client_is_served(tls_server, certs):
    srv, port = tls_server()
    assert tls_call(port, tls_context(certs), "SET", "k", "v") == b"+OK\r\n"
    assert tls_call(port, tls_context(certs), "GET", "k") == b"$1\r\nv\r\n"
    # The plain port keeps serving alongside.
    with srv.conn() as c:
        assert c.call("GET", "k") == b"v"


def test_clients_without_a_trusted_certificate_are_refused(tls_server, certs):
    srv, port = tls_server()
    assert refused(port, tls_context(certs, client=None))
    assert refused(port, tls_context(certs, client="untrusted"))
    with srv.conn() as c:
        assert c.call("PING") == PONG


def test_plain_text_on_the_tls_port_gets_no_reply(tls_server):
    srv, port = tls_server()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as plain:
        plain.sendall(b"*1\r\n$4\r\nPING\r\n")
        try:
            reply = plain.recv(1024)
        except ConnectionError:
            reply = b""
        assert b"PONG" not in reply
    with srv.conn() as c:
        assert c.call("PING") == PONG


@pytest.mark.parametrize("mode", ["no", "optional"])
def test_tls_auth_clients_no_and_optional(tls_server, certs, mode):
    _, port = tls_server(**{"tls-auth-clients": mode})
    assert tls_call(port, tls_context(certs, client=None), "PING") == b"+PONG\r\n"
    assert tls_call(port, tls_context(certs), "PING") == b"+PONG\r\n"
    if mode == "optional":
        assert refused(port, tls_context(certs, client="untrusted"))


def serial_served(port, certs) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with tls_context(certs).wrap_socket(raw, server_hostname="localhost") as conn:
            der = conn.getpeercert(binary_form=True)
    out = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-serial"], input=der,
                         capture_output=True, check=True).stdout.decode()
    return int(out.strip().split("=")[1], 16)


def file_serial(path) -> int:
    out = subprocess.run(["openssl", "x509", "-in", str(path), "-noout", "-serial"],
                         capture_output=True, check=True).stdout.decode()
    return int(out.strip().split("=")[1], 16)


def test_certificates_reload_at_run_time(tls_server, certs):
    srv, port = tls_server()
    assert serial_served(port, certs) == file_serial(certs / "server.crt")
    with srv.conn() as c:
        assert c.call("CONFIG", "SET", "tls-cert-file", str(certs / "server2.crt"),
                      "tls-key-file", str(certs / "server2.key")) == OK
        assert serial_served(port, certs) == file_serial(certs / "server2.crt")
        # A file that does not exist changes nothing.
        reply = c.call("CONFIG", "SET", "tls-cert-file", "/nonexistent/cert.pem")
        assert isinstance(reply, Err) and "tls-cert-file" in reply
        assert c.call("CONFIG", "GET", "tls-cert-file")[1] == str(certs / "server2.crt").encode()
    assert serial_served(port, certs) == file_serial(certs / "server2.crt")


def test_redis_py_and_redis_cli_over_tls(tls_server, certs):
    _, port = tls_server()
    client = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=str(certs / "ca.crt"),
                         ssl_certfile=str(certs / "client.crt"), ssl_keyfile=str(certs / "client.key"),
                         socket_timeout=10)
    assert client.set("k", "v") and client.get("k") == b"v"
    assert client.pipeline().set("a", 1).incr("a").execute() == [True, 2]
    client.close()
    out = subprocess.run(["redis-cli", "-p", str(port), "--tls", "--cacert", str(certs / "ca.crt"),
                          "--cert", str(certs / "client.crt"), "--key", str(certs / "client.key"),
                          "GET", "k"], capture_output=True, text=True, timeout=10)
    assert out.stdout.strip() == "v", out.stderr


def test_a_large_reply_and_a_pipeline_cross_many_records(tls_server, certs):
    _, port = tls_server()
    client = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=str(certs / "ca.crt"),
                         ssl_certfile=str(certs / "client.crt"), ssl_keyfile=str(certs / "client.key"),
                         socket_timeout=10)
    big = b"x" * (3 << 20)
    assert client.set("big", big) and client.get("big") == big
    pipe = client.pipeline(transaction=False)
    for i in range(2000):
        pipe.set(f"k{i}", i)
    assert all(pipe.execute())
    assert client.dbsize() == 2001
    client.close()


def test_a_client_that_never_finishes_its_handshake_holds_nothing_up(tls_server, certs, server_kind):
    srv, port = tls_server()
    stalled = []
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # the start of a ClientHello
        stalled.append(s)
    garbage = socket.create_connection(("127.0.0.1", port), timeout=5)
    garbage.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 10)
    started = time.monotonic()
    assert tls_call(port, tls_context(certs), "PING") == b"+PONG\r\n"
    assert time.monotonic() - started < 5
    if server_kind == "keel":
        wait_for(lambda: "TLS handshake with client" in srv.log_tail(100_000), timeout=15,
                 what="a log line about the failed handshake")
        # The stalled handshakes are let go (keel's handshake timeout, 10 s).
        for s in stalled:
            s.settimeout(30)
            assert s.recv(1) == b""
    for s in stalled + [garbage]:
        s.close()


def test_a_missing_certificate_file_stops_start_up(run_to_exit, certs):
    code, output = run_to_exit("--port", str(free_port()), "--tls-port", str(free_port()),
                               "--tls-cert-file", "/nonexistent/cert.pem",
                               "--tls-key-file", str(certs / "server.key"),
                               "--tls-ca-cert-file", str(certs / "ca.crt"))
    assert code != 0
    assert "/nonexistent/cert.pem" in output or "Failed to configure TLS" in output


def test_debian_redis_conf_with_requirepass_users_and_tls_starts(server_kind, keel_bin, certs, tmp_path):
    from test_config_file import debian_redis_conf

    conf = tmp_path / "redis.conf"
    port, tls_port = free_port(), free_port()
    conf.write_text(debian_redis_conf(tmp_path).read_text() + "\n".join([
        "",
        "requirepass defaultsecret",
        "user alice on >alicepw ~app:* +@read +@write",
        f"tls-port {tls_port}",
        f"tls-cert-file {certs / 'server.crt'}",
        f"tls-key-file {certs / 'server.key'}",
        f"tls-ca-cert-file {certs / 'ca.crt'}",
        "tls-auth-clients optional",
        "",
    ]))
    exe = str(keel_bin) if server_kind == "keel" else shutil.which("redis-server")
    argv = [exe, str(conf), "--port", str(port), "--daemonize", "no", "--pidfile", str(tmp_path / "pid"),
            "--logfile", str(tmp_path / "server.log"), "--dir", str(tmp_path)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        def answers():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                    s.sendall(b"*1\r\n$4\r\nPING\r\n")
                    return s.recv(100).startswith(b"-NOAUTH")
            except OSError:
                return False

        wait_for(answers, timeout=20, what="the server, asking for a password")
        reply = tls_call(tls_port, tls_context(certs, client=None), "AUTH", "alice", "alicepw")
        assert reply == b"+OK\r\n"
        assert tls_call(tls_port, tls_context(certs), "GET", "app:1").startswith(b"-NOAUTH")
        client = redis.Redis(host="127.0.0.1", port=port, password="defaultsecret", socket_timeout=10)
        assert client.ping()
        assert client.acl_users() == ["alice", "default"]
        client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_replication_over_tls(tls_server, start_server, certs):
    primary, tls_port = tls_server(**{"repl-diskless-sync-delay": 0})
    with primary.conn() as c:
        assert c.call("SET", "before", "1") == OK
    replica = start_server({"tls-replication": "yes", "replicaof": f"127.0.0.1 {tls_port}",
                            "tls-cert-file": certs / "client.crt", "tls-key-file": certs / "client.key",
                            "tls-ca-cert-file": certs / "ca.crt"})
    with replica.conn() as r, primary.conn() as c:
        wait_for(lambda: r.call("GET", "before") == b"1", what="the full sync over TLS")
        for i in range(200):
            c.call("SET", f"k{i}", "v" * i)
        wait_for(lambda: r.call("DBSIZE") == 201, what="the stream over TLS")
        assert r.call("GET", "k199") == b"v" * 199
        role = r.call("ROLE")
        assert role[0] == b"slave" and role[3] == b"connected"


def test_a_key_protected_by_tls_key_file_pass(tls_server, certs, run_to_exit):
    encrypted = certs / "server-encrypted.key"
    if not encrypted.exists():
        openssl("pkey", "-in", "server.key", "-aes-256-cbc", "-passout", "pass:s3cret",
                "-out", encrypted.name, cwd=certs)
    _, port = tls_server(**{"tls-key-file": encrypted, "tls-key-file-pass": "s3cret"})
    assert tls_call(port, tls_context(certs), "PING") == b"+PONG\r\n"
    code, output = run_to_exit("--port", str(free_port()), "--tls-port", str(free_port()),
                               "--tls-cert-file", str(certs / "server.crt"), "--tls-key-file", str(encrypted),
                               "--tls-key-file-pass", "wrong", "--tls-ca-cert-file", str(certs / "ca.crt"))
    assert code != 0


def test_port_0_with_a_tls_port_serves_tls_only(server_kind, keel_bin, certs, tmp_path):
    tls_port = free_port()
    exe = str(keel_bin) if server_kind == "keel" else shutil.which("redis-server")
    argv = [exe, "--port", "0", "--tls-port", str(tls_port), "--bind", "127.0.0.1",
            "--tls-cert-file", str(certs / "server.crt"), "--tls-key-file", str(certs / "server.key"),
            "--tls-ca-cert-file", str(certs / "ca.crt"), "--save", "", "--dir", str(tmp_path)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        def answers():
            try:
                return tls_call(tls_port, tls_context(certs), "PING", timeout=2) == b"+PONG\r\n"
            except OSError:
                return False

        wait_for(answers, timeout=20, what="the TLS port")
        with socket.create_connection(("127.0.0.1", tls_port), timeout=5) as raw:
            with tls_context(certs).wrap_socket(raw, server_hostname="localhost") as conn:
                conn.sendall(b"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nport\r\n")
                assert conn.recv(1024) == b"*2\r\n$4\r\nport\r\n$1\r\n0\r\n"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_stalled_handshakes_count_towards_maxclients(tls_server, certs):
    srv, port = tls_server(**{"maxclients": 10})
    stalled = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(10)]
    for s in stalled:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")

    def refused_plain():
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as plain:
            plain.sendall(b"*1\r\n$4\r\nPING\r\n")
            return plain.recv(100) == b"-ERR max number of clients reached\r\n"

    wait_for(refused_plain, what="a client refused while ten handshakes fill maxclients")
    for s in stalled:
        s.close()

    def served():
        try:
            with srv.conn() as c:
                return c.call("PING") == PONG
        except (OSError, ConnectionError):
            return False

    wait_for(served, what="clients served once the handshakes are gone")
    assert tls_call(port, tls_context(certs), "PING") == b"+PONG\r\n"
