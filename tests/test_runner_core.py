"""The training-job path: run_job fits through sparsesvm.core, without scikit-learn (issue 5)."""

from __future__ import annotations

import json
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


def test_training_job_does_not_import_sklearn(blob_features, tmp_path):
    """Every method of the paper (and the gap rule) runs as train.py runs it, and the process
    never imports scikit-learn, pandas, matplotlib or scipy.optimize."""
    code = """
import json, sys
import numpy as np
from threadpoolctl import threadpool_limits
from sparsesvm.experiments.runner import run_job, write_json_atomic
threadpool_limits(1)
d, out = sys.argv[1], sys.argv[2]
jobs = [("hinge-reg", "l1inf", 4, "rel_change"), ("hinge-reg", "l1", None, "gap"),
        ("hinge-con", "l12", 2, "rel_change"), ("hinge-lin", "l1inf", "features", "rel_change"),
        ("square", "l2", None, "rel_change"), ("logit", "l1inf", 4, "rel_change"),
        ("ova", "l1inf", 4, "rel_change")]
recs = []
for method, penalty, groups, stopping in jobs:
    rec, _ = run_job(d, np.arange(0, 18, 2), method, penalty, groups, 0.5, 1e-3, 50,
                     stopping=stopping, dataset="blobs", subset=0)
    recs.append(rec)
write_json_atomic(out, recs)
heavy = ("sklearn", "pandas", "matplotlib", "scipy.optimize", "sparsesvm.estimators",
         "sparsesvm.solvers.accelerated.hinge")
print(json.dumps([m for m in heavy if m in sys.modules]))
"""
    out = _run(code, blob_features[0], tmp_path / "recs.json")
    assert json.loads(out.strip().splitlines()[-1]) == []
    recs = runner.read_json(tmp_path / "recs.json")
    assert [r["method"] for r in recs] == ["hinge-reg", "hinge-reg", "hinge-con", "hinge-lin",
                                          "square", "logit", "ova"]
    assert all(r["L"] == 9 and r["n_iter"] >= 1 for r in recs)
    assert recs[1]["stopping"] == "gap" and recs[1]["rel_gap"] is not None


def test_core_import_pulls_no_sklearn():
    code = ("import sys; import sparsesvm.core as c; c.check_params('hinge-reg', 'l1', 1.0, 1e-3, 10, "
            "100.0, 'paper', 'auto', False); "
            "print([m for m in ('sklearn', 'sparsesvm.solvers.accelerated.hinge', 'scipy.optimize') if m in sys.modules])")
    assert _run(code).strip() == "[]"


def test_run_job_matches_sparsesvc(blob_features):
    """The job's fit is SparseSVC's fit: same coefficients, iterations, objective, gap, errors."""
    from sparsesvm import SparseSVC

    d, X_tr, y_tr, X_te, y_te = blob_features
    subset = np.array([0, 1, 2, 6, 7, 8, 12, 13, 14])
    for method, penalty, groups, stopping in (("hinge-reg", "l1inf", 4, "gap"),
                                              ("hinge-con", "l12", "features", "rel_change"),
                                              ("square", "l1", None, "rel_change")):
        rec, coef_full = runner.run_job(d, subset, method, penalty, groups, 0.5, 1e-4, 300,
                                        stopping=stopping)
        est = SparseSVC(method=method, penalty=penalty, groups=groups, alpha=0.5, tol=1e-4,
                        max_iter=300, stopping=stopping).fit(X_tr[subset], y_tr[subset])
        np.testing.assert_array_equal(coef_full[:, :-1], est.coef_)
        np.testing.assert_array_equal(coef_full[:, -1], est.intercept_)
        assert rec["n_iter"] == est.n_iter_ and rec["objective"] == est.objective_
        assert rec["converged"] == est.converged_ and rec["stopping"] == est.stopping_
        assert (rec["rel_gap"] is None) == np.isnan(est.rel_gap_)
        assert rec["test_errors"] == int(np.count_nonzero(est.predict(X_te) != y_te))


def test_run_job_checks_parameters_before_reading(tmp_path):
    """SparseSVC's parameter checks run before the features are read (no such directory here)."""
    missing = tmp_path / "no-features"
    base = dict(features_dir=missing, subset_indices=None, method="hinge-reg", penalty="l1inf",
                groups=4, alpha=1.0, tol=1e-3, max_iter=10)
    for kwargs, match in (({"solver": "magic"}, "unknown solver"),
                          ({"solver": "paper", "stopping": "never"}, "stopping"),
                          ({"groups": None}, "needs groups"),
                          ({"penalty": "l1"}, "takes groups=None"),
                          ({"method": "ova", "groups": "features"}, "across-class"),
                          ({"alpha": "big"}, "alpha"),
                          ({"trace": 0}, "trace")):
        with pytest.raises(ValueError, match=match):
            runner.run_job(**{**base, **kwargs})
    assert not missing.exists()


def test_run_job_group_size_checked_against_features(blob_features):
    with pytest.raises(ValueError, match=r"group size must be in 1..n_features=8, got groups=9"):
        runner.run_job(blob_features[0], None, "hinge-reg", "l1inf", 9, 1.0, 1e-3, 10)


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
    params = core.check_params("hinge-reg", "l1", 0.5, 1e-4, 1000, 100.0, "liblinear", "auto", False)
    with pytest.raises(ValueError, match="l2 penalty only"):
        core.fit(params, X_tr, y_tr)
    with pytest.raises(ValueError, match=r"solver 'liblinear' does not support method 'square'; "
                                         r"it supports \('hinge-reg',\)"):
        core.check_params("square", "l2", 0.5, 1e-4, 1000, 100.0, "liblinear", "auto", False)


@pytest.mark.parametrize("method,expect", [("hinge-reg", ("lam", 4.0)), ("square", ("lam", 4.0)),
                                           ("logit", ("lam", 4.0)), ("ova", ("lam", 4.0)),
                                           ("hinge-con", ("eta", 2.5)), ("hinge-lin", ("eta", 2.5))])
def test_model_parameters(method, expect):
    from sparsesvm.solvers.registry import model_parameters

    assert model_parameters(method, 0.25, 10) == expect
