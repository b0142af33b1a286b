"""Tests of the dense interior-point method of the column generation's masters
(sparsesvm.solvers.accelerated.ipm) against HiGHS' simplex and the LP's optimality conditions."""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from sparsesvm.solvers.accelerated.ipm import _step_to_boundary, interior_point


def _master_like(seed, rows=60, atoms=40, samples=30, K=4, lam=1.0):
    """An LP of the masters' form: free biases with a common shift (b_k - b_z in every row),
    hinge values xi >= 0 of cost lam (some samples without rows: empty columns), dense atom
    columns >= 0 of cost 1, rows <= -1."""
    rng = np.random.default_rng(seed)
    ll = rng.integers(0, samples - 5, rows)  # the last five samples have no row
    zz = rng.integers(0, K, samples)
    kk = (zz[ll] + rng.integers(1, K, rows)) % K
    r_idx = np.repeat(np.arange(rows), 3)
    cols = np.column_stack([kk, zz[ll], K + ll]).ravel()
    vals = np.tile([1.0, -1.0, -1.0], rows)
    base = sp.csc_matrix((vals, (r_idx, cols)), shape=(rows, K + samples))
    dense = rng.standard_normal((rows, atoms)) * (rng.random((rows, atoms)) < 0.4)
    c = np.concatenate([np.zeros(K), np.full(samples, lam), np.ones(atoms)])
    return base, dense, c, np.arange(K), -np.ones(rows)


def _highs(base, dense, c, free, r):
    A = sp.hstack([base, sp.csc_matrix(dense)], format="csr")
    bounds = [(None, None) if j in set(free) else (0, None) for j in range(A.shape[1])]
    res = linprog(c, A_ub=A, b_ub=r, bounds=bounds, method="highs-ds",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0
    return res.fun, A


@pytest.mark.parametrize("seed", range(6))
def test_interior_point_reaches_the_simplex_optimum_with_a_kkt_point(seed):
    base, dense, c, free, r = _master_like(seed, lam=[0.3, 1.0, 5.0][seed % 3])
    fun, A = _highs(base, dense, c, free, r)
    res = interior_point(base, dense, c, free, r, tol=1e-9)
    assert res.converged and res.status == "optimal"
    x, y = res.x, res.y
    assert c @ x == pytest.approx(fun, rel=1e-7, abs=1e-9)
    # the optimality conditions, independently of the method's own measures
    scale = 1.0 + np.abs(fun)
    assert np.all(A @ x <= r + 1e-7 * scale)  # primal feasible
    nonneg = np.setdiff1d(np.arange(len(c)), free)
    assert np.all(x[nonneg] >= 0) and np.all(y >= 0)
    reduced = c + A.T @ y
    assert np.all(reduced[nonneg] >= -1e-7 * scale)  # dual feasible
    assert np.abs(reduced[free]).max() <= 1e-7 * scale
    assert -(r @ y) == pytest.approx(fun, rel=1e-7, abs=1e-9)  # no duality gap
    # empty columns (samples without rows) stay at 0
    empty = np.flatnonzero(np.diff(base.indptr) == 0)
    assert len(empty) and np.all(x[empty] == 0)


def test_interior_point_on_a_degenerate_lp_with_free_null_directions():
    # duplicated atom columns (a whole optimal face) and a bias column of zeros (a second
    # null direction of the free variables besides their common shift)
    base, dense, c, free, r = _master_like(7)
    dense = np.hstack([dense, dense[:, :10]])
    c = np.concatenate([c, np.ones(10)])
    base = sp.hstack([base, sp.csc_matrix((base.shape[0], 1))], format="csc")
    K = len(free)
    order = np.r_[np.arange(base.shape[1] - 1), base.shape[1] - 1]
    base = base[:, order]
    free = np.r_[free, base.shape[1] - 1]
    c = np.concatenate([c[:base.shape[1] - 1], [0.0], c[base.shape[1] - 1:]])
    fun, _ = _highs(base, dense, c, free, r)
    res = interior_point(base, dense, c, free, r, tol=1e-9)
    assert res.converged
    assert c @ res.x == pytest.approx(fun, rel=1e-7)
    assert K + 1 == len(free)


def test_interior_point_input_errors_and_deadline():
    base, dense, c, free, r = _master_like(0)
    with pytest.raises(ValueError, match="do not fit together"):
        interior_point(base, dense[:-1], c, free, r)
    with pytest.raises(ValueError, match="do not fit together"):
        interior_point(base, dense, c[:-1], free, r)
    bad = c.copy()
    bad[len(free) + base.shape[1] - len(free) - 1] = -1.0  # an empty hinge column of negative cost
    with pytest.raises(ValueError, match="unbounded"):
        interior_point(base, dense, bad, free, r)
    res = interior_point(base, dense, c, free, r, deadline=time.perf_counter() - 1.0)
    assert res.status == "time" and not res.converged and res.iterations == 0
    res = interior_point(base, dense, c, free, r, tol=1e-9, max_iter=3)
    assert res.status == "max_iter" and not res.converged


@pytest.mark.parametrize("seed", range(4))
def test_step_to_boundary_is_the_largest_feasible_step(seed):
    """The largest a <= 1 with v + a dv >= 0, against the ratio test written entry by entry
    (pairs with dv >= 0 never bind, nor those with v = dv = 0)."""
    rng = np.random.default_rng(seed)
    v = 10.0 ** rng.uniform(-8, 2, 50)
    dv = rng.standard_normal(50) * 10.0 ** rng.uniform(-8, 2, 50)
    if seed == 1:
        dv = np.abs(dv)  # nothing decreases: the full step
    if seed == 2:
        v[:3], dv[:3] = 0.0, 0.0
    ratios = [-vi / di for vi, di in zip(v, dv) if di < 0]
    expect = min([1.0] + ratios)
    a = _step_to_boundary(v, dv)
    assert a == pytest.approx(expect, rel=1e-15)
    assert (v + a * dv >= -1e-15 * np.abs(v)).all()
    assert _step_to_boundary(np.array([2.0]), np.array([-1.0])) == 1.0  # at most 1
    assert _step_to_boundary(np.zeros(0), np.zeros(0)) == 1.0
