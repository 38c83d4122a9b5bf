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
    "VerifyReport",
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

    def verdict(self) -> str:
        """The one-line result: ``VERIFIED``, or ``NOT VERIFIED``, followed by ``PARTIAL`` and
        what was not checked, and ``STALE`` and the final conclusions that are not current."""
        if not self.verified:
            return "NOT VERIFIED"
        words = ["VERIFIED"]
        if self.partial:
            not_checked = [item for step in self.steps for item in step.not_checked]
            words.append("PARTIAL (not checked: " + "; ".join(not_checked) + ")")
        if self.stale_finals:
            words.append("STALE (at the checkpoint: " + ", ".join(self.stale_finals) + ")")
        return ", ".join(words)

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
            "cosignature_age": self.cosignature_age,
            "inactive": list(self.inactive),
            "stale_finals": list(self.stale_finals),
        }

    def render(self) -> str:
        """The report as text for a person."""
        lines = [f"registre bundle verification: {self.verdict()}", f"bundle: {self.bundle}"]
        if self.origin is not None:
            lines.append(
                f"origin: {self.origin} ({self.disclosure} bundle, {self.entries} entries, "
                f"tree size {self.tree_size}, {self.checkpoints} checkpoint(s))"
            )
        for step in self.steps:
            lines.append(f"{step.number} {step.name:<12} {step.status}")
            lines.extend(f"    - {item}" for item in step.checked)
            lines.extend(f"    - not checked: {item}" for item in step.not_checked)
        if self.failure is not None:
            lines.append(f"first failure: {self.failure.sentence()}")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines) + "\n"


def report_of(error: BaseException) -> VerifyReport | None:
    """The report attached to an error raised by
    :func:`registre.attest.verify.verifier.verify_bundle`."""
    report = getattr(error, "report", None)
    return report if isinstance(report, VerifyReport) else None


def attach(error: RegistreError, report: VerifyReport) -> None:
    """Attach ``report`` to ``error`` (read it back with :func:`report_of`)."""
    error.report = report  # type: ignore[attr-defined]
