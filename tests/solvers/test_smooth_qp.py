"""The smooth baselines' exact working-set subproblems (solvers/accelerated/smooth_qp.py).

Independent answers: CVXPY + Clarabel on the spec's formulas (tests/cvx_reference.py)
for the optima, ``cvx_reference.regulariser_value`` for the penalty that the group
rows encode. The cases that matter are the nearly hard-margin ones (large lam on raw,
large-valued features), where coordinate descent alone stalls.
"""

import cvx_reference as cr
import numpy as np
import pytest
from conftest import make_random_problem

from sparsesvm import SparseSVC
from sparsesvm.model.penalties import make_penalty
from sparsesvm.solvers.accelerated import smooth, smooth_qp

pytest.importorskip("clarabel")

PENALTIES = [("l1", None), ("l12", 4), ("l12", "features"), ("l1inf", 4), ("l1inf", "features")]
CASES = [(m, p, g) for m in ("square", "logit", "ova") for p, g in PENALTIES
         if not (m == "ova" and g == "features")]


def _hard_problem(seed=0):
    """More features than samples, raw-like scale (entries ~1e3 around a common 5e3):
    separable, so a large lam makes the loss almost 0 at the optimum."""
    Phi, y, K = make_random_problem(seed, L=15, M=30, K=3, shift=0.5, scale=1e3)
    return Phi + 5e3, y, K


@pytest.mark.parametrize("penalty,groups", PENALTIES)
def test_group_rows_encode_the_penalty(penalty, groups):
    """sum over groups of max |W_e| (l1, l1inf) or ||W_G||_2 (l12), from the entries and
    group ids the QP is built on, is the regulariser's value computed independently."""
    m, K = 13, 3
    geo = make_penalty(penalty, groups, m, K)
    W = np.random.default_rng(0).standard_normal((m, K))
    ent, gid, ng = smooth_qp._group_entries(geo, m, K)
    assert np.array_equal(np.sort(ent), np.arange(m * K))     # every entry in one group
    vals = W.ravel()[ent]
    if penalty == "l12":
        per = np.sqrt(np.bincount(gid, vals ** 2, minlength=ng))
    else:
        per = np.zeros(ng)
        np.maximum.at(per, gid, np.abs(vals))
    assert np.isclose(per.sum(), cr.regulariser_value(W, penalty, groups), rtol=1e-12)


@pytest.mark.parametrize("method,penalty,groups", CASES)
def test_qp_subproblem_is_the_cvxpy_optimum(method, penalty, groups):
    """One subproblem on all features (square, ova: one QP; logit: proximal Newton)."""
    Phi, y, K = _hard_problem()
    lam = 10.0
    pstar, _ = cr.solve(method, Phi, y, K, penalty, groups, lam=lam)
    P = Phi - Phi.mean(axis=0)               # the solver's centred features
    geo = make_penalty(penalty, groups, P.shape[1], K)
    Ypm = -np.ones((len(y), K))
    Ypm[np.arange(len(y)), y] = 1.0
    obj = lambda W, S: geo.weight_value(W) + lam * smooth._loss(method, S, y, Ypm)  # noqa: E731
    out = smooth_qp.solve_subproblem(
        method, P, y, K, geo, lam, np.zeros((P.shape[1], K)), np.zeros(K), objective=obj,
        score_grad=lambda S: smooth._score_grad(method, S, y, Ypm),
        score_hessian=lambda S: smooth._score_hessian(method, S, y, Ypm),
        certify=lambda W, S: 1.0, inner_tol=0.0, deadline=np.inf)
    assert out is not None
    W, b, _ = out
    f = obj(W, P @ W + b)
    # CVXPY's exponential cone (logit) is less accurate than its quadratic cones
    assert abs(f - pstar) / pstar <= (1e-5 if method == "logit" else 1e-6)


@pytest.mark.parametrize("method,penalty,groups", CASES)
def test_certified_on_nearly_hard_margin_problems(method, penalty, groups):
    """The fit reaches its certified gap; its objective is the CVXPY optimum."""
    Phi, y, K = _hard_problem(seed=1)
    lam, tol = 10.0, 1e-6
    pstar, _ = cr.solve(method, Phi, y, K, penalty, groups, lam=lam)
    clf = SparseSVC(method=method, penalty=penalty, groups=groups, alpha=1.0 / lam, tol=tol,
                    solver="accelerated").fit(Phi, y)
    assert clf.converged_ and clf.rel_gap_ <= tol
    assert (clf.objective_ - pstar) / pstar <= tol + (1e-5 if method == "logit" else 1e-7)
    assert (pstar - clf.objective_) / pstar <= (1e-5 if method == "logit" else 1e-6)


def test_qp_path_is_taken_and_coordinate_descent_alone_stalls(monkeypatch):
    """On a nearly hard-margin problem the QP subproblems certify the fit; the same
    fit with coordinate descent only (no clarabel) stops short of the tolerance."""
    Phi, y, K = _hard_problem(seed=2)
    calls = []
    orig = smooth_qp.solve_subproblem

    def counted(*a, **kw):
        calls.append(a[1].shape[1])
        return orig(*a, **kw)

    monkeypatch.setattr(smooth_qp, "solve_subproblem", counted)
    kw = dict(method="square", penalty="l1inf", groups=4, alpha=0.01, tol=1e-6,
              solver="accelerated", max_iter=3000)
    with_qp = SparseSVC(**kw).fit(Phi, y)
    assert calls and with_qp.converged_
    monkeypatch.setattr(smooth_qp, "clarabel", None)
    cd_only = SparseSVC(**kw).fit(Phi, y)
    assert not cd_only.converged_ and cd_only.rel_gap_ > 10 * with_qp.rel_gap_
    assert cd_only.objective_ >= with_qp.objective_ * (1 - 1e-9)


def test_weights_below_the_solver_accuracy_are_exact_zeros():
    """An interior point is never sparse: the returned weights are, at the optimum's support."""
    Phi, y, K = _hard_problem(seed=3)
    clf = SparseSVC(method="ova", penalty="l1", alpha=0.1, tol=1e-6,
                    solver="accelerated").fit(Phi, y)
    W = clf.coef_
    assert clf.converged_
    nz = np.abs(W[W != 0])
    assert nz.size < W.size and nz.min() > 1e-6 * nz.max()


@pytest.mark.parametrize("method", ["square", "logit", "ova"])
def test_failed_qps_fall_back_to_coordinate_descent(method, monkeypatch):
    """When the QP solver reports no solution, the fit goes on by coordinate descent and
    still reaches its certified gap and the CVXPY optimum (nothing silently wrong)."""
    Phi, y, K = make_random_problem(5, L=18, M=7, K=3, shift=0.7)
    lam, tol = 1.5, 1e-8
    pstar, _ = cr.solve(method, Phi, y, K, "l1inf", 3, lam=lam)
    calls = []

    def failing(self, *args, **kwargs):
        calls.append(1)
        return None

    monkeypatch.setattr(smooth_qp._QP, "solve", failing)
    monkeypatch.setattr(smooth, "LOGIT_FISTA", False)   # logit's QPs: off by default
    clf = SparseSVC(method=method, penalty="l1inf", groups=3, alpha=1.0 / lam, tol=tol,
                    solver="accelerated").fit(Phi, y)
    assert calls and clf.converged_ and clf.rel_gap_ <= tol
    assert abs(clf.objective_ - pstar) / pstar <= (5e-6 if method == "logit" else 1e-7)


@pytest.mark.parametrize("penalty,groups", [("l12", 4), ("l1inf", 4)])
@pytest.mark.parametrize("x_kind", ["solution", "nan"])
def test_numerical_error_points_are_kept_for_cones_only_and_when_finite(penalty, groups, x_kind,
                                                                        monkeypatch):
    """Clarabel's NumericalError on a QP with second-order cones (l12) still hands its
    point to the caller (whose objective check and certificate judge it); with l1,inf, or
    when the point is not finite, the QP gives no point."""
    import clarabel

    Phi, y, K = make_random_problem(4, L=12, M=6, K=3, shift=0.6)
    geo = make_penalty(penalty, groups, Phi.shape[1], K)
    qp = smooth_qp._QP("square", Phi - Phi.mean(axis=0), y, K, geo, 2.0)
    exact = qp.solve()

    class NumericalError:
        def __init__(self, res):
            self.status = "SolverStatus.NumericalError"
            self.x = res.x if x_kind == "solution" else [np.nan] * len(res.x)

    original = clarabel.DefaultSolver

    class Solver:                # clarabel.DefaultSolver, its status replaced
        def __init__(self, *args):
            self.solver = original(*args)

        def solve(self):
            return NumericalError(self.solver.solve())

    monkeypatch.setattr(smooth_qp.clarabel, "DefaultSolver", Solver)
    out = qp.solve()
    if penalty == "l12" and x_kind == "solution":
        np.testing.assert_array_equal(out[0], exact[0])
        np.testing.assert_array_equal(out[1], exact[1])
    else:
        assert out is None


TERM_CASES = [(m, p, g) for m in ("square", "ova") for p, g in (("l1", None), ("l1inf", 4))]


@pytest.mark.parametrize("start", ["zero", "midway"])
@pytest.mark.parametrize("method,penalty,groups", TERM_CASES)
def test_term_generation_is_the_cvxpy_optimum(method, penalty, groups, start):
    """Term and group generation (the QPs carry only the near-active hinge terms and the
    non-zero or nearly violated groups) ends at the optimum of the problem with every
    term and group, from zero (every term active) and from a point where most terms and
    groups are left out."""
    Phi, y, K = make_random_problem(7, L=40, M=24, K=4, shift=0.8)
    lam = 3.0
    pstar, _ = cr.solve(method, Phi, y, K, penalty, groups, lam=lam)
    P = Phi - Phi.mean(axis=0)
    geo = make_penalty(penalty, groups, P.shape[1], K)
    Ypm = -np.ones((len(y), K))
    Ypm[np.arange(len(y)), y] = 1.0
    obj = lambda W, S: geo.weight_value(W) + lam * smooth._loss(method, S, y, Ypm)  # noqa: E731
    W0, b0 = np.zeros((P.shape[1], K)), np.zeros(K)
    if start == "midway":  # a few iterations of the full problem's coordinate descent
        W0 = smooth.solve(method, P, y, K, geo, lam, tol=0.3, max_iter=3).X[:-1]
        W0 = np.where(np.abs(W0) > 0.5 * np.abs(W0).max(), W0, 0.0)
    sizes = []
    orig = smooth_qp._QP.__init__

    def spy(self, *a, **kw):
        orig(self, *a, **kw)
        sizes.append((self.codes.size, self.ib))

    smooth_qp._QP.__init__ = spy
    try:
        out = smooth_qp.solve_terms(
            method, P, y, K, geo, lam, W0, b0, objective=obj,
            margins=lambda S: smooth._margins(method, S, y, Ypm),
            score_grad=lambda S: smooth._score_grad(method, S, y, Ypm), deadline=np.inf)
    finally:
        smooth_qp._QP.__init__ = orig
    assert out is not None
    W, b, n_qp = out
    assert n_qp == len(sizes) >= 1
    assert abs(obj(W, P @ W + b) - pstar) / pstar <= 1e-7
    if start == "midway":   # the first QP left terms or weights out
        assert sizes[0][0] < len(y) * K or sizes[0][1] < W.size


def test_free_weights_are_for_polyhedral_penalties():
    """Fixing weights at 0 by leaving them out is built for the entry-wise group rows of
    l1 and l1,inf; l1,2's cones are refused by name."""
    Phi, y, K = make_random_problem(8, L=10, M=6, K=3)
    geo = make_penalty("l12", 3, 6, K)
    with pytest.raises(ValueError, match="l1 and l1inf"):
        smooth_qp._QP("square", Phi, y, K, geo, 1.0, free=np.ones((6, K), dtype=bool))
