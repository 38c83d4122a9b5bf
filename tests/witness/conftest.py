"""Witness test fixtures: real witness servers as subprocesses on loopback, and helpers.

``start_witness(name)`` makes a witness state directory (key, state file, the test log
followed) and starts ``registre witness serve --listen 127.0.0.1:0`` as a child process,
reading the port it bound from its first line of output. Every process started is stopped at
teardown (SIGTERM, then SIGKILL if it has not exited within 10 s). Waits are bounded.

``serving_witness(witness)`` runs the same server in-process (an event loop in a background
thread) on a free loopback port, for tests that need to set its timeouts.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from registre.attest.notes import CosignatureSigner, Signer
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.witness.client import WitnessEndpoint
from registre.witness.protocol import AddCheckpointRequest
from registre.witness.server import WitnessServer
from registre.witness.state import WitnessState
from registre.witness.witness import Witness
from tests.db_fixtures import *  # noqa: F403 (the ledger fixtures, both engines)
from tests.ledger.helpers import turn

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
SERVE = [sys.executable, "-c", "from registre.cli import main; main()", "witness", "serve"]


@dataclass
class WitnessProcess:
    """A running witness server and where its state and logs are."""

    name: str
    signer: CosignatureSigner
    state_dir: Path
    url: str
    process: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path
    log_offset: int = field(default=0)

    @property
    def endpoint(self) -> WitnessEndpoint:
        return WitnessEndpoint(self.signer.verifier(), self.url)

    @property
    def spec(self) -> str:
        return f"{self.signer.vkey()}@{self.url}"

    def post(self, body: bytes, path: str = "/add-checkpoint", method: str = "POST") -> Answer:
        return http_request(self.url, body, path=path, method=method)

    def log_lines(self, at_least: int = 0) -> list[str]:
        """Request log lines written so far, waiting (up to 5 s) until there are
        ``at_least``: a line is written just after its answer is sent."""
        deadline = time.monotonic() + 5.0
        while True:
            text = self.stderr_path.read_text(encoding="utf-8", errors="replace")
            lines = [
                line for line in text.splitlines() if " witness " in line and "status=" in line
            ]
            if len(lines) >= at_least or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)

    def stop(self) -> int:
        """SIGTERM, wait (bounded); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT)
            raise AssertionError(f"witness {self.name} did not stop on SIGTERM") from None


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes


def http_request(
    url: str, body: bytes, *, path: str = "/add-checkpoint", method: str = "POST"
) -> Answer:
    """One HTTP request on a fresh connection (stdlib client), 10 s timeout."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "text/plain"})
        response = conn.getresponse()
        return Answer(response.status, response.getheader("Content-Type", ""), response.read())
    finally:
        conn.close()


@contextmanager
def serving_witness(witness: Witness, **options: float) -> Iterator[str]:
    """Serve ``witness`` (a :class:`WitnessServer` with ``options``) on a free loopback port
    from an event loop in a background thread; yield its URL. Stopped (bounded waits) on
    exit; the witness's state is left open."""
    loop = asyncio.new_event_loop()
    sock = socket.create_server(("127.0.0.1", 0))
    server = WitnessServer(witness, **options)  # type: ignore[arg-type]
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    try:
        asyncio.run_coroutine_threadsafe(server.start(sock), loop).result(timeout=10)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        runner.join(timeout=10)
        loop.close()
        sock.close()


@contextmanager
def read_only_file(path: Path) -> Iterator[None]:
    """``path`` cannot be written by this process while the block runs: mode 0444, or, for
    root (whom modes do not stop), the immutable attribute (``chattr +i``; the test is
    skipped where that is not allowed)."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    made = chattr and subprocess.run([chattr, "+i", str(path)], capture_output=True, timeout=10)
    if not made or made.returncode != 0:
        pytest.skip("running as root and cannot make a file immutable (chattr +i) here")
    try:
        yield
    finally:
        subprocess.run([str(chattr), "-i", str(path)], check=True, timeout=10)


def make_witness_state(state_dir: Path, name: str, follows: list[tuple[str, str]]) -> None:
    """What `registre witness init` and `follow` make, done in-process (they have their own
    CLI tests): a key file, a state file, the followed (vkey, prefix) pairs."""
    state_dir.mkdir(parents=True, exist_ok=True)
    CosignatureSigner.generate(name).save(state_dir / "witness.key")
    state = WitnessState.create(state_dir / "witness.db")
    for vkey, prefix in follows:
        state.follow(vkey, prefix)
    state.close()


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRE_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


StartWitness = Callable[..., WitnessProcess]


@pytest.fixture
def start_witness(tmp_path: Path, signer: Signer) -> Iterator[StartWitness]:
    """Factory: ``start_witness("w1")`` -> a running witness following the test log key.
    ``state_dir=`` reuses an existing state directory (a restart)."""
    started: list[WitnessProcess] = []

    def start(name: str, *, state_dir: Path | None = None) -> WitnessProcess:
        if state_dir is None:
            state_dir = tmp_path / name
            make_witness_state(
                state_dir, f"witness.test/{name}", [(signer.vkey(), f"{signer.name}/")]
            )
        signer_w = CosignatureSigner.load(state_dir / "witness.key")
        run = len(started)
        stdout_path = tmp_path / f"{name}.{run}.out"
        stderr_path = tmp_path / f"{name}.{run}.err"
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            process = subprocess.Popen(
                [*SERVE, "--state-dir", str(state_dir), "--listen", "127.0.0.1:0"],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=_child_env(),
            )
        deadline = time.monotonic() + START_TIMEOUT
        url = None
        while url is None:
            for line in stdout_path.read_text(encoding="utf-8").splitlines():
                if " listening on " in line:
                    url = line.rsplit(" ", 1)[1]
            if url is None:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    raise AssertionError(
                        f"witness {name} did not start: {stderr_path.read_text()[-2000:]}"
                    )
                time.sleep(0.05)
        witness = WitnessProcess(name, signer_w, state_dir, url, process, stdout_path, stderr_path)
        started.append(witness)
        return witness

    yield start
    for witness in started:
        if witness.process.poll() is None:
            witness.process.send_signal(signal.SIGTERM)
            try:
                witness.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                witness.process.kill()
                witness.process.wait(timeout=STOP_TIMEOUT)


def grow(thread: Thread, count: int, tag: str = "entry") -> None:
    """Append ``count`` turns to ``thread``."""
    start = thread.head().size
    thread.append_many([turn(f"{tag} {start + i}") for i in range(count)])


def request_body(thread: Thread, old_size: int, new_size: int | None = None) -> bytes:
    """An add-checkpoint body for ``thread``'s checkpoint at ``new_size`` from ``old_size``."""
    stored = thread.checkpoint(new_size)
    proof = thread.prove_consistency(old_size, stored.size).hashes
    return AddCheckpointRequest.build(old_size, proof, stored.note).encode()


@pytest.fixture
def log_ledger(tmp_path: Path, signer: Signer) -> Iterator[Ledger]:
    """A SQLite ledger of the test log (the end-to-end tests that need both engines take
    ``ledger`` instead)."""
    opened = Ledger.open(f"sqlite:///{tmp_path / 'log.db'}", signer)
    try:
        yield opened
    finally:
        opened.close()
