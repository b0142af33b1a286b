"""The l2 engine inner='dcd' (sparsesvm.solvers.accelerated.l2dual): dual coordinate descent with
free biases by the method of multipliers, against CVXPY/Clarabel and the other
l2 engines (issue 16)."""

import cvx_reference as cr
import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import datasets

from sparsesvm.model.operator import MulticlassOperator
from sparsesvm.solvers.accelerated import hinge as acc
from sparsesvm.solvers.accelerated import l2dual as _l2dual


def _fit(method, Phi, y, K, par, **kw):
    if method == "hinge-reg":
        return acc.hinge_reg(Phi, y, K, "l2", lam=par, inner="dcd", **kw)
    return acc.hinge_con(Phi, y, K, "l2", eta=par, inner="dcd", **kw)


def _objective(method, Phi, y, X, par):
    """Objective recomputed from X without the package (and feasibility for hinge-con)."""
    g = 0.5 * float((X[:-1] ** 2).sum())
    loss = cr.hinge_loss_np(Phi, y, X)
    if method == "hinge-reg":
        return g + par * loss
    assert loss <= par * (1 + 1e-9)
    return g


@pytest.mark.parametrize("numba_sweep", [True, False])
@pytest.mark.parametrize("seed,L,M,K", [(1, 30, 12, 3), (2, 24, 40, 4), (3, 50, 20, 5)])
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_dcd_reaches_cvx_optimum(random_problem, monkeypatch, method, seed, L, M, K,
                                 numba_sweep):
    if numba_sweep:
        pytest.importorskip("numba")
        monkeypatch.setattr(_l2dual, "NUMBA_MIN_WORK", 0)  # compiled even for tiny problems
    else:
        monkeypatch.setenv("SPARSESVM_NUMBA", "0")
    Phi, y, K = random_problem(seed, L=L, M=M, K=K)
    par = 0.5 if method == "hinge-reg" else 0.4 * L
    kw = dict(lam=par) if method == "hinge-reg" else dict(eta=par)
    pstar, _ = cr.solve(method, Phi, y, K, "l2", None, **kw)
    r = _fit(method, Phi, y, K, par, tol=1e-8)
    assert r.converged and r.rel_gap <= 1e-8 and r.settings["inner"] == "dcd"
    obj = _objective(method, Phi, y, r.X, par)
    assert obj == pytest.approx(r.objective, rel=1e-9)
    assert abs(obj - pstar) <= 1e-6 * pstar
    assert (obj - pstar) / pstar <= r.rel_gap + 1e-8
    assert r.dual_objective <= pstar * (1 + 1e-8)


def test_numba_and_numpy_sweeps_take_the_same_steps(random_problem):
    pytest.importorskip("numba")
    Phi, y, K = random_problem(4, L=20, M=9, K=3)
    op = MulticlassOperator(Phi, y, K)
    Phis = MulticlassOperator(sp.csr_matrix(np.where(np.abs(Phi) > 0.5, Phi, 0.0)), y, K)
    for o in (op, Phis):
        states = [_l2dual._State(o, 0.7, 0.3, use_numba=u) for u in (True, False)]
        for _ in range(7):
            for st in states:
                st.sweep(full=True)
        a, b = states
        assert np.allclose(a.Y, b.Y, atol=1e-12) and np.allclose(a.b, b.b, atol=1e-12)
        assert np.allclose(a.VT, b.VT, atol=1e-10)
        # the incremental VT and c are (Phi^T G)^T and sum_l G_l
        VT, c = a.VT.copy(), a.c.copy()
        a.refresh()
        assert np.allclose(VT, a.VT, atol=1e-10) and np.allclose(c, a.c, atol=1e-12)


def test_block_step_is_the_exact_block_maximiser(random_problem):
    # one step on one sample maximises the augmented Lagrangian over that block:
    # compare with CVXPY on the block (a quadratic over lam * simplex)
    Phi, y, K = random_problem(5, L=10, M=6, K=4)
    op = MulticlassOperator(Phi, y, K)
    st = _l2dual._State(op, 0.8, 0.5, use_numba=False)
    for _ in range(2):
        st.sweep(full=True)
    l = 3
    E, lam, rho = st.E, st.lam, st.rho
    Yother = st.Y.copy()
    Yl = cp.Variable(K)
    G_rest = np.delete(Yother - lam * E, l, axis=0)
    Phi_rest = np.delete(Phi, l, axis=0)
    Gl = Yl - lam * E[l]
    V = Phi_rest.T @ G_rest + cp.reshape(Phi[l], (Phi.shape[1], 1), order="C") @ cp.reshape(Gl, (1, K), order="C")
    c = G_rest.sum(axis=0) + Gl
    obj = -Yl[y[l]] - 0.5 * cp.sum_squares(V) + st.b @ c - rho / 2 * cp.sum_squares(c)
    cp.Problem(cp.Maximize(obj), [Yl >= 0, cp.sum(Yl) == lam]).solve(solver=cp.CLARABEL)
    # the package's step on sample l alone (no multiplier update: call the kernel)
    changed = np.zeros(len(y), dtype=np.int8)
    _l2dual._sweep_py(*st.rows, st.y, st.Y, st.VT, st.c, st.b, rho, lam, st.sq, np.array([l]),
                      changed)
    assert np.allclose(st.Y[l], Yl.value, atol=1e-6)


def test_dcd_agrees_with_the_dual_qp_and_pdhg_on_digits():
    # E5's shape in miniature: K = 10, more features than samples; and the reverse
    X, y = datasets.load_digits(return_X_y=True)
    X = X / 16.0
    for L in (40, 120):
        Phi, yy = X[:L], y[:L]
        for method, par in (("hinge-reg", 1.0), ("hinge-con", 0.2 * L)):
            kw = dict(lam=par) if method == "hinge-reg" else dict(eta=par)
            f = acc.hinge_reg if method == "hinge-reg" else acc.hinge_con
            objs = {}
            for inner in ("dcd", "qp", "pdhg"):
                r = f(Phi, yy, 10, "l2", tol=1e-7, inner=inner, max_iter=300000, **kw)
                assert r.converged, (L, method, inner)
                objs[inner] = r.objective
            assert objs["dcd"] == pytest.approx(objs["qp"], rel=3e-7), (L, method, objs)
            assert objs["dcd"] == pytest.approx(objs["pdhg"], rel=3e-7), (L, method, objs)


def test_dcd_sparse_input_and_trace(random_problem):
    Phi, y, K = random_problem(6, L=25, M=30, K=3)
    Phis = sp.csr_matrix(np.where(np.abs(Phi) > 0.7, Phi, 0.0))
    r1 = _fit("hinge-reg", Phis, y, K, 0.6, tol=1e-9, trace=True)
    r2 = _fit("hinge-reg", Phis.toarray(), y, K, 0.6, tol=1e-9)
    assert r1.objective == pytest.approx(r2.objective, rel=1e-8)
    tr = r1.trace
    assert tr["rel_gap"][-1] <= 1e-9 and np.all(np.diff(tr["iteration"]) > 0)


def test_dcd_unreachable_eta_is_a_clear_error(random_problem):
    Phi, y, K = random_problem(7, L=12, M=5, K=3)
    Phi = np.vstack([Phi, Phi[:3]])
    y = np.concatenate([y, (y[:3] + 1) % 3])  # three conflicting pairs: loss >= 6
    with pytest.raises(ValueError, match="cannot be met"):
        _fit("hinge-con", Phi, y, K, 1.0)


def test_small_problems_use_the_numpy_sweep(random_problem):
    Phi, y, K = random_problem(9, L=10, M=5, K=3)
    st = _l2dual._State(MulticlassOperator(Phi, y, K), 1.0, 0.5)
    assert st.kernel is _l2dual._sweep_py


def test_auto_takes_dcd_where_the_qp_is_not_used(random_problem):
    Phi, y, K = random_problem(8, L=30, M=10, K=3)  # M < L: no dual QP
    r = acc.hinge_reg(Phi, y, K, "l2", lam=1.0, tol=1e-6)
    assert r.converged and r.settings["inner"] == "dcd"
    with pytest.raises(ValueError, match="for penalty 'l2' only"):
        acc.hinge_reg(Phi, y, K, "l1", lam=1.0, inner="dcd")


def test_checks_are_spaced_by_the_samples_that_move(monkeypatch):
    # well-separated classes: after the first sweeps only the few samples near the
    # boundary move, so the certificate is checked less often than every CHECK_EVERY
    # sweeps (up to CHECK_COST full sweeps' worth of sweeps over the moving samples),
    # and the solve still ends on a certified gap at the CVXPY optimum
    rng = np.random.default_rng(11)
    L, M, K = 300, 8, 3
    y = np.arange(L) % K
    Phi = rng.standard_normal((L, M)) + 4.0 * np.eye(K, M)[y]
    checks = []
    real_gap = _l2dual.hinge_reg_gap
    monkeypatch.setattr(_l2dual, "hinge_reg_gap", lambda *a, **k: checks.append(1) or real_gap(*a, **k))
    r = _fit("hinge-reg", Phi, y, K, 1.0, tol=1e-8, trace=True)
    assert r.converged and r.rel_gap <= 1e-8
    gaps = np.diff(np.concatenate([[0], r.trace["iteration"]]))
    assert gaps.max() > _l2dual.CHECK_EVERY and gaps.max() <= _l2dual.MAX_CHECK_EVERY
    assert len(checks) < r.n_iter / _l2dual.CHECK_EVERY
    pstar, _ = cr.solve("hinge-reg", Phi, y, K, "l2", None, lam=1.0)
    assert abs(_objective("hinge-reg", Phi, y, r.X, 1.0) - pstar) <= 1e-6 * pstar
