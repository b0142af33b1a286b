"""20 Newsgroups "bydate": the reader of the tarball and the real sizes.

:func:`load_news20` checks the archive's layout, extracts it safely (regular files and
folders only, never outside a temporary directory) and reads both splits with
scikit-learn's ``load_files`` into a :class:`~sparsesvm.data.containers.TextDataset`. A
damaged or unexpected archive raises :class:`ValueError` naming it.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
import zlib
from pathlib import Path

import numpy as np

from .containers import TextDataset

__all__ = ["NEWS20_EXPECTED", "load_news20"]

#: Sizes and number of classes of the real 20 Newsgroups bydate split; ``train_counts``:
#: training documents per group, in sorted group order.
NEWS20_EXPECTED = {
    "n_train": 11314,
    "n_test": 7532,
    "n_classes": 20,
    "train_counts": (480, 584, 591, 590, 578, 593, 585, 594, 598, 597,
                     600, 595, 591, 594, 593, 599, 546, 564, 465, 377),
}

_NEWS20_SPLITS = ("20news-bydate-train", "20news-bydate-test")


def _safe_extract(tf, members, work, tarball):
    """Extract regular files and folders only, never outside ``work``."""
    if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
        tf.extractall(work, filter="data")
        return
    for m in members:  # pragma: no cover - older Pythons
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise ValueError(f"{tarball}: unsafe member {m.name!r} (absolute path, '..' or link)")
    tf.extractall(work)  # pragma: no cover


def load_news20(tarball, *, expected=NEWS20_EXPECTED, tmpdir=None):
    """Read the 20 Newsgroups "bydate" tarball with scikit-learn's ``load_files``.

    The archive is extracted to a temporary directory (removed afterwards); each split
    (``20news-bydate-train/<group>/<id>``, ``20news-bydate-test/<group>/<id>``) is read
    with ``sklearn.datasets.load_files(encoding="latin-1", shuffle=False)``: documents in
    class order (groups sorted by name), file names sorted within a class.

    Parameters
    ----------
    tarball : str or Path
        ``20news-bydate.tar.gz``.
    expected : dict or None
        ``{"n_train": 11314, "n_test": 7532, "n_classes": 20}`` (default) checks the real
        counts; ``None`` skips the count checks (tiny fixtures).
    tmpdir : str or Path, optional
        Where to extract (default: the system temporary directory).

    Returns
    -------
    TextDataset
        ``docs_*`` lists of str, ``y_*`` int64 label vectors, ``class_names`` (sorted,
        identical in both splits).
    """
    from sklearn.datasets import load_files

    tarball = Path(tarball)
    try:
        tf = tarfile.open(tarball, "r:*")
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise ValueError(f"{tarball}: not a readable tar archive ({exc})") from exc
    with tempfile.TemporaryDirectory(dir=tmpdir, prefix="news20-") as work:
        try:
            with tf:
                members = tf.getmembers()
                tops = {m.name.split("/", 1)[0] for m in members}
                missing = [s for s in _NEWS20_SPLITS if s not in tops]
                if missing:
                    raise ValueError(
                        f"{tarball}: expected top-level folders {list(_NEWS20_SPLITS)}, "
                        f"missing {missing} (found {sorted(tops)[:5]})"
                    )
                _safe_extract(tf, members, work, tarball)
        except getattr(tarfile, "FilterError", ()) as exc:
            raise ValueError(f"{tarball}: unsafe archive member ({exc})") from exc
        except (tarfile.TarError, EOFError, zlib.error) as exc:
            raise ValueError(f"{tarball}: damaged or truncated tar archive ({exc})") from exc
        except OSError as exc:
            if isinstance(exc, (PermissionError, FileNotFoundError)):
                raise
            raise ValueError(f"{tarball}: damaged or truncated archive ({exc})") from exc
        parts = []
        for split in _NEWS20_SPLITS:
            bunch = load_files(
                os.path.join(work, split), encoding="latin-1", shuffle=False,
                decode_error="strict",
            )
            files = [os.path.relpath(f, work).replace(os.sep, "/") for f in bunch.filenames]
            parts.append((list(bunch.data), np.asarray(bunch.target, dtype=np.int64),
                          list(bunch.target_names), files))
    (d_tr, y_tr, names_tr, f_tr), (d_te, y_te, names_te, f_te) = parts
    if names_tr != names_te:
        raise ValueError(
            f"{tarball}: train and test splits have different groups "
            f"({sorted(set(names_tr) ^ set(names_te))})"
        )
    if expected:
        checks = (("n_classes", len(names_tr), "groups"),
                  ("n_train", len(d_tr), "training documents"),
                  ("n_test", len(d_te), "test documents"))
        for key, got, what in checks:
            if key in expected and got != expected[key]:
                raise ValueError(f"{tarball}: found {got} {what}, expected {expected[key]}")
    return TextDataset(d_tr, y_tr, d_te, y_te, names_tr, f_tr, f_te)
