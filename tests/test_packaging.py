"""What operators run keel with: the command line's --version and --help, the open-file
limit raised (or maxclients lowered to fit) at start-up, the log file reopened on SIGHUP,
the systemd unit (checked by systemd-analyze) and the container image's Dockerfile
(checked by what it must be: docker itself is not available here)."""

import os
import re
import shutil
import signal
import subprocess

import pytest

from support import PONG, REPO_ROOT, free_port, wait_for


def test_version_and_help(server_kind, keel_bin):
    exe = str(keel_bin) if server_kind == "keel" else "redis-server"
    for flag in ("--version", "-v"):
        out = subprocess.run([exe, flag], capture_output=True, text=True, timeout=10)
        assert out.returncode == 0 and re.search(r"\bv=\d+\.\d+\.\d+", out.stdout), out.stdout
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10)
    # redis-server prints its usage to stderr and exits 1; keel to stdout, exiting 0.
    assert "Usage:" in out.stdout + out.stderr
    assert out.returncode == (0 if server_kind == "keel" else 1)


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
def test_maxclients_is_lowered_to_the_open_file_limit(server_kind, keel_bin, tmp_path):
    exe = str(keel_bin) if server_kind == "keel" else "redis-server"
    port = free_port()
    log = tmp_path / "server.log"
    args = ["prlimit", "--nofile=100:100", exe, "--port", str(port), "--save", "", "--logfile", str(log)]
    proc = subprocess.Popen(args, cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from support import RespConn

        def answers():
            try:
                with RespConn(port, timeout=2) as c:
                    return c.call("CONFIG", "GET", "maxclients")
            except OSError:
                return None

        assert wait_for(answers, timeout=20, what="the server") == [b"maxclients", b"68"]
        text = log.read_text()
        assert "You requested maxclients of 10000 requiring at least 10032 max file descriptors." in text
        assert "maxclients has been reduced to 68 to compensate for low ulimit" in text
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_sighup_reopens_the_log_file(server_kind, start_server, tmp_path):
    if server_kind == "redis":
        pytest.skip("keel_differs: Redis opens its log file for every line; keel keeps it open and reopens it on SIGHUP")
    log = tmp_path / "keel.log"
    srv = start_server({"logfile": str(log)})
    wait_for(lambda: log.exists() and "ready to accept" in log.read_text(), what="the start-up lines")
    rotated = tmp_path / "keel.log.1"
    os.rename(log, rotated)
    srv.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: log.exists() and "the log file was reopened" in log.read_text(),
             what="a new log file after SIGHUP")
    assert "the log file was reopened" not in rotated.read_text()
    with srv.conn() as c:
        assert c.call("PING") == PONG


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_the_systemd_unit_is_valid(keel_bin, tmp_path):
    unit = (REPO_ROOT / "packaging" / "keel.service").read_text()
    assert "Type=notify" in unit and "--supervised systemd" in unit
    assert "NoNewPrivileges=yes" in unit and "ProtectSystem=strict" in unit and "LimitNOFILE=" in unit
    # Verify it as installed: the binary where ExecStart says, here the one just built.
    local = tmp_path / "keel.service"
    local.write_text(unit.replace("/usr/bin/keel-server", str(keel_bin)))
    out = subprocess.run(["systemd-analyze", "verify", str(local)], capture_output=True, text=True, timeout=60)
    problems = [line for line in (out.stdout + out.stderr).splitlines()
                if "keel.service" in line and "Failed to" not in line.split("keel.service")[0]]
    # Only complaints about this unit count (the container has no systemd as PID 1).
    assert not [p for p in problems if re.search(r"(unknown|invalid|Unknown key|Failed to parse)", p, re.I)], problems


def test_the_dockerfile_builds_as_the_readme_says():
    text = (REPO_ROOT / "Dockerfile").read_text()
    instructions = [line.split(None, 1) for line in text.splitlines() if line and not line.startswith("#")]
    stages = [args for op, args in instructions if op == "FROM"]
    assert len(stages) == 2 and stages[0].endswith("AS build"), "a build stage and a small final one"
    assert "slim" in stages[1]
    runs = [args for op, args in instructions if op == "RUN"]
    assert any("cargo build --release" in r and "--bin keel-server" in r for r in runs)
    # The README's command builds the same: the release profile, the keel-server binary.
    assert "cargo run --release --bin keel-server" in (REPO_ROOT / "README.md").read_text()
    final = text.split("\nFROM ")[-1]
    users = re.findall(r"^USER (\S+)", final, re.M)
    assert users and users[-1] not in ("root", "0"), "the final image runs as a user of its own"
    assert "COPY --from=build /src/target/release/keel-server" in final
    for op, args in instructions:
        if op == "COPY" and not args.startswith("--from"):
            source = args.split()[0]
            assert source == "." or (REPO_ROOT / source).exists(), source
    ignored = (REPO_ROOT / ".dockerignore").read_text().split()
    assert "target" in ignored and ".venv" in ignored
