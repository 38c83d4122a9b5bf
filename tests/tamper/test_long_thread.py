"""Model-call forgeries deep in a long thread: the verifier carries the working context
forward instead of rebuilding it per call (attest.projection_stream), and must still catch
one lie among hundreds of honest calls, with that call's own error and seq."""

from __future__ import annotations

from registre.attest.projection_digest import ContextDigestMismatchError
from tests.bundles import Thread
from tests.long_threads import long_thread
from tests.tamper.helpers import fails, passes

CALLS = 500
BUDGET = 2000
"""A budget that compacts every few dozen entries: the 500th call comes after many
compactions, each of which rebuilds the carried parts."""


def model_calls(thread: Thread) -> list[int]:
    return [entry.seq for entry in thread.entries if entry.kind == "model.call"]


def test_long_thread_passes() -> None:
    thread = long_thread(600, BUDGET)
    report = passes(thread.full_bundle())
    checked = " ".join(report.step(6).checked)
    assert f"{len(model_calls(thread))} model-call projection digests reproduced" in checked


def test_forged_digest_on_the_500th_model_call_fail() -> None:
    forged = long_thread(CALLS * 6, BUDGET, forge_call=CALLS)
    calls = model_calls(forged)
    assert len(calls) > CALLS  # honest calls follow the forged one
    seq = calls[CALLS - 1]
    fails(forged.full_bundle(), ContextDigestMismatchError, step=6, seq=seq)
