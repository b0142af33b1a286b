"""Shared pytest fixtures.

The offline data mirror (same layout as the public files, see ``../shared/data/README.md``)
is looked up in ``$SPARSESVM_MIRROR``, then in ``<repo>/../shared/data``. Tests that need it
take the ``mirror_dir`` fixture and are skipped, with the reason, when it is absent.
"""
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

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


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """config/test.yaml run end to end on the tiny fixture mirror (`snakemake`, whose default
    target `all` builds every rule of every experiment and the paper comparison), once per
    test session: the workflow tests and the publishing tests read the same run.

    ``$SPARSESVM_TINY_RUN_DIR`` names a directory to use instead of a fresh temporary one,
    e.g. to finish an interrupted run (Snakemake then runs only what is missing).
    """
    import fixtures_data
    from workflow_helpers import FULL, TEST, job_stats, load_config, smk

    given = os.environ.get("SPARSESVM_TINY_RUN_DIR")
    root = Path(given) if given else tmp_path_factory.mktemp("workflow")
    mirror = root / "mirror"
    fixtures_data.write_tiny_mirror(mirror)
    results = root / "results"
    conf = {"mirror": mirror, "results": results}
    _, out = smk(root, "--cores", "2", "--rerun-incomplete", configfiles=[TEST], config=conf, timeout=3600)
    return {"root": root, "mirror": mirror, "results": results, "conf": conf, "log": out,
            "cfg": load_config(FULL, TEST), "stats": job_stats(out), "fresh": not given}


def make_random_problem(seed=0, L=12, M=8, K=3, *, shift=0.0, scale=1.0, sep=None,
                        labels="cyclic", density=None):
    """The tests' one random multiclass problem, drawn from ``numpy.random.default_rng(seed)``.

    Three draws:

    - default: ``Phi = scale * (Z + shift * E[y])``, with ``Z`` (L, M) standard normal
      and ``E = eye(K, M)`` (class ``k`` moved by ``shift`` along feature ``k``);
      ``shift=0`` gives plain Gaussian rows, so the hinge is positive at the optimum;
    - ``sep`` given: Gaussian blobs, class means ``mu = sep * N(0, 1)`` (K, M) drawn
      first, then ``Phi = mu[y] + Z``;
    - ``density`` given: ``Z`` is a CSR matrix with that fraction of standard normal
      entries (positions drawn by ``scipy.sparse.random(random_state=seed)``).

    Labels: ``"cyclic"``, ``y = l mod K`` (balanced); ``"random"``, uniform draws after
    ``Z``, then the first ``min(K, L)`` rows set to ``0, ..., K-1`` so every class is present.

    Returns
    -------
    Phi : ndarray (L, M), or scipy.sparse.csr_matrix with ``density``
    y : ndarray of int (L,)
    K : int
    """
    rng = np.random.default_rng(seed)
    y = np.arange(L) % K
    if sep is not None:
        mu = rng.standard_normal((K, M)) * sep
        return mu[y] + rng.standard_normal((L, M)), y, K
    if density is None:
        Phi = rng.standard_normal((L, M))
    else:
        Phi = sp.random(L, M, density=density, format="csr", random_state=seed,
                        data_rvs=rng.standard_normal)
    if labels == "random":
        y = rng.integers(0, K, size=L)
        y[:min(K, L)] = np.arange(min(K, L))
    elif labels != "cyclic":
        raise ValueError(f"labels must be 'cyclic' or 'random', got {labels!r}")
    if shift:
        Phi = Phi + shift * np.eye(K, M)[y]
    if scale != 1.0:
        Phi = scale * Phi
    return Phi, y, K


def save_blob_features(directory, seed, dtype=np.float64):
    """Blob features stored as the workflow stores them (``sparsesvm.data.features``).

    Three classes in 8 features, class ``k`` centred at ``2 e_k``: 6 training rows a class
    with noise 0.3, then 10 test rows a class with noise 0.8, rows sorted by class.

    Returns
    -------
    directory : Path
    X_train : ndarray (18, 8) of ``dtype``
    y_train : ndarray of int (18,)
    X_test : ndarray (30, 8) of ``dtype``
    y_test : ndarray of int (30,)
    """
    from sparsesvm.data import features

    rng = np.random.default_rng(seed)
    centers = 2.0 * np.eye(3, 8)
    y_tr, y_te = np.repeat(np.arange(3), 6), np.repeat(np.arange(3), 10)
    X_tr = (centers[y_tr] + 0.3 * rng.standard_normal((18, 8))).astype(dtype)
    X_te = (centers[y_te] + 0.8 * rng.standard_normal((30, 8))).astype(dtype)
    features.save_features(directory, X_tr, y_tr, X_te, y_te, {"dataset": "blobs"})
    return directory, X_tr, y_tr, X_te, y_te


@pytest.fixture(scope="session")
def random_problem():
    """The factory :func:`make_random_problem` (``random_problem(seed, L=, M=, K=)``)."""
    return make_random_problem


def stall_warm_starts(monkeypatch, row_generation, dense=False, dense_tol_factor=5e-3):
    """Every warm-started master solve of the column generation cut at its first iteration;
    with row generation (forced on) on the interior-point path whatever the master's size, by
    HiGHS' interior point with crossover (``dense``: by the dense interior-point method on
    every master, at ``dense_tol_factor`` times the fit's tolerance: the default puts the
    tests' 2e-7 at 1e-9, the method's reach)."""
    from sparsesvm.solvers.accelerated import colgen

    if row_generation:
        monkeypatch.setattr(colgen, "ROWGEN_MIN_ROWS", 0)
        for name, value in (("IPM_WARM_ITER_MIN", 1), ("IPM_WARM_ITER_PER_ROW", 0), ("IPM_MIN_NNZ", 0),
                            ("DENSE_IPM_MAX_ROWS", 10**9 if dense else 0),
                            ("DENSE_IPM_TOL_FACTOR", dense_tol_factor)):
            monkeypatch.setattr(colgen, name, value)
    else:
        monkeypatch.setattr(colgen, "WARM_ITER_MIN", 1)
        monkeypatch.setattr(colgen, "WARM_ITER_PER_ROW", 0)
