"""`registre key show|export`: the operator's verifier key, for auditors to pin."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import click

from registre.attest.errors import RefusedError
from registre.cli.files import write_atomically
from registre.cli.options import key_file_option, load_signer

__all__ = ["key_group"]


@click.group("key")
def key_group() -> None:
    """Show or export the operator's verifier key."""


@key_group.command("show")
@key_file_option
def show(key_file: Path | None) -> None:
    """Print the verifier key string (NAME+KEYID+BASE64) that verifiers pin."""
    signer = load_signer(key_file, required=True)
    assert signer is not None
    click.echo(signer.vkey())


@key_group.command("export")
@key_file_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["vkey", "json"]),
    default="vkey",
    show_default=True,
    help="vkey: the verifier key line; json: name, key id, algorithm, public key, vkey.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this new file (never overwritten) instead of standard output.",
)
def export(key_file: Path | None, fmt: str, output: Path | None) -> None:
    """Export the public half of the operator key (the private key never leaves its file)."""
    signer = load_signer(key_file, required=True)
    assert signer is not None
    if fmt == "vkey":
        text = signer.vkey() + "\n"
    else:
        document = {
            "name": signer.name,
            "key_id": signer.key_id.hex(),
            "algorithm": "ed25519",
            "public_key": base64.b64encode(signer.public_key).decode("ascii"),
            "vkey": signer.vkey(),
        }
        text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    if output.exists():
        raise RefusedError(f"{output} exists; refusing to overwrite it")
    write_atomically(output, [text])
    click.echo(f"wrote {output}")
