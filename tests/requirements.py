"""What some tests need from outside the repository, and what happens when it is missing.

On a developer's clone a missing dataset or program skips the tests that need it, with a reason
that says what is missing and how to get it. Under CI (`CI=true`, which `.ci/run` sets) the same
absence fails those tests: a green CI run has run every test.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The one setting that points the tests at the real LoCoMo data; `assistant bench locomo --data`
# takes the same file.
LOCOMO_ENV = "ASSISTANT_LOCOMO_DATA"
# Where the project's shared checkout keeps the development split, beside the repository.
DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"

# Made up by this project in LoCoMo's layout (see tests/fixtures/README.md): no real data needed.
FIXTURES = ROOT / "tests" / "fixtures"
LOCOMO_MINI = FIXTURES / "locomo-mini.json"
LOCOMO_MALFORMED = FIXTURES / "locomo-malformed.json"


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def missing(reason: str) -> NoReturn:
    """Skip with `reason`, or fail with it under CI."""
    if under_ci():
        pytest.fail(f"{reason} (CI=true: a missing requirement fails the run)", pytrace=False)
    pytest.skip(reason)


def locomo_path() -> Path:
    return Path(os.environ.get(LOCOMO_ENV) or DEFAULT_LOCOMO)


def need_locomo() -> Path:
    """The real LoCoMo development split (conv-26 and conv-30 of locomo10.json)."""
    path = locomo_path()
    if not path.is_file():
        missing(
            f"needs the real LoCoMo data at {path}: put locomo-dev.json there, or set {LOCOMO_ENV} "
            "to a LoCoMo JSON file holding conv-26 and conv-30 (see docs/development.md, 'The LoCoMo data')"
        )
    return path


def need_binary(name: str, package: str) -> str:
    """The path of program `name`, which the Debian package `package` provides."""
    found = shutil.which(name)
    if found is None:
        missing(f"needs {name} on PATH: apt-get install {package} (the README's test command installs it)")
    return found
