"""``python -m registre.attest verify BUNDLE.zip --key VKEY``: the regulator's offline verifier.

Needs only attest, lifecycle, cryptography, rfc8785 and click: no database, no network.
Exit status: 0 verified, 1 a check failed, 2 unusable input (a bad key, a file that is not a
bundle, malformed members). The report goes to standard output (``--json`` for the JSON form
of ``specs/verify.md``); an error is one line on standard error, never a traceback, followed by
an ``attest: hint:`` line when the error carries a ``hint``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import click

from registre.attest.bundles import DEFAULT_LIMITS
from registre.attest.errors import BadKeyError
from registre.attest.notes import CosignatureVerifier, Verifier
from registre.attest.verify import TrustPolicy, VerifyReport, report_of, verify_bundle
from registre.errors import RegistreError

__all__ = [
    "ReportedFailure",
    "cli",
    "main",
    "parse_duration",
    "pinned_log_key",
    "run_verify",
    "verify_options",
]

_PROGRAM = "attest"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """registre's offline tools for auditors."""


_DURATION = re.compile(r"(?:(\d{1,9})([smhdw]))+")
_DURATION_PART = re.compile(r"(\d{1,9})([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> int:
    """Seconds in ``text``: a number of seconds (``3600``) or parts with units ``s m h d w``
    (``90m``, ``12h``, ``1d12h``). ValueError for anything else."""
    text = text.strip()
    if text.isdigit() and len(text) <= 12:
        return int(text)
    if not _DURATION.fullmatch(text):
        raise ValueError(f"{text!r} is not a duration such as 3600, 90m, 12h, 7d or 1d12h")
    return sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION_PART.findall(text))


def _duration_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


_VERIFY_OPTIONS = (
    click.option("--key", "key_text", help="The log's verifier key to pin (NAME+KEYID+BASE64)."),
    click.option(
        "--key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="A file holding the log's verifier key line (as `registre key export` writes it).",
    ),
    click.option(
        "--witness",
        "witness_keys",
        multiple=True,
        help="A witness verifier key to pin (cosignature/v1); repeatable.",
    ),
    click.option(
        "--quorum",
        type=click.IntRange(min=0),
        default=None,
        help="Cosignatures from pinned witnesses the head needs. Default: every --witness.",
    ),
    click.option(
        "--state",
        "state_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Trusted-state file: refuse rollbacks and forks, record the new head if verified.",
    ),
    click.option(
        "--require-full",
        is_flag=True,
        help="Refuse partial bundles (exit 2): only a bundle of every entry is accepted.",
    ),
    click.option(
        "--max-age",
        callback=_duration_option,
        default=None,
        metavar="DURATION",
        help="Refuse a head whose newest pinned-witness cosignature is older than this "
        "(seconds, or e.g. 90m, 12h, 7d).",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
    click.option(
        "--jobs",
        type=click.IntRange(min=1, max=256),
        default=1,
        show_default=True,
        help="Processes that share the signature checks.",
    ),
    click.option(
        "--max-ratio",
        type=click.IntRange(min=1),
        default=DEFAULT_LIMITS.max_ratio,
        show_default=True,
        help="Bytes the members may inflate to per byte of the zip (a bomb's is ~1,000).",
    ),
)

F = TypeVar("F", bound=Callable[..., Any])


def verify_options(command: F) -> F:
    """Add the options of ``verify`` to a click command, which receives them as the keyword
    arguments of :func:`run_verify` (``registre verify FILE.zip`` shares them this way)."""
    for option in reversed(_VERIFY_OPTIONS):
        command = option(command)
    return command


class ReportedFailure(RegistreError):
    """A failed verification whose report was already printed. The message is the first
    failure's one-line sentence; ``exit_code`` is the failing check's (1, or 2 for unusable
    input); ``hint`` is the failing error's, if it had one."""

    def __init__(self, line: str, exit_code: int) -> None:
        super().__init__(line)
        self.exit_code = exit_code


@cli.command("verify")
@click.argument("bundle", type=click.Path(dir_okay=False, path_type=Path))
@verify_options
def verify(bundle: Path, **options: Any) -> None:
    """Verify an audit bundle against pinned keys, offline."""
    run_verify(bundle, **options)


def run_verify(
    bundle: Path,
    *,
    key_text: str | None,
    key_file: Path | None,
    witness_keys: Sequence[str] = (),
    quorum: int | None = None,
    state_file: Path | None = None,
    as_json: bool = False,
    jobs: int = 1,
    max_ratio: int = DEFAULT_LIMITS.max_ratio,
    require_full: bool = False,
    max_age: int | None = None,
) -> VerifyReport:
    """Verify ``bundle`` with the trust the options pin and print the report (text, or JSON
    with ``as_json``) to standard output; return it.

    ``require_full`` refuses partial bundles; ``max_age`` (seconds) refuses a head whose newest
    pinned-witness cosignature is older. Raises click.UsageError unless exactly one of
    ``key_text`` and ``key_file`` is given,
    BadKeyError (and the other MalformedErrors) for unusable keys, and -- after printing the
    report -- :class:`ReportedFailure` when a check fails. Input so broken that no report was
    started raises its own RegistreError.
    """
    policy = TrustPolicy(
        log_key=pinned_log_key(key_text, key_file),
        witnesses=tuple(CosignatureVerifier.from_vkey(text) for text in witness_keys),
        quorum=len(witness_keys) if quorum is None else quorum,
        require_full=require_full,
        max_age=max_age,
    )
    try:
        limits = replace(DEFAULT_LIMITS, max_ratio=max_ratio)
        report = verify_bundle(bundle, policy, state_file=state_file, jobs=jobs, limits=limits)
    except RegistreError as error:
        failed = report_of(error)
        if failed is not None:
            _print(failed, as_json)
            if failed.failure is not None:
                raise ReportedFailure(failed.failure.sentence(), error.exit_code).with_hint(
                    error.hint
                ) from error
        raise
    _print(report, as_json)
    return report


def pinned_log_key(key_text: str | None, key_file: Path | None) -> Verifier:
    """The log key an auditor pins: exactly one of ``--key`` (text) and ``--key-file``.
    click.UsageError for neither or both; BadKeyError for an unreadable or malformed key."""
    if (key_text is None) == (key_file is None):
        raise click.UsageError("pin the log's key with exactly one of --key and --key-file")
    if key_file is not None:
        try:
            key_text = key_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadKeyError(f"cannot read key file {key_file}: {exc}") from None
    assert key_text is not None
    return Verifier.from_vkey(key_text)


def _print(report: VerifyReport, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.render(), nl=False)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI: one line on standard error per error (and one for its hint, if any), exit
    0, 1 or 2, no traceback."""
    try:
        cli.main(
            args=list(argv) if argv is not None else None,
            prog_name=_PROGRAM,
            standalone_mode=False,
        )
    except RegistreError as error:
        _fail(str(error), error.exit_code, error.hint)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.ClickException as error:
        hint = " (see --help)" if isinstance(error, click.UsageError) else ""
        _fail(error.format_message() + hint, 2)
    except OSError as error:
        _fail(f"{error.strerror or error}: {error.filename or ''}".rstrip(": "), 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)


def _fail(message: str, code: int, hint: str | None = None) -> None:
    line = " ".join(message.split())
    click.echo(f"{_PROGRAM}: error: {line}", err=True)
    if hint:
        click.echo(f"{_PROGRAM}: hint: {' '.join(hint.split())}", err=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
