"""SparseSVC / CrammerSingerSVC: scikit-learn conventions, input handling, errors."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

import sparsesvm
from sparsesvm import CrammerSingerSVC, SparseSVC

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cvx_reference  # noqa: E402
from conftest import make_random_problem  # noqa: E402


def blobs(seed=0, K=3):
    """Gaussian blobs, 30 rows of 8 features: (X, y)."""
    return make_random_problem(seed, L=30, M=8, K=K, sep=2.0)[:2]


FAST = dict(tol=1e-4, max_iter=800)


# --------------------------------------------------------------------------- #
# scikit-learn's estimator checks
# --------------------------------------------------------------------------- #
# Checks that cannot pass by design, {check name: reason}. Empty: with
# scikit-learn 1.9 every check passes for both estimators (binary problems use
# the (n_samples,) decision_function convention; CrammerSingerSVC fixes
# liblinear's random_state so refits are identical).
EXPECTED_FAILED: dict[str, str] = {}


def _expected_failed(estimator):
    return EXPECTED_FAILED


# Fast settings: the checks test the interface (every method shares fit/predict),
# not convergence; l2 converges in a few hundred iterations.
@parametrize_with_checks(
    [SparseSVC(method="hinge-reg", penalty="l2", alpha=1.0, tol=1e-3, max_iter=500),
     CrammerSingerSVC(alpha=1.0)],
    expected_failed_checks=_expected_failed,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------- #
# every method fits, labels of any type
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova"])
@pytest.mark.parametrize("penalty,groups", [("l2", None), ("l1", None), ("l12", 3), ("l1inf", "features")])
def test_all_methods_fit_and_predict(method, penalty, groups):
    if method == "ova" and groups == "features":
        with pytest.raises(ValueError, match="ova.*across-class|across-class.*ova"):
            SparseSVC(method=method, penalty=penalty, groups=groups).fit(*blobs())
        return
    X, y = blobs()
    labels = np.array(["cat", "dog", "emu"])[y]
    clf = SparseSVC(method=method, penalty=penalty, groups=groups, alpha=0.3, **FAST).fit(X, labels)
    assert list(clf.classes_) == ["cat", "dog", "emu"]
    assert clf.coef_.shape == (3, 8) and clf.intercept_.shape == (3,)
    assert clf.decision_function(X).shape == (30, 3)
    assert clf.score(X, labels) >= 0.8  # well-separated blobs
    pred = clf.predict(X)
    S = X @ clf.coef_.T + clf.intercept_
    np.testing.assert_array_equal(pred, clf.classes_[S.argmax(axis=1)])
    assert isinstance(clf.n_iter_, int) and clf.n_iter_ >= 1
    assert isinstance(clf.converged_, bool)
    assert clf.fit_time_ > 0 and np.isfinite(clf.objective_)
    assert clf.trace_ is None
    if method in ("hinge-con", "hinge-lin"):
        assert clf.constraint_violation_ >= 0.0
    else:
        assert clf.constraint_violation_ == 0.0


def test_objective_matches_definition():
    """objective_ = g + lambda * loss (hinge-reg), g (hinge-con), from coef_/intercept_."""
    X, y = blobs(1)
    for method in ("hinge-reg", "hinge-con"):
        clf = SparseSVC(method=method, penalty="l1", alpha=0.5, **FAST).fit(X, y)
        Xs = np.vstack([clf.coef_.T, clf.intercept_])
        g = np.abs(clf.coef_).sum()
        loss = cvx_reference.hinge_loss_np(X, y, Xs)
        expected = g + 2.0 * loss if method == "hinge-reg" else g
        assert clf.objective_ == pytest.approx(expected, rel=1e-10)
        if method == "hinge-con":
            assert clf.constraint_violation_ == pytest.approx(max(0.0, loss - 0.5 * 30), abs=1e-9)


def test_trace_and_reference():
    X, y = blobs(2)
    kw = dict(method="hinge-reg", penalty="l12", groups=4, alpha=0.3, max_iter=5000, step_ratio=1.0)
    ref = SparseSVC(tol=1e-8, **{**kw, "max_iter": 1500}).fit(X, y)
    coef_full = np.hstack([ref.coef_, ref.intercept_[:, None]])
    clf = SparseSVC(tol=1e-5, trace=True, reference_coef=coef_full, **kw).fit(X, y)
    tr = clf.trace_
    assert set(tr) == {"iteration", "time", "rel_change", "objective", "rel_dist"}
    n = clf.n_iter_
    assert all(len(v) == n for v in tr.values())
    np.testing.assert_array_equal(tr["iteration"], np.arange(1, n + 1))
    assert np.all(np.diff(tr["time"]) >= 0)
    assert tr["time"][-1] <= clf.fit_time_ <= tr["time"][-1] + 0.05
    assert tr["rel_change"][-1] <= 1e-5
    assert tr["objective"][-1] == pytest.approx(clf.objective_)
    assert tr["rel_dist"][0] > tr["rel_dist"][-1]
    Xs = np.vstack([clf.coef_.T, clf.intercept_])
    assert tr["rel_dist"][-1] == pytest.approx(
        np.linalg.norm(Xs - coef_full.T) / np.linalg.norm(coef_full), rel=1e-9)
    # every 5th iteration (and the last)
    clf5 = SparseSVC(tol=1e-5, trace=5, **kw).fit(X, y)
    it5 = clf5.trace_["iteration"]
    assert np.all(it5[:-1] % 5 == 0) and it5[-1] == clf5.n_iter_
    np.testing.assert_allclose(clf5.coef_, clf.coef_)  # the trace does not change the iterates


def test_dense_sparse_float32_int_same_answer():
    X, y = blobs(3)
    Xi = np.round(X * 3).astype(np.int64)
    kw = dict(method="hinge-con", penalty="l1inf", groups=3, alpha=0.2, tol=1e-6, max_iter=300)
    a = SparseSVC(**kw).fit(Xi, y)
    b = SparseSVC(**kw).fit(sp.csr_matrix(Xi), y)
    c = SparseSVC(**kw).fit(Xi.astype(np.float32), y)
    d = SparseSVC(**kw).fit(sp.csc_matrix(Xi.astype(np.float32)), y)
    for other in (b, c, d):
        np.testing.assert_allclose(other.coef_, a.coef_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(other.intercept_, a.intercept_, rtol=1e-9, atol=1e-12)
        assert other.n_iter_ == a.n_iter_
    assert a.coef_.dtype == np.float64
    np.testing.assert_allclose(b.decision_function(sp.csr_matrix(Xi)), a.decision_function(Xi))


@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con", "hinge-lin", "square", "logit"])
def test_single_precision_fit(method):
    """precision="single": float32 products, the same model to float32-level accuracy;
    float32 input stays float32 for them; the default is "double" and unchanged."""
    X, y = blobs(3)
    X = X.astype(np.float32)
    kw = dict(method=method, penalty="l1inf", groups=3, alpha=0.2, tol=1e-6, max_iter=3000)
    a = SparseSVC(**kw).fit(X, y)
    b = SparseSVC(precision="single", **kw).fit(X, y)
    c = SparseSVC(precision="double", **kw).fit(X, y)
    assert SparseSVC().get_params()["precision"] == "double"
    np.testing.assert_array_equal(c.coef_, a.coef_)  # the default is "double"
    assert (c.n_iter_, c.objective_) == (a.n_iter_, a.objective_)
    assert b.coef_.dtype == np.float64 and b.intercept_.dtype == np.float64
    assert b.objective_ == pytest.approx(a.objective_, rel=1e-4)
    np.testing.assert_allclose(b.coef_, a.coef_, atol=1e-3 * np.abs(a.coef_).max())
    np.testing.assert_array_equal(b.predict(X), a.predict(X))


def test_binary_problem():
    X, y = blobs(4, K=2)
    clf = SparseSVC(method="hinge-reg", penalty="l1", alpha=0.3, **FAST).fit(X, y + 5)
    assert clf.coef_.shape == (2, 8)
    d = clf.decision_function(X)
    assert d.shape == (30,)
    np.testing.assert_array_equal(clf.predict(X), np.where(d > 0, 6, 5))
    assert clf.score(X, y + 5) > 0.9


# --------------------------------------------------------------------------- #
# bad input
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("params,match", [
    (dict(method="svm"), "unknown method"),
    (dict(penalty="l0"), "unknown penalty"),
    (dict(alpha=0.0), "alpha"),
    (dict(alpha=-1.0), "alpha"),
    (dict(alpha=np.inf), "alpha"),
    (dict(alpha="big"), "alpha"),
    (dict(tol=-1.0), "tol"),
    (dict(max_iter=0), "max_iter"),
    (dict(max_iter=2.5), "max_iter"),
    (dict(step_ratio=0.0), "step_ratio"),
    (dict(solver="magic"), "unknown solver"),
    (dict(stopping="never"), "stopping"),
    (dict(trace=0), "trace"),
    (dict(penalty="l1", groups=3), "groups"),
    (dict(penalty="l2", groups="features"), "groups"),
    (dict(penalty="l12", groups=None), "needs groups"),
    (dict(penalty="l12", groups=0), "group size"),
    (dict(penalty="l1inf", groups=-2), "group size"),
    (dict(penalty="l1inf", groups=9), "group size"),
    (dict(penalty="l1inf", groups="rows"), "groups"),
    (dict(penalty="l1inf", groups=2.0), "groups"),
    (dict(method="ova", penalty="l12", groups="features"), "across-class"),
    (dict(reference_coef=np.zeros((3, 8))), "reference_coef"),
    (dict(precision="half"), r"unknown precision 'half'; expected one of \('double', 'single'\)"),
    (dict(precision=np.float32), "unknown precision"),
    (dict(method="ova", precision="single"),
     r"precision='single' is not available for method 'ova' with solver 'paper'"),
    (dict(penalty="l2", solver="liblinear", precision="single"),
     r"precision='single' is not available for method 'hinge-reg' with solver 'liblinear'"),
    (dict(stopping="gap", solver="accelerated", precision="single"),
     r"precision='single' is not available for method 'hinge-reg' with solver 'accelerated'"),
])
def test_bad_parameters(params, match):
    X, y = blobs()
    with pytest.raises(ValueError, match=match):
        SparseSVC(**params).fit(X, y)


def test_bad_data():
    X, y = blobs()
    clf = SparseSVC(**FAST)
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(Xn, y)
    Xn[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        clf.fit(Xn, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        clf.fit(X, y[:-1])
    with pytest.raises(ValueError, match="2D array"):
        clf.fit(X[:, 0], y)
    with pytest.raises(ValueError, match="2 classes"):
        clf.fit(X, np.zeros(30))
    with pytest.raises(ValueError, match="continuous|Unknown label type"):
        clf.fit(X, np.linspace(0, 1, 30))
    clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :5])
    for est in (CrammerSingerSVC(alpha=0.0), CrammerSingerSVC(max_iter=0)):
        with pytest.raises(ValueError, match="alpha|max_iter"):
            est.fit(X, y)
    with pytest.raises(ValueError, match="2 classes"):
        CrammerSingerSVC().fit(X, np.ones(30))


# --------------------------------------------------------------------------- #
# the peer
# --------------------------------------------------------------------------- #
def test_crammer_singer_peer_matches_linearsvc():
    X, y = blobs(5)
    alpha = 0.5
    cs = CrammerSingerSVC(alpha=alpha, tol=1e-6).fit(X, y)
    ref = LinearSVC(multi_class="crammer_singer", C=1 / alpha, tol=1e-6, max_iter=100000,
                    random_state=0).fit(X, y)
    np.testing.assert_allclose(cs.coef_, ref.coef_)
    np.testing.assert_array_equal(cs.predict(X), ref.predict(X))
    Xs = np.vstack([cs.coef_.T, cs.intercept_])
    loss = cvx_reference.hinge_loss_np(X, y, Xs)
    expected = 0.5 * (np.sum(cs.coef_ ** 2) + np.sum(cs.intercept_ ** 2)) + loss / alpha
    assert cs.objective_ == pytest.approx(expected)
    assert cs.converged_ and cs.trace_ is None and cs.constraint_violation_ == 0.0


def test_crammer_singer_binary_is_symmetric_split():
    X, y = blobs(6, K=2)
    cs = CrammerSingerSVC(alpha=0.5, tol=1e-6).fit(X, y)
    ref = LinearSVC(multi_class="crammer_singer", C=2.0, tol=1e-6, max_iter=100000,
                    random_state=0).fit(X, y)
    assert cs.coef_.shape == (2, 8)
    np.testing.assert_allclose(cs.coef_[1] - cs.coef_[0], ref.coef_[0])
    np.testing.assert_allclose(cs.coef_[0], -cs.coef_[1])
    np.testing.assert_allclose(cs.decision_function(X), ref.decision_function(X))


# --------------------------------------------------------------------------- #
# package level
# --------------------------------------------------------------------------- #
def _sha256_of_tree(root):
    """The documented digest, written here from the docstring: sorted relative
    POSIX paths of the ``.py`` files outside ``__pycache__``, each as path, NUL,
    bytes, NUL."""
    import hashlib

    h = hashlib.sha256()
    for rel in sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                      if "__pycache__" not in p.relative_to(root).parts):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


def test_package_exports_and_source_hash(tmp_path, monkeypatch):
    import shutil

    assert isinstance(sparsesvm.__version__, str) and sparsesvm.__version__
    assert {"SparseSVC", "CrammerSingerSVC", "__version__", "source_hash"} <= set(sparsesvm.__all__)
    h = sparsesvm.source_hash()
    assert len(h) == 64 and set(h) <= set("0123456789abcdef")
    assert h == _sha256_of_tree(Path(sparsesvm.__file__).resolve().parent)

    # on a copy of the package: an edit, a rename and a new module change the hash;
    # a byte-code cache and a non-.py file do not
    pkg = tmp_path / "sparsesvm"
    shutil.copytree(Path(sparsesvm.__file__).resolve().parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(sparsesvm, "__file__", str(pkg / "__init__.py"))
    seen = {sparsesvm.source_hash()}
    assert seen == {h}
    (pkg / "__pycache__").mkdir(exist_ok=True)
    (pkg / "__pycache__" / "x.py").write_text("# cached\n")
    (pkg / "notes.txt").write_text("not source\n")
    assert sparsesvm.source_hash() == h
    mod = pkg / "model" / "operator.py"
    mod.write_bytes(mod.read_bytes() + b"\n")
    seen.add(sparsesvm.source_hash())
    mod.rename(pkg / "model" / "operator2.py")
    seen.add(sparsesvm.source_hash())
    (pkg / "extra.py").write_text("")
    seen.add(sparsesvm.source_hash())
    assert len(seen) == 4
    assert sparsesvm.source_hash() == _sha256_of_tree(pkg)


def test_import_is_light():
    import subprocess

    code = ("import sys, sparsesvm; sparsesvm.source_hash(); "
            "print(','.join(m for m in ('pandas', 'matplotlib', 'sklearn', 'cvxpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
