"""The verification report: what each step checked, and the first failure in plain words.

A :class:`VerifyReport` lists the seven steps of ``specs/verify.md`` in order, each
``passed``, ``failed`` or ``not run`` (a step after a failure, or step 5 without a state
file: ``skipped``; step 7 ``stale`` when a final it proves is not current), with what it
checked and -- just as prominently -- what it could not check. :meth:`VerifyReport.to_json`
is the ``--json`` form (stable keys, documented in ``specs/verify.md``);
:meth:`VerifyReport.render` the readable one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from registre.errors import RegistreError

__all__ = [
    "STEP_NAMES",
    "Failure",
    "StepReport",
    "StepStatus",
    "Verdict",
    "VerifyReport",
    "gap_name",
    "plural",
    "report_of",
]

STEP_NAMES: dict[int, str] = {
    1: "container",
    2: "checkpoints",
    3: "entries",
    4: "tree",
    5: "history",
    6: "semantics",
    7: "claims",
}

StepStatus = Literal["passed", "stale", "failed", "skipped", "not run"]
"""``stale``: step 7 passed, but a final conclusion it proves is not current at the checkpoint
(stale, superseded or retracted); the bundle verifies, and the verdict says STALE."""


def plural(count: int, singular: str, many: str | None = None) -> str:
    """``count`` and the noun agreeing with it: ``1 entry``, ``3 entries``, ``2 witnesses``,
    ``0 checkpoints`` (``many`` for an irregular plural; the last word is inflected)."""
    if count == 1:
        return f"{count} {singular}"
    if many is None:
        head, _, word = singular.rpartition(" ")
        if word.endswith("y") and word[-2:-1] not in tuple("aeiou"):
            word = word[:-1] + "ies"
        elif word.endswith(("s", "x", "ch", "sh")):
            word += "es"
        else:
            word += "s"
        many = f"{head} {word}" if head else word
    return f"{count} {many}"


_GAP_NAMES: tuple[tuple[str, str], ...] = (
    ("witness cosignatures", "witnesses"),
    ("rollback and fork", "rollback"),
    ("undisclosed entr", "undisclosed entries"),
    ("the lifecycle: no lifecycle entry", "lifecycle"),
    ("lifecycle replay", "lifecycle replay"),
    ("pin-set digest", "pin-set digests"),
    ("against the working-context rules", "compaction rules"),
    ("projection digest", "context digests"),
    ("status of the cited ids", "claim status"),
)


def gap_name(item: str) -> str:
    """The short name of one ``not checked`` item, as the verdict line lists it:
    ``witnesses``, ``rollback``, ``undisclosed entries``, ``context digests``, ... (an item
    no name is known for: its words before the first colon)."""
    for needle, name in _GAP_NAMES:
        if needle in item:
            return name
    return item.split(":", 1)[0].strip()


@dataclass(frozen=True)
class Verdict:
    """The one verdict of a verification, as every renderer shows it.

    ``headline``: ``VERIFIED``, ``VERIFIED, PARTIAL (...)``, ``VERIFIED, STALE (...)`` (both
    may follow ``VERIFIED``) or ``NOT VERIFIED (step N: Error, seq S)``; ``not_checked``: the
    short names of what the steps that ran did not check (``witnesses``, ``rollback``, ...),
    each with its reason in ``reasons``; ``not_run``: the steps a failure stopped; ``tone``:
    ``ok``, ``warn`` (partial, stale, or no pinned witness cosigned the head) or ``bad``;
    ``history``: how many ids at the checkpoint are superseded, retracted or stale (not a
    warning: ordinary history, listed in the report's ``inactive``)."""

    verified: bool
    headline: str
    tone: Literal["ok", "warn", "bad"]
    not_checked: tuple[str, ...] = ()
    reasons: tuple[tuple[str, str], ...] = ()
    not_run: tuple[str, ...] = ()
    history: tuple[tuple[str, int], ...] = ()

    def line(self) -> str:
        """``HEADLINE; not checked: a, b`` (``; not run: ...`` after a failure)."""
        parts = [self.headline]
        if self.not_checked:
            parts.append("not checked: " + ", ".join(self.not_checked))
        elif self.verified:
            parts.append("every check ran")
        if self.not_run:
            parts.append("not run: " + ", ".join(self.not_run))
        return "; ".join(parts)

    def history_line(self) -> str | None:
        """``history at the checkpoint: 60 superseded, 3 retracted, 6 stale``, or None."""
        if not self.history:
            return None
        return "history at the checkpoint: " + ", ".join(f"{n} {s}" for s, n in self.history)

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line(),
            "headline": self.headline,
            "tone": self.tone,
            "not_checked": list(self.not_checked),
            "not_run": list(self.not_run),
            "history": dict(self.history),
        }


@dataclass
class StepReport:
    """One step: its status, what it checked, and what it could not check."""

    number: int
    status: StepStatus = "not run"
    checked: list[str] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return STEP_NAMES[self.number]

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.number,
            "name": self.name,
            "status": self.status,
            "checked": list(self.checked),
            "not_checked": list(self.not_checked),
        }


@dataclass(frozen=True)
class Failure:
    """The first failed check: step, seq when one entry is at fault, error class and message."""

    step: int
    seq: int | None
    error: str
    message: str
    exit_code: int

    def sentence(self) -> str:
        """One line: ``step 3 (entries), seq 17: EntrySignatureError: ...``."""
        where = f"step {self.step} ({STEP_NAMES[self.step]})"
        if self.seq is not None:
            where += f", seq {self.seq}"
        return f"{where}: {self.error}: {self.message}"


@dataclass
class VerifyReport:
    """The outcome of verifying one bundle. ``verified`` is True only when every step ran and
    none failed; a failed verification also raised, so nobody can miss it."""

    bundle: str
    origin: str | None = None
    disclosure: str | None = None
    tree_size: int | None = None
    entries: int | None = None
    checkpoints: int | None = None
    kinds: dict[str, int] = field(default_factory=dict)
    steps: list[StepReport] = field(default_factory=lambda: [StepReport(n) for n in STEP_NAMES])
    failure: Failure | None = None
    notes: list[str] = field(default_factory=list)
    cosignature_age: int | None = None
    """Seconds between the newest pinned-witness cosignature of the head and the check."""
    inactive: list[str] = field(default_factory=list)
    """Every disclosed conclusion or cited id not active and fresh at the checkpoint."""
    stale_finals: list[str] = field(default_factory=list)
    """The final conclusions among :attr:`inactive` (step 7 is then ``stale``)."""

    @property
    def verified(self) -> bool:
        return self.failure is None and all(
            step.status in ("passed", "stale", "skipped") for step in self.steps
        )

    @property
    def partial(self) -> bool:
        """Verified as a partial bundle: some entries of the head were not disclosed."""
        return self.disclosure == "partial"

    def summary(self) -> Verdict:
        """The one verdict every renderer shows (module docstring, :class:`Verdict`)."""
        reasons: dict[str, str] = {}
        for step in self.steps:
            if step.status == "not run":
                continue
            for item in step.not_checked:
                reasons.setdefault(gap_name(item), item)
        not_checked = tuple(reasons)
        history = _history(self.inactive, self.stale_finals)
        if not self.verified:
            not_run = tuple(step.name for step in self.steps if step.status == "not run")
            if self.failure is not None:
                where = f"step {self.failure.step}: {self.failure.error}"
                if self.failure.seq is not None:
                    where += f", seq {self.failure.seq}"
            else:
                where = "a step did not run"
            return Verdict(
                False,
                f"NOT VERIFIED ({where})",
                "bad",
                not_checked,
                tuple(reasons.items()),
                not_run,
                history,
            )
        words = ["VERIFIED"]
        if self.partial:
            undisclosed = (self.tree_size or 0) - (self.entries or 0)
            words.append(
                f"PARTIAL ({plural(undisclosed, 'undisclosed entry')} of {self.tree_size})"
            )
        if self.stale_finals:
            words.append("STALE (at the checkpoint: " + ", ".join(self.stale_finals) + ")")
        warn = self.partial or bool(self.stale_finals) or "witnesses" in reasons
        return Verdict(
            True,
            ", ".join(words),
            "warn" if warn else "ok",
            not_checked,
            tuple(reasons.items()),
            (),
            history,
        )

    def verdict(self) -> str:
        """The one-line result (:meth:`Verdict.line` of :meth:`summary`): ``VERIFIED`` or
        ``NOT VERIFIED (step N: ...)``, ``PARTIAL`` and ``STALE`` after ``VERIFIED``, then
        what was not checked."""
        return self.summary().line()

    def step(self, number: int) -> StepReport:
        return self.steps[number - 1]

    def to_json(self) -> dict[str, Any]:
        return {
            "verified": self.verified,
            "bundle": self.bundle,
            "origin": self.origin,
            "disclosure": self.disclosure,
            "tree_size": self.tree_size,
            "entries": self.entries,
            "checkpoints": self.checkpoints,
            "kinds": dict(self.kinds),
            "steps": [step.to_json() for step in self.steps],
            "failure": None
            if self.failure is None
            else {
                "step": self.failure.step,
                "name": STEP_NAMES[self.failure.step],
                "seq": self.failure.seq,
                "error": self.failure.error,
                "message": self.failure.message,
                "exit_code": self.failure.exit_code,
            },
            "notes": list(self.notes),
            "result": self.verdict(),
            "verdict": self.summary().to_json(),
            "cosignature_age": self.cosignature_age,
            "inactive": list(self.inactive),
            "stale_finals": list(self.stale_finals),
        }

    def render(self) -> str:
        """The report as text for a person."""
        verdict = self.summary()
        lines = [f"registre bundle verification: {verdict.line()}", f"bundle: {self.bundle}"]
        if self.origin is not None:
            lines.append(
                f"origin: {self.origin} ({self.disclosure} bundle, "
                f"{plural(self.entries or 0, 'entry')}, tree size {self.tree_size}, "
                f"{plural(self.checkpoints or 0, 'checkpoint')})"
            )
        history = verdict.history_line()
        if history is not None:
            lines.append(f"{history} (step 7 names them; --json lists every one)")
        for step in self.steps:
            lines.append(f"{step.number} {step.name:<12} {step.status}")
            lines.extend(f"    - {item}" for item in step.checked)
            lines.extend(f"    - not checked: {item}" for item in step.not_checked)
        if self.failure is not None:
            lines.append(f"first failure: {self.failure.sentence()}")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines) + "\n"


def _history(inactive: list[str], stale_finals: list[str]) -> tuple[tuple[str, int], ...]:
    """Counts of the ids at the checkpoint that are not current, by status (finals that are
    not current are the verdict's STALE, not history)."""
    counts: dict[str, int] = {}
    finals = set(stale_finals)
    for item in inactive:
        if item in finals:
            continue
        status = "superseded" if " superseded by " in item else item.rsplit(" ", 1)[-1]
        counts[status] = counts.get(status, 0) + 1
    order = ("superseded", "retracted", "stale")
    return tuple(
        sorted(counts.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else 9, kv[0]))
    )


def report_of(error: BaseException) -> VerifyReport | None:
    """The report attached to an error raised by
    :func:`registre.attest.verify.verifier.verify_bundle`."""
    report = getattr(error, "report", None)
    return report if isinstance(report, VerifyReport) else None


def attach(error: RegistreError, report: VerifyReport) -> None:
    """Attach ``report`` to ``error`` (read it back with :func:`report_of`)."""
    error.report = report  # type: ignore[attr-defined]
