"""`registre key show|export|upgrade`: the operator's verifier key, for auditors to pin, and
rewriting a first-format key file in the current one (which states its verifier key, so that
damage to the file is refused instead of loading as another key)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import click

from registre.cli.files import write_atomically
from registre.cli.options import key_file_option, key_passphrase, load_signer, resolve_key_file
from registre.errors import RefusedError

__all__ = ["key_group"]


@click.group("key")
def key_group() -> None:
    """Show, export or upgrade the operator's key."""


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


@key_group.command("upgrade")
@key_file_option
def upgrade(key_file: Path | None) -> None:
    """Rewrite a first-format key file in the current format (same key, same passphrase)."""
    path = resolve_key_file(key_file)
    signer = load_signer(key_file, required=True)
    assert signer is not None
    lines = path.read_text("utf-8").split("\n", 3)
    if len(lines) > 2 and lines[2].startswith("registre-key-vkey: "):
        click.echo(f"{path} is already in the current format")
        return
    new = path.with_name(path.name + ".upgrade")
    signer.save(new, key_passphrase())  # 0600 from the first instant; refuses to overwrite
    os.replace(new, path)
    click.echo(f"upgraded {path}: it now states its verifier key {signer.vkey()}")
