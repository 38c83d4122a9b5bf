"""Writing a command's output: all of it or nothing, never over what the user did not mean.

The one overwrite policy (:func:`check_output`), for every file a command writes: a path that
exists is refused unless ``--force`` is given, and even then only a regular file is replaced --
never a symbolic link, a device node, a FIFO, a socket or a folder.

:func:`terminal_text` escapes terminal control characters (ESC, BEL, NUL, ...) in stored
texts printed to a terminal, so a text in the ledger cannot drive the operator's terminal;
piped output and files keep the text verbatim.

:func:`write_atomically` writes to a temporary name beside the target, flushes and fsyncs,
then renames it into place, so the target is either the whole output or what it was before.
The file gets the permissions a plainly created file would (``0o666`` less the umask), not
the private ``0o600`` of a temporary file: transcripts and verifier keys are meant to be
shared. Key files are written elsewhere (``registre.attest.notes.keys``), 0600 from the first
instant.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from registre.attest.errors import output_error
from registre.errors import RefusedError

__all__ = ["OutputExistsError", "check_output", "terminal_text", "to_terminal", "write_atomically"]


class OutputExistsError(RefusedError):
    """An output path that exists (without ``--force``), or that is not a regular file."""


def check_output(path: Path, *, force: bool, option: str = "--output") -> None:
    """Refuse to write ``path`` unless it is absent, or a regular file and ``force`` is set.
    A symbolic link, device node, FIFO, socket or folder is refused even with ``force``.
    Raises OutputExistsError naming ``option``."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise OutputExistsError(f"{option} {path} is a symbolic link; registre never replaces one")
    if not stat.S_ISREG(info.st_mode):
        raise OutputExistsError(
            f"{option} {path} exists and is not a regular file; registre replaces only files"
        )
    if not force:
        raise OutputExistsError(f"{option} {path} exists").with_hint(
            "pass --force to replace it, or choose another name"
        )


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def to_terminal() -> bool:
    """Whether standard output is a terminal (then stored texts are escaped)."""
    return sys.stdout.isatty()


def terminal_text(text: str) -> str:
    """``text`` with terminal control characters (C0 but tab and newline, DEL, C1) shown as
    ``\\xNN`` when standard output is a terminal; unchanged otherwise."""
    if not to_terminal():
        return text
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path: Path, chunks: Iterable[str]) -> None:
    """Write the text ``chunks`` to ``path`` (UTF-8) through a temporary file and a rename.

    Raises OutputFolderError or OutputWriteError naming ``path`` (never the temporary file);
    on any failure the temporary file is removed and ``path`` is untouched.
    """
    folder = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    except OSError as error:
        raise output_error(path, error) from None
    try:
        os.fchmod(handle, _default_mode())
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            for chunk in chunks:
                stream.write(chunk)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as error:  # it names the temporary file: name the output instead
        Path(temporary).unlink(missing_ok=True)
        raise output_error(path, error) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
