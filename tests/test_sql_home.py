"""SQL lives in `assistant/store/` and nowhere else.

Every other module reaches the database through the store's methods and functions, so a change
to the schema is a change to one package. The check reads each module's syntax tree rather than
its text: a docstring or comment that talks about SELECT or VACUUM is prose, not SQL.
"""

from __future__ import annotations

import ast
import re
import sqlite3
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "assistant"
STORE = PACKAGE / "store"

# Calls that run SQL, whatever they are given.
RUNS_SQL = {"execute", "executemany", "executescript"}
# The store's query helpers (`db.all(sql)`, `db.one(sql)`, `db.scalar(sql)`): SQL when given text.
QUERIES = {"all", "one", "scalar"}

# A string that opens like a statement (or a parenthesised subquery), in capitals as this project
# writes SQL; `sql_shaped` reads the same shapes in small letters.
SQL_SHAPED = re.compile(
    r"""^\s*\(?\s*(
        SELECT\b.*\bFROM\b
      | INSERT\s+(OR\s+[A-Z]+\s+)?INTO\b
      | DELETE\s+FROM\b
      | UPDATE\s+\S+\s+SET\b
      | PRAGMA\b
      | CREATE\s+(UNIQUE\s+|VIRTUAL\s+)?(TABLE|INDEX|TRIGGER)\b
      | ALTER\s+TABLE\b
      | DROP\s+(TABLE|INDEX|TRIGGER)\b
      | WITH\s+RECURSIVE\b
      | VACUUM\b
    )""",
    re.VERBOSE | re.DOTALL,
)
# SQLite's parser errors that say a text is no statement at all (others, "no such table" or a
# missing binding, come after the text was read as one).
NOT_SQL = ("syntax error", "incomplete input", "unrecognized token")


def parses_as_sql(text: str) -> bool:
    """Whether SQLite's own parser reads `text` (an f-string's fields as a name) as a statement."""
    statement = text.strip().replace("{}", "x")
    if statement.startswith("(") and statement.endswith(")"):
        statement = statement[1:-1]
    try:
        with closing(sqlite3.connect(":memory:")) as db:
            db.execute("EXPLAIN " + statement)
    except sqlite3.OperationalError as exc:
        return not any(why in str(exc) for why in NOT_SQL)
    except sqlite3.ProgrammingError:  # parsed, then short of bindings, or more than one statement
        return True
    return True


def sql_shaped(text: str) -> bool:
    """SQL in this project's capitals, or the same shapes in small letters that SQLite parses.

    A sentence opens with a capital ("Select a speaker from the list"), and small-letter prose
    rarely parses ("select the speakers you mean from this list" does not).
    """
    if SQL_SHAPED.match(text):
        return True
    small = re.match(r"\s*\(?\s*[a-z]+\b", text) is not None
    return small and bool(SQL_SHAPED.match(text.upper())) and parses_as_sql(text)


def text_of(node: ast.AST) -> str | None:
    """The text a string expression spells: a literal, an f-string (its fields as `{}`), or a sum
    of those; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(text_of(v) or "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = text_of(node.left), text_of(node.right)
        if left is not None or right is not None:
            return (left or "{}") + (right or "{}")
    return None


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and its functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def sql_in(source: str, filename: str) -> list[str]:
    """'file:line what' for each place in one module's source that holds or runs SQL."""
    tree = ast.parse(source, filename)
    prose = docstrings(tree)
    found: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name in RUNS_SQL:
                found.setdefault(node.lineno, f".{name}() runs SQL")
            elif name in QUERIES and node.args and text_of(node.args[0]) is not None:
                found.setdefault(node.lineno, f".{name}() is given a query")
        if id(node) in prose:
            continue
        text = text_of(node)
        if text is not None and sql_shaped(text):
            found.setdefault(node.lineno, f"SQL in a string: {text.strip()[:60]!r}")
    return [f"{filename}:{line} {what}" for line, what in sorted(found.items())]


def modules_outside_the_store() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if STORE not in p.parents]


def test_no_sql_outside_the_store() -> None:
    modules = modules_outside_the_store()
    assert len(modules) > 50  # the walk found the package
    found = []
    for path in modules:
        found += sql_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "SQL outside assistant/store/ (give the store a method for it):\n" + "\n".join(found)


def test_the_check_finds_sql_and_leaves_prose_alone() -> None:
    source = '''
"""A module docstring: SELECT id FROM utterances, then VACUUM."""

def f(store, table, n):
    """DELETE FROM nodes is what this would do, said in prose."""
    # A comment: INSERT INTO speakers (name) VALUES (?)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    rows = store.db.all("select id from nodes")
    x = (
        "SELECT u.id FROM utterances u "
        "WHERE u.time >= ?"
    )
    y = f"DELETE FROM {table}"
    z = "UPDATE nodes " + "SET text = ?"
    w = "(SELECT block_id FROM pending_utterances)"
    label = "Select a speaker from the list"
    ok = "Forget everything said since Monday"
    query = "select id from nodes where time >= ?"
    hint = "select the speakers you mean from this list"
    return np.all(rows), any(r for r in rows)
'''
    assert sql_in(source, "m.py") == [
        "m.py:7 .execute() runs SQL",
        "m.py:8 .all() is given a query",
        "m.py:10 SQL in a string: 'SELECT u.id FROM utterances u WHERE u.time >= ?'",
        "m.py:13 SQL in a string: 'DELETE FROM {}'",
        "m.py:14 SQL in a string: 'UPDATE nodes SET text = ?'",
        "m.py:15 SQL in a string: '(SELECT block_id FROM pending_utterances)'",
        "m.py:18 SQL in a string: 'select id from nodes where time >= ?'",
    ]
