"""The package is built in layers, and its clients start without the models' libraries.

The layers, bottom to top. A module may import its own unit (the subpackage or top-level module
it belongs to) and the layers below; never a layer above, nor another unit of its own layer:

  1. errors, atomic              the package's errors, writing a file whole or not at all
  2. locations, zones, exports, wire, cpus, devices, sentences
                                 paths on disk, time zones, writing an export file, records <-> JSON,
                                 the CPUs a process may use, whether `auto` means a GPU, where a
                                 line's sentences begin and end
  3. records                     the typed records every stage hands on (one `Speaker`)
  4. service                     `MemoryService`: what a user can do with the memory, local or remote
  5. config                      the settings, one section per stage
  6. models, embed, llm, entities, transcripts, store
                                 the model wrappers, conversation files, SQLite
  7. audio                       sound -> speech segments
  8. speech                      speech segments -> attributed words (transcription, voices)
  9. memory                      utterances -> the bounded memory, recall and answers
 10. listening                   the chain that carries audio through speech into the memory
 11. daemon                      the always-on service, its API, and the client of that API
 12. tui, mcp_server             clients of the daemon: the terminal UI, the MCP server
 13. bench                       the benchmarks (they drive the daemon and the TUI)
 14. cli                         the `assistant` command
 15. __init__, __main__          the package's public names, `python -m assistant`

Every import statement counts, wherever it is: at the top of a module, inside a function, or
under `TYPE_CHECKING`. A function-level import is for loading a heavy library late, never for
hiding a cycle, so there is no import cycle between any two modules either.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "assistant"

LAYERS: list[set[str]] = [
    {"errors", "atomic"},
    {"locations", "zones", "exports", "wire", "cpus", "devices", "sentences"},
    {"records"},
    {"service"},
    {"config"},
    {"models", "embed", "llm", "entities", "transcripts", "store"},
    {"audio"},
    {"speech"},
    {"memory"},
    {"listening"},
    {"daemon"},
    {"tui", "mcp_server"},
    {"bench"},
    {"cli"},
    {"__init__", "__main__"},
]
LAYER = {unit: n for n, units in enumerate(LAYERS) for unit in units}

# What the terminal UI and the daemon's clients must start without: the models' libraries.
HEAVY = {
    "torch",
    "onnxruntime",
    "usearch",
    "faster_whisper",
    "ctranslate2",
    "llama_cpp",
    "spacy",
    "gliner",
    "transformers",
    "resemblyzer",
    "sentence_transformers",
}


# --- the import graph ----------------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    """The unit a module belongs to: `assistant.memory.api` -> memory, `assistant` -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module) for every import of the package in one file. `from X import y` names the
    module X.y when y is one, else X itself."""
    me = module_name(path)
    here = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.append((node.lineno, submodule if submodule in modules else source))
    return [(line, m) for line, m in found if m == "assistant" or m.startswith("assistant.")]


Graph = dict[str, list[tuple[int, str]]]  # module -> (line, module it imports)


def import_graph() -> Graph:
    modules = package_modules()
    return {m: imports(p, modules) for m, p in modules.items()}


def where(module: str, line: int) -> str:
    """`assistant/memory/api.py:12`, or the module's name for one that is no file here."""
    path = package_modules().get(module)
    return f"{path.relative_to(ROOT) if path else module}:{line}"


def upward_imports(graph: Graph) -> list[str]:
    """Each import of a layer above, or of another unit of the same layer: 'file:line imports X: why'."""
    found = []
    for module, targets in sorted(graph.items()):
        unit = unit_of(module)
        for line, target in targets:
            other = unit_of(target)
            if other == unit:
                continue
            if unit not in LAYER or other not in LAYER:
                missing = unit if unit not in LAYER else other
                found.append(f"{where(module, line)} imports {target}: {missing!r} is in no layer (add it to LAYERS)")
            elif LAYER[other] >= LAYER[unit]:
                found.append(
                    f"{where(module, line)} imports {target}: {unit} (layer {LAYER[unit] + 1}) may not import "
                    f"{other} (layer {LAYER[other] + 1})"
                )
    return found


def first_cycle(graph: Graph) -> list[str]:
    """One import cycle between modules, as its 'file:line imports X' steps; [] when there is none."""
    state: dict[str, str] = {}  # "open" while on the current path, then "done"
    path: list[tuple[str, int, str]] = []

    def visit(module: str) -> list[str]:
        state[module] = "open"
        for line, target in sorted(graph.get(module, [])):
            if target == module:
                continue
            path.append((module, line, target))
            if state.get(target) == "open":
                start = next(i for i, (m, _, _) in enumerate(path) if m == target)
                return [f"{where(m, n)} imports {t}" for m, n, t in path[start:]]
            if target not in state and (cycle := visit(target)):
                return cycle
            path.pop()
        state[module] = "done"
        return []

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return []


def test_no_module_imports_a_layer_above_its_own() -> None:
    found = upward_imports(import_graph())
    assert not found, "upward import:\n" + "\n".join(found)


def test_no_import_cycle_between_modules() -> None:
    cycle = first_cycle(import_graph())
    assert not cycle, "import cycle:\n" + "\n".join(cycle)


def test_the_walk_sees_every_kind_of_import_and_names_what_it_finds() -> None:
    graph = import_graph()
    cli = {target for _, target in graph["assistant.cli"]}
    assert {"assistant.locations", "assistant.memory.api", "assistant.tui.app"} <= cli  # `from . import`, in functions
    assert "assistant.config" in {t for _, t in graph["assistant.audio.sources"]}  # under TYPE_CHECKING
    made_up = {
        "assistant.store.db": [(3, "assistant.errors")],
        "assistant.store.store": [(7, "assistant.store.db"), (9, "assistant.memory.api")],
        "assistant.memory.api": [(5, "assistant.store.store")],
    }
    assert upward_imports(made_up) == [
        "assistant/store/store.py:9 imports assistant.memory.api: store (layer 6) may not import memory (layer 9)"
    ]
    assert first_cycle(made_up) == [
        "assistant/memory/api.py:5 imports assistant.store.store",
        "assistant/store/store.py:9 imports assistant.memory.api",
    ]


# --- what the clients load -----------------------------------------------------------------------


def loaded(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `python -X importtime ARGS`; the process and the top-level packages it imported."""
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    out = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    names = set()
    for line in out.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name)
    return out, names


def heavy(names: set[str]) -> list[str]:
    """The model libraries among imported modules, by package."""
    return sorted({n.split(".")[0] for n in names} & HEAVY)


@pytest.mark.parametrize(
    "module", ["assistant", "assistant.tui", "assistant.cli", "assistant.daemon.client", "assistant.mcp_server"]
)
def test_importing_a_client_loads_no_model_library(module: str, tmp_path: Path) -> None:
    out, names = loaded(["-c", f"import {module}"], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert module in names  # the import really ran under -X importtime
    assert not heavy(names), f"import {module} loads {heavy(names)}"
    if module == "assistant.cli":
        assert not {n for n in names if n.startswith("assistant.bench")}, "the CLI imports bench at load"


def test_help_and_status_without_a_daemon_load_no_model_library(tmp_path: Path) -> None:
    out, names = loaded(["-m", "assistant", "--help"], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "bench" in out.stdout and "assistant.cli" in names
    assert not heavy(names), f"assistant --help loads {heavy(names)}"
    assert not {n for n in names if n.startswith("assistant.bench")}

    out, names = loaded(["-m", "assistant", "status"], tmp_path)
    assert out.returncode != 0 and "no daemon" in out.stderr, out.stderr[-2000:]
    assert not heavy(names), f"assistant status loads {heavy(names)}"


def test_the_bench_group_loads_when_run_and_is_listed_as_itself() -> None:
    from assistant.bench.commands import bench
    from assistant.cli import LAZY_GROUPS, main

    assert LAZY_GROUPS["bench"][2] == bench.help
    out = CliRunner().invoke(main, ["bench", "--help"])
    assert out.exit_code == 0, out.output
    assert all(name in out.output for name in bench.commands)
