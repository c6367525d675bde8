"""Install the daemon as a systemd user service: render the unit, hand it to the user's manager.

The unit template is `systemd/assistant.service` in a checkout and `assistant/_bundled/` in a
wheel; the only thing rendered into it is the absolute path of the `assistant` command, since
the user manager's PATH does not include a virtual environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import locations
from ..atomic import write_text_atomically
from ..errors import AssistantError, InputError

UNIT = "assistant.service"
TEMPLATE = "systemd/assistant.service"
PLACEHOLDER = "@ASSISTANT@"
# `systemctl start` of a Type=notify unit waits for READY=1, i.e. for the models to load
# (minutes); --no-block queues the start and returns, and the journal shows its progress.
ENABLE = ("enable", "--now", "--no-block", UNIT)
MANUAL = f"systemctl --user daemon-reload && systemctl --user enable --now {UNIT}"
# What systemctl prints when there is no user manager to talk to (no login session, no lingering,
# a container, or a shell without XDG_RUNTIME_DIR / DBUS_SESSION_BUS_ADDRESS).
_NO_MANAGER = (
    "Failed to connect to bus",
    "XDG_RUNTIME_DIR",
    "System has not been booted with systemd",
    "Failed to connect to user scope bus",
)
# `disable` of a unit the manager never loaded is already the state uninstall wants.
_NOT_THERE = ("not loaded", "does not exist", "not found", "No such file or directory")


class ServiceError(AssistantError):
    """systemd cannot be reached or refused a command; the message says what was done and what to run."""


@dataclass(frozen=True)
class InstallReport:
    unit_path: Path
    executable: Path
    # True when the manager reloaded and was asked to enable and start the unit.
    enabled: bool
    commands: list[str] = field(default_factory=list)


def unit_dir() -> Path:
    """Where the user manager looks for units the user made: $XDG_CONFIG_HOME/systemd/user."""
    return locations.config_home().parent / "systemd" / "user"


def unit_path() -> Path:
    return unit_dir() / UNIT


def find_executable() -> Path:
    """The `assistant` script of this environment: next to the running Python (a venv), else on PATH."""
    beside = Path(sys.executable).parent / "assistant"
    if beside.is_file() and os.access(beside, os.X_OK):
        # absolute(), not resolve(): a venv's python is a symlink to the system one, whose
        # directory has no `assistant`; the script beside the link is the one we want.
        return beside.absolute()
    found = shutil.which("assistant")
    if found:
        return Path(found).absolute()
    raise InputError(
        f"no `assistant` command next to {sys.executable} or on PATH; install the package "
        "(pip install -e .) or pass the command's path explicitly"
    )


def _quote_exec(path: Path) -> str:
    """`path` as the first word of ExecStart=: % starts a specifier, and whitespace or quotes need quoting.

    `$` stays as it is: systemd expands no variables in the program's path.
    """
    text = str(path).replace("%", "%%")
    if any(ch.isspace() or ch in "\"'\\;" for ch in text):
        text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def render(executable: Path) -> str:
    template = locations.bundled(TEMPLATE).read_text(encoding="utf-8")
    if template.count(PLACEHOLDER) != 1:
        raise ServiceError(f"{locations.bundled(TEMPLATE)}: expected one {PLACEHOLDER} in ExecStart=")
    return template.replace(PLACEHOLDER, _quote_exec(executable))


def _write_unit(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # Explicit, not from the umask: a unit is configuration, conventionally world-readable.
        write_text_atomically(path, text, permissions=0o644)
    except OSError as exc:
        raise ServiceError(f"{path}: cannot write the unit: {exc}") from None


def no_manager(message: str) -> bool:
    """Whether systemctl's `message` means there is no user manager to talk to."""
    return any(marker in message for marker in _NO_MANAGER)


def _systemctl(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `systemctl --user ARGS`; FileNotFoundError when systemctl is not installed."""
    exe = shutil.which("systemctl")
    if exe is None:
        raise FileNotFoundError("systemctl")
    return subprocess.run([exe, "--user", *args], capture_output=True, text=True, timeout=120, check=False)


def install(executable: Path | None = None, *, enable: bool = True) -> InstallReport:
    """Write the user unit for `executable` (default: this environment's `assistant`), then enable and start it.

    The unit is written before systemd is asked anything, so when the manager cannot be reached
    the error says where it is and what to run once it can.
    """
    if executable is None:
        exe = find_executable()
    else:
        exe = Path(executable).expanduser().absolute()
        if not (exe.is_file() and os.access(exe, os.X_OK)):
            raise InputError(f"{exe}: not an executable file")
    path = unit_path()
    _write_unit(path, render(exe))
    if not enable:
        return InstallReport(path, exe, enabled=False)
    commands: list[str] = []
    for args in (("daemon-reload",), ENABLE):
        command = "systemctl --user " + " ".join(args)
        try:
            result = _systemctl(*args)
        except FileNotFoundError:
            raise ServiceError(
                f"wrote {path}, but systemctl is not installed, so it was not enabled; "
                f"on a systemd machine run: {MANUAL}"
            ) from None
        except subprocess.TimeoutExpired:
            raise ServiceError(f"wrote {path}, but `{command}` did not finish in 120 s; run: {MANUAL}") from None
        commands.append(command)
        if result.returncode != 0:
            why = (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
            if no_manager(why):
                raise ServiceError(
                    f"wrote {path}, but no systemd user manager is reachable ({why}), so it was not "
                    f"enabled; in your login session run: {MANUAL}"
                )
            raise ServiceError(f"wrote {path}, but `{command}` failed: {why}")
    return InstallReport(path, exe, enabled=True, commands=commands)


def uninstall() -> Path:
    """Stop and disable the service, remove the unit and reload the manager; returns the unit's path.

    Removing a unit that is not there is not an error. The file goes even when systemd cannot be
    reached; the error then says what to run in a session that has a user manager.
    """
    path = unit_path()
    try:
        result = _systemctl("disable", "--now", UNIT)
    except FileNotFoundError:
        # No systemctl means no systemd that could be running the unit: removing the file is all.
        path.unlink(missing_ok=True)
        return path
    stop_error = (result.stderr or result.stdout).strip() if result.returncode != 0 else ""
    if stop_error and not no_manager(stop_error) and not any(m in stop_error for m in _NOT_THERE):
        raise ServiceError(f"`systemctl --user disable --now {UNIT}` failed, {path} left in place: {stop_error}")
    path.unlink(missing_ok=True)
    reload = _systemctl("daemon-reload")
    reload_error = (reload.stderr or reload.stdout).strip() if reload.returncode != 0 else ""
    problem = next((e for e in (stop_error, reload_error) if e and no_manager(e)), "")
    if problem:
        raise ServiceError(
            f"removed {path}, but no systemd user manager is reachable ({problem}), so a running daemon "
            f"was not stopped; in your login session run: systemctl --user stop {UNIT} && "
            "systemctl --user daemon-reload"
        )
    if reload_error:
        raise ServiceError(f"removed {path}, but `systemctl --user daemon-reload` failed: {reload_error}")
    return path
