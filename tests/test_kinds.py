"""The one table of entry kinds (registre.kinds) agrees with the specification and with every
floor that checks or folds entries."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from registre import kinds
from registre.attest.entries import ENTRY_KINDS, LIFECYCLE_KINDS, SCHEMAS
from registre.lifecycle import KINDS as LIFECYCLE_CODEC_KINDS

SPEC = (Path(__file__).resolve().parents[1] / "specs" / "entries.md").read_text("utf-8")


def test_the_table_is_the_specification_s_list_of_kinds() -> None:
    section = SPEC.split("## 3. Kinds", 1)[1].split("Anything else", 1)[0]
    named = set(re.findall(r"`([a-z]+(?:\.[a-z]+)?)`", section)) - {"lifecycle.md"}
    assert named == kinds.KIND_NAMES
    assert len(kinds.ENTRY_KINDS) == len(kinds.KIND_NAMES) == 17


def test_attest_checks_exactly_the_table_s_kinds() -> None:
    assert ENTRY_KINDS == kinds.KIND_NAMES
    assert set(SCHEMAS) == {k.name for k in kinds.ENTRY_KINDS if k.folded_by == "context"}
    assert set(kinds.LIFECYCLE_KIND_NAMES) == LIFECYCLE_KINDS


def test_lifecycle_defines_the_bodies_of_the_lifecycle_kinds() -> None:
    assert tuple(LIFECYCLE_CODEC_KINDS) == kinds.LIFECYCLE_KIND_NAMES
    for kind in kinds.ENTRY_KINDS:
        assert (kind.folded_by == "lifecycle") == (kind.schema == "5, lifecycle.md"), kind


def test_every_constant_is_in_the_table() -> None:
    constants = {
        value for name, value in vars(kinds).items() if name.isupper() and isinstance(value, str)
    }
    assert constants == kinds.KIND_NAMES


ROOT = Path(__file__).resolve().parents[1] / "registre"
# Floors that name entry kinds through this table; registre/context, registre/bench/real,
# registre/ledger/context and the ledger's search modules are being rewritten elsewhere.
NAMED_THROUGH_THE_TABLE = ("adapters", "cli", "report", "ledger")
NOT_YET = ("ledger/context/", "ledger/store/search")
# The same word meaning something else: a pin's kind (registre.lifecycle's PIN_KINDS).
OTHER_MEANING = {("adapters/mcp_tools.py", "decision")}


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_the_floors_above_write_no_kind_as_a_string_literal() -> None:
    literals = []
    for floor in NAMED_THROUGH_THE_TABLE:
        for path in sorted((ROOT / floor).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name.startswith(NOT_YET):
                continue
            tree = ast.parse(path.read_text("utf-8"))
            docstrings = _docstrings(tree)
            literals += [
                f"{name}:{node.lineno}: {node.value!r}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant)
                and node.value in kinds.KIND_NAMES
                and id(node) not in docstrings
                and (name, node.value) not in OTHER_MEANING
            ]
    assert literals == [], "use the constants of registre.kinds"
