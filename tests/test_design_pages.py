"""docs/design: one dated page per decision, each listed in its README, each one a docstring
names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design"


def test_every_design_page_is_dated_and_listed() -> None:
    index = (DESIGN / "README.md").read_text("utf-8")
    pages = sorted(p.name for p in DESIGN.glob("*.md") if p.name != "README.md")
    assert pages
    for page in pages:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md", page), page
        assert f"]({page})" in index, f"{page} is not listed in docs/design/README.md"


def test_every_design_page_a_docstring_names_exists() -> None:
    named = set()
    for module in (ROOT / "registre").rglob("*.py"):
        named |= set(re.findall(r"docs/design/[\w.-]+\.md", module.read_text("utf-8")))
    assert named
    for path in named:
        assert (ROOT / path).is_file(), path
