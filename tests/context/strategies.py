"""Hypothesis strategies for the context tests: random policies and random thread scripts
(turns, tool call/result pairs of random sizes, parallel calls, pins and unpins, decisions,
evidence, model calls), replayed through :class:`ThreadBuilder`."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from registre.context import ContextBudgetError, Policy
from tests.context.threads import ThreadBuilder

WORDS = [
    "the",
    "parser",
    "fails",
    "when",
    "namespace",
    "packages",
    "lack",
    "an",
    "init",
    "file",
    "so",
    "we",
    "patch",
    "modutils",
    "astroid",
    "pylint",
    "import",
    "path",
    "module",
    "spec",
    "finder",
    "error",
    "traceback",
    "test",
]

Op = tuple[str, int, int, bool]


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    """Policies small enough that compactions happen often in short threads."""
    high = draw(st.integers(500, 1000))
    return Policy(
        budget_tokens=draw(st.integers(800, 3000)),
        high_water_permille=high,
        low_water_permille=draw(st.integers(200, high)),
        keep_recent_turns=draw(st.integers(0, 4)),
        bulky_tool_output_tokens=draw(st.integers(30, 400)),
        summary_share_permille=draw(st.integers(300, 500)),
        version=draw(st.sampled_from((1, 2))),
    )


_OPS = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 2), st.integers(1, 40), st.booleans()),
    st.tuples(st.just("tool"), st.integers(0, 3), st.integers(1, 60), st.booleans()),
    st.tuples(st.just("parallel"), st.integers(0, 3), st.integers(1, 20), st.booleans()),
    st.tuples(st.just("pin"), st.integers(0, 3), st.integers(0, 12), st.booleans()),
    st.tuples(st.just("unpin"), st.integers(0, 9), st.integers(0, 0), st.booleans()),
    st.tuples(st.just("decision"), st.integers(0, 0), st.integers(1, 20), st.booleans()),
    st.tuples(st.just("evidence"), st.integers(0, 0), st.integers(1, 20), st.booleans()),
    st.tuples(st.just("model"), st.integers(0, 0), st.integers(0, 0), st.booleans()),
)


def scripts(min_size: int = 10, max_size: int = 80) -> st.SearchStrategy[list[Op]]:
    """Random thread scripts: lists of operations for :func:`run_script`."""
    return st.lists(_OPS, min_size=min_size, max_size=max_size)


@dataclass
class Outcome:
    """A built thread, and the budget error that stopped it early, if any."""

    builder: ThreadBuilder
    stopped_by: ContextBudgetError | None


def text(seed: int, words: int, question: bool = False) -> str:
    """Deterministic filler text of ``words`` words."""
    chosen = [WORDS[(seed * 7 + index * 3) % len(WORDS)] for index in range(max(1, words))]
    return " ".join(chosen) + ("?" if question else ".")


def run_script(
    script: list[Op], policy: Policy, *, on_step: object = None, compact: bool = True
) -> Outcome:
    """Build the thread ``script`` describes; ``on_step(builder)`` is called after every
    operation (and the compaction it may trigger). A ContextBudgetError ends the thread."""
    builder = ThreadBuilder(policy=policy, compact=compact)
    pins: list[str] = []
    try:
        for step, (name, small, size, flag) in enumerate(script):
            _perform(builder, pins, step, name, small, size, flag)
            if callable(on_step):
                on_step(builder)
    except ContextBudgetError as error:
        return Outcome(builder, error)
    return Outcome(builder, None)


def _perform(
    builder: ThreadBuilder, pins: list[str], step: int, name: str, small: int, size: int, flag: bool
) -> None:
    if name == "turn":
        role = ("user", "assistant", "system")[small]
        builder.turn(role, text(step, size, question=flag))
    elif name == "tool":
        output = "\n".join(text(step + line, 8) for line in range(size))
        builder.tool(
            ("bash", "grep", "python", "read")[small], text(step, 3), output, is_error=flag
        )
    elif name == "parallel":
        builder.parallel_tools(
            small + 2, lambda k: "\n".join(text(step + k + n, 6) for n in range(size))
        )
    elif name == "pin":
        kind = ("definition", "decision", "task_parameter", "open_question")[small]
        pin_id = builder.pin(kind, text(step, size) if size else "   ")
        if pin_id is not None:
            pins.append(pin_id)
    elif name == "unpin":
        if pins:
            builder.unpin(pins.pop(small % len(pins)), "done" if not flag else "")
    elif name == "decision":
        builder.decision(text(step, size))
    elif name == "evidence":
        builder.evidence(text(step, size))
    else:
        builder.model_call()
