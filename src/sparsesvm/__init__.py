"""sparsesvm: sparse multiclass SVMs with the exact hinge loss by proximal methods.

Reference implementation of G. Chierchia, N. Pustelnik, J.-C. Pesquet and
B. Pesquet-Popescu, "A Proximal Approach for Sparse Multiclass SVM".

Public API
----------
SparseSVC, CrammerSingerSVC
    scikit-learn estimators (see :mod:`sparsesvm.estimators`).
__version__
    Installed distribution version ("0+unknown" when not installed).
source_hash()
    sha256 of the package's Python sources (a rerun trigger for workflows).

Importing the package is light (standard library only): the estimators (and
with them scikit-learn, which itself imports pandas), the solvers and the
data and experiment subpackages are imported on first attribute access, so
``sparsesvm.source_hash()`` and ``sparsesvm.__version__`` cost nothing.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

try:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    __version__ = _version("sparsesvm")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_LAZY))


__all__ = ["SparseSVC", "CrammerSingerSVC", "__version__", "source_hash"]

_LAZY = ("data", "model", "solvers", "experiments", "estimators", "core")


def source_hash():
    """sha256 hex digest of the package's ``.py`` sources.

    Files are taken recursively under the package directory (``__pycache__``
    skipped) in sorted order of their POSIX relative paths; each contributes
    its relative path, a NUL byte, its bytes and a NUL byte, so renaming or
    moving code changes the hash too.

    Returns
    -------
    str
        64 hex characters.
    """
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    files = sorted((p for p in root.rglob("*.py") if "__pycache__" not in p.parts),
                   key=lambda p: p.relative_to(root).as_posix())
    for p in files:
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def __getattr__(name):
    if name in ("SparseSVC", "CrammerSingerSVC"):
        from . import estimators

        return getattr(estimators, name)
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
