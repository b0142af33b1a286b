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


def make_random_problem(seed=0, L=12, M=8, K=3):
    """Small dense multiclass problem: Phi (L, M) standard normal (seeded), y = l mod K.

    Returns
    -------
    Phi : ndarray (L, M)
    y : ndarray of int (L,)
        Balanced labels 0, 1, ..., K-1, 0, 1, ...
    K : int
    """
    rng = np.random.default_rng(seed)
    Phi = rng.standard_normal((L, M))
    y = np.arange(L) % K
    return Phi, y, K


@pytest.fixture
def random_problem():
    """The factory :func:`make_random_problem` (``random_problem(seed, L=, M=, K=)``)."""
    return make_random_problem
