"""``issparse`` without importing scipy.

Importing ``scipy.sparse`` costs about 0.3 s (SciPy >= 1.15 clones the numpy
namespace for its array-API layer, which imports ``numpy.f2py``,
``numpy.testing``, ...), a large part of a short training job. An object can
only be a scipy sparse array or matrix if ``scipy.sparse`` has been imported,
so :func:`issparse` looks in ``sys.modules`` first; modules on the dense job
path import ``scipy.sparse`` inside their sparse branches only.
"""

from __future__ import annotations

import sys

__all__ = ["issparse"]


def issparse(x):
    """``scipy.sparse.issparse(x)``, without importing scipy when it is not loaded.

    Parameters
    ----------
    x : object

    Returns
    -------
    bool
    """
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(x)
