"""``python -m registre`` and the ``registre`` console script: the command line.

In the auditor's install (``pip install registre``, without the ``ledger`` extra) the command
line's modules are absent: :func:`main` then prints one error line and a hint -- install
``registre[ledger]``, or verify with ``python -m registre.attest verify`` -- and exits 3.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Run the ``registre`` command line, or say which extra it needs."""
    from registre.extras import MissingExtraError, require_extra

    try:
        require_extra("ledger", "the registre command")
    except MissingExtraError as error:
        sys.stderr.write(f"registre: error: {error}\nregistre: hint: {error.hint}\n")
        sys.exit(error.exit_code)
    from registre.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
