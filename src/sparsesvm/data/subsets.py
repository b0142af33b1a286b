"""Seeded, class-balanced training subsets.

The experiments train on subsets of L = K * per_class samples drawn from the official
training split (spec section 5: "L in {3K, 5K}" means 3 and 5 samples per class).
:func:`balanced_subsets` draws them from the raw 64-bit output of NumPy's PCG64 bit
generator seeded through ``SeedSequence(seed)``: that stream is fixed by NumPy's
compatibility policy, and the selection uses only integer sorting, so a subset is the
same on every machine, NumPy version and rerun.
"""

from __future__ import annotations

import numpy as np

from .._io import atomic_path

__all__ = ["balanced_subsets", "save_subsets", "load_subsets"]


def balanced_subsets(y, per_class, n_subsets, seed):
    """Draw class-balanced subsets of training indices.

    For subset ``s`` and each class ``k`` (in sorted label order) one fresh key per
    sample of the class is drawn (raw PCG64 outputs); the ``per_class`` samples with the
    smallest keys are kept. Consequences, both by design:

    * subset ``s`` does not depend on ``n_subsets`` (the first 10 of 25 subsets are the
      10 subsets drawn with ``n_subsets=10``);
    * with the same seed, the subsets for a smaller ``per_class`` are contained in those
      for a larger one (nested L's).

    Parameters
    ----------
    y : array-like of int, shape (n_samples,)
        Labels of the official training split.
    per_class : int
        Samples per class (L / K), >= 1.
    n_subsets : int
        Number of subsets, >= 1.
    seed : int or sequence of int
        Entropy for ``numpy.random.SeedSequence``.

    Returns
    -------
    ndarray of int64, shape (n_subsets, per_class * K)
        Row ``s`` holds the indices (into ``y``) of subset ``s``, sorted ascending; it
        contains exactly ``per_class`` samples of each of the K classes present in ``y``.

    Raises
    ------
    ValueError
        ``per_class`` or ``n_subsets`` < 1, ``y`` not 1-D, or a class has fewer than
        ``per_class`` samples (the message names the class and its size).
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"balanced_subsets: y must be a non-empty 1-D array, got shape {y.shape}")
    per_class = int(per_class)
    n_subsets = int(n_subsets)
    if per_class < 1:
        raise ValueError(f"balanced_subsets: per_class must be >= 1, got {per_class}")
    if n_subsets < 1:
        raise ValueError(f"balanced_subsets: n_subsets must be >= 1, got {n_subsets}")
    classes = np.unique(y)
    members = [np.flatnonzero(y == c) for c in classes]
    for c, m in zip(classes, members):
        if m.size < per_class:
            label = c.item() if isinstance(c, np.generic) else c
            raise ValueError(
                f"balanced_subsets: class {label!r} has {m.size} samples, fewer than the "
                f"{per_class} per class requested"
            )
    bitgen = np.random.PCG64(np.random.SeedSequence(seed))
    out = np.empty((n_subsets, per_class * classes.size), dtype=np.int64)
    for s in range(n_subsets):
        picked = []
        for m in members:
            keys = bitgen.random_raw(m.size)
            order = np.argsort(keys, kind="stable")
            picked.append(m[order[:per_class]])
        out[s] = np.sort(np.concatenate(picked))
    return out


def save_subsets(path, indices, **meta):
    """Write subset indices to ``path`` (``.npz``) atomically.

    Parameters
    ----------
    path : str or Path
    indices : ndarray of int64, shape (n_subsets, L)
    **meta : scalars stored alongside (e.g. ``seed=0, per_class=3``).
    """
    with atomic_path(path, ".npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, indices=np.asarray(indices, dtype=np.int64),
                 **{k: np.asarray(v) for k, v in meta.items()})


def load_subsets(path):
    """Read subset indices written by :func:`save_subsets`.

    Returns
    -------
    ndarray of int64, shape (n_subsets, L)
    """
    with np.load(path, allow_pickle=False) as data:
        if "indices" not in data:
            raise ValueError(f"{path}: no 'indices' array (not written by save_subsets)")
        return data["indices"].astype(np.int64)
