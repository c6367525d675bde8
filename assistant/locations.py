"""Where the assistant keeps its files, following the XDG base directory spec."""

from __future__ import annotations

import os
from pathlib import Path

APP = "assistant"


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var, "").strip()
    # The spec says relative paths in these variables are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def config_home() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / APP


def data_home() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / APP


def user_config_file() -> Path:
    return config_home() / "config.yaml"


def default_models_dir() -> Path:
    return data_home() / "models"


def bundled(name: str) -> Path:
    """A file shipped with the project: the packaged copy in a wheel, else the source tree.

    Wheels carry `config/default.yaml` and `models/manifest.yaml` under `assistant/_bundled/`;
    an editable install reads them from the repository they live in.
    """
    packaged = Path(__file__).parent / "_bundled" / Path(name).name
    if packaged.exists():
        return packaged
    return Path(__file__).resolve().parent.parent / name


def project_root() -> Path:
    """The directory above the package: the checkout in an editable install (benchmarks look for data there)."""
    return Path(__file__).resolve().parent.parent


def runtime_dir() -> Path:
    """$XDG_RUNTIME_DIR/assistant: per-user, on tmpfs, gone at logout (the API socket lives here).

    Without XDG_RUNTIME_DIR (no login session: a container, cron) a per-user directory in the
    system temp dir stands in; the daemon makes it 0700 either way.
    """
    value = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if value and os.path.isabs(value):
        return Path(value) / APP
    import tempfile

    return Path(tempfile.gettempdir()) / f"{APP}-{os.getuid()}"


def default_socket() -> Path:
    return runtime_dir() / "api.sock"
