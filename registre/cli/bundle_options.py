"""The options of a bundle's verification, shared by ``registre verify FILE.zip`` and
``registre report``: the same as ``python -m registre.attest verify`` (which reads them with
``argparse``, so that the auditor's install needs no click), passed as the keyword arguments
of :func:`registre.attest.__main__.run_verify`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from registre.attest.__main__ import parse_duration
from registre.attest.bundles import DEFAULT_LIMITS

__all__ = ["verify_options"]


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
        help="A file holding the log's verifier key line (as `registre key export` writes it: "
        "operator.vkey, never the private operator.key).",
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
    arguments of :func:`registre.attest.__main__.run_verify`."""
    for option in reversed(_VERIFY_OPTIONS):
        command = option(command)
    return command
