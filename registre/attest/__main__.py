"""``python -m registre.attest verify BUNDLE.zip --key VKEY``: the regulator's offline verifier.

Needs only attest, lifecycle, context, cryptography and rfc8785: no database, no network, no
command-line framework (the options are read with the standard library's ``argparse``), so
``pip install registre`` -- the package without extras -- is all an auditor installs.
Exit status: 0 verified, 1 a check failed, 2 unusable input (a bad key, a private key where
the verifier key belongs, a file that is not a bundle, malformed members, a bad option). The
report goes to standard output (``--json`` for the JSON form of ``specs/verify.md``); an error
is one line on standard error, never a traceback, followed by an ``attest: hint:`` line when
the error carries a ``hint``.

``registre verify FILE.zip`` takes the same options (``registre.cli.bundle_options``) and
runs :func:`run_verify`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from registre.attest.bundles import DEFAULT_LIMITS
from registre.attest.errors import BadKeyError
from registre.attest.notes import (
    CosignatureVerifier,
    PrivateKeyGivenError,
    Verifier,
    holds_private_key,
)
from registre.attest.verify import TrustPolicy, VerifyReport, report_of, verify_bundle
from registre.errors import MalformedError, RegistreError

__all__ = [
    "CommandLineError",
    "KeyPinError",
    "ReportedFailure",
    "main",
    "parse_duration",
    "pinned_log_key",
    "run_verify",
]

_PROGRAM = "attest"
_MAX_JOBS = 256


class CommandLineError(MalformedError):
    """A command line the verifier cannot run: an unknown command or option, a missing
    argument, a value out of range (exit 2)."""


class KeyPinError(MalformedError):
    """Neither or both of ``--key`` and ``--key-file``: the log's key is pinned exactly once."""


class ReportedFailure(RegistreError):
    """A failed verification whose report was already printed. The message is the first
    failure's one-line sentence; ``exit_code`` is the failing check's (1, or 2 for unusable
    input); ``hint`` is the failing error's, if it had one."""

    def __init__(self, line: str, exit_code: int) -> None:
        super().__init__(line)
        self.exit_code = exit_code


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


# --- the command line -------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are :class:`CommandLineError` (one line, exit 2),
    never argparse's usage text and exit."""

    def error(self, message: str) -> NoReturn:
        raise CommandLineError(f"{message} (see {self.prog} --help)")


def _at_least(low: int, high: int | None = None) -> Any:
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            span = f"at least {low}" if high is None else f"from {low} to {high}"
            raise argparse.ArgumentTypeError(f"{value} is not {span}")
        return value

    return read


def _duration(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_EPILOG = """\
exit status: 0 verified, 1 a check failed, 2 unusable input.
install: pip install registre (its only dependencies: cryptography and rfc8785)."""


def _parser() -> _Parser:
    parser = _Parser(
        prog="python -m registre.attest",
        description="registre's offline tools for auditors.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    verify = commands.add_parser(
        "verify",
        help="Verify an audit bundle against pinned keys, offline.",
        description="Verify an audit bundle against pinned keys, offline (specs/verify.md).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verify.add_argument("bundle", metavar="BUNDLE.zip", type=Path)
    verify.add_argument(
        "--key",
        dest="key_text",
        metavar="VKEY",
        help="The log's verifier key to pin (NAME+KEYID+BASE64).",
    )
    verify.add_argument(
        "--key-file",
        type=Path,
        metavar="FILE",
        help="A file holding the log's verifier key line (as `registre key export` writes it: "
        "operator.vkey, never the private operator.key).",
    )
    verify.add_argument(
        "--witness",
        dest="witness_keys",
        action="append",
        default=[],
        metavar="VKEY",
        help="A witness verifier key to pin (cosignature/v1); repeatable.",
    )
    verify.add_argument(
        "--quorum",
        type=_at_least(0),
        default=None,
        metavar="N",
        help="Cosignatures from pinned witnesses the head needs. Default: every --witness.",
    )
    verify.add_argument(
        "--state",
        dest="state_file",
        type=Path,
        metavar="STATE.json",
        help="Trusted-state file: refuse rollbacks and forks, record the new head if verified.",
    )
    verify.add_argument(
        "--require-full",
        action="store_true",
        help="Refuse partial bundles (exit 2): only a bundle of every entry is accepted.",
    )
    verify.add_argument(
        "--max-age",
        type=_duration,
        default=None,
        metavar="DURATION",
        help="Refuse a head whose newest pinned-witness cosignature is older than this "
        "(seconds, or e.g. 90m, 12h, 7d).",
    )
    verify.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")
    verify.add_argument(
        "--jobs",
        type=_at_least(1, _MAX_JOBS),
        default=1,
        metavar="N",
        help="Processes that share the signature checks (default 1).",
    )
    verify.add_argument(
        "--max-ratio",
        type=_at_least(1),
        default=DEFAULT_LIMITS.max_ratio,
        metavar="R",
        help="Bytes the members may inflate to per byte of the zip (a bomb's is ~1,000; "
        f"default {DEFAULT_LIMITS.max_ratio}).",
    )
    return parser


# --- verifying --------------------------------------------------------------------------------


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
    pinned-witness cosignature is older. Raises KeyPinError unless exactly one of
    ``key_text`` and ``key_file`` is given, PrivateKeyGivenError for a private key,
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
    KeyPinError for neither or both; PrivateKeyGivenError for an operator's private key (a
    key file, or a signer key string); BadKeyError for an unreadable or malformed key."""
    if (key_text is None) == (key_file is None):
        raise KeyPinError("pin the log's key with exactly one of --key and --key-file")
    if key_file is not None:
        try:
            key_text = key_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadKeyError(f"cannot read key file {key_file}: {exc}") from None
        if holds_private_key(key_text):
            public = key_file.with_suffix(".vkey").name if key_file.suffix == ".key" else None
            public = public or "operator.vkey"
            raise PrivateKeyGivenError(
                f"{key_file} is an operator (private) key; pass {public}, its verifier key"
            ).with_hint(
                f"`registre key export --key-file {key_file} -o {public}` writes it; a "
                "verifier never needs the private key"
            )
    assert key_text is not None
    if holds_private_key(key_text):
        raise PrivateKeyGivenError(
            "--key holds an operator (private) key; pass its verifier key (NAME+KEYID+BASE64)"
        ).with_hint("`registre key show` prints the verifier key")
    return Verifier.from_vkey(key_text)


def _print(report: VerifyReport, as_json: bool) -> None:
    if as_json:
        text = json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
    else:
        text = report.render()
    sys.stdout.write(text)
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line: one line on standard error per error (and one for its hint, if
    any), exit 0, 1 or 2, no traceback."""
    parser = _parser()
    try:
        arguments = vars(parser.parse_args(list(argv) if argv is not None else None))
        if arguments.pop("command") is None:
            parser.print_help()
            sys.exit(0)
        run_verify(arguments.pop("bundle"), **arguments)
    except RegistreError as error:
        _fail(str(error), error.exit_code, error.hint)
    except OSError as error:
        _fail(f"{error.strerror or error}: {error.filename or ''}".rstrip(": "), 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)


def _fail(message: str, code: int, hint: str | None = None) -> NoReturn:
    line = " ".join(message.split())
    sys.stdout.flush()
    sys.stderr.write(f"{_PROGRAM}: error: {line}\n")
    if hint:
        sys.stderr.write(f"{_PROGRAM}: hint: {' '.join(hint.split())}\n")
    sys.exit(code)


if __name__ == "__main__":
    main()
