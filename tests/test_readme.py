"""The README's Python example runs as written, and the names it shows are the public API."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_python_api_example_runs_as_written(tmp_path: Path) -> None:
    (example,) = python_examples()
    example += (
        "\nassert batch.all_accepted and batch.accepted == ('ev-1',)"
        "\nassert call.kind == 'model.call' and call.body['shape'] == 'openai.chat'"
        "\nassert request == thread.replay_request(call.seq) and request['messages']"
        "\nassert note.startswith('acme.example/ledger/q3-review\\n4\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "agent.db").exists()


def test_the_example_imports_only_public_names() -> None:
    (example,) = python_examples()
    imports = re.findall(r"^from (\S+) import (.+)$", example, re.M)
    assert imports, example
    for module, names in imports:
        exported = __import__(module, fromlist=["__all__"]).__all__
        for name in names.split(","):
            assert name.strip() in exported, (module, name)
