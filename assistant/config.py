"""Load and validate the YAML configuration.

`config/default.yaml` is the one home of every knob and its documentation; the dataclasses
below only say what type and range each knob takes. Layers are applied in order: the
defaults, the user's `$XDG_CONFIG_HOME/assistant/config.yaml`, then `--config FILE`. Every
layer is checked on its own, so an error names the file, the line and the dotted key.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass, field
from datetime import tzinfo
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml

from . import locations
from .errors import ConfigError
from .zones import local_zone


def _range(lo: float | None = None, hi: float | None = None, choices: tuple[str, ...] = ()) -> Any:
    return field(metadata={"min": lo, "max": hi, "choices": choices})


@dataclass(frozen=True)
class PathsOptions:
    data_dir: str | None
    models_dir: str | None


@dataclass(frozen=True)
class ModelsOptions:
    llm: str
    distill_llm: str | None
    embedder: str
    entities: str
    stt: str
    speaker: str


def _check_base_url(url: str) -> str | None:
    if not re.match(r"https?://[^/\s]+", url):
        return "must be an http:// or https:// address, e.g. http://127.0.0.1:8080/v1"
    return None


@dataclass(frozen=True)
class LLMOptions:
    backend: str = _range(choices=("llama-cpp", "openai"))
    base_url: str | None = field(metadata={"check": _check_base_url})
    model: str | None
    api_key_file: str | None
    api_key_env: str | None
    connect_timeout_seconds: float = _range(0.1, 600.0)
    read_timeout_seconds: float = _range(1.0, 3600.0)
    retries: int = _range(0, 20)
    device: str = _range(choices=("auto", "cpu", "cuda"))
    n_ctx: int = _range(512, 131072)
    n_threads: int = _range(0, 1024)
    gpu_layers: int = _range(-1, 1000)
    temperature: float = _range(0.0, 2.0)
    seed: int = _range(0, 2**31 - 1)


@dataclass(frozen=True)
class EmbedderOptions:
    device: str = _range(choices=("auto", "cpu", "cuda"))
    threads: int = _range(0, 1024)


@dataclass(frozen=True)
class STSBOptions:
    drift_threshold: float = _range(-1.0, 1.0)
    capacity: int = _range(1, 1000)
    min_block: int = _range(1, 1000)
    leading_window: int = _range(0, 1000)
    # Defaulted so STSBOptions built in code without it keep working (off).
    max_gap_seconds: float | None = field(default=None, metadata={"min": 0.0, "max": None, "choices": ()})


@dataclass(frozen=True)
class DistillOptions:
    mode: str = _range(choices=("llm", "extractive"))
    concept_threshold: float = _range(0.0, 1.0)
    scene_match_threshold: float = _range(0.0, 1.0)
    max_event_tokens: int = _range(4, 512)
    max_scene_tokens: int = _range(2, 64)
    max_amus_per_block: int = _range(0, 100)
    max_block_tokens: int = _range(64, 65536)


@dataclass(frozen=True)
class EntitiesOptions:
    backend: str = _range(choices=("spacy", "gliner"))
    gliner_model: str | None = _range()
    labels: list[str] = _range()
    gliner_threshold: float = _range(0.0, 1.0)


@dataclass(frozen=True)
class UtilityOptions:
    alpha: float = _range(0.0, None)
    beta: float = _range(0.0, None)
    tau_seconds: float = _range(1e-9, None)


@dataclass(frozen=True)
class BudgetOptions:
    token_budget: int = _range(1, None)
    merge_threshold: float = _range(0.0, 1.0)


@dataclass(frozen=True)
class SupersedeOptions:
    enabled: bool
    candidates: int = _range(1, 1000)
    min_similarity: float = _range(-1.0, 1.0)
    masked_similarity: float = _range(-1.0, 1.0)


@dataclass(frozen=True)
class RetrievalOptions:
    lexical_k: int = _range(0, 10_000)
    dense_k: int = _range(0, 10_000)
    tree: bool
    fusion_k: float = _range(0.0, 10_000.0)
    max_lines: int = _range(1, 10_000)
    infer_speaker: bool
    infer_window: bool
    top_scenes: int = _range(1, 1000)
    top_events: int = _range(1, 1000)
    top_amus: int = _range(0, 1000)
    min_similarity: float = _range(-1.0, 1.0)
    max_events: int = _range(1, 1000)
    reply_lines: int = _range(0, 1000)
    person_turns: int = _range(0, 1000)


@dataclass(frozen=True)
class AnswerOptions:
    max_tokens: int = _range(1, 4096)
    max_question_chars: int = _range(1, 1_000_000)
    min_relevance: float = _range(-1.0, 1.0)
    min_person_share: float = _range(0.0, 1.0)
    context_tokens: int = _range(64, 131072)
    neighbours: int = _range(0, 100)
    summaries: bool
    whole_lines: int = _range(0, 10_000)
    trim_above: int = _range(0, 100_000)
    min_score_share: float = _range(0.0, 1.0)
    archive_fallback: bool
    archive_margin: float = _range(0.0, 1.0)


@dataclass(frozen=True)
class IngestOptions:
    max_utterance_chars: int = _range(1, 10_000_000)
    max_pending_blocks: int = _range(1, 100_000)


@dataclass(frozen=True)
class MemoryOptions:
    retention_days: float | None = _range(0.0, None)
    stsb: STSBOptions
    distill: DistillOptions
    entities: EntitiesOptions
    utility: UtilityOptions
    budget: BudgetOptions
    supersede: SupersedeOptions
    retrieval: RetrievalOptions
    answer: AnswerOptions
    ingest: IngestOptions


@dataclass(frozen=True)
class AudioOptions:
    device: str | None
    block_ms: int = _range(10, 1000)


@dataclass(frozen=True)
class VadOptions:
    frame_ms: int = _range(10, 30)
    aggressiveness: int = _range(0, 3)
    pre_roll_ms: int = _range(0, 5000)
    hangover_ms: int = _range(0, 10000)
    min_segment_ms: int = _range(0, 60000)
    max_segment_ms: int = _range(1000, 600000)
    silero: bool
    silero_threshold: float = _range(0.0, 1.0)


def _check_hotwords(words: tuple[str, ...]) -> str | None:
    if len(words) > 100:
        return f"holds at most 100 words (Whisper reads only about 200 tokens of them), not {len(words)}"
    for word in words:
        if not word.strip() or len(word) > 60:
            return f"holds words of 1 to 60 characters; {word!r} is not"
    return None


@dataclass(frozen=True)
class SttOptions:
    device: str = _range(choices=("auto", "cpu", "cuda"))
    compute_type: str
    beam_size: int = _range(1, 20)
    language: str | None
    no_speech_threshold: float = _range(0.0, 1.0)
    log_prob_threshold: float = _range(-100.0, 0.0)
    compression_ratio_threshold: float = _range(1.0, 100.0)
    max_repeats: int = _range(2, 100)
    hotwords_from_speakers: bool
    hotwords: tuple[str, ...] = field(metadata={"check": _check_hotwords})


def _check_edges(edges: tuple[float, ...]) -> str | None:
    if not edges or any(b <= a for a, b in pairwise(edges)) or edges[0] < 0:
        return "must be one or more increasing pauses in seconds, e.g. [0.2, 0.6, 1.5]"
    return None


@dataclass(frozen=True)
class SequenceOptions:
    enabled: bool
    concentration: float = _range(0.0, 1000.0)
    full_seconds: float = _range(0.1, 60.0)
    gap_edges: tuple[float, ...] = field(metadata={"check": _check_edges})


@dataclass(frozen=True)
class ReclusterOptions:
    enabled: bool
    every_seconds: float = _range(1.0, 3600.0)
    window: int = _range(10, 10_000)
    min_seconds: float = _range(0.0, 60.0)
    min_utterances: int = _range(3, 10_000)
    max_speakers: int = _range(2, 50)
    min_silhouette: float = _range(-1.0, 1.0)
    min_cluster_utterances: int = _range(1, 1000)
    min_cluster_seconds: float = _range(0.0, 3600.0)
    min_agreement: float = _range(0.5, 1.0)
    sequence: SequenceOptions


@dataclass(frozen=True)
class OnnxSpeakerOptions:
    match_threshold: float = _range(-1.0, 1.0)
    change_threshold: float = _range(-1.0, 1.0)


@dataclass(frozen=True)
class DiarizationOptions:
    device: str = _range(choices=("auto", "cpu", "cuda"))
    match_threshold: float = _range(-1.0, 1.0)
    margin: float = _range(0.0, 2.0)
    min_new_speaker_seconds: float = _range(0.0, 60.0)
    centroid_weight: float = _range(0.0, 1.0)
    suggest_merge_cosine: float = _range(-1.0, 1.0)
    onnx: OnnxSpeakerOptions
    recluster: ReclusterOptions


@dataclass(frozen=True)
class TcpOptions:
    enabled: bool
    port: int = _range(1, 65535)
    token: str | None


@dataclass(frozen=True)
class DaemonOptions:
    socket: str | None
    source: str | None
    queue_segments: int = _range(1, 10_000)
    max_body_bytes: int = _range(1024, 100_000_000)
    subscriber_backlog: int = _range(1, 1_000_000)
    stop_seconds: float = _range(0.0, 600.0)
    idle_flush_seconds: float = _range(1.0, 86_400.0)
    quiet_hours: list[str]
    max_question_seconds: float = _range(1.0, 3600.0)
    enroll_seconds: float = _range(5.0, 600.0)
    tcp: TcpOptions


@dataclass(frozen=True)
class BenchOptions:
    locomo_data: str | None
    rag_k: int = _range(1, 1000)
    scale_queries: int = _range(1, 100_000)


def _zone_problem(name: str) -> str | None:
    """Why `name` is not a time zone this machine knows; None when it is."""
    try:
        local_zone(name)
    except ConfigError:
        return "must be an IANA time zone name such as Europe/Lisbon, America/New_York or UTC"
    return None


@dataclass(frozen=True)
class Settings:
    time_zone: str | None = field(metadata={"check": _zone_problem})
    paths: PathsOptions
    models: ModelsOptions
    llm: LLMOptions
    embedder: EmbedderOptions
    memory: MemoryOptions
    audio: AudioOptions
    vad: VadOptions
    stt: SttOptions
    diarization: DiarizationOptions
    daemon: DaemonOptions
    bench: BenchOptions

    @property
    def zone(self) -> tzinfo:
        """The zone relative dates are resolved and times shown in (`time_zone`, else the system's)."""
        return local_zone(self.time_zone)

    @property
    def data_dir(self) -> Path:
        return Path(self.paths.data_dir).expanduser() if self.paths.data_dir else locations.data_home()

    @property
    def models_dir(self) -> Path:
        if self.paths.models_dir:
            return Path(self.paths.models_dir).expanduser()
        return locations.default_models_dir()

    @property
    def database_path(self) -> Path:
        return self.data_dir / "memory.db"

    @property
    def paused_flag(self) -> Path:
        # Present while the user has paused listening: the daemon starts paused while it is.
        return self.data_dir / "paused"


# --- loading -----------------------------------------------------------------------------

_Lines = dict[tuple[str, ...], int]


def _read_yaml(path: Path) -> tuple[dict[str, Any], _Lines]:
    """Parse a YAML file, keeping the line of each key so errors can point at it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}{where}: invalid YAML: {problem}") from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the top level must be a mapping of sections, not {type(data).__name__}")
    lines: _Lines = {}

    def walk(n: yaml.Node, prefix: tuple[str, ...]) -> None:
        if isinstance(n, yaml.MappingNode):
            for key_node, value_node in n.value:
                key = (*prefix, str(key_node.value))
                lines[key] = key_node.start_mark.line + 1
                walk(value_node, key)

    if node is not None:
        walk(node, ())
    return data, lines


def _where(path: Path, lines: _Lines, key: tuple[str, ...]) -> str:
    line = lines.get(key)
    return f"{path}:{line}" if line else str(path)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _check_value(value: Any, tp: Any, meta: dict[str, Any], where: str, dotted: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _check_value(value, args[0], meta, where, dotted)
    if origin is list:
        (item_tp,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise ConfigError(f"{where}: {dotted} must be a list, got {type(value).__name__}")
        return [_check_value(v, item_tp, {}, where, f"{dotted}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        # A list in YAML; a tuple in the settings, so options that key a cache stay hashable.
        item_tp = typing.get_args(tp)[0]
        if not isinstance(value, list):
            raise ConfigError(f"{where}: {dotted} must be a list, got {type(value).__name__}")
        items = tuple(_check_value(v, item_tp, {}, where, f"{dotted}[{i}]") for i, v in enumerate(value))
        check = meta.get("check")
        if check is not None and (problem := check(items)):
            raise ConfigError(f"{where}: {dotted} {problem}; got {list(items)!r}")
        return items
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif tp is str:
        ok = isinstance(value, str)
    else:  # pragma: no cover - a programming error in the schema
        raise TypeError(f"unsupported config type {tp!r} for {dotted}")
    if not ok:
        raise ConfigError(f"{where}: {dotted} must be {_type_name(tp)}, got {type(value).__name__} {value!r}")
    lo, hi, choices = meta.get("min"), meta.get("max"), meta.get("choices") or ()
    if choices and value not in choices:
        raise ConfigError(f"{where}: {dotted} must be one of {', '.join(choices)}; got {value!r}")
    if lo is not None and value < lo:
        raise ConfigError(f"{where}: {dotted} must be at least {lo}; got {value!r}")
    if hi is not None and value > hi:
        raise ConfigError(f"{where}: {dotted} must be at most {hi}; got {value!r}")
    check = meta.get("check")
    if check is not None and (problem := check(value)):
        raise ConfigError(f"{where}: {dotted} {problem}; got {value!r}")
    return value


def _validate(
    cls: type, data: Any, path: Path, lines: _Lines, prefix: tuple[str, ...], partial: bool
) -> dict[str, Any]:
    """Check one layer against the schema; return it as a plain nested dict of checked values."""
    dotted = ".".join(prefix) or "(top level)"
    where = _where(path, lines, prefix)
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: {dotted} must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for key, value in data.items():
        key_path = (*prefix, str(key))
        name = ".".join(key_path)
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(f"{_where(path, lines, key_path)}: unknown key {name!r} (known here: {known})")
        tp = hints[key]
        if dataclasses.is_dataclass(tp):
            out[key] = _validate(tp, value, path, lines, key_path, partial)
        else:
            out[key] = _check_value(value, tp, dict(fields[key].metadata), _where(path, lines, key_path), name)
    if not partial:
        missing = [f for f in fields if f not in data]
        if missing:
            raise ConfigError(f"{where}: missing key(s) {', '.join('.'.join((*prefix, m)) for m in missing)}")
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _build(cls: type, data: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        kwargs[f.name] = _build(tp, data[f.name]) if dataclasses.is_dataclass(tp) else data[f.name]
    return cls(**kwargs)


def default_config_path() -> Path:
    return locations.bundled("config/default.yaml")


def load_settings(
    config_file: str | Path | None = None,
    *,
    user_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """Defaults, then the user's file (if present), then `config_file`, then `overrides`.

    `user_file` defaults to `$XDG_CONFIG_HOME/assistant/config.yaml`. `overrides` is a nested
    dict checked like a file (programs and tests use it instead of writing YAML).
    """
    default_path = default_config_path()
    data, lines = _read_yaml(default_path)
    merged = _validate(Settings, data, default_path, lines, (), partial=False)
    _check_relations(_build(Settings, merged), default_path)
    layers: list[Path] = []
    user = Path(user_file) if user_file is not None else locations.user_config_file()
    if user.exists():
        layers.append(user)
    if config_file is not None:
        layers.append(Path(config_file))
    for layer in layers:
        layer_data, layer_lines = _read_yaml(layer)
        merged = _merge(merged, _validate(Settings, layer_data, layer, layer_lines, (), partial=True))
        _check_relations(_build(Settings, merged), layer)
    if overrides:
        source = Path("<overrides>")
        merged = _merge(merged, _validate(Settings, overrides, source, {}, (), partial=True))
        _check_relations(_build(Settings, merged), source)
    settings: Settings = _build(Settings, merged)
    return settings


def parse_quiet_hours(span: str) -> tuple[int, int] | None:
    """ "22:00-07:00" as (start, end) minutes after midnight; None when malformed."""
    match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*", span)
    if not match:
        return None
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        return None
    return h1 * 60 + m1, h2 * 60 + m2


def _check_relations(s: Settings, source: Path) -> None:
    """Constraints between knobs that no single value can express; `source` is the layer that broke one."""
    m = s.memory
    for i, span in enumerate(s.daemon.quiet_hours):
        if parse_quiet_hours(span) is None:
            raise ConfigError(f'{source}: daemon.quiet_hours[{i}] must look like "22:00-07:00"; got {span!r}')
    tcp = s.daemon.tcp
    if tcp.enabled and not (tcp.token and len(tcp.token) >= 16):
        raise ConfigError(
            f"{source}: daemon.tcp.token must be set (16 characters or more) when daemon.tcp.enabled is true"
        )
    if s.vad.frame_ms not in (10, 20, 30):
        raise ConfigError(f"{source}: vad.frame_ms must be 10, 20 or 30 (what webrtcvad accepts); got {s.vad.frame_ms}")
    if s.vad.min_segment_ms >= s.vad.max_segment_ms:
        raise ConfigError(
            f"{source}: vad.min_segment_ms ({s.vad.min_segment_ms}) must be below vad.max_segment_ms "
            f"({s.vad.max_segment_ms})"
        )
    if m.stsb.min_block > m.stsb.capacity:
        raise ConfigError(
            f"{source}: memory.stsb.min_block ({m.stsb.min_block}) cannot exceed "
            f"memory.stsb.capacity ({m.stsb.capacity})"
        )
    if m.entities.backend == "gliner" and not m.entities.gliner_model:
        raise ConfigError(f"{source}: memory.entities.backend is 'gliner' but memory.entities.gliner_model is not set")
    _check_served_llm(s, source)
    if m.answer.context_tokens + m.answer.max_tokens > s.llm.n_ctx:
        raise ConfigError(
            f"{source}: memory.answer.context_tokens ({m.answer.context_tokens}) + memory.answer.max_tokens "
            f"({m.answer.max_tokens}) must fit in llm.n_ctx ({s.llm.n_ctx})"
        )


def _check_served_llm(s: Settings, source: Path) -> None:
    """An `llm.backend: openai` needs a server to talk to, and a key it can read if it names one."""
    llm = s.llm
    if llm.backend != "openai":
        return
    if not llm.base_url:
        raise ConfigError(
            f"{source}: llm.base_url must be set when llm.backend is openai "
            "(e.g. http://127.0.0.1:8080/v1 for llama.cpp's server)"
        )
    if s.models.distill_llm is not None:
        raise ConfigError(
            f"{source}: models.distill_llm names a model for this process, but with llm.backend openai "
            "distillation goes to the server too: set models.distill_llm to null"
        )
    if llm.api_key_file is not None and llm.api_key_env is not None:
        raise ConfigError(f"{source}: set llm.api_key_file or llm.api_key_env, not both")
    if llm.api_key_file is not None and not Path(llm.api_key_file).expanduser().is_file():
        raise ConfigError(
            f"{source}: llm.api_key_file names {Path(llm.api_key_file).expanduser()}, which is not a file; "
            "write the server's API key there, or set llm.api_key_file to null"
        )
