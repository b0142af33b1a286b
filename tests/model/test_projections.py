"""Projections and the hinge prox against independent answers.

References: CVXPY (Clarabel) on small random inputs, and plain bisection on the
one-dimensional optimality equation (no sorting), plus the defining optimality
conditions, Moreau's identity, and the special cases of the epigraph projection.
"""

import cvxpy as cp
import numpy as np
import pytest

from sparsesvm.model.projections import (
    project_epigraph_hinge,
    project_halfspace,
    project_l1_ball,
    project_simplex,
    prox_hinge,
)

SHAPES = [(1, 1), (3, 2), (4, 5), (6, 10), (2, 31)]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _offsets(rng, L, K):
    R = np.ones((L, K))
    R[np.arange(L), rng.integers(0, K, L)] = 0.0
    return R


# --------------------------------------------------------------------------- #
# independent references
# --------------------------------------------------------------------------- #
def _bisect(fun, lo, hi, n_iter=200):
    """Vectorised bisection for a decreasing function fun(t) (root where it crosses 0)."""
    lo, hi = lo.copy(), hi.copy()
    for _ in range(n_iter):
        mid = 0.5 * (lo + hi)
        pos = fun(mid) > 0
        lo = np.where(pos, mid, lo)
        hi = np.where(pos, hi, mid)
    return 0.5 * (lo + hi)


def simplex_bisection(V, radius):
    radius = np.broadcast_to(np.asarray(radius, dtype=float), (V.shape[0],))
    t = _bisect(
        lambda t: np.maximum(V - t[:, None], 0).sum(1) - radius,
        V.min(1) - radius - 1.0,
        V.max(1) + 1.0,
    )
    return np.maximum(V - t[:, None], 0)


def l1_ball_bisection(V, radius):
    out = V.copy()
    radius = np.broadcast_to(np.asarray(radius, dtype=float), (V.shape[0],))
    outside = np.abs(V).sum(1) > radius
    if outside.any():
        A = np.abs(V[outside])
        out[outside] = np.sign(V[outside]) * simplex_bisection(A, radius[outside])
    return out


def epigraph_bisection(V, zeta, R):
    """theta minimises sum max(nu - theta, 0)^2 + (theta - zeta)^2 (convex, 1-D)."""
    nu = V + R
    # derivative / 2 = (theta - zeta) - sum max(nu - theta, 0), increasing in theta
    theta = _bisect(
        lambda t: np.maximum(nu - t[:, None], 0).sum(1) - (t - zeta),
        np.minimum(zeta, nu.min(1)) - 1.0,
        np.maximum(zeta, nu.max(1)) + 1.0,
    )
    return np.minimum(V, theta[:, None] - R), theta


def cvx_rows(L, build):
    """Solve one small problem per row with CVXPY/Clarabel; build(l) -> (problem, var)."""
    out = []
    for l in range(L):
        prob, var = build(l)
        prob.solve(solver=cp.CLARABEL)
        assert prob.status == cp.OPTIMAL
        out.append(var.value)
    return np.array(out)


# --------------------------------------------------------------------------- #
# simplex
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("shape", SHAPES)
def test_simplex_matches_cvxpy_and_bisection(shape):
    rng = _rng(hash(shape) % 1000)
    V = rng.normal(scale=2.0, size=shape)
    radius = rng.uniform(0.1, 3.0, size=shape[0])
    U = project_simplex(V, radius)
    assert U.shape == shape

    def build(l):
        u = cp.Variable(shape[1])
        return cp.Problem(cp.Minimize(cp.sum_squares(u - V[l])), [u >= 0, cp.sum(u) == radius[l]]), u

    np.testing.assert_allclose(U, cvx_rows(shape[0], build), atol=1e-6)
    np.testing.assert_allclose(U, simplex_bisection(V, radius), atol=1e-10)


@pytest.mark.parametrize("shape", SHAPES + [(50, 3), (7, 100)])
def test_simplex_optimality_conditions(shape):
    rng = _rng(1)
    V = rng.normal(scale=5.0, size=shape)
    radius = 1.7
    U = project_simplex(V, radius)
    np.testing.assert_allclose(U.sum(1), radius, rtol=1e-12)
    assert np.all(U >= 0)
    # u = max(v - t, 0) with one t per row: t = v - u on the support
    t = np.where(U > 0, V - U, np.nan)
    t_row = np.nanmean(t, axis=1)
    np.testing.assert_allclose(np.nan_to_num(t, nan=0) + np.isnan(t) * t_row[:, None],
                               np.broadcast_to(t_row[:, None], shape), atol=1e-10)
    # off the support, v <= t
    assert np.all(V[U == 0] <= np.broadcast_to(t_row[:, None], shape)[U == 0] + 1e-10)


def test_simplex_special_cases():
    # ties: all equal -> uniform
    V = np.full((3, 4), 2.5)
    np.testing.assert_allclose(project_simplex(V, 1.0), 0.25)
    # radius 0 -> zero
    np.testing.assert_array_equal(project_simplex(_rng().normal(size=(4, 3)), 0.0), 0.0)
    # already on the simplex -> unchanged
    U = np.array([[0.2, 0.3, 0.5, 0.0]])
    np.testing.assert_allclose(project_simplex(U, 1.0), U, atol=1e-15)
    # integer input -> float64
    assert project_simplex(np.array([[1, 2, 3]]), 1).dtype == np.float64
    # large values: translation invariance (P(v + c 1) = P(v))
    V = _rng(3).normal(size=(5, 6))
    np.testing.assert_allclose(project_simplex(V + 1e8, 2.0), project_simplex(V, 2.0), atol=1e-7)


def test_simplex_keeps_float32():
    V = _rng(2).normal(size=(20, 10)).astype(np.float32)
    U = project_simplex(V, 1.0)
    assert U.dtype == np.float32
    U2 = project_simplex(V, np.full(20, 1.0))  # per-row radius given in float64
    assert U2.dtype == np.float32
    np.testing.assert_allclose(U, simplex_bisection(V.astype(float), 1.0), atol=1e-5)


# --------------------------------------------------------------------------- #
# l1 ball
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("shape", SHAPES)
def test_l1_ball_matches_cvxpy(shape):
    rng = _rng(10 + shape[1])
    V = rng.normal(scale=2.0, size=shape)
    radius = rng.uniform(0.0, 2.0 * shape[1], size=shape[0])
    U = project_l1_ball(V, radius)

    def build(l):
        u = cp.Variable(shape[1])
        return cp.Problem(cp.Minimize(cp.sum_squares(u - V[l])), [cp.norm1(u) <= radius[l]]), u

    np.testing.assert_allclose(U, cvx_rows(shape[0], build), atol=1e-6)
    np.testing.assert_allclose(U, l1_ball_bisection(V, radius), atol=1e-10)


def test_l1_ball_inside_unchanged_and_boundary():
    rng = _rng(4)
    V = rng.normal(size=(30, 8))
    r = np.abs(V).sum(1)
    radius = np.where(np.arange(30) % 2 == 0, r + 0.1, r / 2)
    U = project_l1_ball(V, radius)
    inside = np.arange(30) % 2 == 0
    np.testing.assert_array_equal(U[inside], V[inside])
    np.testing.assert_allclose(np.abs(U[~inside]).sum(1), radius[~inside], rtol=1e-12)
    # signs are kept and magnitudes shrink
    assert np.all(U * V >= 0) and np.all(np.abs(U) <= np.abs(V))
    # radius 0
    np.testing.assert_array_equal(project_l1_ball(V, 0.0), 0.0)
    assert project_l1_ball(V.astype(np.float32), 1.0).dtype == np.float32


@pytest.mark.parametrize("K", [2, 5, 17, 81])
@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
@pytest.mark.parametrize("flat_every", [3, 12])
def test_l1_ball_threshold_vs_bisection(K, scale, flat_every):
    """Newton on few candidates and the sort on many give the bisection threshold.

    Rows are built so that both branches run in one call: a dominant entry
    (few candidates above max(a) - r) and flat rows (many candidates), plus ties,
    rows inside the ball, zero rows and per-row radii.
    """
    from sparsesvm.model.projections import _FEW_CANDIDATES, _SORT_MAX_K, _l1_ball_threshold

    rng = _rng(K)
    L = 60
    A = np.abs(rng.normal(size=(L, K)))
    A[::3, 0] += 20.0 * scale  # dominant entry: few candidates
    A[1::flat_every] = 1.0 + 1e-3 * rng.random((len(A[1::flat_every]), K))  # flat: many candidates
    A[2::6, : K // 2] = A[2::6, :1]  # ties
    A[5] = 0.0
    radius = rng.uniform(0.0, 1.5, size=L) * A.sum(1) * scale / max(scale, 1.0)
    radius[7] = A[7].sum() + 1.0  # inside
    t = _l1_ball_threshold(A.copy(), radius)[:, 0]
    outside = A.sum(1) > radius
    ref = _bisect(lambda t: np.maximum(A - t[:, None], 0).sum(1) - radius,
                  np.zeros(L), A.max(1) + 1.0)
    np.testing.assert_allclose(t[outside], ref[outside], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(t[~outside], 0.0)
    # rows longer than _SORT_MAX_K: both branches were taken (short rows are all sorted)
    lo = np.maximum((A.sum(1) - radius) / K, A.max(1) - radius)
    n_cand = (A > lo[:, None]).sum(1)[outside]
    few = n_cand <= max(1, int(_FEW_CANDIDATES * K))
    if K > _SORT_MAX_K:
        assert few.any() and (~few).any()

    # scalar radius, float32 and radius 0
    t32 = _l1_ball_threshold(A.astype(np.float32), 0.5)
    assert t32.dtype == np.float32
    ref = _bisect(lambda t: np.maximum(A - t[:, None], 0).sum(1) - 0.5, np.zeros(L), A.max(1) + 1.0)
    np.testing.assert_allclose(t32[:, 0], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_l1_ball_threshold(A, 0.0)[:, 0], A.max(1))


def test_l1_ball_threshold_newton_on_few_candidates(monkeypatch):
    """Mostly one dominant entry per row: the per-row split runs (Newton on the rows
    with few candidates, a sort on the flat ones), and matches bisection; forcing the
    sort everywhere gives the same thresholds."""
    from sparsesvm.model import projections as P

    rng = _rng(3)
    A = 0.1 * rng.random((200, 81))
    A[:, 0] += 5.0
    A[::20] = 1.0 + 1e-3 * rng.random((10, 81))  # flat rows: many candidates
    A[5, :4] = A[5, 0]  # ties at the top
    radius = np.where(np.arange(200) % 20 == 0, 5.0, 1.0)
    lo = np.maximum((A.sum(1) - radius) / 81, A.max(1) - radius)
    n_cand = (A >= lo[:, None]).sum(1)
    assert n_cand.sum() <= P._FEW_CANDIDATES * A.size  # the split path
    assert (n_cand[::20] > P._FEW_CANDIDATES * 81).all() and (n_cand[1::20] <= 4).all()
    t = P._l1_ball_threshold(A, radius)[:, 0]
    ref = _bisect(lambda t: np.maximum(A - t[:, None], 0).sum(1) - radius, np.zeros(200), A.max(1))
    np.testing.assert_allclose(t, ref, rtol=1e-12)
    monkeypatch.setattr(P, "_FEW_CANDIDATES", 0.0)  # every row sorted
    np.testing.assert_allclose(P._l1_ball_threshold(A, radius)[:, 0], t, rtol=1e-13)


# --------------------------------------------------------------------------- #
# half-space
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("L", [1, 5, 40])
def test_halfspace(L):
    rng = _rng(L)
    z = rng.normal(size=L)
    for eta in (z.sum() - 3.0, z.sum() + 1.0, -10.0):
        p = project_halfspace(z, eta)
        x = cp.Variable(L)
        cp.Problem(cp.Minimize(cp.sum_squares(x - z)), [cp.sum(x) <= eta]).solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(p, x.value, atol=1e-7)
        if z.sum() <= eta:
            np.testing.assert_array_equal(p, z)
        else:
            np.testing.assert_allclose(p.sum(), eta, rtol=1e-12, atol=1e-12)
            d = z - p
            np.testing.assert_allclose(d, d[0])  # moved along the normal 1
    assert project_halfspace(np.ones(3, dtype=np.float32), 0.0).dtype == np.float32


# --------------------------------------------------------------------------- #
# prox of lam * h_l
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("shape", [(1, 2), (3, 3), (5, 7)])
@pytest.mark.parametrize("lam", [0.1, 2.0])
def test_prox_hinge_matches_cvxpy(shape, lam):
    rng = _rng(20 + shape[1])
    V = rng.normal(scale=1.5, size=shape)
    R = _offsets(rng, *shape)
    P = prox_hinge(V, R, lam)

    def build(l):
        p = cp.Variable(shape[1])
        obj = lam * cp.max(p + R[l]) + 0.5 * cp.sum_squares(p - V[l])
        return cp.Problem(cp.Minimize(obj)), p

    np.testing.assert_allclose(P, cvx_rows(shape[0], build), atol=1e-6)


def test_prox_hinge_moreau_identity():
    """prox_f(v) + prox_{f*}(v) = v, f = lam h_l, f*(u) = i_{S_lam}(u) - <u, r>;
    prox_{f*} is computed independently with CVXPY."""
    rng = _rng(5)
    L, K, lam = 4, 5, 0.7
    V = rng.normal(scale=2.0, size=(L, K))
    R = _offsets(rng, L, K)

    def build(l):
        u = cp.Variable(K)
        obj = 0.5 * cp.sum_squares(u - V[l]) - R[l] @ u
        return cp.Problem(cp.Minimize(obj), [u >= 0, cp.sum(u) == lam]), u

    np.testing.assert_allclose(prox_hinge(V, R, lam) + cvx_rows(L, build), V, atol=1e-6)


def test_prox_hinge_per_row_lambda_and_dtype():
    rng = _rng(6)
    V = rng.normal(size=(6, 4))
    R = _offsets(rng, 6, 4)
    lam = rng.uniform(0.1, 2, 6)
    P = prox_hinge(V, R, lam)
    for l in range(6):
        np.testing.assert_allclose(P[l], prox_hinge(V[l:l + 1], R[l:l + 1], lam[l])[0])
    # optimality: (v - p)/lam is a subgradient of h at p, i.e. lies in the simplex
    # supported on argmax(p + r)
    G = (V - P) / lam[:, None]
    np.testing.assert_allclose(G.sum(1), 1.0, atol=1e-12)
    assert np.all(G >= -1e-12)
    h = (P + R).max(1)
    assert np.all((G <= 1e-12) | (np.abs(P + R - h[:, None]) <= 1e-10))
    P32 = prox_hinge(V.astype(np.float32), R.astype(np.float32), 1.0)
    assert P32.dtype == np.float32


# --------------------------------------------------------------------------- #
# epigraph of h_l
# --------------------------------------------------------------------------- #
def _check_epigraph(V, zeta, R, P, theta, scale=1.0, n_q=50, seed=0):
    L, K = V.shape
    # in the epigraph
    assert np.all((P + R).max(1) <= theta + 1e-12 * scale)
    # variational inequality <(v, z) - P, q - P> <= 0 for q in the epigraph
    rng = _rng(seed)
    for _ in range(n_q):
        qv = P + rng.normal(scale=scale, size=(L, K))
        qz = (qv + R).max(1) + np.abs(rng.normal(scale=scale, size=L))
        ip = ((V - P) * (qv - P)).sum(1) + (zeta - theta) * (qz - theta)
        assert np.all(ip <= 1e-9 * scale**2), ip.max()


@pytest.mark.parametrize("shape", [(1, 2), (4, 3), (6, 8)])
def test_epigraph_matches_cvxpy(shape):
    rng = _rng(30 + shape[1])
    V = rng.normal(scale=2.0, size=shape)
    R = _offsets(rng, *shape)
    zeta = rng.normal(scale=2.0, size=shape[0])
    P, theta = project_epigraph_hinge(V, zeta, R)

    def build(l):
        x = cp.Variable(shape[1] + 1)
        obj = cp.sum_squares(x[:-1] - V[l]) + cp.square(x[-1] - zeta[l])
        return cp.Problem(cp.Minimize(obj), [x[:-1] + R[l] <= x[-1]]), x

    ref = cvx_rows(shape[0], build)
    np.testing.assert_allclose(P, ref[:, :-1], atol=1e-6)
    np.testing.assert_allclose(theta, ref[:, -1], atol=1e-6)


@pytest.mark.parametrize("shape", [(200, 2), (100, 10), (20, 50)])
def test_epigraph_random_vs_bisection_and_optimality(shape):
    rng = _rng(shape[1])
    V = rng.normal(scale=3.0, size=shape)
    R = _offsets(rng, *shape)
    zeta = rng.normal(scale=3.0, size=shape[0])
    P, theta = project_epigraph_hinge(V, zeta, R)
    Pb, thb = epigraph_bisection(V, zeta, R)
    np.testing.assert_allclose(P, Pb, atol=1e-9)
    np.testing.assert_allclose(theta, thb, atol=1e-9)
    _check_epigraph(V, zeta, R, P, theta)


def test_epigraph_points_inside_unchanged():
    rng = _rng(7)
    V = rng.normal(size=(25, 6))
    R = _offsets(rng, 25, 6)
    h = (V + R).max(1)
    zeta = h + np.abs(rng.normal(size=25))
    zeta[::5] = h[::5]  # exactly on the boundary
    P, theta = project_epigraph_hinge(V, zeta, R)
    np.testing.assert_array_equal(P, V)
    np.testing.assert_array_equal(theta, zeta)


def test_epigraph_ties_and_k2():
    # ties: all entries of v + r equal
    V = np.array([[1.0, 0.0, 0.0, 0.0], [3.0, 3.0, 3.0, 3.0]])
    R = np.array([[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    zeta = np.array([-1.0, 0.0])
    P, theta = project_epigraph_hinge(V, zeta, R)
    # by symmetry: nu = c 1, theta = (zeta + K c) / (K + 1), p = theta - r
    np.testing.assert_allclose(theta, [(-1 + 4) / 5, (0 + 12) / 5])
    np.testing.assert_allclose(P, theta[:, None] - R)
    _check_epigraph(V, zeta, R, P, theta)
    # K = 2: closed form by cases
    rng = _rng(8)
    V = rng.normal(scale=2, size=(300, 2))
    R = _offsets(rng, 300, 2)
    zeta = rng.normal(scale=2, size=300)
    P, theta = project_epigraph_hinge(V, zeta, R)
    nu = V + R
    hi, lo = nu.max(1), nu.min(1)
    th1 = (zeta + hi) / 2
    th2 = (zeta + hi + lo) / 3
    expect = np.where(zeta >= hi, zeta, np.where(th1 >= lo, th1, th2))
    np.testing.assert_allclose(theta, expect, atol=1e-12)
    _check_epigraph(V, zeta, R, P, theta)


def test_epigraph_large_values_and_very_negative_zeta():
    rng = _rng(9)
    L, K = 40, 6
    V = rng.normal(size=(L, K))
    R = _offsets(rng, L, K)
    zeta = rng.normal(size=L)
    P, theta = project_epigraph_hinge(V, zeta, R)
    # translation along (1, 1): epi h is invariant, so the projection shifts
    c = 1e8
    Pc, thc = project_epigraph_hinge(V + c, zeta + c, R)
    np.testing.assert_allclose(Pc - c, P, atol=1e-6)
    np.testing.assert_allclose(thc - c, theta, atol=1e-6)
    # scaling with r = 0: epi(max) is a cone, so P(s v, s zeta) = s P(v, zeta)
    Z = np.zeros((L, K))
    P0, th0 = project_epigraph_hinge(V, zeta, Z)
    Ps, ths = project_epigraph_hinge(1e8 * V, 1e8 * zeta, Z)
    np.testing.assert_allclose(Ps, 1e8 * P0, rtol=1e-10, atol=1e-6)
    np.testing.assert_allclose(ths, 1e8 * th0, rtol=1e-10, atol=1e-6)
    _check_epigraph(1e8 * V, 1e8 * zeta, Z, Ps, ths, scale=1e8)
    # zeta very negative: every entry becomes active, theta = (zeta + sum nu)/(K+1)
    zneg = np.full(L, -1e6)
    Pn, thn = project_epigraph_hinge(V, zneg, R)
    np.testing.assert_allclose(thn, (zneg + (V + R).sum(1)) / (K + 1), rtol=1e-12)
    np.testing.assert_allclose(Pn, thn[:, None] - R, rtol=1e-12)
    Pb, thb = epigraph_bisection(V, zneg, R)
    np.testing.assert_allclose(thn, thb, rtol=1e-10)


def test_epigraph_float32():
    rng = _rng(11)
    V = rng.normal(size=(30, 5)).astype(np.float32)
    R = _offsets(rng, 30, 5).astype(np.float32)
    zeta = rng.normal(size=30).astype(np.float32)
    P, theta = project_epigraph_hinge(V, zeta, R)
    assert P.dtype == np.float32 and theta.dtype == np.float32
    Pb, thb = epigraph_bisection(V.astype(float), zeta.astype(float), R.astype(float))
    np.testing.assert_allclose(P, Pb, atol=1e-5)
    np.testing.assert_allclose(theta, thb, atol=1e-5)


# --------------------------------------------------------------------------- #
# bad inputs
# --------------------------------------------------------------------------- #
def test_bad_inputs_raise():
    V = np.ones((3, 4))
    R = np.zeros((3, 4))
    with pytest.raises(ValueError, match="radius"):
        project_simplex(V, -1.0)
    with pytest.raises(ValueError, match="radius"):
        project_simplex(V, np.ones(2))
    with pytest.raises(ValueError, match="radius"):
        project_l1_ball(V, np.nan)
    with pytest.raises(ValueError, match="2-D"):
        project_simplex(np.ones(4), 1.0)
    with pytest.raises(ValueError, match="NaN"):
        project_simplex(np.array([[1.0, np.nan]]), 1.0)
    with pytest.raises(ValueError, match="numeric"):
        project_l1_ball(np.array([["a", "b"]]), 1.0)
    with pytest.raises(ValueError, match="1-D"):
        project_halfspace(V, 1.0)
    with pytest.raises(ValueError, match="eta"):
        project_halfspace(np.ones(3), np.inf)
    with pytest.raises(ValueError, match="eta"):
        project_halfspace(np.ones(3), "1")
    with pytest.raises(ValueError, match="lam"):
        prox_hinge(V, R, 0.0)
    with pytest.raises(ValueError, match="shape"):
        prox_hinge(V, np.zeros((3, 3)), 1.0)
    with pytest.raises(ValueError, match="zeta"):
        project_epigraph_hinge(V, np.ones(2), R)
    with pytest.raises(ValueError, match="R"):
        project_epigraph_hinge(V, np.ones(3), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        project_epigraph_hinge(V, np.array([0.0, np.inf, 0.0]), R)
