"""`registre mcp serve` as MCP clients start it: a real subprocess over stdio, and streamable
HTTP on a loopback port; and the command without the extra installed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from registre.attest.notes import Signer
from registre.ledger import Ledger

REGISTRE = [sys.executable, "-m", "registre"]


@pytest.fixture
def home(tmp_path: Path, db_url: str) -> tuple[Path, str]:
    """An operator key file and an initialised ledger at ``db_url`` (no thread yet)."""
    key = tmp_path / "operator.key"
    Signer.generate("mcp.test/log").save(key)
    Ledger.open(db_url, Signer.load(key)).close()
    return key, db_url


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRE_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


async def _session(client: Client) -> list[str]:
    texts = []
    for text in ("first", "second"):
        result = await client.call_tool("record_turn", {"role": "user", "text": text})
        assert not result.is_error, result.content
    bad = await client.call_tool("record_turn", {"role": "user", "text": 3})
    assert bad.is_error
    texts.append(bad.content[0].text)  # type: ignore[union-attr]
    verified = await client.call_tool("verify", {})
    assert not verified.is_error, verified.content
    texts.append(verified.content[0].text)  # type: ignore[union-attr]
    return texts


def test_the_stdio_server_records_and_verifies(home: tuple[Path, str]) -> None:
    key, db_url = home
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "registre",
            "mcp",
            "serve",
            "--db",
            db_url,
            "--key-file",
            str(key),
            "--thread",
            "s1",
        ],
        env=_environment(),
    )
    texts: list[str] = []

    async def main() -> None:
        async with Client(params) as client:
            texts.extend(await _session(client))

    anyio.run(main)
    bad, verified = texts
    assert bad == "record_turn: argument text: 3 is not of type 'string'"
    assert json.loads(verified)["size"] == 2
    with Ledger.open(db_url, create=False) as ledger:
        thread = ledger.thread("s1")
        assert [e.body["text"] for e in thread.entries()] == ["first", "second"]
        assert thread.origin == "mcp.test/log/s1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_http_server_listens_on_loopback_and_records(home: tuple[Path, str]) -> None:
    key, db_url = home
    port = _free_port()
    command = [
        *REGISTRE,
        "mcp",
        "serve",
        "--db",
        db_url,
        "--key-file",
        str(key),
        "--thread",
        "h1",
        "--listen",
        f"127.0.0.1:{port}",
    ]
    server = subprocess.Popen(command, env=_environment(), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        texts: list[str] = []

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                texts.extend(await _session(client))

        anyio.run(main)
        assert json.loads(texts[1])["size"] == 2
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert f"serving MCP at http://127.0.0.1:{port}/mcp" in (
        server.stderr.read() if server.stderr else ""
    )


def test_the_command_line_works_without_the_mcp_extra(tmp_path: Path) -> None:
    """With ``mcp`` unimportable, `registre --help` still lists the command, and `registre mcp
    serve` says which extra to install: one error line, one hint line, exit 2."""
    script = (
        "import sys; sys.modules['mcp'] = None\nfrom registre.cli import main\nmain(sys.argv[1:])\n"
    )
    helped = subprocess.run(
        [sys.executable, "-c", script, "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert helped.returncode == 0 and "mcp" in helped.stdout
    served = subprocess.run(
        [sys.executable, "-c", script, "mcp", "serve"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert served.returncode == 2
    assert served.stderr.splitlines() == [
        "registre: error: registre mcp serve needs the mcp package, which is not installed",
        "registre: hint: pip install 'registre[mcp]'",
    ]


def test_the_core_imports_no_agent_framework() -> None:
    script = (
        "import sys, registre.ledger, registre.attest, registre.cli, registre.lifecycle\n"
        "names = ('mcp', 'mcp_types', 'agents', 'claude_agent_sdk', 'registre.adapters')\n"
        "loaded = sorted(m for m in names if m in sys.modules)\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
