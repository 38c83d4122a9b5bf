"""Writing a command's output file: all of it or nothing, readable as any new file is.

:func:`write_atomically` writes to a temporary name beside the target, flushes and fsyncs,
then renames it into place, so the target is either the whole output or what it was before.
The file gets the permissions a plainly created file would (``0o666`` less the umask), not
the private ``0o600`` of a temporary file: transcripts and verifier keys are meant to be
shared. Key files are written elsewhere (``registre.attest.keys``), 0600 from the first instant.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = ["write_atomically"]


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path: Path, chunks: Iterable[str]) -> None:
    """Write the text ``chunks`` to ``path`` (UTF-8) through a temporary file and a rename.

    Raises OSError (the CLI turns it into one line); on any failure the temporary file is
    removed and ``path`` is untouched.
    """
    folder = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        os.fchmod(handle, _default_mode())
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            for chunk in chunks:
                stream.write(chunk)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
