"""Shared pytest fixtures.

The offline data mirror (same layout as the public files, see ``../shared/data/README.md``)
is looked up in ``$SPARSESVM_MIRROR``, then in ``<repo>/../shared/data``. Tests that need it
take the ``mirror_dir`` fixture and are skipped, with the reason, when it is absent.
"""
import os
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _find_mirror():
    env = os.environ.get("SPARSESVM_MIRROR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    for path in candidates:
        if (path / "leukemia").is_dir() and (path / "mnist").is_dir():
            return path.resolve()
    return None


MIRROR = _find_mirror()


@pytest.fixture(scope="session")
def repo_root():
    return REPO_ROOT


@pytest.fixture(scope="session")
def mirror_dir():
    if MIRROR is None:
        pytest.skip(
            "offline data mirror not found: set SPARSESVM_MIRROR or place it at ../shared/data"
        )
    return MIRROR


def make_random_problem(seed=0, L=12, M=8, K=3, *, shift=0.0, scale=1.0, sep=None):
    """The tests' one random multiclass problem, with balanced labels ``y = l mod K``.

    Two draws from ``numpy.random.default_rng(seed)``:

    - ``sep=None``: ``Phi = scale * (Z + shift * E[y])``, with ``Z`` (L, M) standard
      normal and ``E = eye(K, M)`` (class ``k`` moved by ``shift`` along feature ``k``);
      ``shift=0`` gives plain Gaussian rows, so the hinge is positive at the optimum;
    - ``sep`` given: Gaussian blobs, class means ``mu = sep * N(0, 1)`` (K, M) drawn
      first, then ``Phi = mu[y] + Z``.

    Returns
    -------
    Phi : ndarray (L, M)
    y : ndarray of int (L,)
        Labels 0, 1, ..., K-1, 0, 1, ...
    K : int
    """
    rng = np.random.default_rng(seed)
    y = np.arange(L) % K
    if sep is not None:
        mu = rng.standard_normal((K, M)) * sep
        return mu[y] + rng.standard_normal((L, M)), y, K
    Phi = rng.standard_normal((L, M))
    if shift:
        Phi = Phi + shift * np.eye(K, M)[y]
    if scale != 1.0:
        Phi = scale * Phi
    return Phi, y, K


@pytest.fixture(scope="session")
def random_problem():
    """The factory :func:`make_random_problem` (``random_problem(seed, L=, M=, K=)``)."""
    return make_random_problem
