"""`registre init`: create the ledger database and the operator key.

The key is created only if the key file does not exist (an existing key is reused, never
overwritten); the database only if it does not exist (an existing one is opened and, if
needed, upgraded). Prints where both are and the verifier key that auditors pin.
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.attest.notes import Signer
from registre.cli.options import (
    DEFAULT_LOG_NAME,
    echo_json,
    json_option,
    key_passphrase,
    ledger_options,
    load_signer,
    resolve_db,
    resolve_key_file,
)
from registre.errors import RefusedError
from registre.ledger import Ledger

__all__ = ["init_command"]


@click.command("init")
@click.option(
    "--name",
    default=None,
    help=f"Log name, which is the operator key's name; thread origins are NAME/THREAD "
    f"(default {DEFAULT_LOG_NAME}).",
)
@json_option
@ledger_options
def init_command(name: str | None, as_json: bool, db: str | None, key_file: Path | None) -> None:
    """Create the ledger database and the operator key (reusing what exists)."""
    path = resolve_key_file(key_file)
    if path.exists():
        loaded = load_signer(path, required=True)
        assert loaded is not None
        signer = loaded
        if name is not None and name != signer.name:
            raise RefusedError(
                f"the key at {path} is named {signer.name!r}, not {name!r}; a log keeps its name"
            ).with_hint("drop --name, or use another --key-file")
        created = False
    else:
        signer = Signer.generate(name or DEFAULT_LOG_NAME)  # checks the name first
        created = True
    url = resolve_db(db)
    with Ledger.open(url, signer, create=True):
        pass
    if created:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        signer.save(path, key_passphrase())
    if as_json:
        echo_json(
            {
                "ledger": url,
                "key_file": str(path),
                "key_created": created,
                "vkey": signer.vkey(),
            }
        )
        return
    click.echo(f"ledger: {url}")
    click.echo(f"operator key: {path} ({'created, mode 0600' if created else 'existing'})")
    click.echo(f"verifier key (pin this to verify): {signer.vkey()}")
