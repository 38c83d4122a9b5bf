"""The README's walk through the command line runs as written, in a fresh folder holding
only the repository's `examples/` (as in a fresh clone): every shell block of the section,
in order, each command exiting 0. The witness block runs with a free port in place of 7001,
and its background server is stopped at the end."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def walk_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## A walk through the command line", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_the_command_line_walk_runs_as_written(tmp_path: Path) -> None:
    blocks = walk_blocks()
    assert len(blocks) >= 4, "the walk lost a block"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    port = str(_free_port())
    script = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
    for block in blocks:
        block = block.replace("7001", port)
        if "witness serve" in block:
            block = block.replace(" &", " 2>serve.log &\nsleep 2\n", 1)
        script += block + "\n"
    env = {key: value for key, value in os.environ.items() if not key.startswith("REGISTRE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    assert (tmp_path / "t1.zip").exists() and (tmp_path / "claim.zip").exists()
