"""The memory browser: the scene > event > unit tree, the budget gauge, a filter, and forgetting.

The pane loads the tree from the daemon itself, and forgets the node the user picks."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, ProgressBar, Tree
from textual.widgets.tree import TreeNode

from ..daemon.client import AsyncDaemonClient
from ..errors import AssistantError
from ..records import MemoryNode, MemoryStats
from .connection import DaemonChanged, said, taken_down
from .dialogs import ConfirmScreen

LEVEL_STYLE = {"scene": "bold", "event": "", "amu": "dim"}
LEVEL_NAME = {"scene": "scene", "event": "event", "amu": "unit"}


def count_nodes(node: MemoryNode) -> int:
    return 1 + sum(count_nodes(c) for c in node.children)


def keep(node: MemoryNode, needle: str) -> MemoryNode | None:
    """The node pruned to what matches `needle`: itself (whole) if it matches, else its matching children."""
    if needle in node.text.lower():
        return node
    children = tuple(k for c in node.children if (k := keep(c, needle)) is not None)
    return dataclasses.replace(node, children=children) if children else None


def node_label(node: MemoryNode, width: int = 70) -> Text:
    text = node.text.replace("\n", " ")
    if len(text) > width:
        text = text[: width - 1] + "…"
    return Text.assemble(
        (f"{LEVEL_NAME.get(node.level, node.level)} ", "italic dim"),
        (text, LEVEL_STYLE.get(node.level, "")),
        (f"  u={node.utility:.2f} · {node.tokens} tok", "dim"),
    )


class MemoryTree(Tree[MemoryNode]):
    BINDINGS = [  # noqa: RUF012 (Textual reads it as a class attribute)
        Binding("d,delete", "forget", "Forget", id="memory.forget", tooltip="Forget this node and what hangs under it"),
    ]

    class ForgetRequested(Message):
        def __init__(self, node: MemoryNode) -> None:
            super().__init__()
            self.node = node

    def action_forget(self) -> None:
        node = self.cursor_node
        if node is not None and node.data is not None:
            self.post_message(self.ForgetRequested(node.data))


class MemoryPane(Vertical):
    def __init__(self, client: AsyncDaemonClient, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.nodes: list[MemoryNode] = []
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

    # --- loading -------------------------------------------------------------------------------

    @work(exclusive=True, group="memory")
    async def load(self) -> None:
        """Fetch the tree again: on connecting, on showing the pane, after something was forgotten."""
        try:
            nodes = await self.client.tree()
        except AssistantError as exc:
            self.notify(said(exc), title="Memory", severity="error")
            return
        self.show_tree(nodes)

    def show_budget(self, memory: MemoryStats) -> None:
        self.tokens, self.budget = memory.tokens, max(memory.token_budget, 1)
        self.query_one("#gauge", ProgressBar).update(total=self.budget, progress=self.tokens)
        self.query_one("#gauge-label", Label).update(
            f"{self.tokens:,}/{self.budget:,} tokens · {memory.scenes} scenes · {memory.events} events · "
            f"{memory.amus} units"
        )

    def show_tree(self, nodes: list[MemoryNode]) -> None:
        if taken_down(self):
            return  # the app closed while the daemon answered
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

    def _add(self, parent: TreeNode[MemoryNode], node: MemoryNode, *, expand: bool) -> None:
        if node.children:
            branch = parent.add(node_label(node), data=node, expand=expand)
            for child in node.children:
                self._add(branch, child, expand=expand)
        else:
            parent.add_leaf(node_label(node), data=node)

    # --- forgetting ----------------------------------------------------------------------------

    @on(MemoryTree.ForgetRequested)
    def confirm_forget(self, message: MemoryTree.ForgetRequested) -> None:
        node = message.node
        under = count_nodes(node) - 1
        what = f"this {node.level}" + (f" and the {under} nodes under it" if under else "")
        text = node.text if len(node.text) < 200 else node.text[:199] + "…"

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.forget(node.id)

        self.app.push_screen(ConfirmScreen(f"Forget {what}?\n\n“{text}”"), confirmed)

    @work(group="memory-delete")
    async def forget(self, node_id: int) -> None:
        try:
            removed = await self.client.delete_node(node_id)
        except AssistantError as exc:
            self.notify(said(exc), title="Forget", severity="error")
            return
        self.notify(f"Forgot {len(removed)} nodes.", title="Memory")
        self.load()
        self.post_message(DaemonChanged())
