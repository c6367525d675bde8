"""The memory browser: the scene > event > unit tree, the budget gauge, a filter, and forgetting."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, ProgressBar, Tree
from textual.widgets.tree import TreeNode

LEVEL_STYLE = {"scene": "bold", "event": "", "amu": "dim"}
LEVEL_NAME = {"scene": "scene", "event": "event", "amu": "unit"}


def count_nodes(node: dict[str, Any]) -> int:
    return 1 + sum(count_nodes(c) for c in node.get("children", []))


def keep(node: dict[str, Any], needle: str) -> dict[str, Any] | None:
    """The node pruned to what matches `needle`: itself (whole) if it matches, else its matching children."""
    if needle in node["text"].lower():
        return node
    children = [k for c in node.get("children", []) if (k := keep(c, needle)) is not None]
    return {**node, "children": children} if children else None


def node_label(node: dict[str, Any], width: int = 70) -> Text:
    text = node["text"].replace("\n", " ")
    if len(text) > width:
        text = text[: width - 1] + "…"
    return Text.assemble(
        (f"{LEVEL_NAME.get(node['level'], node['level'])} ", "italic dim"),
        (text, LEVEL_STYLE.get(node["level"], "")),
        (f"  u={node['utility']:.2f} · {node['tokens']} tok", "dim"),
    )


class MemoryTree(Tree[dict[str, Any]]):
    BINDINGS = [  # noqa: RUF012 (Textual reads it as a class attribute)
        Binding("d,delete", "forget", "Forget", id="memory.forget", tooltip="Forget this node and what hangs under it"),
    ]

    class ForgetRequested(Message):
        def __init__(self, node: dict[str, Any]) -> None:
            super().__init__()
            self.node = node

    def action_forget(self) -> None:
        node = self.cursor_node
        if node is not None and node.data is not None:
            self.post_message(self.ForgetRequested(node.data))


class MemoryPane(Vertical):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.nodes: list[dict[str, Any]] = []
        self.tokens = 0
        self.budget = 1

    def compose(self) -> ComposeResult:
        with Horizontal(id="memory-top"):
            yield Input(placeholder="filter the tree…", id="memory-filter")
            yield Label("budget ?", id="gauge-label")
        yield ProgressBar(total=1, show_eta=False, id="gauge")
        tree = MemoryTree("memory", id="memory-tree")
        tree.show_root = False
        yield tree
        yield Label("d forget the selected node · type in the box above to filter", classes="hint")

    def show_budget(self, memory: dict[str, Any]) -> None:
        self.tokens, self.budget = memory["tokens"], max(memory["token_budget"], 1)
        self.query_one("#gauge", ProgressBar).update(total=self.budget, progress=self.tokens)
        self.query_one("#gauge-label", Label).update(
            f"{self.tokens:,}/{self.budget:,} tokens · {memory['scenes']} scenes · {memory['events']} events · "
            f"{memory['amus']} units"
        )

    def show_tree(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = nodes
        self._rebuild()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "memory-filter":
            event.stop()
            self._rebuild()

    def _rebuild(self) -> None:
        tree = self.query_one(MemoryTree)
        needle = self.query_one("#memory-filter", Input).value.strip().lower()
        shown = [k for n in self.nodes if (k := keep(n, needle)) is not None] if needle else self.nodes
        tree.clear()
        for node in shown:
            self._add(tree.root, node, expand=bool(needle))
        tree.root.expand()
        if tree.root.children:
            tree.cursor_line = 0  # so d acts on something at once

    def _add(self, parent: TreeNode[dict[str, Any]], node: dict[str, Any], *, expand: bool) -> None:
        children = node.get("children", [])
        if children:
            branch = parent.add(node_label(node), data=node, expand=expand)
            for child in children:
                self._add(branch, child, expand=expand)
        else:
            parent.add_leaf(node_label(node), data=node)
