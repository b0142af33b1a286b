"""The fit core (sparsesvm.core): parameter checks, the registry's families, fit and predict, without scikit-learn."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import save_blob_features

from sparsesvm import core
from sparsesvm.experiments import runner


@pytest.fixture(scope="module")
def blob_features(tmp_path_factory):
    """3 classes x 6 training rows, 30 test rows, 8 features (float32), stored as the workflow does."""
    return save_blob_features(tmp_path_factory.mktemp("features"), 1, np.float32)


def _run(code, *args):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_core_import_pulls_no_sklearn():
    code = ("import sys; import sparsesvm.core as c; c.check_params('hinge-reg', 'l1', 1.0, 1e-3, 10, "
            "100.0, 'paper', 'auto', False); "
            "print([m for m in ('sklearn', 'sparsesvm.solvers.accelerated.hinge', 'scipy.optimize') "
            "if m in sys.modules])")
    assert _run(code).strip() == "[]"


def test_check_groups_without_n_features():
    assert core.check_groups("l1inf", 1000, None, "hinge-reg") == 1000
    assert core.check_groups("l12", "features", None, "square") == "features"
    assert core.check_groups("l2", None, None, "ova") is None
    with pytest.raises(ValueError, match=r"group size must be in 1..n_features, got groups=0"):
        core.check_groups("l12", 0, None, "hinge-reg")


@pytest.mark.parametrize("block_rows", [1, 7, 256, 10**6])
def test_decision_scores_blocks_equal_one_product(block_rows):
    rng = np.random.default_rng(2)
    X32 = rng.standard_normal((50, 13)).astype(np.float32)
    W, b = rng.standard_normal((4, 13)), rng.standard_normal(4)
    expected = X32.astype(np.float64) @ W.T + b  # what SparseSVC computes after validation
    S = core.decision_scores(X32, W, b, block_rows=block_rows)
    assert S.dtype == np.float64 and S.shape == (50, 4)
    np.testing.assert_allclose(S, expected, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(core.decision_scores(sp.csr_matrix(X32), W, b), expected,
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(core.decision_scores(X32.astype(np.float64), W, b), expected)


def test_fitted_model_rejects_non_finite_features(blob_features):
    _, X_tr, y_tr, X_te, _ = blob_features
    params = core.check_params("hinge-reg", "l1", 1.0, 1e-3, 20, 100.0, "paper", "auto", False)
    model = core.fit(params, X_tr, y_tr)
    assert model.predict(X_te).shape == (30,)
    bad = X_te.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        model.predict(bad)


def test_core_fit_input_errors(blob_features):
    _, X_tr, y_tr, _, _ = blob_features
    params = core.check_params("hinge-reg", "l1", 1.0, 1e-3, 20, 100.0, "paper", "auto", False)
    with pytest.raises(ValueError, match="2-D"):
        core.fit(params, X_tr[:, 0], y_tr)
    with pytest.raises(ValueError, match="y must be 1-D"):
        core.fit(params, X_tr, y_tr[:, None])
    with pytest.raises(ValueError, match="SparseSVC needs at least 2 classes in y; got 1 class"):
        core.fit(params, X_tr, np.zeros(18))
    with pytest.raises(ValueError, match="got no samples"):
        core.encode_labels(np.array([]))
    with pytest.raises(ValueError, match="length"):
        core.fit(params, X_tr, y_tr[:-1])


def test_registered_family_serves_estimator_and_job(blob_features):
    """A family added with register_solver (estimators re-exports core's) is used by both."""
    from sparsesvm import SparseSVC, estimators

    assert estimators.SOLVERS is core.SOLVERS and estimators.register_solver is core.register_solver
    calls = []

    def run(op, penalty, alpha, **kw):
        calls.append(op.n_samples)
        return core.SOLVERS["paper"]["methods"]["hinge-reg"](op, penalty, alpha, **kw)

    estimators.register_solver("counting", {"hinge-reg": run}, ("rel_change",))
    try:
        d, X_tr, y_tr, _, _ = blob_features
        est = SparseSVC(penalty="l1", alpha=0.5, tol=1e-3, max_iter=50, solver="counting").fit(X_tr, y_tr)
        rec, _ = runner.run_job(d, None, "hinge-reg", "l1", None, 0.5, 1e-3, 50, solver="counting")
        assert calls == [18, 18] and est.stopping_ == "rel_change" and rec["solver"] == "counting"
        with pytest.raises(ValueError, match="does not support method 'square'"):
            SparseSVC(method="square", solver="counting").fit(X_tr, y_tr)
        # a family offers single precision only for the methods it lists
        with pytest.raises(ValueError, match=r"precision='single' is not available for method "
                                             r"'hinge-reg' with solver 'counting'"):
            core.check_params("hinge-reg", "l1", 1.0, 1e-3, 20, 100.0, "counting", "auto", False,
                              "single")
        estimators.register_solver("counting", {"hinge-reg": run}, ("rel_change",),
                                   single=("hinge-reg",))
        params = core.check_params("hinge-reg", "l1", 0.5, 1e-3, 50, 100.0, "counting", "auto",
                                   False, "single")
        assert params.precision == "single"
        core.fit(params, X_tr, y_tr)
        assert calls == [18, 18, 18]
    finally:
        del core.SOLVERS["counting"]
    with pytest.raises(ValueError, match="unknown solver 'counting'"):
        core.check_params("hinge-reg", "l1", 1.0, 1e-3, 20, 100.0, "counting", "auto", False)


def test_liblinear_peer_is_registered(blob_features):
    """The l2 peer dispatches through the registry: core.fit with solver="liblinear" is
    CrammerSingerSVC's fit; other penalties and unknown pairs are refused by name."""
    from sparsesvm import CrammerSingerSVC

    _, X_tr, y_tr, _, _ = blob_features
    params = core.check_params("hinge-reg", "l2", 0.5, 1e-4, 1000, 100.0, "liblinear", "auto", False)
    assert params.stopping == "liblinear"
    fit = core.fit(params, X_tr, y_tr)
    est = CrammerSingerSVC(alpha=0.5, tol=1e-4, max_iter=1000).fit(X_tr, y_tr)
    np.testing.assert_array_equal(fit.coef, est.coef_)
    np.testing.assert_array_equal(fit.intercept, est.intercept_)
    assert (fit.n_iter, fit.objective) == (est.n_iter_, est.objective_)
    # the family declares what it fits: l2, no trace, no reference (refused before any work)
    with pytest.raises(ValueError, match=r"solver 'liblinear' fits the l2 problem only; got penalty 'l1'"):
        core.check_params("hinge-reg", "l1", 0.5, 1e-4, 1000, 100.0, "liblinear", "auto", False)
    with pytest.raises(ValueError, match=r"solver 'liblinear' records no convergence trace \(trace=10"):
        core.check_params("hinge-reg", "l2", 0.5, 1e-4, 1000, 100.0, "liblinear", "auto", 10)
    with pytest.raises(ValueError, match=r"records no convergence trace \(reference_coef given\)"):
        core.fit(params, X_tr, y_tr, reference_coef=np.zeros((3, X_tr.shape[1] + 1)))
    with pytest.raises(ValueError, match=r"solver 'liblinear' does not support method 'square'; "
                                         r"it supports \('hinge-reg',\)"):
        core.check_params("square", "l2", 0.5, 1e-4, 1000, 100.0, "liblinear", "auto", False)


@pytest.mark.parametrize("method,expect", [("hinge-reg", ("lam", 4.0)), ("square", ("lam", 4.0)),
                                           ("logit", ("lam", 4.0)), ("ova", ("lam", 4.0)),
                                           ("hinge-con", ("eta", 2.5)), ("hinge-lin", ("eta", 2.5))])
def test_model_parameters(method, expect):
    from sparsesvm.solvers.registry import model_parameters

    assert model_parameters(method, 0.25, 10) == expect


# --------------------------------------------------------------------------- unused features

def _sparse_problem(seed=0, L=30, M=200, K=4):
    """CSR features of which about half the columns no sample uses."""
    rng = np.random.default_rng(seed)
    dense = rng.random((L, M)) * (rng.random((L, M)) < 0.03)
    y = np.arange(L) % K
    dense[np.arange(L), y] = 1.0 + rng.random(L)  # every sample has a signal column of its class
    return sp.csr_matrix(dense), y


@pytest.mark.parametrize("method,penalty,groups,alpha", [
    ("hinge-reg", "l12", "features", 0.05), ("hinge-con", "l12", "features", 0.1),
    ("hinge-lin", "l1", None, 0.1), ("square", "l2", None, 0.01), ("logit", "l1inf", "features", 0.01),
])
def test_unused_features_are_dropped_with_the_same_result(monkeypatch, method, penalty, groups, alpha):
    """A sparse fit on the used features only: the fit on all features (restriction off), to
    rounding, with the same iterations, and exact zeros for the unused features."""
    Phi, y = _sparse_problem()
    used = np.unique(Phi.indices)
    assert 0 < used.size < Phi.shape[1]
    params = core.check_params(method, penalty, alpha, 1e-6, 3000, 100.0, "paper", "auto", False)
    fast = core.fit(params, Phi, y, groups=groups)
    with monkeypatch.context() as m:
        m.setattr(core, "unused_features_dropped", lambda *a: None)
        slow = core.fit(params, Phi, y, groups=groups)
    assert fast.n_iter == slow.n_iter
    assert fast.coef.shape == slow.coef.shape == (4, Phi.shape[1])
    assert np.all(fast.coef[:, np.setdiff1d(np.arange(Phi.shape[1]), used)] == 0)
    scale = np.abs(slow.coef).max()
    np.testing.assert_allclose(fast.coef, slow.coef, rtol=1e-8, atol=1e-10 * scale)
    np.testing.assert_allclose(fast.intercept, slow.intercept, rtol=1e-8, atol=1e-10)
    assert fast.objective == pytest.approx(slow.objective, rel=1e-10)
    assert fast.rel_gap == pytest.approx(slow.rel_gap, rel=1e-6, abs=1e-12)


def test_unused_features_are_kept_where_they_cannot_be_dropped():
    from sparsesvm.model.operator import MulticlassOperator

    Phi, y = _sparse_problem()
    op = MulticlassOperator(Phi, y, 4)
    paper = ("hinge-reg", "paper")
    assert core.unused_features_dropped(op, *paper, None) is not None
    assert core.unused_features_dropped(op, *paper, "features") is not None
    assert core.unused_features_dropped(op, *paper, 5) is None  # within-class blocks: kept whole
    assert core.unused_features_dropped(op, "ova", "paper", None) is None  # its own norm
    assert core.unused_features_dropped(op, "hinge-reg", "accelerated", None) is None
    dense = MulticlassOperator(Phi.toarray(), y, 4)
    assert core.unused_features_dropped(dense, *paper, None) is None
    every = MulticlassOperator(Phi[:, np.unique(Phi.indices)], y, 4)
    assert core.unused_features_dropped(every, *paper, None) is None


def test_unused_features_kept_for_a_reference_that_weighs_them(monkeypatch):
    """The trace's distance to a reference with weights on unused features is measured in full."""
    from sparsesvm.model.operator import MulticlassOperator

    Phi, y = _sparse_problem()
    unused = np.setdiff1d(np.arange(Phi.shape[1]), np.unique(Phi.indices))
    calls = []
    real = MulticlassOperator.restrict_features
    monkeypatch.setattr(MulticlassOperator, "restrict_features",
                        lambda self, cols: calls.append(cols) or real(self, cols))
    params = core.check_params("hinge-reg", "l1", 0.1, 1e-6, 50, 100.0, "paper", "auto", True)
    ref = np.zeros((4, Phi.shape[1] + 1))
    ref[:, 0] = 1.0
    core.fit(params, Phi, y, reference_coef=ref)
    assert len(calls) == 1  # zero on the unused features: dropped
    ref[0, unused[0]] = 1.0
    fit = core.fit(params, Phi, y, reference_coef=ref)
    assert len(calls) == 1  # weighs an unused feature: kept
    full = np.ascontiguousarray(ref.T)
    # the trace's last distance is the full one
    X = np.vstack([fit.coef.T, fit.intercept])
    assert fit.trace["rel_dist"][-1] == pytest.approx(np.linalg.norm(X - full) / np.linalg.norm(full))
