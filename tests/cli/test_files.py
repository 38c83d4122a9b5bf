"""Output files are all-or-nothing and readable like any new file (not a temp file's 0600)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from registre.cli.files import write_atomically


def test_written_file_has_the_umask_mode_and_the_whole_text(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        target = tmp_path / "t.html"
        write_atomically(target, ["<p>", "hello", "</p>"])
    finally:
        os.umask(old)
    assert target.read_text(encoding="utf-8") == "<p>hello</p>"
    assert target.stat().st_mode & 0o777 == 0o644


def test_failure_midway_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "t.md"
    target.write_text("before", encoding="utf-8")

    def chunks() -> Iterator[str]:
        yield "half"
        raise RuntimeError("renderer failed")

    with pytest.raises(RuntimeError, match="renderer failed"):
        write_atomically(target, chunks())
    assert target.read_text(encoding="utf-8") == "before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.md"]
