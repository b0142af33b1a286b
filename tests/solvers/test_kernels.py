"""The compiled primal step (sparsesvm.solvers._kernels) against the numpy proxes.

The numpy proxes of sparsesvm.model.penalties are themselves checked against CVXPY
and Moreau's identity (tests/model/test_penalties.py); here the fused kernel must
give the same point, the same two inner products, and the solvers the same
iterates with and without it.
"""

import numpy as np
import pytest

from sparsesvm import solvers
from sparsesvm.model.operator import MulticlassOperator
from sparsesvm.model.penalties import L1InfPenalty, make_penalty
from sparsesvm.solvers import _kernels

pytest.importorskip("numba")

CASES = [("l2", None), ("l1", None), ("l12", 5), ("l12", "features"), ("l1inf", 5),
         ("l1inf", 81), ("l1inf", "features"), ("l12", 1), ("l1inf", 1), ("l1inf", 7)]


def _step(pen, X, V, tau, out=None):
    step = _kernels.fused_step(pen, X.size, force=True)
    assert step is not None
    out = np.empty_like(X) if out is None else out
    nn, cross = step(X, V, tau, out)
    return out, nn, cross


SHAPES = [(23, 3), (162, 10), (40, 1), (9, 2), (31, 20), (29, 7)]


@pytest.mark.parametrize("name,groups,M,K", [
    (name, groups, M, K) for name, groups in CASES for M, K in SHAPES
    if not (isinstance(groups, int) and groups > M)])  # a block must fit in the features
def test_fused_step_is_the_prox_of_the_shifted_point(name, groups, M, K):
    rng = np.random.default_rng(M * 10 + K)
    pen = make_penalty(name, groups, M, K)
    X = rng.normal(size=(M + 1, K))
    V = rng.normal(size=(M + 1, K))
    X[3:6] = 0.0  # zero entries and groups
    V[3:5] = 0.0
    for tau in (0.0, 1e-3, 0.3, 5.0, 1e3):  # 1e3: every group is shrunk to 0
        want = pen.prox(X - tau * V, tau)
        got, nn, cross = _step(pen, X, V, tau)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        assert nn == pytest.approx(np.vdot(got, got), rel=1e-12, abs=1e-300)
        assert cross == pytest.approx(np.vdot(got, X), rel=1e-10, abs=1e-12)
        # out may be V itself (the solvers overwrite T^T Y)
        V2 = V.copy()
        got2, _, _ = _step(pen, X, V2, tau, out=V2)
        np.testing.assert_allclose(got2, got, rtol=1e-14, atol=1e-300)
    if name in ("l1", "l1inf", "l12"):  # a large step shrinks every group of X to 0
        assert np.all(_step(pen, X, np.zeros_like(V), 1e3)[0][:-1] == 0.0)


def _clip_by_bisection(a, radius):
    lo, hi = 0.0, float(a.max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.maximum(a - mid, 0).sum() > radius else (lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("values", [
    [3.0, 3.0, 3.0, 3.0],                 # ties
    [1e12, -1e12, 5.0, 0.0],              # large values
    [0.5, -0.25, 0.125, 2.0, -7.0, 0.0],
    [1.0, 0.0, 0.0, 0.0],                 # one non-zero entry
])
@pytest.mark.parametrize("tau", [0.1, 1.0, 6.0])
def test_linf_clip_level_against_bisection(values, tau):
    """prox of tau ||.||_inf clips |u| at t with sum(max(|u| - t, 0)) = tau (0 if ||u||_1 <= tau)."""
    u = np.asarray(values, dtype=np.float64)
    pen = make_penalty("l1inf", u.size, u.size, 1)  # one group: the whole column
    X = np.vstack([u[:, None], [[0.0]]])
    got = _step(pen, X, np.zeros_like(X), tau)[0][:-1, 0]
    a = np.abs(u)
    t = 0.0 if a.sum() <= tau else _clip_by_bisection(a, tau)
    np.testing.assert_allclose(got, np.sign(u) * np.minimum(a, t), rtol=1e-9, atol=1e-9 * a.max())


def test_fused_step_only_where_it_applies(monkeypatch):
    pen = make_penalty("l1inf", 5, 20, 3)
    assert _kernels.fused_step(pen, _kernels.MIN_SIZE - 1) is None  # small: numpy
    assert _kernels.fused_step(pen, _kernels.MIN_SIZE) is not None

    class MyL1Inf(L1InfPenalty):  # a user's subclass keeps its own prox
        pass

    assert _kernels.fused_step(MyL1Inf(20, 3, 5), 10**9) is None
    # switched off from the environment
    monkeypatch.setattr(_kernels, "_kernel", None)
    monkeypatch.setenv("SPARSESVM_NUMBA", "0")
    assert _kernels.fused_step(pen, 10**9) is None and not _kernels.available()


@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "logit-fista",
                                    "ova"])
@pytest.mark.parametrize("name,groups", [("l1inf", 4), ("l12", "features"), ("l1", None), ("l2", None)])
@pytest.mark.parametrize("K", [3, 2])
def test_solvers_same_iterates_with_and_without_kernel(monkeypatch, method, name, groups, K):
    rng = np.random.default_rng(3)
    L, M = 24, 30
    y = np.arange(L) % K
    Phi = rng.normal(size=(L, M)) + 0.8 * np.eye(K)[y] @ rng.normal(size=(K, M))
    op = MulticlassOperator(Phi, y, K)
    pen = make_penalty(name, groups, M, K)
    fit = {"hinge-reg": lambda: solvers.hinge_reg(op, pen, 2.0, tol=1e-7, max_iter=3000),
           "hinge-con": lambda: solvers.hinge_con(op, pen, 0.2 * L, tol=1e-7, max_iter=3000),
           "hinge-lin": lambda: solvers.hinge_lin(op, pen, 0.2 * L, tol=1e-7, max_iter=3000),
           # the smooth baselines' forward step (FISTA for square, forward-backward for logit)
           "square": lambda: solvers.square(op, pen, 0.5, tol=1e-7, max_iter=3000),
           "logit": lambda: solvers.logit(op, pen, 0.5, tol=1e-7, max_iter=3000),
           "logit-fista": lambda: solvers.logit(op, pen, 0.5, tol=1e-7, max_iter=3000, scheme="fista"),
           "ova": lambda: solvers.ova(Phi, y, K, pen, 0.5, tol=1e-7, max_iter=3000)}[method]
    monkeypatch.setattr(_kernels, "MIN_SIZE", 0)
    if method == "ova" and groups == "features":  # one-vs-all has no across-class groups
        with pytest.raises(ValueError, match="across-class"):
            fit()
        return
    fused = fit()
    monkeypatch.setattr(_kernels, "MIN_SIZE", 10**12)
    plain = fit()
    assert fused.n_iter == plain.n_iter and fused.converged == plain.converged
    np.testing.assert_allclose(fused.X, plain.X, rtol=1e-7, atol=1e-9 * np.abs(plain.X).max())
    assert fused.objective == pytest.approx(plain.objective, rel=1e-9)
    assert fused.constraint_violation == pytest.approx(plain.constraint_violation, rel=1e-7,
                                                       abs=1e-9 * L)


# --------------------------------------------------------------------------- FISTA's momentum

@pytest.mark.parametrize("shape", [(31, 20), (3970, 10), (5, 1), (0, 3)])
@pytest.mark.parametrize("c", [0.0, 0.37, 0.999])
def test_momentum_step_is_numpys(shape, c):
    step = _kernels.momentum(0, force=True)
    rng = np.random.default_rng(sum(shape))
    X, Xn, V = (rng.standard_normal(shape) * (rng.random(shape) < 0.4) for _ in range(3))
    D = Xn - X
    want_dd, want_rs = float(np.vdot(D, D)), float(np.vdot(V - Xn, D))
    D *= c
    D += Xn
    dd, rs = step(X, Xn, V, c)
    # the sums in another order than numpy's: equal to rounding
    assert dd == pytest.approx(want_dd, rel=1e-12, abs=1e-300)
    assert rs == pytest.approx(want_rs, rel=1e-12, abs=1e-12 * (want_dd + 1e-300))
    np.testing.assert_array_equal(V, D)  # the extrapolated point: numpy's roundings, to the bit


def test_momentum_step_restart_sign_and_checks():
    step = _kernels.momentum(0, force=True)
    X = np.zeros((4, 3))
    Xn = np.ones((4, 3))
    # V beyond Xn along the step: the momentum points against it (positive: restart)
    assert step(X, Xn, 2.0 * Xn, 0.5) == (12.0, 12.0)
    assert step(X, Xn, 0.5 * Xn, 0.5) == (12.0, -6.0)  # V short of Xn: keep the momentum
    with pytest.raises(ValueError, match="share memory"):
        step(X, Xn, Xn, 0.5)
    with pytest.raises(ValueError, match="C-contiguous"):
        step(np.asfortranarray(np.ones((4, 3))), Xn, np.zeros((4, 3)), 0.5)
    with pytest.raises(ValueError, match="one shape"):
        step(X, Xn, np.zeros((5, 3)), 0.5)
    assert _kernels.momentum(_kernels.MIN_SIZE - 1) is None  # small: numpy
    assert _kernels.momentum(_kernels.MIN_SIZE) is not None


@pytest.mark.parametrize("shape", [(31, 20), (3970, 10), (5, 1), (0, 3)])
def test_column_momentum_is_numpys(shape):
    """One-vs-all's momentum: each column's sums as numpy's to rounding, the next points and
    the copy of Xn to the bit."""
    sums, extrapolate = _kernels.column_momentum(0, force=True)
    rng = np.random.default_rng(sum(shape) + 1)
    X, Xn, V = (rng.standard_normal(shape) * (rng.random(shape) < 0.4) for _ in range(3))
    D = Xn - X
    want = (np.sum(Xn * Xn, axis=0), np.sum(D * D, axis=0), np.einsum("ij,ij->j", V - Xn, D))
    for got, w in zip(sums(X, Xn, V), want):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12 * (np.abs(w).max(initial=0) + 1e-300))
    coef = np.linspace(0.0, 0.9, shape[1])  # 0: a restarted class, whose next point is Xn
    D *= coef
    D += Xn
    X2, V2 = X.copy(), V.copy()
    extrapolate(X2, Xn, V2, coef)
    np.testing.assert_array_equal(V2, D)
    np.testing.assert_array_equal(X2, Xn)


def test_column_momentum_checks():
    sums, extrapolate = _kernels.column_momentum(0, force=True)
    X, Xn = np.zeros((4, 3)), np.ones((4, 3))
    nx, nd, rs = sums(X, Xn, 2.0 * Xn)  # V beyond Xn along the step: positive (restart)
    np.testing.assert_array_equal(nx, [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(rs, [4.0, 4.0, 4.0])
    assert np.all(sums(X, Xn, 0.5 * Xn)[2] == -2.0)  # V short of Xn: keep the momentum
    with pytest.raises(ValueError, match="C-contiguous"):
        sums(np.asfortranarray(np.ones((4, 3))), Xn, X)
    with pytest.raises(ValueError, match="one shape"):
        sums(X, Xn, np.zeros((5, 3)))
    with pytest.raises(ValueError, match="share memory"):
        extrapolate(X, Xn, Xn, np.zeros(3))
    with pytest.raises(ValueError, match="coef"):
        extrapolate(X, Xn, np.zeros((4, 3)), np.zeros(4))
    assert _kernels.column_momentum(_kernels.MIN_SIZE - 1) is None  # small: numpy
    assert _kernels.column_momentum(_kernels.MIN_SIZE) is not None


# --------------------------------------------------------------------------- the dual step

def _dual_numpy(Y, TX, TXn, sR, sigma, lam):
    from sparsesvm.model.projections import _project_simplex

    return _project_simplex(Y + sigma * (2.0 * TXn - TX) + sR, lam)


@pytest.mark.parametrize("L,K", [(7, 3), (40, 10), (5, 20), (3, 2)])
@pytest.mark.parametrize("lam", [1e-9, 0.5, 1.0, 1e4])
def test_simplex_step_is_the_projection_of_the_shifted_point(L, K, lam):
    rng = np.random.default_rng(L * K)
    Y, TX, TXn = (rng.normal(size=(L, K)) for _ in range(3))
    sR = 0.3 * (rng.random((L, K)) < 0.8)
    Y[0] = 0.0
    TX[0] = TXn[0] = 0.0
    sR[0] = 0.0  # a row of ties (all entries equal)
    TXn[1] = 1e12  # large values
    sigma = 0.7
    want = _dual_numpy(Y, TX, TXn, sR, sigma, lam)
    dual = _kernels.simplex_step(Y.size, force=True)
    out = np.empty_like(Y)
    nn, dd = dual(Y, TX, TXn, sR, sigma, lam, out)
    # to rounding at the scale of the row's values (row 1: 1e12)
    scale = np.abs(Y + sigma * (2.0 * TXn - TX) + sR).max(axis=1)
    assert np.all(np.abs(out - want) <= 1e-12 * np.abs(want) + 1e-15 * K * scale[:, None])
    # each row on the simplex: non-negative, summing to lam
    assert np.all(out >= 0.0)
    assert np.all(np.abs(out.sum(axis=1) - lam) <= 1e-10 * lam + 1e-14 * K * scale)
    assert nn == pytest.approx(np.vdot(out, out), rel=1e-12)
    assert dd == pytest.approx(np.vdot(out - Y, out - Y), rel=1e-10)
    # out may be TX itself (the solver writes the new dual into the old T X buffer)
    TX2 = TX.copy()
    dual(Y, TX2, TXn, sR, sigma, lam, TX2)
    np.testing.assert_array_equal(TX2, out)


def test_simplex_step_only_where_it_applies(monkeypatch):
    assert _kernels.simplex_step(_kernels.MIN_SIZE - 1) is None
    assert _kernels.simplex_step(_kernels.MIN_SIZE) is not None
    monkeypatch.setattr(_kernels, "_kernel", None)
    monkeypatch.setenv("SPARSESVM_NUMBA", "0")
    assert _kernels.simplex_step(10**9) is None
    Y = np.zeros((4, 3))
    monkeypatch.setenv("SPARSESVM_NUMBA", "1")
    with pytest.raises(ValueError, match="C-contiguous"):
        _kernels.simplex_step(0, force=True)(Y, Y, Y, Y, 1.0, 1.0, np.zeros((3, 4)).T)
    # a NaN row ends in NaN, not in an endless Newton loop; the other rows are projected
    Yn = np.zeros((4, 3))
    Yn[2, 1] = np.nan
    out = np.empty_like(Yn)
    _kernels.simplex_step(0, force=True)(Yn, Y, Y, np.zeros((4, 3)), 1.0, 3.0, out)
    assert np.isnan(out[2]).any() and np.allclose(out[[0, 1, 3]], 1.0)


def test_linf_clip_level_with_nan_ends():
    """A NaN in a group (data the estimators refuse) ends the Newton loop, in NaN."""
    kernels = _kernels._load()  # the kernels' module, its cache in the user's cache directory
    a = np.array([1.0, np.nan, 2.0])
    assert np.isnan(kernels.linf_clip(a, 3, 0.5, np.nan, np.nan))


def test_hinge_reg_zero_solution_same_with_and_without_kernel(monkeypatch):
    """Large alpha, balanced classes: X = 0 solves it; the dual's relative change stops both alike."""
    rng = np.random.default_rng(5)
    L, M, K = 21, 12, 3
    y = np.arange(L) % K
    op = MulticlassOperator(rng.normal(size=(L, M)), y, K)
    pen = make_penalty("l1inf", 4, M, K)
    monkeypatch.setattr(_kernels, "MIN_SIZE", 0)
    fused = solvers.hinge_reg(op, pen, 1e-4, tol=1e-6, max_iter=5000)
    monkeypatch.setattr(_kernels, "MIN_SIZE", 10**12)
    plain = solvers.hinge_reg(op, pen, 1e-4, tol=1e-6, max_iter=5000)
    assert fused.converged and plain.converged
    assert not fused.X.any() and not plain.X.any()
    assert fused.n_iter == plain.n_iter < 5000
    np.testing.assert_allclose(fused.X, plain.X, rtol=1e-7, atol=1e-12)


# ------------------------------------------------------------- the dual step of Algorithm 2

def _epigraph_numpy(Y, TX, TXn, R, zeta, xi, sigma, zn):
    """hinge_con's numpy dual update after the half-space step ``zn`` (the reference)."""
    from sparsesvm.model.projections import project_epigraph_hinge

    V = Y / sigma + 2.0 * TXn - TX
    xis = xi / sigma + 2.0 * zn - zeta
    P, theta = project_epigraph_hinge(V, xis, R)
    return sigma * (V - P), sigma * (xis - theta), zn


def _epigraph_by_bisection(nu, z):
    """theta of the epigraph projection of (nu - R, z): theta - z = sum(max(nu - theta, 0))."""
    if z >= nu.max():
        return z
    lo, hi = z, nu.max()  # f(z) <= 0 <= f(max)
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mid - z < np.maximum(nu - mid, 0).sum() else (lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("L,K", [(7, 3), (40, 10), (5, 20), (6, 2)])
@pytest.mark.parametrize("eta_frac", [0.05, 0.5, 1e3])  # 1e3: the half-space is inactive
def test_epigraph_step_is_the_projection_of_the_shifted_point(L, K, eta_frac):
    rng = np.random.default_rng(L * K)
    Y, TX, TXn = (rng.normal(size=(L, K)) for _ in range(3))
    y = np.arange(L) % K
    R = np.ones((L, K))
    R[np.arange(L), y] = 0.0
    zeta, xi = rng.normal(size=L), rng.normal(size=L)
    Y[0] = TX[0] = TXn[0] = 0.0
    R[0] = 1.0  # a row of ties (all entries of nu equal)
    TXn[1] = 1e12  # huge values
    xi[2] = -1e9  # a very negative epigraph variable: every entry active
    xi[3] = 1e9  # far above: inside the epigraph
    sigma, tau, eta = 0.7, 0.4, eta_frac * L
    dual = _kernels.epigraph_step(Y.size, force=True)
    gotY, gotxi, gotz = np.empty_like(Y), xi.copy(), np.empty(L)
    dual(Y, TX, TXn, R, zeta, gotxi, sigma, tau, eta, gotY, gotz)
    # the half-space step: projection onto {sum(z) <= eta}, to the rounding of the sum
    z0 = zeta - tau * xi
    want = z0 - max(0.0, (z0.sum() - eta) / L)
    np.testing.assert_allclose(gotz, want, rtol=1e-13, atol=1e-15 * L * np.abs(z0).max())
    assert gotz.sum() <= eta + 1e-15 * L * np.abs(z0).max()
    outY, outxi, outz = _epigraph_numpy(Y, TX, TXn, R, zeta, xi, sigma, gotz)
    # to rounding at the scale of the row's values (row 1: 1e12, row 2: 1e9)
    nu = Y / sigma + 2.0 * TXn - TX + R
    xis = xi / sigma + 2.0 * outz - zeta
    scale = np.maximum(np.abs(nu).max(axis=1), np.abs(xis)) * sigma
    assert np.all(np.abs(gotY - outY) <= 1e-12 * np.abs(outY) + 1e-14 * K * scale[:, None])
    assert np.all(np.abs(gotxi - outxi) <= 1e-12 * np.abs(outxi) + 1e-14 * K * scale)
    assert np.all(gotY[3] == 0.0) and gotxi[3] == 0.0  # inside: Yh - sigma * Yh
    # independent of both: theta by bisection on its defining equation, and the
    # Moreau split Y+ = sigma (nu - theta)_+, xi+ = sigma (xis - theta)
    for r in range(L):
        if r == 1:
            continue  # bisection at 1e12 cannot resolve the rest of the row
        theta = _epigraph_by_bisection(nu[r], xis[r])
        np.testing.assert_allclose(gotY[r], sigma * np.maximum(nu[r] - theta, 0.0),
                                   rtol=1e-9, atol=1e-9 * max(1.0, scale[r]))
        assert gotxi[r] == pytest.approx(sigma * (xis[r] - theta), rel=1e-9,
                                         abs=1e-9 * max(1.0, scale[r]))
    # out may be TX itself (the solver writes the new dual into the old T X buffer)
    TX2, xi2 = TX.copy(), xi.copy()
    dual(Y, TX2, TXn, R, zeta, xi2, sigma, tau, eta, TX2, np.empty(L))
    np.testing.assert_array_equal(TX2, gotY)
    np.testing.assert_array_equal(xi2, gotxi)


def test_epigraph_step_only_where_it_applies(monkeypatch):
    assert _kernels.epigraph_step(_kernels.MIN_SIZE - 1) is None
    assert _kernels.epigraph_step(_kernels.MIN_SIZE) is not None
    Y, v = np.zeros((4, 3)), np.zeros(4)
    dual = _kernels.epigraph_step(0, force=True)
    with pytest.raises(ValueError, match="C-contiguous"):
        dual(Y, Y, Y, Y, v, v, 1.0, 1.0, 1.0, np.zeros((3, 4)).T, np.zeros(4))
    with pytest.raises(ValueError, match="share memory"):
        dual(Y, Y, Y, Y, v, np.zeros(4), 1.0, 1.0, 1.0, Y.copy(), v)
    # a NaN (from data the estimators would have refused) ends in NaN, not in an endless loop
    Yn, xi = np.zeros((4, 3)), np.zeros(4)
    Yn[1, 1], xi[2] = np.nan, np.nan
    out = np.empty_like(Yn)
    dual(Yn, Y, Y, np.ones((4, 3)), v, xi, 1.0, 1.0, 1.0, out, np.empty(4))
    assert np.isnan(out[1]).any() and np.isnan(out[2]).all() and np.isnan(xi[2])
    assert np.isfinite(out[[0, 3]]).all() and np.isfinite(xi[[0, 1, 3]]).all()
    monkeypatch.setattr(_kernels, "_kernel", None)
    monkeypatch.setenv("SPARSESVM_NUMBA", "0")
    assert _kernels.epigraph_step(10**9) is None


# ------------------------------------------------------------------ the dual step of hinge-lin

def _capped_orthant_by_bisection(m, eta):
    """P onto {c >= 0, sum(c) <= eta}: max(m - t, 0) with t = 0, or t > 0 solving
    sum(max(m - t, 0)) = eta (bisection on the decreasing sum)."""
    if np.maximum(m, 0.0).sum() <= eta:
        return np.maximum(m, 0.0)
    lo, hi = 0.0, m.max()
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.maximum(m - mid, 0.0).sum() > eta else (lo, mid)
    return np.maximum(m - 0.5 * (lo + hi), 0.0)


@pytest.mark.parametrize("L,K", [(7, 3), (40, 10), (5, 20), (1, 2)])
@pytest.mark.parametrize("eta_frac", [1e-9, 0.05, 0.5, 1e3])  # 1e3: the sum's cap is inactive
def test_slack_step_is_the_projected_slacks_and_the_shifted_hinge(L, K, eta_frac):
    from sparsesvm.solvers.baselines import SlackDual

    rng = np.random.default_rng(L * K + 1)
    Y, TX, TXn = (np.abs(rng.normal(size=(L, K))) for _ in range(3))
    y = np.arange(L) % K
    R = np.ones((L, K))
    R[np.arange(L), y] = 0.0
    c = np.abs(rng.normal(size=L))
    c[0] = 0.0
    Y[0] = TX[0] = TXn[0] = 0.0  # a row of zeros
    if L > 1:
        Y[1] = 1e9  # large values
    sigma, tau, eta = 0.7, 0.4, eta_frac * L
    sR = sigma * R
    dual = _kernels.slack_step(Y.size, force=True)
    got, gotc = np.empty_like(Y), np.empty(L)
    dual(Y, TX, TXn, sR, c, sigma, tau, eta, got, gotc)
    # the slacks: the projection of c + tau mean_k Y, against bisection on its threshold
    m = c + tau * Y.mean(axis=1)
    want_c = _capped_orthant_by_bisection(m, eta)
    np.testing.assert_allclose(gotc, want_c, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(m).max()))
    assert np.all(gotc >= 0.0) and gotc.sum() <= eta * (1 + 1e-12) + 1e-12 * np.abs(m).max()
    # the hinge rows from those slacks, written out term by term
    want = np.maximum(0.0, Y + sigma * (2.0 * TXn - TX - (2.0 * gotc - c)[:, None]) + sR)
    scale = np.abs(Y).max(axis=1, keepdims=True) + np.abs(TXn).max() + 1.0
    assert np.all(np.abs(got - want) <= 1e-14 * K * scale)
    # the numpy path of the solver's dual update (the reference the solvers are tested against)
    op = MulticlassOperator(rng.normal(size=(L, 3)), y, K)
    ref = SlackDual(op, make_penalty("l1", None, 3, K), eta)
    ref.kernel = None
    ref.start(tau, sigma)
    ref.c = c.copy()
    Yn, _, _ = ref(None, None, Y, TX.copy(), 0.0, TXn=TXn)
    np.testing.assert_allclose(ref.c, gotc, rtol=1e-12, atol=1e-13 * max(1.0, np.abs(m).max()))
    assert np.all(np.abs(Yn - got) <= 1e-12 * np.abs(got) + 1e-14 * K * scale)
    # out may be TX itself (the solver writes the new dual into the old T X buffer)
    TX2 = TX.copy()
    dual(Y, TX2, TXn, sR, c, sigma, tau, eta, TX2, np.empty(L))
    np.testing.assert_array_equal(TX2, got)


def test_slack_step_only_where_it_applies(monkeypatch):
    assert _kernels.slack_step(_kernels.MIN_SIZE - 1) is None
    assert _kernels.slack_step(_kernels.MIN_SIZE) is not None
    Y, v = np.zeros((4, 3)), np.zeros(4)
    dual = _kernels.slack_step(0, force=True)
    with pytest.raises(ValueError, match="C-contiguous"):
        dual(Y, Y, Y, Y, v, 1.0, 1.0, 1.0, np.zeros((3, 4)).T, np.zeros(4))
    with pytest.raises(ValueError, match="share memory"):
        dual(Y, Y, Y, Y, v, 1.0, 1.0, 1.0, Y.copy(), v)
    # a NaN (from data the estimators would have refused) ends, in NaN, not in an endless loop
    Yn = np.ones((4, 3))
    Yn[1, 1] = np.nan
    out, cn = np.empty_like(Yn), np.empty(4)
    dual(Yn, Y, Y, Y, v, 1.0, 1.0, 0.5, out, cn)
    assert np.isnan(out).any() or np.isnan(cn).any()
    monkeypatch.setattr(_kernels, "_kernel", None)
    monkeypatch.setenv("SPARSESVM_NUMBA", "0")
    assert _kernels.slack_step(10**9) is None


# --------------------------------------------------------------------------- the count of non-zeros

@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (3969, 10), (0, 4)])
def test_nonzero_count_is_numpys(shape):
    count = _kernels.nonzero_count()
    if count is None:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(shape[0])
    W = rng.standard_normal(shape) * (rng.random(shape) < 0.3)
    flat = W.reshape(-1)
    specials = [-0.0, np.nan, np.inf, -np.inf, 5e-324, -5e-324, 0.0]
    flat[: len(specials)] = specials[: flat.size]
    assert count(W) == np.count_nonzero(W)
    assert count(np.zeros(shape)) == 0 and count(-np.zeros(shape)) == 0


# --------------------------------------------------------------------------- the row-by-row sparse step

def _adjoint_arrays(L, M, density, seed):
    """The CSR arrays of A = [Phi^T; 1^T] for a random sparse Phi (L, M), as the operator keeps them."""
    import scipy.sparse as sp

    Phi = sp.random(L, M, density=density, format="csr", random_state=seed)
    A = sp.vstack([Phi.T, np.ones((1, L))]).tocsr()
    A.sort_indices()
    return A, (A.indptr.astype(np.uint64), A.indices.astype(np.uint64), A.data.copy())


@pytest.mark.parametrize("name,groups", [("l12", "features"), ("l1inf", "features"), ("l1", None),
                                         ("l2", None)])
@pytest.mark.parametrize("K", [1, 3, 7, 20])
def test_sparse_step_is_the_product_then_the_step(name, groups, K):
    """csr_step forms A G row by row inside the step: the values of csr_product followed by
    the fused step (to rounding: a group's sum of squares may differ in its last bit),
    whatever its buffer held, with the marks of the zero rows, which csc_forward skips to
    the same bits."""
    rng = np.random.default_rng(K)
    L, M = 37, 400
    A, arrays = _adjoint_arrays(L, M, 0.03, K)  # features with no stored entry among them
    pen = make_penalty(name, groups, M, K)
    step = _kernels.sparse_step(pen, (M + 1) * K, force=True)
    product = _kernels.sparse_products()
    out = rng.normal(size=(M + 1, K))  # a buffer holding anything: marked 1
    rows = np.ones(M + 1, dtype=np.uint8)
    for tau in (1e-3, 0.3, 5.0, 1e3):  # 1e3: every group is shrunk to 0
        X = rng.normal(size=(M + 1, K)) * (rng.random((M + 1, 1)) < 0.3)
        G = rng.normal(size=(L, K)) * (rng.random((L, 1)) < 0.7)
        V = np.empty((M + 1, K))
        product[1](*arrays, G, V)
        np.testing.assert_allclose(V, A @ G, rtol=1e-13, atol=1e-13)
        want, nn_want, cross_want = _step(pen, X, V, tau)
        nn, cross = step(arrays, G, X, tau, out, rows)
        np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-15 * np.abs(want).max())
        assert nn == pytest.approx(nn_want, rel=1e-12, abs=1e-300)
        assert cross == pytest.approx(cross_want, rel=1e-10, abs=1e-12)
        # and against numpy's inner products of what it wrote (the l1,2 rows' terms summed
        # by class)
        assert nn == pytest.approx(float(np.vdot(out, out)), rel=1e-12, abs=1e-300)
        assert cross == pytest.approx(float(np.vdot(out, X)), rel=1e-10, abs=1e-12)
        np.testing.assert_array_equal(rows, out.any(axis=1) | (np.arange(M + 1) == M))
        if name == "l12":
            assert np.all(out[rows == 0] == 0.0) and not np.signbit(out[rows == 0]).any()
        S_marked, S_bits = np.empty((L, K)), np.empty((L, K))
        product[0](*arrays, out, rows, S_marked)
        product[0](*arrays, out, np.zeros(0, dtype=np.uint8), S_bits)
        assert S_marked.tobytes() == S_bits.tobytes()
        np.testing.assert_allclose(S_bits, A.T @ out, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,groups", [("l12", "features"), ("l1inf", "features"), ("l1", None),
                                         ("l2", None)])
@pytest.mark.parametrize("K", [1, 3, 20])
@pytest.mark.parametrize("scale", [1.0, 0.03])  # 0.03: most rows settled by the bound
def test_sparse_step_with_the_marks_of_x_is_the_same_bits(name, groups, K, scale):
    """Given X's marks (0 on rows of +0.0, as the kernel writes them), csr_step does not read
    those rows (l1,2), settling most by a bound, and returns what it returns reading them,
    to the bit: the rows of out, their marks and the two inner products. A marks array that
    lies (a row marked 0 that is not) changes an l1,2 result, so the marks are read; the
    other penalties ignore them."""
    rng = np.random.default_rng(10 + K)
    L, M = 37, 400
    _, arrays = _adjoint_arrays(L, M, 0.03, K)
    step = _kernels.sparse_step(make_penalty(name, groups, M, K), (M + 1) * K, force=True)
    for tau in (1e-3, 0.3, 5.0):
        zero = rng.random(M + 1) < 0.6
        zero[M] = False  # the bias row is never marked
        X = np.where(zero[:, None], 0.0, rng.normal(size=(M + 1, K)))
        xrows = (~zero).astype(np.uint8)
        G = scale * rng.normal(size=(L, K)) * (rng.random((L, 1)) < 0.7)
        for start in (0.0, 7.0):  # out holding zeros marked 0, or anything marked 1
            results = []
            for marks in (None, xrows):
                out = np.full((M + 1, K), start)
                rows = np.full(M + 1, start != 0, dtype=np.uint8)
                nn, cross = step(arrays, G, X, tau, out, rows, marks)
                results.append((out.tobytes(), rows.tobytes(), np.float64(nn).tobytes(),
                                np.float64(cross).tobytes()))
            assert results[0] == results[1]
    lie = xrows.copy()
    lie[np.flatnonzero(~zero[:-1])[:50]] = 0  # rows of X that are not 0, marked 0
    out_lie, out_true = np.empty((M + 1, K)), np.empty((M + 1, K))
    step(arrays, G, X, 1e-3, out_lie, np.ones(M + 1, dtype=np.uint8), lie)
    step(arrays, G, X, 1e-3, out_true, np.ones(M + 1, dtype=np.uint8), xrows)
    assert (out_lie.tobytes() != out_true.tobytes()) == (name == "l12")


def test_sparse_step_settles_zero_rows_only_where_the_prox_makes_them_zero():
    """The bound that settles an l1,2 row of X at +0 (sum_p |A_rp| ||G_p|| <= 1 - 1e-9) is
    safe at its edge: rows of one stored entry, whose bound is ||(A G)_r|| itself, placed
    just inside and just outside the prox's threshold and the bound's margin, give the bits
    of the step that reads and sums every row, and so does a row whose signed entries and
    signed rows of G add up (the bound takes the entries' absolute values). out starts
    as NaN marked 1: every row is written."""
    K, M, L = 3, 8, 8
    import scipy.sparse as sp

    dense = np.zeros((M + 1, L))
    dense[np.arange(6), np.arange(6)] = 1.0  # rows 0-5: one entry each, doc j for row j
    dense[6, [6, 7]] = [1.0, -1.0]  # row 6: 0.9 e1 + 0.9 e1 (signed entries, signed G)
    dense[7, 6] = 0.5  # row 7: 0.45 e1
    dense[M, :] = 1.0  # the bias row
    A = sp.csr_matrix(dense)
    A.sort_indices()
    arrays = (A.indptr.astype(np.uint64), A.indices.astype(np.uint64), A.data.copy())
    unit = np.ones(K) / np.sqrt(K)
    norms = [1 - 1e-6, 1 - 2e-9, 1 - 5e-10, 1.0, 1 + 1e-12, 1.5]
    G = np.array([n * unit for n in norms] + [0.9 * np.eye(K)[0], -0.9 * np.eye(K)[0]])
    step = _kernels.sparse_step(make_penalty("l12", "features", M, K), (M + 1) * K, force=True)
    X = np.zeros((M + 1, K))
    X[M] = 0.25
    xrows = np.zeros(M + 1, dtype=np.uint8)
    xrows[M] = 1
    for tau in (1e-3, 1.0, 10.0):
        outs = []
        for marks in (None, xrows):
            out = np.full((M + 1, K), np.nan)
            rows = np.ones(M + 1, dtype=np.uint8)
            nn, cross = step(arrays, G, X, tau, out, rows, marks)
            outs.append((out.tobytes(), rows.tobytes(), nn, cross))
        assert outs[0] == outs[1]
        out = np.frombuffer(outs[1][0]).reshape(M + 1, K)
        assert not np.isnan(out).any()
        np.testing.assert_array_equal(out[:3], 0.0)  # norms 1 - 1e-6 .. 1 - 5e-10: zero
        assert (out[4] != 0).all() and (out[5] != 0).all()  # norms above 1 stay
        assert out[6, 0] != 0  # norm 1.8 > 1: the bound takes |A_rp|, the row is summed
        np.testing.assert_array_equal(out[7], 0.0)  # norm 0.45: settled


def test_sparse_step_only_where_it_applies(monkeypatch):
    K, M, L = 4, 3000, 20
    _, arrays = _adjoint_arrays(L, M, 0.05, 0)
    assert _kernels.sparse_step(make_penalty("l1inf", 5, M, K), (M + 1) * K) is None  # blocks
    assert _kernels.sparse_step(make_penalty("l12", "features", 20, 3), 63) is None  # small
    pen = make_penalty("l12", "features", M, K)
    step = _kernels.sparse_step(pen, (M + 1) * K)
    X, G = np.zeros((M + 1, K)), np.ones((L, K))
    rows = np.ones(M + 1, dtype=np.uint8)
    with pytest.raises(ValueError, match="share memory"):
        step(arrays, G, X, 1.0, X, rows)
    with pytest.raises(ValueError, match="shapes"):
        step(arrays, G, X, 1.0, np.empty((M, K)), rows)
    with pytest.raises(ValueError, match="shapes"):
        step(arrays, G, X, 1.0, np.empty_like(X), rows[:-1])
    with pytest.raises(ValueError, match="C-contiguous"):
        step(arrays, np.asfortranarray(G), X, 1.0, np.empty_like(X), rows)
    with pytest.raises(ValueError, match="shapes"):
        step(arrays, G, X, 1.0, np.empty_like(X), rows, rows[:-1].copy())
    with pytest.raises(ValueError, match="xrows"):
        step(arrays, G, X, 1.0, np.empty_like(X), rows, rows)
    monkeypatch.setattr(_kernels, "_kernel", None)
    monkeypatch.setenv("SPARSESVM_NUMBA", "0")
    assert _kernels.sparse_step(pen, 10**9) is None


def test_primal_step_from_the_dual_alternates_its_buffers():
    """PrimalStep.from_dual on a sparse Phi: the values of the product and the step one after
    the other, in two buffers used in turn (never the X it reads), with X+'s row marks."""
    import scipy.sparse as sp

    from sparsesvm.solvers._loop import PrimalStep

    rng = np.random.default_rng(1)
    L, M, K = 30, 2000, 5
    Phi = sp.random(L, M, density=0.05, format="csr", random_state=2)
    op = MulticlassOperator(Phi, np.arange(L) % K, K).prepare()
    op.products.use = {"forward": True, "adjoint": True}  # whatever the timings chose
    pen = make_penalty("l12", "features", M, K)
    X = np.zeros((M + 1, K))
    primal, plain = PrimalStep(pen, X, tau=0.05), PrimalStep(pen, X, tau=0.05)
    blind = PrimalStep(pen, X, tau=0.05)  # reads every row of X: no marks of X
    blind.buffers.marks_of = lambda X: None
    plain.rowwise = None
    given = []  # the marks of X the step was handed
    rowwise = primal.rowwise
    primal.rowwise = lambda *a: given.append(a[-1]) or rowwise(*a)
    Xp, Xb = X.copy(), X.copy()
    seen = []
    for it in range(4):
        Y = rng.random((L, K))
        marks_before = None if primal.rows is None else primal.rows.copy()
        Xn, rel = primal.from_dual(X, Y, op)
        want, rel_want = plain.from_dual(Xp, Y, op)
        Xb, rel_blind = blind.from_dual(Xb, Y, op)
        assert Xn.tobytes() == Xb.tobytes() and rel == rel_blind
        if it == 0:  # X0 is not a buffer
            assert given[-1] is None
        else:  # X's marks: the previous step's marks of its X+, 0 on some rows
            np.testing.assert_array_equal(given[-1], marks_before)
            assert 0 < np.count_nonzero(given[-1][:-1] == 0) < M
        assert plain.rows is None and primal.rows is not None
        assert Xn is not X
        np.testing.assert_allclose(Xn, want, rtol=1e-12, atol=1e-15)
        assert rel == pytest.approx(rel_want, rel=1e-9)
        np.testing.assert_array_equal(primal.rows[:-1], Xn[:-1].any(axis=1))
        assert op.T(Xn, rows=primal.rows).tobytes() == op.T(Xn).tobytes()
        seen.append(Xn)
        X, Xp = Xn, want
    assert seen[0] is seen[2] and seen[1] is seen[3] and seen[0] is not seen[1]
    with pytest.raises(ValueError, match="rows must be"):
        op.T(X, rows=primal.rows[:-1])


@pytest.mark.parametrize("momentum", [True, False])
def test_fista_marks_the_zero_rows_of_its_next_point(momentum):
    """FISTA's forward step on the row-by-row path (square's): the marks it hands the next
    ``T V+`` are 0 exactly on the rows zero in both ``Xn`` and ``X`` (the OR of the two
    buffers' marks), on which V+ is 0; ``T`` with them is ``T`` without, to the bit.
    Forward-backward's (logit's, ``V+ = Xn``) are those of Xn's zero rows."""
    import scipy.sparse as sp

    from sparsesvm.solvers.baselines import _ForwardStep

    rng = np.random.default_rng(3)
    L, M, K = 30, 2000, 5
    Phi = sp.random(L, M, density=0.05, format="csr", random_state=4)
    op = MulticlassOperator(Phi, np.arange(L) % K, K).prepare()
    op.products.use = {"forward": True, "adjoint": True}  # whatever the timings chose
    pen = make_penalty("l12", "features", M, K)
    forward = _ForwardStep(op, pen, 1.0, momentum=momentum)
    blind = _ForwardStep(op, pen, 1.0, momentum=momentum)  # no marks of V: reads all its rows
    blind_rowwise, rowwise, given = blind.rowwise, forward.rowwise, []
    blind.rowwise = lambda *a: blind_rowwise(*a[:-1], None)
    forward.rowwise = lambda *a: given.append(a[-1] is not None) or rowwise(*a)
    forward.step = blind.step = 0.05
    X = np.zeros((M + 1, K))
    V, t = np.zeros((M + 1, K)) if momentum else X, 1.0
    Xb, Vb, tb = X.copy(), V.copy(), t
    marked = []
    for it in range(6):
        P = rng.random((L, K)) - 0.3 * (it % 2)  # the momentum points back every other step
        X_before = X.copy()
        Xn, rel, V, t = forward(V, X, P.copy(), t)
        Xb, rel_b, Vb, tb = blind(Vb, Xb, P.copy(), tb)
        assert (Xn.tobytes(), V.tobytes(), rel, t) == (Xb.tobytes(), Vb.tobytes(), rel_b, tb)
        if it == 0 and momentum:  # X was not one of the step's buffers: no marks of it
            assert forward.rows is None
        else:  # forward-backward: Xn's marks, whatever X was
            either = Xn[:-1].any(axis=1) | (momentum & X_before[:-1].any(axis=1))
            np.testing.assert_array_equal(forward.rows[:-1], either)
            assert not V[:-1][~either].any()
            assert op.T(V, rows=forward.rows).tobytes() == op.T(V).tobytes()
            marked.append(int(np.count_nonzero(forward.rows[:-1] == 0)))
        X = Xn
    assert all(0 < n < M for n in marked), marked
    # the step was handed V's marks from the first step whose V is the marked V+ on
    assert given == [False] * (2 if momentum else 1) + [True] * (4 if momentum else 5)
