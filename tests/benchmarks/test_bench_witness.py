"""Witness throughput: add-checkpoint requests served on loopback, beside their parts.

Group ``witness n=N`` (N from ``bench_sizes()``: the size of the log's tree, so the
consistency proofs have their real length, ~log2 N hashes):

- ``registre add-checkpoint http`` (ours): one request per round to a real witness process
  (``registre witness serve``) over a keep-alive loopback connection. Each request advances
  the log by one leaf from the size the witness holds, so every round is a full check,
  cosignature and durable SQLite commit (WAL, ``synchronous=FULL``).
- ``registre add-checkpoint http 8 clients``: 8 origins of one log, one client thread each,
  one request per origin per round; the median is per round of 8 requests.
- Beside it, in-process, the parts of one request: ``witness in-process`` (parse, checks,
  cosign, commit: everything but HTTP), ``log signature check`` (opening the note against the
  log key), ``proof check`` (``verify_consistency``) and ``cosign`` (``cosignature/v1``).

The HTTP test records in ``extra_info`` the requests per second and the share of a request's
time spent in the proof check and in the two signature operations (measured in-process over
the same requests). Measured, never asserted.
"""

from __future__ import annotations

import http.client
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from registre.attest.notes import Checkpoint, CosignatureSigner, Signer, open_note, sign_checkpoint
from registre.attest.tree import (
    MemoryHashSource,
    consistency_proof,
    leaf_hash,
    root_at,
    verify_consistency,
)
from registre.witness.protocol import AddCheckpointRequest
from registre.witness.state import WitnessState
from registre.witness.witness import Witness
from tests.benchmarks.conftest import bench_sizes
from tests.witness.conftest import SERVE, make_witness_state

LOG = Signer.from_seed("registre.bench/log", bytes(range(32)))
COSIGNER = CosignatureSigner.from_seed("witness.bench/w", bytes(range(1, 33)))
REQUESTS = 400  # prepared per origin: enough for pytest-benchmark's rounds below
ROUNDS = 300
CLIENTS = 8
SIZES = bench_sizes()


@dataclass(frozen=True)
class Step:
    """One add-checkpoint request and what the witness checks in it."""

    body: bytes
    note: str
    text: str
    old_size: int
    new_size: int
    proof: list[bytes]
    old_root: bytes
    new_root: bytes


def _steps(tree: MemoryHashSource, origin: str, start: int, count: int) -> list[Step]:
    """``count`` requests growing ``origin`` one leaf at a time from ``start`` leaves; the
    first one starts from 0 (the witness holds nothing yet)."""
    steps = []
    old = 0
    for new in range(start, start + count):
        root = root_at(tree, new)
        note = sign_checkpoint(Checkpoint(origin, new, root), LOG)
        proof = consistency_proof(tree, old, new) if old else []
        body = AddCheckpointRequest.build(old, proof, note).encode()
        text = note[: note.index("\n\n") + 1]
        steps.append(Step(body, note, text, old, new, proof, root_at(tree, old), root))
        old = new
    return steps


_TREES: dict[int, MemoryHashSource] = {}


def _tree(size: int) -> MemoryHashSource:
    if size not in _TREES:
        _TREES[size] = MemoryHashSource(
            leaf_hash(i.to_bytes(8, "big")) for i in range(size + REQUESTS)
        )
    return _TREES[size]


class _Server:
    """A witness process on a free loopback port, stopped with SIGTERM."""

    def __init__(self, state_dir: Path) -> None:
        out = state_dir.parent / "serve.out"
        with open(out, "wb") as stdout:
            self.process = subprocess.Popen(
                [*SERVE, "--state-dir", str(state_dir), "--listen", "127.0.0.1:0"],
                stdout=stdout,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 30
        while True:
            lines = [line for line in out.read_text().splitlines() if " listening on " in line]
            if lines:
                self.port = int(lines[0].rsplit(":", 1)[1])
                return
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError("the witness did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[_Server]:
    state_dir = tmp_path / "witness"
    make_witness_state(state_dir, "witness.bench/w", [(LOG.vkey(), f"{LOG.name}/")])
    running = _Server(state_dir)
    try:
        yield running
    finally:
        running.stop()


def _poster(port: int) -> Callable[[bytes], int]:
    """A keep-alive client (one connection per calling thread): body -> status."""
    local = threading.local()

    def post(body: bytes) -> int:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/add-checkpoint", body=body)
        response = conn.getresponse()
        response.read()
        return response.status

    return post


def _median_seconds(function: Callable[[Step], object], steps: list[Step]) -> float:
    times = []
    for step in steps:
        begin = time.perf_counter()
        function(step)
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


@pytest.mark.parametrize("size", SIZES)
def test_registre_add_checkpoint_http(benchmark: Any, server: _Server, size: int) -> None:
    benchmark.group = f"witness n={size}"
    steps = iter(_steps(_tree(size), f"{LOG.name}/t", size, REQUESTS))
    post = _poster(server.port)
    assert post(next(steps).body) == 200  # first contact (old 0) outside the timing

    def setup() -> tuple[tuple[bytes], dict[str, Any]]:
        return (next(steps).body,), {}

    status = benchmark.pedantic(post, setup=setup, rounds=ROUNDS, iterations=1)
    assert status == 200
    if benchmark.stats is None:  # --benchmark-disable: nothing was timed
        return
    request_s = benchmark.stats.stats.median
    sample = _steps(_tree(size), f"{LOG.name}/x", size, 200)[1:]
    verifier = LOG.verifier()
    proof_s = _median_seconds(
        lambda s: verify_consistency(s.old_size, s.new_size, s.proof, s.old_root, s.new_root),
        sample,
    )
    log_signature_s = _median_seconds(lambda s: open_note(s.note, [verifier]), sample)
    cosign_s = _median_seconds(lambda s: COSIGNER.cosign(s.text, 1_700_000_000), sample)
    benchmark.extra_info.update(
        requests_per_s=round(1 / request_s, 1),
        proof_check_share=round(proof_s / request_s, 4),
        signing_share=round((log_signature_s + cosign_s) / request_s, 4),
        log_signature_check_share=round(log_signature_s / request_s, 4),
        cosign_share=round(cosign_s / request_s, 4),
    )


@pytest.mark.parametrize("size", SIZES)
def test_registre_add_checkpoint_http_8_clients(benchmark: Any, server: _Server, size: int) -> None:
    benchmark.group = f"witness n={size}"
    tree = _tree(size)
    origins = [iter(_steps(tree, f"{LOG.name}/c{i}", size, REQUESTS)) for i in range(CLIENTS)]
    post = _poster(server.port)
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        assert set(pool.map(post, [next(o).body for o in origins])) == {200}

        def round_of_requests(bodies: list[bytes]) -> set[int]:
            return set(pool.map(post, bodies))

        def setup() -> tuple[tuple[list[bytes]], dict[str, Any]]:
            return ([next(o).body for o in origins],), {}

        statuses = benchmark.pedantic(round_of_requests, setup=setup, rounds=ROUNDS, iterations=1)
    assert statuses == {200}
    if benchmark.stats is not None:
        benchmark.extra_info["requests_per_s"] = round(CLIENTS / benchmark.stats.stats.median, 1)


@pytest.mark.parametrize("size", SIZES)
def test_witness_in_process(benchmark: Any, tmp_path: Path, size: int) -> None:
    benchmark.group = f"witness n={size}"
    state = WitnessState.create(tmp_path / "witness.db")
    state.follow(LOG.vkey(), f"{LOG.name}/")
    witness = Witness(COSIGNER, state)
    steps = iter(_steps(_tree(size), f"{LOG.name}/t", size, REQUESTS))
    assert witness.handle(next(steps).body).status == 200

    def setup() -> tuple[tuple[bytes], dict[str, Any]]:
        return (next(steps).body,), {}

    answer = benchmark.pedantic(witness.handle, setup=setup, rounds=ROUNDS, iterations=1)
    assert answer.status == 200
    state.close()


@pytest.mark.parametrize("size", SIZES)
def test_proof_check(benchmark: Any, size: int) -> None:
    benchmark.group = f"witness n={size}"
    step = _steps(_tree(size), f"{LOG.name}/t", size, 2)[1]
    benchmark(
        verify_consistency, step.old_size, step.new_size, step.proof, step.old_root, step.new_root
    )


@pytest.mark.parametrize("size", SIZES)
def test_log_signature_check(benchmark: Any, size: int) -> None:
    benchmark.group = f"witness n={size}"
    step = _steps(_tree(size), f"{LOG.name}/t", size, 2)[1]
    opened = benchmark(open_note, step.note, [LOG.verifier()])
    assert opened.text == step.text


@pytest.mark.parametrize("size", SIZES)
def test_cosign(benchmark: Any, size: int) -> None:
    benchmark.group = f"witness n={size}"
    step = _steps(_tree(size), f"{LOG.name}/t", size, 2)[1]
    line = benchmark(COSIGNER.cosign, step.text, 1_700_000_000)
    assert line.startswith("— witness.bench/w ")
