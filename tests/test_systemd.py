"""The daemon's systemd side, against the real thing: notify datagrams on real sockets, the unit
checked by systemd-analyze, installs into a temporary XDG_CONFIG_HOME with the real systemctl.

No user manager is reachable from the tests (XDG_RUNTIME_DIR points at an empty directory and
the session bus address is removed), so nothing here can start a service on a developer's machine.
"""

from __future__ import annotations

import array
import logging
import os
import re
import socket
import stat
import subprocess
import sys
import textwrap
import time
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant import locations
from assistant.daemon import systemd
from assistant.daemon.service import MANUAL, ServiceError, find_executable, install, render, uninstall, unit_path
from assistant.daemon.service_cli import service
from assistant.errors import InputError

from .requirements import need_binary

ROOT = Path(__file__).resolve().parents[1]
# Measured: 5.5 for this unit, 9.8 for the same unit without its sandboxing (systemd 252).
MAX_EXPOSURE = 6.0


@pytest.fixture(autouse=True)
def _no_user_manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    for var in ("DBUS_SESSION_BUS_ADDRESS", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def notify_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A datagram socket standing in for systemd's, with sender credentials on, as systemd has them."""
    path = tmp_path / "notify"
    assert len(str(path)) < 100, "AF_UNIX paths are limited to 108 bytes"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.settimeout(2)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    yield sock
    sock.close()


def receive(sock: socket.socket) -> tuple[bytes, int]:
    """One datagram and the pid the kernel says sent it (what NotifyAccess=main checks)."""
    ucred = 3 * array.array("i").itemsize  # struct ucred: pid, uid, gid
    data, ancdata, _flags, _addr = sock.recvmsg(4096, socket.CMSG_SPACE(ucred))
    pid = -1
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = array.array("i", payload[:ucred])[0]
    return data, pid


def test_notify_sends_one_datagram(notify_socket: socket.socket) -> None:
    assert systemd.notify("READY=1", "STATUS=loading models")
    data, pid = receive(notify_socket)
    assert data == b"READY=1\nSTATUS=loading models"
    assert pid == os.getpid()
    assert systemd.reloading()
    data, _ = receive(notify_socket)
    reload_fields = data.decode().split("\n")
    assert reload_fields[0] == "RELOADING=1"
    assert re.fullmatch(r"MONOTONIC_USEC=\d+", reload_fields[1])
    # CLOCK_MONOTONIC, in microseconds: close to what this process reads now.
    assert abs(int(reload_fields[1].split("=")[1]) - time.monotonic_ns() // 1000) < 5_000_000


def test_notify_abstract_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"assistant-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert systemd.stopping("flushing memory")
        assert sock.recv(4096) == b"STOPPING=1\nSTATUS=flushing memory"


def test_notify_outside_systemd_and_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert systemd.notify("READY=1") is False
    # A socket that is gone (the manager restarted, say): False, never an exception, logged once.
    monkeypatch.setattr(systemd, "_send_failed_logged", False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    with caplog.at_level(logging.WARNING, logger=systemd.__name__):
        assert systemd.notify("WATCHDOG=1") is False
        assert systemd.notify("WATCHDOG=1") is False
    assert len([r for r in caplog.records if "cannot notify systemd" in r.getMessage()]) == 1


def test_watchdog_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    assert systemd.watchdog_seconds() is None
    monkeypatch.setenv("WATCHDOG_USEC", "200000")
    assert systemd.watchdog_seconds() == 0.2
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert systemd.watchdog_seconds() == 0.2
    # Meant for another process (this one inherited the environment): not ours to feed.
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))
    assert systemd.watchdog_seconds() is None
    monkeypatch.delenv("WATCHDOG_PID")
    monkeypatch.setenv("WATCHDOG_USEC", "0")
    assert systemd.watchdog_seconds() is None
    assert not systemd.Watchdog(lambda: True).start().enabled


def test_watchdog_pings_while_healthy(notify_socket: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", "200000")
    healthy = True
    dog = systemd.Watchdog(lambda: healthy)
    assert dog.timeout == 0.2
    with dog:
        pings: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            notify_socket.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                pings.append(receive(notify_socket))
            except TimeoutError:
                break
        # Every 0.1 s: about ten in a second; at least two even on a loaded machine.
        assert len(pings) >= 2, pings
        assert all(data == b"WATCHDOG=1" for data, _ in pings)
        # From the watchdog's own thread, yet credited to this process, as NotifyAccess=main requires.
        assert {pid for _, pid in pings} == {os.getpid()}

        healthy = False
        time.sleep(0.3)  # a ping already on its way may still arrive
        notify_socket.setblocking(False)
        while True:
            try:
                notify_socket.recv(4096)
            except BlockingIOError:
                break
        notify_socket.settimeout(0.6)
        with pytest.raises(TimeoutError):
            notify_socket.recv(4096)


def _run_logging(env: dict[str, str], *, match_stream: bool) -> str:
    code = textwrap.dedent(
        """
        import logging
        from assistant.daemon.systemd import journal_logging
        journal_logging(logging.DEBUG)
        log = logging.getLogger("test")
        log.error("boom")
        log.warning("careful")
        log.info("hello")
        log.debug("details")
        try:
            1 / 0
        except ZeroDivisionError:
            log.exception("failed")
        """
    )
    read, write = os.pipe()
    try:
        if match_stream:
            st = os.fstat(write)
            env = {**env, "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
        proc = subprocess.run(
            [sys.executable, "-c", code], stderr=write, stdout=subprocess.DEVNULL, env=env, cwd=ROOT, timeout=120
        )
        os.close(write)
        write = -1
        with os.fdopen(read, encoding="utf-8") as f:
            read = -1
            out = f.read()
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)
    assert proc.returncode == 0, out
    return out


def test_journal_logging_priority_prefixes() -> None:
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    lines = _run_logging(env, match_stream=True).splitlines()
    assert lines[:4] == ["<3>test: boom", "<4>test: careful", "<6>test: hello", "<7>test: details"]
    # A traceback is several lines; each keeps the error priority so journalctl -p err shows it whole.
    assert lines[4] == "<3>test: failed"
    assert lines[-1] == "<3>ZeroDivisionError: division by zero"
    assert all(line.startswith("<3>") for line in lines[4:])


def test_journal_logging_elsewhere_is_plain() -> None:
    # JOURNAL_STREAM inherited, but stderr is not that stream: no prefixes.
    env = {**os.environ, "JOURNAL_STREAM": "0:0"}
    lines = _run_logging(env, match_stream=False).splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ERROR test: boom", lines[0]), lines[0]
    assert not any(line.startswith("<") for line in lines)


def _analyze(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [need_binary("systemd-analyze", "systemd"), *args], capture_output=True, text=True, timeout=120
    )


def _rendered(tmp_path: Path, executable: Path | None = None) -> Path:
    unit = tmp_path / "unit" / "assistant.service"
    unit.parent.mkdir(exist_ok=True)
    unit.write_text(render(executable or find_executable()))
    return unit


def test_unit_verifies(tmp_path: Path) -> None:
    need_binary("systemd-analyze", "systemd")
    unit = _rendered(tmp_path)
    out = _analyze("verify", "--user", str(unit))
    assert out.returncode == 0, out.stderr
    # systemd 252 only warns about unknown keys and sections (exit 0): any word about our file fails.
    assert unit.name not in out.stderr + out.stdout, out.stderr
    # ...and that check does see such warnings.
    bad = tmp_path / "bad" / "assistant.service"
    bad.parent.mkdir()
    bad.write_text(unit.read_text().replace("[Service]\n", "[Service]\nWatchdogSecs=30\n"))
    out = _analyze("verify", "--user", str(bad))
    assert "Unknown key 'WatchdogSecs'" in out.stderr


def test_unit_verifies_with_a_path_that_needs_quoting(tmp_path: Path) -> None:
    need_binary("systemd-analyze", "systemd")
    exe = tmp_path / "my venv 100%" / "bin" / "assistant"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    unit = _rendered(tmp_path, exe)
    assert f'ExecStart="{tmp_path}/my venv 100%%/bin/assistant" daemon\n' in unit.read_text()
    out = _analyze("verify", "--user", str(unit))
    assert out.returncode == 0 and unit.name not in out.stderr, out.stderr
    # The unquoted form would be a different, missing program: verify fails, so the check means something.
    unit.write_text(unit.read_text().replace(f'"{tmp_path}/my venv 100%%/bin/assistant"', str(exe)))
    assert _analyze("verify", "--user", str(unit)).returncode != 0


def test_unit_security_exposure(tmp_path: Path) -> None:
    need_binary("systemd-analyze", "systemd")
    unit = _rendered(tmp_path)
    out = _analyze("security", "--user", "--offline=yes", str(unit))
    assert out.returncode == 0, out.stderr
    match = re.search(r"Overall exposure level for assistant\.service: (\d+\.\d+)", out.stdout)
    assert match, out.stdout
    score = float(match.group(1))
    print(f"systemd-analyze security exposure: {score}")
    assert score < MAX_EXPOSURE, out.stdout


def test_unit_ships_in_the_wheel() -> None:
    """The wheel's force-include puts the template where locations.bundled() looks for it."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    force = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force["systemd/assistant.service"] == "assistant/_bundled/assistant.service"
    assert locations.bundled("systemd/assistant.service") == ROOT / "systemd" / "assistant.service"


def test_install_writes_the_unit(tmp_path: Path) -> None:
    report = install(enable=False)
    path = tmp_path / "xdg-config" / "systemd" / "user" / "assistant.service"
    assert report.unit_path == path == unit_path() and not report.enabled
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    text = path.read_text()
    assert f"\nExecStart={find_executable()} daemon\n" in text
    assert "@ASSISTANT@" not in text
    assert find_executable() == Path(sys.executable).parent / "assistant"
    assert [p.name for p in path.parent.iterdir()] == ["assistant.service"]  # no temporary file left
    with pytest.raises(InputError, match="not an executable"):
        install(tmp_path / "no-such-assistant", enable=False)


def test_install_without_a_user_manager(tmp_path: Path) -> None:
    need_binary("systemctl", "systemd")
    # This container (like CI) has systemctl but no user manager: `systemctl --user daemon-reload`
    # says "Failed to connect to bus". The unit stays written and the error says what to run.
    with pytest.raises(ServiceError) as err:
        install()
    message = str(err.value)
    assert str(unit_path()) in message and "Failed to connect to bus" in message
    assert MANUAL in message and MANUAL == (
        "systemctl --user daemon-reload && systemctl --user enable --now assistant.service"
    )
    assert unit_path().exists()

    with pytest.raises(ServiceError, match=r"removed .* no systemd user manager is reachable") as err:
        uninstall()
    assert not unit_path().exists()
    assert "systemctl --user stop assistant.service" in str(err.value)


def test_install_without_systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ServiceError, match="systemctl is not installed") as err:
        install()
    assert f"wrote {unit_path()}" in str(err.value) and MANUAL in str(err.value)
    assert unit_path().exists()
    assert uninstall() == unit_path()
    assert not unit_path().exists()
    uninstall()  # nothing left to remove is fine


def test_service_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    result = runner.invoke(service, ["install", "--no-enable"])
    assert result.exit_code == 0, result.output
    assert f"wrote {unit_path()}" in result.output and MANUAL in result.output
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = runner.invoke(service, ["status"])
    assert isinstance(result.exception, ServiceError) and "systemctl is not installed" in str(result.exception)
    result = runner.invoke(service, ["uninstall"])
    assert result.exit_code == 0 and not unit_path().exists()


def test_service_cli_status_with_systemctl() -> None:
    # Without systemctl (a developer's machine) this records a skip with its reason; CI must have it.
    need_binary("systemctl", "systemd")
    runner = CliRunner()
    assert runner.invoke(service, ["install", "--no-enable"]).exit_code == 0
    result = runner.invoke(service, ["status"])
    assert result.exit_code == 0, result.output
    assert f"unit: {unit_path()} (installed)" in result.output
    assert "no systemd user manager is reachable" in result.output
