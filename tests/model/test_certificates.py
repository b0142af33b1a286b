"""Tests of sparsesvm.model.certificates: the duality gaps bound the true suboptimality.

Independent answers: the primal optimum from tests/cvx_reference.py (CVXPY +
Clarabel), and the *dual* optimum from a CVXPY model of the dual problems written
here from their definitions (not from the package code).
"""

import cvx_reference as cr
import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from sparsesvm.model.certificates import (
    certify,
    circulation_part,
    feasible_scaling,
    hinge_con_gap,
    hinge_reg_gap,
)
from sparsesvm.model.operator import MulticlassOperator
from sparsesvm.model.penalties import make_penalty

PENALTIES = [("l1", None), ("l2", None), ("l12", 3), ("l12", "features"),
             ("l1inf", 3), ("l1inf", "features")]


def cvx_dual(method, Phi, y, K, penalty, groups, lam=None, eta=None):
    """Dual optimum and dual point Y (L, K) from the definition of the dual."""
    L, M = Phi.shape
    A = cp.Variable((L, K), nonneg=True)   # off-class multipliers
    off = np.ones((L, K))
    off[np.arange(L), y] = 0.0
    onehot = 1.0 - off
    rows = cp.sum(cp.multiply(A, off), axis=1)
    # G = A off-class, -row sums on the true class
    G = cp.multiply(A, off) - cp.multiply(cp.reshape(rows, (L, 1), order="C") @ np.ones((1, K)), onehot)
    V = Phi.T @ G
    cons = [cp.multiply(A, onehot) == 0, cp.sum(G, axis=0) == 0]
    if penalty == "l2":
        conj = 0.5 * cp.sum_squares(V)
    else:
        conj = 0
        if penalty == "l1":
            cons.append(cp.abs(V) <= 1)
        else:
            parts = ([V[j, :] for j in range(M)] if groups == "features"
                     else [V[idx, k] for idx in cr._blocks(M, groups) for k in range(K)])
            for p in parts:
                cons.append(cp.norm(p, 2 if penalty == "l12" else 1) <= 1)
    if method == "hinge-reg":
        cons.append(rows <= lam)
        obj = cp.sum(rows) - conj
    else:
        nu = cp.Variable(nonneg=True)
        cons.append(rows <= nu)
        obj = cp.sum(rows) - nu * eta - conj
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver=cp.CLARABEL)
    a = np.maximum(A.value * off, 0.0)
    cap = lam if method == "hinge-reg" else max(float(nu.value), a.sum(axis=1).max())
    Y = a.copy()
    Y[np.arange(L), y] = np.maximum(cap - a.sum(axis=1), 0.0)
    return float(prob.value), Y


def _gap(method, Phi, y, K, X, Y, pen, grp, par):
    op = MulticlassOperator(Phi, y, K)
    if method == "hinge-reg":
        return hinge_reg_gap(op, X, Y, pen, grp, lam=par)
    return hinge_con_gap(op, X, Y, pen, grp, eta=par)


@pytest.mark.parametrize("pen,grp", PENALTIES)
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_gap_vanishes_at_optimum_and_bounds_random_points(random_problem, method, pen, grp):
    Phi, y, K = random_problem(3, M=7)
    L = len(y)
    par = 2.0 if method == "hinge-reg" else 0.3 * L
    kw = dict(lam=par) if method == "hinge-reg" else dict(eta=par)
    pstar, Xstar = cr.solve(method, Phi, y, K, pen, grp, **kw)
    dstar, Ystar = cvx_dual(method, Phi, y, K, pen, grp, **kw)
    assert dstar == pytest.approx(pstar, rel=1e-6)  # strong duality of our dual model
    g0 = _gap(method, Phi, y, K, Xstar, Ystar, pen, grp, par)
    assert g0.gap >= -1e-6 * abs(pstar)
    assert g0.rel_gap <= 1e-5
    assert g0.dual <= pstar * (1 + 1e-7) + 1e-9
    rng = np.random.default_rng(7)
    for scale in (1e-3, 1e-2, 1e-1, 1.0):
        X = Xstar + scale * rng.standard_normal(Xstar.shape)
        Y = Ystar + scale * par * rng.standard_normal(Ystar.shape)
        g = _gap(method, Phi, y, K, X, Y, pen, grp, par)
        # the dual bound never exceeds the optimum, the primal bound never goes below it
        assert g.dual <= pstar * (1 + 1e-6) + 1e-9
        assert g.primal >= pstar * (1 - 1e-6) - 1e-9
        assert g.gap >= -1e-9
        # the certificate bounds the true suboptimality of the certified point
        assert g.primal - pstar <= g.gap + 1e-6 * abs(pstar)
        if g.dual > 0:
            assert (g.primal - pstar) / pstar <= g.rel_gap + 1e-6


def test_gap_at_zero_dual_is_primal(random_problem):
    Phi, y, K = random_problem(0, M=7)
    X = np.zeros((Phi.shape[1] + 1, K))
    g = hinge_reg_gap(MulticlassOperator(Phi, y, K), X, np.zeros((len(y), K)), "l1", lam=0.5)
    assert g.primal == pytest.approx(0.5 * len(y))  # each hinge is 1 at X = 0
    assert g.dual == 0.0 and g.rel_gap == np.inf


def test_sparse_input_gives_same_gap(random_problem):
    Phi, y, K = random_problem(1, M=7)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((Phi.shape[1] + 1, K))
    Y = rng.random((len(y), K))
    g1 = hinge_reg_gap(MulticlassOperator(Phi, y, K), X, Y, "l1inf", 3, lam=1.0)
    g2 = hinge_reg_gap(MulticlassOperator(sp.csr_matrix(Phi), y, K), X, Y, "l1inf", 3, lam=1.0)
    assert g1.gap == pytest.approx(g2.gap, rel=1e-12)


def test_circulation_part_properties():
    rng = np.random.default_rng(0)
    for K in (2, 3, 5, 10):
        for _ in range(20):
            C = rng.random((K, K)) * (rng.random((K, K)) < 0.7)
            np.fill_diagonal(C, 0.0)
            F = circulation_part(C)
            assert np.all(F >= -1e-15) and np.all(F <= C + 1e-15)
            assert np.allclose(F.sum(axis=1), F.sum(axis=0), atol=1e-12)
            excess = np.maximum(C.sum(axis=1) - C.sum(axis=0), 0).sum()
            assert C.sum() - F.sum() <= (K - 1) * excess + 1e-12
    # a circulation is kept whole
    K = 4
    P = rng.random((K, K))
    Circ = P + P.T  # symmetric: balanced
    np.fill_diagonal(Circ, 0)
    assert np.allclose(circulation_part(Circ), Circ)


def test_feasible_scaling_matches_grid_search():
    rng = np.random.default_rng(2)
    L, K = 10, 3
    y = np.arange(L) % K
    R = np.ones((L, K))
    R[np.arange(L), y] = 0
    for _ in range(20):
        TX = rng.standard_normal((L, K)) * 3
        TX[np.arange(L), y] = 0
        eta = rng.uniform(0.1, 0.9) * L
        th = feasible_scaling(TX, R, eta)
        grid = np.linspace(0, 50, 200001)
        loss = np.array([(t * TX + R).max(axis=1).sum() for t in grid[::50]])
        feas = grid[::50][loss <= eta]
        if th is None:
            assert len(feas) == 0
        else:
            assert (th * TX + R).max(axis=1).sum() <= eta * (1 + 1e-9)
            if len(feas):
                assert th <= feas[0] + 1e-9


def test_bad_input_raises(random_problem):
    Phi, y, K = random_problem(0, M=7)
    op = MulticlassOperator(Phi, y, K)
    X = np.zeros((Phi.shape[1] + 1, K))
    Y = np.zeros((len(y), K))
    with pytest.raises(ValueError, match="lam"):
        hinge_reg_gap(op, X, Y, "l1", lam=0.0)
    with pytest.raises(ValueError, match="eta"):
        hinge_con_gap(op, X, Y, "l1", eta=-1.0)
    with pytest.raises(ValueError, match="X must have shape"):
        hinge_reg_gap(op, X[:-1], Y, "l1", lam=1.0)
    with pytest.raises(ValueError, match="Y must have shape"):
        hinge_reg_gap(op, X, Y[:-1], "l1", lam=1.0)
    with pytest.raises(ValueError, match="MulticlassOperator"):
        hinge_reg_gap(Phi, X, Y, "l1", lam=1.0)
    with pytest.raises(ValueError, match=r"the penalty is for \(M, K\) = \(5, 3\)"):
        hinge_reg_gap(op, X, Y, make_penalty("l1", None, 5, K), lam=1.0)
    with pytest.raises(ValueError, match="penalty name or a"):
        hinge_reg_gap(op, X, Y, object(), lam=1.0)
    with pytest.raises(ValueError, match="group size"):
        hinge_reg_gap(op, X, Y, "l1inf", 0, lam=1.0)
    with pytest.raises(ValueError, match="groups=None"):
        hinge_con_gap(op, X, Y, "l1", 2, eta=1.0)
    with pytest.raises(ValueError, match="unknown penalty"):
        hinge_reg_gap(op, X, Y, "l0", lam=1.0)


def test_certify_with_package_operator_and_penalty(random_problem):
    Phi, y, K = random_problem(11, M=7)
    L, M = Phi.shape
    op = MulticlassOperator(Phi, y, K)
    pen = make_penalty("l1inf", 3, M, K)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((M + 1, K))
    Y = rng.random((L, K))
    g = certify("hinge-reg", op, pen, X, Y, lam=2.0)
    assert g.gap == pytest.approx(hinge_reg_gap(op, X, Y, "l1inf", 3, lam=2.0).gap)
    g = certify("hinge-lin", op, pen, X, Y, eta=0.5 * L)
    assert g.gap == pytest.approx(hinge_con_gap(op, X, Y, "l1inf", 3, eta=0.5 * L).gap)
    # T X passed by a solver gives the same certificate
    g2 = certify("hinge-lin", op, pen, X, Y, eta=0.5 * L, TX=op.T(X))
    assert g2.gap == g.gap
    with pytest.raises(ValueError, match="method"):
        certify("square", op, pen, X, Y, lam=1.0)
    with pytest.raises(ValueError, match="needs eta"):
        certify("hinge-con", op, pen, X, Y, lam=1.0)
