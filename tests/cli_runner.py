"""The `assistant` command run by a test: in this process by default, in its own where a test needs one.

In-process runs go through click's runner: the same command, options, exit codes and output,
with real files and real models, but without a new interpreter importing torch and loading every
model again for each command (about 5 s apiece on 2 cores). A test that reads what only a
process shows (its logging on stderr, a model loaded on a fresh start) asks for `process=True`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

from click.testing import CliRunner

from assistant.cli import main


def assistant(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], process: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run `assistant ARGS` in `cwd` with `env` added to the environment; its exit code and output."""
    if process:
        return subprocess.run(
            [sys.executable, "-m", "assistant", *args],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=600,
            cwd=cwd,
        )
    here = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args), env=dict(env))
    finally:
        os.chdir(here)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # What an uncaught exception prints in a process, so "Traceback" checks still see it.
        stderr += "Traceback (most recent call last):\n" + "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["assistant", *args], result.exit_code, result.stdout, stderr)
