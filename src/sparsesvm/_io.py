"""Atomic writes: the one helper every output of the package and the workflow goes through.

A reader (or a rerun after a crash) sees either no file, the old file or the complete
new one, never a partial file; the new file gets the mode a plain ``open`` gives
(``0o666 & ~umask``: 0644 under the usual umask 022), not ``mkstemp``'s owner-only 0600.

- :func:`atomic_path`: a temporary path renamed onto the destination when the ``with``
  block succeeds (for writers that take a path: ``np.save``, ``sp.save_npz``, a copy);
- :func:`write_text`, :func:`write_json`, :func:`save_npy`: the three kinds of output
  written through it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["atomic_path", "write_text", "write_json", "save_npy"]


def _umask():
    """The process's umask, read without changing it (``os.umask`` sets it to read it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - non-Linux
    os.umask(mask)  # pragma: no cover
    return mask  # pragma: no cover


@contextlib.contextmanager
def atomic_path(final, suffix=".tmp"):
    """A temporary path next to ``final``, renamed onto it when the ``with`` block succeeds.

    The temporary file is hidden (``.<name>.<random><suffix>``), in the same directory
    (the rename never crosses file systems), removed if the block raises, and has the
    mode a plain ``open`` would give (``0o666 & ~umask``: 0644 with the usual umask
    022, 0664 with a group's 002).

    Parameters
    ----------
    final : str or Path
        Destination; its parent directory is created if needed.
    suffix : str
        Suffix of the temporary name (e.g. ".npy", which ``np.save`` would otherwise add).

    Yields
    ------
    str
        The temporary path to write (it exists, empty).
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=suffix)
    os.fchmod(fd, 0o666 & ~_umask())
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_text(path, text):
    """Write ``text`` (UTF-8) to ``path`` atomically, flushed to disk before the rename.

    Parameters
    ----------
    path : str or Path
    text : str

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    return path


def write_json(path, obj, **dumps):
    """Write ``obj`` as JSON, with a final newline, to ``path`` atomically.

    Parameters
    ----------
    path : str or Path
    obj : JSON-serialisable object
    **dumps
        Options of :func:`json.dumps` (``indent``, ``sort_keys``, ``allow_nan``).

    Returns
    -------
    Path
        ``path``.
    """
    return write_text(path, json.dumps(obj, **dumps) + "\n")


def save_npy(path, array):
    """Write one array to ``path`` in ``.npy`` format atomically (no pickled objects).

    Parameters
    ----------
    path : str or Path
    array : array-like, any shape

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    with atomic_path(path, ".npy") as tmp, open(tmp, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
    return path
