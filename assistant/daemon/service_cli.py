"""`assistant service install | uninstall | status`: the daemon as a systemd user service.

Registered on the main command group, whose error handling turns a `ServiceError` into one line
on stderr and a non-zero exit code.
"""

from __future__ import annotations

import shutil
import subprocess

import click

from .service import MANUAL, UNIT, ServiceError, install, no_manager, uninstall, unit_path


@click.group()
def service() -> None:
    """Run the assistant as a systemd user service (started at login, restarted on failure)."""


@service.command("install")
@click.option("--no-enable", is_flag=True, help="Only write the unit file; do not enable or start it.")
def install_command(no_enable: bool) -> None:
    """Write ~/.config/systemd/user/assistant.service for this environment, then enable and start it."""
    report = install(enable=not no_enable)
    click.echo(f"wrote {report.unit_path} (runs {report.executable} daemon)")
    if report.enabled:
        click.echo(
            "enabled and starting: it is ready once the models are loaded.\n"
            "  follow it:  journalctl --user -u assistant -f\n"
            f"  already running an older version? systemctl --user restart {UNIT}"
        )
    else:
        click.echo(f"to start it now and at every login: {MANUAL}")


@service.command("uninstall")
def uninstall_command() -> None:
    """Stop and disable the service and remove its unit file."""
    path = uninstall()
    click.echo(f"disabled the service and removed {path}")


def _show(argv: list[str]) -> str:
    """Run a systemd tool and echo what it printed; returns its stderr."""
    # Captured and echoed rather than inherited, so the output follows click's streams (and tests).
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    for text, err in ((result.stdout, False), (result.stderr, True)):
        if text.strip():
            click.echo(text.rstrip("\n"), err=err)
    return result.stderr


@service.command("status")
def status_command() -> None:
    """The service's state and its last 20 log lines."""
    path = unit_path()
    click.echo(f"unit: {path} ({'installed' if path.exists() else 'not installed: run `assistant service install`'})")
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        raise ServiceError("systemctl is not installed: the assistant runs as a service only on a systemd machine")
    # `status` exits 3 for a stopped unit and 4 for an unknown one: both are answers, not errors.
    if no_manager(_show([systemctl, "--user", "status", UNIT, "--no-pager"])):
        click.echo("no systemd user manager is reachable from this shell (not a login session?)", err=True)
    journalctl = shutil.which("journalctl")
    if journalctl is not None:
        _show([journalctl, "--user", "-u", "assistant", "-n", "20", "--no-pager"])
