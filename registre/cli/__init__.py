"""The `registre` command line.

Every command runs through :func:`main`, which turns a :class:`registre.attest.errors.RegistreError`
into one line on stderr and the error's exit code (2 for malformed input and refused
requests, 1 for failed verification), never a traceback. Subcommands live in sibling
modules, each registering itself on :data:`cli`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from registre.attest.errors import RegistreError

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="registre")
def cli() -> None:
    """registre: a verifiable memory for long-running AI agents."""


def _register() -> None:
    # Imported for their side effect of adding commands to `cli`.
    import registre.cli.append as _append  # noqa: F401
    import registre.cli.bench as _bench  # noqa: F401
    import registre.cli.checkpoint as _checkpoint  # noqa: F401
    import registre.cli.compact as _compact  # noqa: F401
    import registre.cli.conclusions as _conclusions  # noqa: F401
    import registre.cli.context as _context  # noqa: F401
    import registre.cli.evidence as _evidence  # noqa: F401
    import registre.cli.expand as _expand  # noqa: F401
    import registre.cli.export as _export  # noqa: F401
    import registre.cli.importcmd  # noqa: F401
    import registre.cli.init as _init  # noqa: F401
    import registre.cli.key as _key  # noqa: F401
    import registre.cli.log as _log  # noqa: F401
    import registre.cli.pin as _pin  # noqa: F401
    import registre.cli.prove as _prove  # noqa: F401
    import registre.cli.rebuild as _rebuild  # noqa: F401
    import registre.cli.thread as _thread  # noqa: F401
    import registre.cli.transcript as _transcript  # noqa: F401
    import registre.cli.verify as _verify  # noqa: F401
    import registre.cli.witness as _witness  # noqa: F401
    from registre.cli import demo  # noqa: F401


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the console script: one line per error, no traceback."""
    _register()
    try:
        result = cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except RegistreError as exc:
        click.echo(f"registre: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("registre: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        hint = " (see --help)" if isinstance(exc, click.UsageError) else ""
        click.echo(f"registre: error: {exc.format_message()}{hint}", err=True)
        sys.exit(2)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        click.echo(f"registre: error: {exc.strerror or exc}{where}", err=True)
        sys.exit(2)
    if isinstance(result, int) and result != 0:
        sys.exit(result)
