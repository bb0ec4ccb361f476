"""The one way this package writes a file it produces: atomically, with the permissions asked for.

A result, a projection, a figure or a study's metadata is never seen half
written: :func:`write_atomic` writes a temporary file in the target's own
directory, flushes it to disk, then renames it over the target.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

#: Owner read/write only: every output derived from the parties' rows (results, projections, figures).
PRIVATE = 0o600
#: Read/write for everyone the umask allows (what ``open(path, "w")`` creates).
SHARED = 0o666


def write_atomic(path: str | Path, content: str | bytes, *, mode: int = PRIVATE) -> None:
    """Write ``content`` to a temporary file next to ``path``, fsync it, then rename it over ``path``.

    Parameters
    ----------
    path : str or Path
        The file to write (a symbolic link is followed: its target is replaced).
    content : str or bytes
        The file's bytes; text is encoded as UTF-8.
    mode : int, default=PRIVATE
        Permission bits of the new file, as for :func:`os.open` (the umask
        may only remove bits): :data:`PRIVATE` (0600) keeps every output
        derived from the parties' rows readable by its owner only, whatever
        the umask; :data:`SHARED` gives what ``open(path, "w")`` would.

    Examples
    --------
    >>> import tempfile, stat
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = Path(tmp) / "result.json"
    ...     write_atomic(target, '{"a": 1}')
    ...     target.read_text(), oct(stat.S_IMODE(target.stat().st_mode)), len(list(Path(tmp).iterdir()))
    ('{"a": 1}', '0o600', 1)
    """
    target = Path(path).resolve()
    data = content.encode() if isinstance(content, str) else content
    fd, tmp = _create_beside(target, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create_beside(target: Path, mode: int) -> tuple[int, Path]:
    """A new, exclusively created file ``.NAME.RANDOM.tmp`` in ``target``'s directory, open for writing."""
    while True:
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), tmp
        except FileExistsError:  # pragma: no cover - a 32-bit random name already taken
            continue


__all__ = ["PRIVATE", "SHARED", "write_atomic"]
