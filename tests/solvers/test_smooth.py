"""Certified gaps and the certified solver of the smooth baselines (square, logit, ova).

Independent answers: the primal optimum P* of each problem from CVXPY + Clarabel
(tests/cvx_reference.py, written from the spec's formulas). The certificate is
checked by what it claims: ``gap = P(X) - D >= P(X) - P*`` at any X (weak
duality), and ``gap ~ 0`` at the optimum.
"""

import cvx_reference as cr
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import make_random_problem

from sparsesvm import SparseSVC
from sparsesvm import solvers as S
from sparsesvm.model.certificates import smooth_gap, smooth_gap_scores
from sparsesvm.model.operator import MulticlassOperator
from sparsesvm.model.penalties import make_penalty
from sparsesvm.solvers.accelerated import smooth

PENALTIES = [("l1", None), ("l2", None), ("l12", 3), ("l12", "features"),
             ("l1inf", 3), ("l1inf", "features")]
CASES = [(m, p, g) for m in ("square", "logit", "ova") for p, g in PENALTIES
         if not (m == "ova" and g == "features")]


def _problem(seed=0, scale=1.0):
    """18 rows, 7 features, 3 classes shifted by 0.7: (Phi, y, K)."""
    return make_random_problem(seed, L=18, M=7, K=3, shift=0.7, scale=scale)


_OPT = {}


def _optimum(method, penalty, groups, lam, seed=0):
    key = (method, penalty, groups, lam, seed)
    if key not in _OPT:
        Phi, y, K = _problem(seed)
        _OPT[key] = cr.solve(method, Phi, y, K, penalty, groups, lam=lam)
    return _OPT[key]


@pytest.mark.parametrize("method,penalty,groups", CASES)
def test_gap_bounds_suboptimality_and_vanishes_at_optimum(method, penalty, groups):
    Phi, y, K = _problem()
    lam = 1.5
    op = MulticlassOperator(Phi, y, K)
    pstar, Xs = _optimum(method, penalty, groups, lam)
    rng = np.random.default_rng(1)
    # random points, the zero point, and points with far-off biases
    points = [np.zeros_like(Xs), Xs + 0.2 * rng.standard_normal(Xs.shape),
              Xs + 2.0 * rng.standard_normal(Xs.shape), rng.standard_normal(Xs.shape)]
    shifted = Xs.copy()
    shifted[-1] += np.array([3.0, -1.0, 0.5])
    points.append(shifted)
    for X in points:
        r = smooth_gap(method, op, X, penalty, groups, lam=lam)
        assert r.primal - pstar >= -1e-7 * pstar          # the point is not better than P*
        assert r.dual <= pstar * (1 + 1e-7) + 1e-9          # weak duality
        assert r.gap >= r.primal - pstar - 1e-7 * pstar     # the gap bounds the suboptimality
        assert r.rel_gap >= (r.primal - pstar) / pstar - 1e-7
    at_opt = smooth_gap(method, op, Xs, penalty, groups, lam=lam)
    # Clarabel's exponential cone (logit) is less accurate than its quadratic cones
    assert at_opt.rel_gap <= (1e-4 if method == "logit" else 1e-6)


@pytest.mark.parametrize("method,penalty,groups", CASES)
def test_certified_solver_reaches_the_cvxpy_optimum(method, penalty, groups):
    Phi, y, K = _problem()
    lam = 1.5
    pstar, _ = _optimum(method, penalty, groups, lam)
    tol = 1e-8
    clf = SparseSVC(method=method, penalty=penalty, groups=groups, alpha=1.0 / lam, tol=tol,
                    solver="accelerated").fit(Phi, y)
    assert clf.stopping_ == "gap" and clf.converged_ and clf.rel_gap_ <= tol
    # certified: P(X) - P* <= rel_gap * D <= tol * P* (up to CVXPY's own accuracy)
    assert (clf.objective_ - pstar) / pstar <= tol + (5e-6 if method == "logit" else 1e-7)
    assert (pstar - clf.objective_) / pstar <= (5e-6 if method == "logit" else 1e-7)


@pytest.mark.parametrize("method", ["square", "logit", "ova"])
def test_certificate_at_large_scale_features(method):
    """Raw-value features (entries ~1e4, like leukemia): the certificate stays a bound
    and the solver reaches it (centring is an exact reparametrisation of the biases)."""
    Phi, y, K = _problem(seed=3, scale=1e4)
    Phi += 5e4  # a large common component, collinear with the biases
    lam = 1e-6
    pstar, _ = cr.solve(method, Phi, y, K, "l1", None, lam=lam)
    clf = SparseSVC(method=method, penalty="l1", alpha=1.0 / lam, tol=1e-7,
                    solver="accelerated").fit(Phi, y)
    assert clf.converged_ and clf.rel_gap_ <= 1e-7
    assert abs(clf.objective_ - pstar) / pstar <= (1e-5 if method == "logit" else 1e-6)


def test_sparse_features_same_gap_and_solution():
    Phi, y, K = _problem(seed=4)
    Phi[np.abs(Phi) < 0.8] = 0.0
    Xs = sp.csr_matrix(Phi)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((Phi.shape[1] + 1, K))
    for method in ("square", "logit", "ova"):
        dense = smooth_gap(method, MulticlassOperator(Phi, y, K), X, "l1inf", 3, lam=2.0)
        sparse = smooth_gap(method, MulticlassOperator(Xs, y, K), X, "l1inf", 3, lam=2.0)
        assert np.isclose(dense.gap, sparse.gap, rtol=1e-10, atol=1e-12)
        a = SparseSVC(method=method, penalty="l12", groups=3, alpha=0.5, tol=1e-8,
                      solver="accelerated").fit(Phi, y)
        b = SparseSVC(method=method, penalty="l12", groups=3, alpha=0.5, tol=1e-8,
                      solver="accelerated").fit(Xs, y)
        assert b.rel_gap_ <= 1e-8 and abs(a.objective_ - b.objective_) <= 1e-7 * a.objective_


@pytest.mark.parametrize("method", ["square", "logit", "ova"])
def test_paper_algorithm_with_gap_rule(method):
    """The paper's FISTA / forward-backward stopped on the certified gap."""
    Phi, y, K = _problem()
    lam, tol = 1.5, 1e-5
    pstar, _ = _optimum(method, "l1inf", 3, lam)
    clf = SparseSVC(method=method, penalty="l1inf", groups=3, alpha=1.0 / lam, tol=tol,
                    stopping="gap", max_iter=200000).fit(Phi, y)
    assert clf.converged_ and clf.stopping_ == "gap" and clf.rel_gap_ <= tol
    assert (clf.objective_ - pstar) / pstar <= tol + (5e-6 if method == "logit" else 1e-7)


def test_rel_gap_reported_by_every_method_and_rule():
    Phi, y, K = _problem(seed=5)
    for method in ("hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova"):
        clf = SparseSVC(method=method, penalty="l1", alpha=0.5, tol=1e-3, max_iter=3000).fit(Phi, y)
        assert np.isfinite(clf.rel_gap_) and clf.rel_gap_ >= 0, method


def test_logit_forward_backward_and_fista_reach_the_same_optimum():
    Phi, y, K = _problem(seed=6)
    op = MulticlassOperator(Phi, y, K)
    pen = make_penalty("l1", None, Phi.shape[1], K)
    fb = S.logit(op, pen, 2.0, tol=1e-6, stopping="gap", max_iter=500000)
    fi = S.logit(op, pen, 2.0, tol=1e-6, stopping="gap", scheme="fista", max_iter=500000)
    assert fb.rel_gap <= 1e-6 and fi.rel_gap <= 1e-6
    assert abs(fb.objective - fi.objective) <= 2e-6 * fb.objective
    # forward-backward without momentum: monotone objective
    tr = S.logit(op, pen, 2.0, tol=1e-4, trace=True, max_iter=2000).trace["objective"]
    assert np.all(np.diff(tr) <= 1e-12 * tr[0])


def test_hinge_lin_reports_the_hinge_con_certificate():
    Phi, y, K = _problem(seed=7)
    alpha, tol = 0.3, 1e-3
    eta = alpha * Phi.shape[0]
    opt, _ = cr.solve("hinge-con", Phi, y, K, "l1", None, eta=eta)
    clf = SparseSVC(method="hinge-lin", penalty="l1", alpha=alpha, tol=tol, stopping="gap",
                    max_iter=400000).fit(Phi, y)
    assert clf.converged_ and clf.rel_gap_ <= tol
    assert clf.constraint_violation_ <= tol * eta
    assert abs(clf.objective_ - opt) / opt <= 2 * tol


def test_bad_input():
    Phi, y, K = _problem()
    op = MulticlassOperator(Phi, y, K)
    X = np.zeros((Phi.shape[1] + 1, K))
    with pytest.raises(ValueError, match="method"):
        smooth_gap("hinge-reg", op, X, "l1", lam=1.0)
    with pytest.raises(ValueError, match="lam"):
        smooth_gap("square", op, X, "l1", lam=0.0)
    with pytest.raises(ValueError, match="shape"):
        smooth_gap("square", op, X[:-1], "l1", lam=1.0)
    with pytest.raises(ValueError, match="across-class"):
        smooth_gap("ova", op, X, "l12", "features", lam=1.0)
    with pytest.raises(ValueError, match="unknown stopping 'rel_change'"):
        SparseSVC(method="square", solver="accelerated", stopping="rel_change").fit(Phi, y)
    with pytest.raises(ValueError, match="scheme"):
        S.logit(op, make_penalty("l1", None, Phi.shape[1], K), 1.0, scheme="newton")
    from sparsesvm.solvers.accelerated import smooth

    with pytest.raises(ValueError, match="across-class"):
        smooth.solve("ova", Phi, y, K, make_penalty("l12", "features", Phi.shape[1], K), 1.0)


@pytest.mark.parametrize("method,penalty,groups", [("square", "l1inf", 3), ("logit", "l1", None),
                                                   ("ova", "l12", 3), ("square", "l12", "features"),
                                                   ("logit", "l2", None)])
def test_fista_path_reaches_the_cvxpy_optimum(method, penalty, groups, monkeypatch):
    """The large problems' engine (L K > FISTA_MIN_SCORES, no QPs), forced on a small one
    (term generation off: FISTA alone)."""
    monkeypatch.setattr(smooth, "FISTA_MIN_SCORES", 0)
    monkeypatch.setattr(smooth.smooth_qp, "QP_MAX_SCORES", 0)
    monkeypatch.setattr(smooth, "KERNEL_MAX", 0)
    monkeypatch.setattr(smooth, "TERMS_MAX_GAP", 0.0)
    monkeypatch.setattr(smooth.smooth_qp, "solve_terms", None)   # never called
    _assert_certified_optimum(method, penalty, groups, 5e-6 if method == "logit" else 1e-7)


def _assert_certified_optimum(method, penalty, groups, slack, tol=1e-8, lam=1.5):
    """smooth.solve on _problem() certifies ``tol`` at the CVXPY optimum (within tol + slack)."""
    Phi, y, K = _problem()
    pstar, _ = _optimum(method, penalty, groups, lam)
    geo = make_penalty(penalty, groups, Phi.shape[1], K)
    r = smooth.solve(method, Phi, y, K, geo, lam, tol=tol)
    assert r.converged and r.rel_gap <= tol
    assert abs(r.objective - pstar) / pstar <= tol + slack


@pytest.mark.parametrize("method,penalty,groups", [("square", "l1inf", 3), ("ova", "l1", None),
                                                   ("square", "l1", None), ("ova", "l1inf", 3)])
@pytest.mark.parametrize("max_gap", [np.inf, 0.5])
def test_term_generation_path_reaches_the_cvxpy_optimum(method, penalty, groups, max_gap,
                                                        monkeypatch):
    """Square and one-vs-all from TERMS_MIN_SCORES scores on (forced on a small problem):
    FISTA, then term and group generation once the gap is at most TERMS_MAX_GAP (from the
    start, or mid-way); the fit ends at the CVXPY optimum, and term generation gave it."""
    monkeypatch.setattr(smooth.smooth_qp, "TERMS_MIN_SCORES", 0)
    monkeypatch.setattr(smooth, "TERMS_MAX_GAP", max_gap)
    calls = []
    orig = smooth.smooth_qp.solve_terms

    def spy(*a, **kw):
        out = orig(*a, **kw)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(smooth.smooth_qp, "solve_terms", spy)
    _assert_certified_optimum(method, penalty, groups, 1e-7)
    assert any(calls)


def _exact_squared_hinges(method, S, y):
    """sum of the squared hinges at S (Fractions of the float entries: no rounding)."""
    from fractions import Fraction

    total = Fraction(0)
    for l, row in enumerate(S):
        f = [Fraction(float(v)) for v in row]
        for k in range(len(f)):
            if method == "ova":
                z = 1 - (f[k] if k == y[l] else -f[k])
            elif k == y[l]:
                continue
            else:
                z = 1 + f[k] - f[y[l]]
            total += max(z, Fraction(0)) ** 2
    return total


@pytest.mark.parametrize("method", ["square", "ova"])
def test_loss_change_is_exact_where_the_difference_of_losses_rounds(method):
    """``_loss_change(S, dS)`` against exact rational arithmetic, at a loss of about 1e6
    and a change of about 1e-9 of it (the difference of the two losses in floats keeps
    only its first digits), with terms entering, leaving and staying active."""

    rng = np.random.default_rng(3)
    L, K = 40, 4
    y = rng.integers(0, K, L)
    Ypm = -np.ones((L, K))
    Ypm[np.arange(L), y] = 1.0
    S = rng.normal(scale=100.0, size=(L, K))
    dS = rng.normal(scale=1e-6, size=(L, K))
    S[0, (y[0] + 1) % K] = S[0, y[0]] - 1.0 + 5e-7      # a term that leaves or enters
    Sn = S + dS
    dS = Sn - S                                          # the change the floats hold
    exact = float(_exact_squared_hinges(method, Sn, y) - _exact_squared_hinges(method, S, y))
    got = smooth._loss_change(method, S, dS, y, Ypm)
    assert abs(got - exact) <= 1e-12 * abs(exact)
    naive = smooth._loss(method, Sn, y, Ypm) - smooth._loss(method, S, y, Ypm)
    assert abs(naive - exact) > 1e3 * abs(got - exact)    # what the change is for
    assert smooth._loss(method, S, y, Ypm) > 1e5                 # a loss of about 1e6


def test_loss_change_of_logit_and_weight_change_match_their_expansions():
    """Tiny changes against the second-order Taylor expansion (logit: gradient and Hessian
    of the log-sum-exp; the norms: ``u.d + (|d|^2 - (u.d)^2) / (2 |w|)``), moderate ones
    against the difference of values."""
    rng = np.random.default_rng(4)
    L, K, M = 30, 5, 8
    y = rng.integers(0, K, L)
    Ypm = -np.ones((L, K))
    Ypm[np.arange(L), y] = 1.0
    S = rng.normal(scale=30.0, size=(L, K))
    dS = rng.normal(scale=1e-7, size=(L, K))
    G = smooth._score_grad("logit", S, y, Ypm)
    H = smooth._score_hessian("logit", S, y, Ypm)
    taylor = np.vdot(G, dS) + 0.5 * np.einsum("lk,lkj,lj->", dS, H, dS)
    assert abs(smooth._loss_change("logit", S, dS, y, Ypm) - taylor) <= 1e-9 * abs(taylor)
    W = rng.normal(size=(M, K))
    W[2] = 0.0
    for name, groups in [("l1", None), ("l2", None), ("l12", "features"), ("l12", 3),
                         ("l1inf", 3), ("l1inf", "features")]:
        geo = make_penalty(name, groups, M, K)
        Wn = W + 0.1 * rng.normal(size=W.shape)
        Wn[5] = 0.0
        direct = geo.weight_value(Wn) - geo.weight_value(W)
        assert smooth._weight_change(geo, W, Wn) == pytest.approx(direct, rel=1e-12)
    geo = make_penalty("l12", "features", M, K)
    D = 1e-8 * rng.normal(size=W.shape)
    D[2] = 0.0
    nz = np.arange(M) != 2
    nw = np.linalg.norm(W[nz], axis=1)
    ud = np.sum(W[nz] * D[nz], axis=1) / nw
    taylor = np.sum(ud + (np.sum(D[nz] ** 2, axis=1) - ud ** 2) / (2 * nw))
    assert smooth._weight_change(geo, W, W + D) == pytest.approx(taylor, rel=1e-7)


@pytest.mark.parametrize("method,penalty,groups", [("square", "l1inf", 3), ("logit", "l1", None),
                                                   ("ova", "l12", 3), ("square", "l12", "features")])
def test_fista_path_certifies_gaps_at_the_objectives_rounding(method, penalty, groups,
                                                                monkeypatch):
    """FISTA's sufficient-decrease and restart tests compare changes computed as changes:
    it certifies a relative gap of 1e-12, where tests on differences of objectives
    (1e-16 of the objective each) stalled at 1e-7 to 1e-6 on these problems."""
    monkeypatch.setattr(smooth, "FISTA_MIN_SCORES", 0)
    monkeypatch.setattr(smooth.smooth_qp, "QP_MAX_SCORES", 0)
    monkeypatch.setattr(smooth, "KERNEL_MAX", 0)
    monkeypatch.setattr(smooth, "TERMS_MAX_GAP", 0.0)
    Phi, y, K = _problem()
    r = smooth.solve(method, Phi, y, K, make_penalty(penalty, groups, Phi.shape[1], K), 1.5,
                     tol=1e-12, max_time=60)
    assert r.converged and r.rel_gap <= 1e-12


@pytest.mark.parametrize("method,penalty,groups", [
    ("square", "l12", "features"), ("logit", "l12", "features"), ("square", "l12", 3),
    ("ova", "l12", 3), ("logit", "l1", None), ("square", "l1", None),
    ("logit", "l1inf", "features"), ("square", "l1inf", 3), ("ova", "l1inf", 3)])
def test_support_newton_steps_reach_the_cvxpy_optimum(method, penalty, groups):
    """Newton steps on the penalty's face and the biases alone (the FISTA path's polish),
    from a fit stopped at a certified 1e-4 and perturbed along its face: each lowers the
    objective, and a few reach a certified 1e-10 at the CVXPY optimum (the face is the
    optimum's already). l1,inf's perturbation scales each group (its largest entries stay
    tied) and its other entries within it."""
    Phi, y, K = _problem()
    Phi = Phi - Phi.mean(axis=0)          # the solver's centring, an exact reparametrisation
    lam = 1.5
    geo = make_penalty(penalty, groups, Phi.shape[1], K)
    X = smooth.solve(method, Phi, y, K, geo, lam, tol=1e-4).X
    rng = np.random.default_rng(1)
    if penalty == "l1inf":
        A = geo.to_groups(X[:-1]).copy()
        top = np.abs(A).max(axis=1, keepdims=True)
        below = np.abs(A) < (1.0 - 1e-6) * top
        A = np.where(below, A, np.sign(A) * top)                             # tied exactly
        A *= np.where(below, 1.0 + 0.05 * rng.uniform(-1, 0, A.shape), 1.0)   # stay below
        A *= 1.0 + 0.05 * rng.normal(size=top.shape)
        X[:-1] = geo.from_groups(A)
    else:
        X[:-1] *= 1.0 + 0.05 * rng.normal(size=X[:-1].shape)   # zeros stay
    cd = smooth._CoordinateDescent(method, Phi, y, geo, lam, smooth._Units(Phi, geo), X)
    cd.start()
    before = smooth_gap_scores(method, Phi, y, cd.S, cd.W, geo, lam)
    assert before.rel_gap > 1e-4
    objective = before.primal
    for _ in range(6):
        assert cd.support_newton()
        res = smooth_gap_scores(method, Phi, y, cd.S, cd.W, geo, lam)
        # lower by its own change (near 0 at the end: within the objective's rounding)
        assert res.primal <= objective * (1.0 + 1e-14)
        objective = res.primal
        if res.rel_gap <= 1e-10:
            break
    assert res.rel_gap <= 1e-10
    pstar, _ = _optimum(method, penalty, groups, lam)
    assert abs(res.primal - pstar) / pstar <= 1e-7


@pytest.mark.parametrize("penalty,groups", [("l1", None), ("l12", "features"), ("l1inf", 3)])
def test_logit_certifies_nearly_hard_margin_problems(penalty, groups):
    """logit at lambda = 1e5 on separable data (300 features, 40 rows; nearly the hard-margin
    problem: large weights, and the loss's curvature tiny where the margins are large) takes
    the FISTA path with Newton steps on the penalty's face and certifies 1e-8. The full
    QPs' proximal Newton steps (``LOGIT_FISTA = False``) stopped on their stall rule at a
    certified 3.9e-8 with l1,inf here, and at 3.0 on News20 at L = 200."""
    Phi, y, K = make_random_problem(0, L=40, M=300, K=4, shift=0.3)
    r = smooth.solve("logit", Phi, y, K, make_penalty(penalty, groups, 300, K), 1e5, tol=1e-8,
                     max_time=120)
    assert r.converged and r.rel_gap <= 1e-8
