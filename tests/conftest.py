"""Shared pytest fixtures.

The offline data mirror (same layout as the public files, see ``../shared/data/README.md``)
is looked up in ``$SPARSESVM_MIRROR``, then in ``<repo>/../shared/data``. Tests that need it
take the ``mirror_dir`` fixture and are skipped, with the reason, when it is absent.
"""
import os
from pathlib import Path

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
