"""registre.witness.client: the log side against misbehaving witnesses (in-process HTTP servers
on loopback), and the ``VKEY@URL`` witness spec."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from aiohttp import web

from registre.attest.errors import BadKeyError
from registre.attest.notes import CosignatureSigner, Signer
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.witness.client import WitnessEndpoint, WitnessOutcome, collect_cosignatures
from registre.witness.errors import WitnessQuorumError, WitnessSpecError
from registre.witness.state import WitnessState
from registre.witness.witness import Witness
from tests.witness.conftest import grow, serving_witness

KEY = CosignatureSigner.from_seed("witness.test/fake", bytes([11]) * 32)
OTHER = CosignatureSigner.from_seed("witness.test/other", bytes([12]) * 32)
Handler = Callable[[web.Request], Awaitable[web.Response]]


@contextmanager
def serving(app: web.Application) -> Iterator[str]:
    """Run ``app`` on 127.0.0.1 (a free port) in a background thread; yield its URL."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    ready = threading.Event()
    url: list[str] = []

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        url.append(f"http://{host}:{port}")
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=10)
    assert ready.wait(timeout=10)
    try:
        yield url[0]
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def fake(handler: Handler) -> web.Application:
    app = web.Application()
    app.router.add_post("/add-checkpoint", handler)
    return app


@pytest.fixture
def thread(log_ledger: Ledger) -> Thread:
    created = log_ledger.create_thread("t1")
    grow(created, 6)
    return created


def ask(
    thread: Thread, witnesses: list[WitnessEndpoint], quorum: int = 0, timeout: float = 2.0
) -> list[WitnessOutcome]:
    stored = thread.checkpoint()
    return collect_cosignatures(
        stored.note,
        lambda old: thread.prove_consistency(old, stored.size).hashes,
        witnesses,
        quorum,
        timeout=timeout,
    ).outcomes


def text_of(note: str) -> str:
    return note[: note.index("\n\n") + 1]


def one_problem(thread: Thread, handler: Handler, timeout: float = 2.0) -> str:
    with serving(fake(handler)) as url:
        (outcome,) = ask(thread, [WitnessEndpoint(KEY.verifier(), url)], timeout=timeout)
    assert outcome.cosignature is None and outcome.problem is not None
    return outcome.problem


def test_cosignature_from_another_key_ignored(thread: Thread) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=OTHER.cosign(text_of(thread.checkpoint().note), 1))

    assert "without a cosignature from its pinned key" in one_problem(thread, handler)


def test_cosignature_over_another_checkpoint_fail(thread: Thread) -> None:
    async def handler(request: web.Request) -> web.Response:
        forged = text_of(thread.checkpoint().note).replace("\n6\n", "\n7\n")
        return web.Response(text=KEY.cosign(forged, 1))

    assert "does not verify" in one_problem(thread, handler)


def test_server_error_reported_with_status(thread: Thread) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=500, text="boom\nmore")

    assert one_problem(thread, handler) == "refused with HTTP 500: boom"


def test_malformed_409_reported(thread: Thread) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=409, text="many")

    assert "409 answer body" in one_problem(thread, handler)


def test_409_twice_reported_after_one_retry(thread: Thread) -> None:
    sizes = iter([2, 4])
    seen: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((await request.read()).split(b"\n", 1)[0])
        return web.Response(status=409, text=f"{next(sizes)}\n")

    assert one_problem(thread, handler) == "409 twice; it now holds size 4"
    assert seen == [b"old 0", b"old 2"]


def test_witness_ahead_of_ledger_reported(thread: Thread) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=409, text="9\n")

    assert "beyond this checkpoint's size 6" in one_problem(thread, handler)


def test_witness_holding_other_root_at_same_size_reported(thread: Thread) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=409, text="0\n")  # it holds what we said, yet conflicts

    assert "different history" in one_problem(thread, handler)


def test_witness_holding_other_root_answering_422_reported(thread: Thread) -> None:
    # the current C2SP text: same size, another root is 422
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=422, text="this witness holds another root")

    stored = thread.checkpoint()
    with serving(fake(handler)) as url:
        (outcome,) = collect_cosignatures(
            stored.note,
            lambda old: thread.prove_consistency(old, stored.size).hashes,
            [WitnessEndpoint(KEY.verifier(), url)],
            0,
            known_sizes={KEY.verifier().vkey(): stored.size},
        ).outcomes
    assert outcome.problem == (
        f"it holds another checkpoint of size 6 for {thread.origin} (422): this log showed it "
        "a different history"
    )


def test_witness_holding_other_root_answering_empty_409_reported(thread: Thread) -> None:
    # transparency-dev/witness (built on the text before July 2026): 409, no size body
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=409)

    assert "(409): this log showed it a different history" in one_problem(thread, handler)


def test_slow_witness_times_out(thread: Thread) -> None:
    async def handler(request: web.Request) -> web.Response:
        await asyncio.sleep(1.0)
        return web.Response(text="late")

    assert one_problem(thread, handler, timeout=0.3).startswith("unreachable")


def test_closed_port_reported_unreachable(thread: Thread) -> None:
    async def never(request: web.Request) -> web.Response:
        raise AssertionError("not reached")

    with serving(fake(never)) as url:
        pass  # the server is gone once the block ends: nothing listens on that port
    (outcome,) = ask(thread, [WitnessEndpoint(KEY.verifier(), url)])
    assert str(outcome.problem).startswith("unreachable")


def test_quorum_counts_only_verified_cosignatures(
    thread: Thread, tmp_path: Path, signer: Signer
) -> None:
    state = WitnessState.create(tmp_path / "w.db")
    state.follow(signer.vkey(), f"{signer.name}/")

    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=403, text="not for you")

    with serving_witness(Witness(KEY, state)) as good, serving(fake(refuse)) as bad:
        witnesses = [WitnessEndpoint(KEY.verifier(), good), WitnessEndpoint(OTHER.verifier(), bad)]
        with pytest.raises(WitnessQuorumError, match="1 of 2 witness") as info:
            ask(thread, witnesses, quorum=2)
        assert len(info.value.result.cosignatures) == 1  # type: ignore[attr-defined]
        assert "HTTP 403: not for you" in str(info.value)
        stored = thread.checkpoint()
        assert len(ask(thread, witnesses, quorum=1)) == 2  # 1 of 2 is enough for quorum 1
        assert state.latest(stored.note.split("\n", 1)[0]).size == 6
    state.close()


def test_witness_policy_refused(thread: Thread) -> None:
    one = WitnessEndpoint(KEY.verifier(), "http://127.0.0.1:1")
    with pytest.raises(WitnessSpecError, match="quorum 2"):
        ask(thread, [one], quorum=2)
    with pytest.raises(WitnessSpecError, match="share a key"):
        ask(thread, [one, one], quorum=1)


def test_witness_spec_parsed() -> None:
    spec = f"{KEY.vkey()}@http://127.0.0.1:7380/prefix/"
    endpoint = WitnessEndpoint.parse(spec)
    assert endpoint.name == "witness.test/fake"
    assert endpoint.endpoint == "http://127.0.0.1:7380/prefix/add-checkpoint"


@pytest.mark.parametrize(
    "spec",
    [
        "http://127.0.0.1:7380",
        f"{KEY.vkey()}",
        f"{KEY.vkey()}@ftp://host/",
        f"{KEY.vkey()}@http://",
        f"{KEY.vkey()}@http://host/?q=1",
    ],
)
def test_bad_witness_spec_fail(spec: str) -> None:
    with pytest.raises(WitnessSpecError):
        WitnessEndpoint.parse(spec)


def test_log_key_given_as_witness_key_fail() -> None:
    log_key = Signer.from_seed("example.com/log", bytes(32)).vkey()
    with pytest.raises(BadKeyError, match="cosignature/v1"):
        WitnessEndpoint.parse(f"{log_key}@http://127.0.0.1:7380")
