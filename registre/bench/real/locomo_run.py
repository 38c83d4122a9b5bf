"""The LoCoMo suite: each conversation replayed as a thread, its questions asked at the end,
the context of the call that answers each scored for registre and every baseline.

Protocol (``docs/design/2026-12-06-real-data-bench.md``), per conversation and budget:

1. a fresh thread; each session opens with its date line as a user turn
   (``[session N, DATE]``); speaker A's turns are user turns, speaker B's assistant turns,
   each written ``"Speaker: text"``; before each assistant turn, one model call
   (:class:`~registre.bench.real.replay.LedgerReplay`; the rolling summary advances at the
   same calls);
2. for each question chosen (:func:`~registre.bench.real.locomo.pick_questions`), the
   question appended as the next user turn on a copy of the ledger and the model call made
   there; each baseline builds its context for the same call from the same transcript
   (BM25's query: the question);
3. each context scored by its text (:mod:`registre.bench.real.text`): ``evidence`` -- the
   share of the question's evidence turns in the context; ``answer`` -- the share of the gold
   answer's content words among its words; ``fill`` -- tokens sent / budget. A refused call
   sends nothing and scores 0.

``whole`` is the whole conversation and the question, no budget: the ceiling of ``answer``
(``evidence`` is 1 by construction).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from registre.attest.notes import Signer
from registre.bench.real.locomo import (
    CATEGORIES,
    LocomoConversation,
    LocomoQuestion,
    LocomoSession,
    pick_questions,
)
from registre.bench.real.methods import BASELINES, Transcript
from registre.bench.real.replay import (
    Call,
    LedgerReplay,
    baseline_rooms,
    scratch_dir,
)
from registre.bench.real.tally import Tallies
from registre.bench.real.text import ContextText, answer_share, turn_present
from registre.context import Message, Policy, TokenCounter, default_counter

__all__ = ["LOCOMO_SCORES", "LocomoConfig", "run_locomo"]

LOCOMO_SCORES: Final = ("evidence", "answer", "fill")
"""The scores of a LoCoMo call, each a share 0..1 (module docstring)."""
REGISTRE: Final = "registre"


@dataclass(frozen=True)
class LocomoConfig:
    """``budgets`` in tokens; ``questions`` per conversation; ``conversations``: how many
    of the file's (None: all); ``categories`` asked; ``counter``: the token counter
    (default: registre's); ``show``: write the registre context of the last question of the
    first conversation at each budget into the work directory; ``baselines_full``: give the
    baselines the whole budget rather than the room registre's policy leaves beside its
    output reserve (``Policy.window_tokens``)."""

    budgets: tuple[int, ...] = (4000, 8000, 16000)
    questions: int = 30
    conversations: int | None = None
    categories: frozenset[int] = frozenset(CATEGORIES)
    counter: TokenCounter = field(default_factory=default_counter)
    show: bool = True
    baselines_full: bool = False


def run_locomo(
    conversations: Sequence[LocomoConversation],
    config: LocomoConfig,
    workdir: Path,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the suite (module docstring), the ledgers in a scratch directory
    (:func:`~registre.bench.real.replay.scratch_dir`), the contexts shown written into
    ``workdir``; return the results (``registre-bench-real/1``, suite ``locomo``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    chosen = list(conversations)[: config.conversations]
    signer = Signer.generate("bench")
    tallies = Tallies()
    whole = Tallies()
    replayed = Tallies()
    details: list[dict[str, Any]] = []
    shown: dict[str, str] = {}
    started = time.perf_counter()
    for position, conversation in enumerate(chosen):
        questions = pick_questions(conversation, config.questions, config.categories)
        _whole(conversation, questions, whole)
        for budget in config.budgets:
            if progress:
                progress(f"{conversation.sample_id} at {budget:,} tokens")
            with scratch_dir() as scratch:
                rows, last = _run_one(
                    conversation, questions, budget, config, scratch, signer, replayed
                )
            for category, method, scores, refused in rows:
                for group in ("all", CATEGORIES[category]):
                    tallies[(budget, method, group)].add(scores, refused)
                details.append(
                    {
                        "sample_id": conversation.sample_id,
                        "budget": budget,
                        "method": method,
                        "category": category,
                        "refused": refused,
                        **{name: _round(scores[name]) for name in LOCOMO_SCORES},
                    }
                )
            if config.show and position == 0 and last is not None:
                name = f"context-locomo-{conversation.sample_id}-{budget}.txt"
                (workdir / name).write_text(last, encoding="utf-8")
                shown[str(budget)] = name
    rows_json = [
        {"budget": key[0], "method": key[1], "group": key[2], **tally.to_json(LOCOMO_SCORES)}
        for key, tally in tallies.items()
    ]
    return {
        "schema": "registre-bench-real/1",
        "suite": "locomo",
        "methods": [REGISTRE, *BASELINES],
        "budgets": list(config.budgets),
        "counter": config.counter.name,
        "baseline_room": baseline_rooms(config.budgets, config.baselines_full),
        "conversations": [
            {
                "sample_id": conv.sample_id,
                "turns": conv.turns,
                "sessions": len(conv.sessions),
                "questions": len(pick_questions(conv, config.questions, config.categories)),
            }
            for conv in chosen
        ],
        "rows": sorted(rows_json, key=lambda row: (row["budget"], _group_order(row["group"]))),
        "replay": [
            {"budget": key[0], **tally.to_json(("fill",))} for key, tally in replayed.items()
        ],
        "whole": [{"group": key[0], **tally.to_json(("answer",))} for key, tally in whole.items()],
        "details": details,
        "shown": shown,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _group_order(group: str) -> int:
    names = ["all", *CATEGORIES.values()]
    return names.index(group) if group in names else len(names)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


Row = tuple[int, str, dict[str, float | None], bool]


def _run_one(
    conversation: LocomoConversation,
    questions: Sequence[LocomoQuestion],
    budget: int,
    config: LocomoConfig,
    workdir: Path,
    signer: Signer,
    replayed: Tallies,
) -> tuple[list[Row], str | None]:
    """Replay ``conversation`` at ``budget`` and ask ``questions``: the scored rows and the
    text of registre's context for the last question. ``replayed[(budget,)]`` counts the
    replay's own model calls (their fill; refusals)."""
    counter = config.counter
    policy = Policy(budget_tokens=budget)
    room = budget if config.baselines_full else policy.window_tokens()
    transcript = Transcript(counter, room, policy)
    turns: dict[str, tuple[int, str]] = {}
    rows: list[Row] = []
    last: str | None = None
    try:
        with LedgerReplay(workdir, f"locomo-{budget}", budget, counter, signer) as replay:

            def write(role: str, text: str) -> int:
                body = {"role": role, "text": text}
                seq = replay.append("turn", body, role)
                transcript.add(seq, "turn", body)
                return seq

            for session in conversation.sessions:
                write("user", session_line(session))
                for turn in session.turns:
                    role = "user" if turn.speaker == conversation.speaker_a else "assistant"
                    if role == "assistant":
                        made = replay.call()
                        sent = made.projection.tokens if made.projection else 0
                        replayed[(budget,)].add(
                            {"fill": sent / budget}, refused=made.projection is None
                        )
                        transcript.view("rolling")
                    turns[turn.dia_id] = (write(role, turn.text), turn.text)
            for question in questions:
                body = {"role": "user", "text": question.question}
                seq, call = replay.ask("turn", body, "user")
                views = transcript.ask(
                    seq, "turn", body, {method: question.question for method in BASELINES}
                )
                evidence = [turns[d] for d in question.evidence if d in turns]
                rows.append(
                    (question.category, REGISTRE, *_score_call(call, budget, evidence, question))
                )
                for method, view in views.items():
                    scores = _score(view.contents, view.tokens, budget, evidence, question)
                    rows.append((question.category, method, scores, False))
                if call.projection is not None:
                    last = _render(question, call)
    finally:
        transcript.close()
    return rows, last


def _score_call(
    call: Call, budget: int, evidence: Sequence[tuple[int, str]], question: LocomoQuestion
) -> tuple[dict[str, float | None], bool]:
    if call.projection is None:
        return _score([], 0, budget, evidence, question), True
    contents = [message.content for message in call.projection.messages]
    return _score(contents, call.projection.tokens, budget, evidence, question), False


def _score(
    contents: Sequence[str],
    tokens: int,
    budget: int,
    evidence: Sequence[tuple[int, str]],
    question: LocomoQuestion,
) -> dict[str, float | None]:
    context = ContextText.of(contents)
    found = sum(turn_present(context, seq, text) for seq, text in evidence)
    return {
        "evidence": found / len(evidence) if evidence else None,
        "answer": answer_share(context, question.answer) if contents else 0.0,
        "fill": tokens / budget,
    }


def _whole(
    conversation: LocomoConversation, questions: Sequence[LocomoQuestion], whole: Tallies
) -> None:
    texts = [
        text
        for session in conversation.sessions
        for text in (session_line(session), *(turn.text for turn in session.turns))
    ]
    for question in questions:
        context = ContextText.of([*texts, question.question])
        scores = {"answer": answer_share(context, question.answer)}
        whole[("all",)].add(scores)
        whole[(CATEGORIES[question.category],)].add(scores)


def session_line(session: LocomoSession) -> str:
    """The user turn that opens a session: ``[session N, DATE]``."""
    return f"[session {session.number}, {session.date}]"


def _render(question: LocomoQuestion, call: Call) -> str:
    assert call.projection is not None
    return render_messages(
        call.projection.messages,
        f"question: {question.question}\ngold answer: {question.answer}\n"
        f"evidence: {', '.join(question.evidence)}\n"
        f"tokens: {call.projection.tokens} of {call.projection.budget}",
    )


def render_messages(messages: Sequence[Message], header: str) -> str:
    """Messages as the model sees them, one block per message under ``header``."""
    parts = [header, ""]
    for message in messages:
        name = f" {message.name}" if message.name else ""
        parts.append(f"----- {message.role}{name}")
        parts.append(message.content)
    return "\n".join(parts) + "\n"
