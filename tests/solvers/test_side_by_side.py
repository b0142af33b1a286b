"""Several weights side by side (sparsesvm.solvers.side_by_side) against one solver run each.

The shared products (MulticlassOperator.T_many / T_adjoint_many) are checked against the
operator's own T and T^T, and every fit of a batch against the method's solver run alone
at that weight: the same iterations, weights and objective up to the rounding of the
products, on the compiled path and on numpy's.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sparsesvm import solvers
from sparsesvm.model.operator import MulticlassOperator
from sparsesvm.model.penalties import make_penalty
from sparsesvm.solvers import _kernels
from sparsesvm.solvers._loop import primal_dual_many
from sparsesvm.solvers.paper import EpigraphDual, SimplexDual
from sparsesvm.solvers.side_by_side import SIDE_BY_SIDE_METHODS, side_by_side

SOLVERS = {"hinge-reg": solvers.hinge_reg, "hinge-con": solvers.hinge_con,
           "hinge-lin": solvers.hinge_lin, "square": solvers.square, "logit": solvers.logit}
#: weights per method on the problem below: lam, or eta (constrained; L = 40, so 100 gives X = 0)
WEIGHTS = {"hinge-reg": [0.3, 3.0, 30.0], "hinge-con": [2.0, 8.0, 100.0], "hinge-lin": [1.0, 20.0],
           "square": [0.3, 3.0], "logit": [1.0, 10.0]}


def _problem(M=300, L=40, K=5, seed=0):
    rng = np.random.default_rng(seed)
    Phi = rng.standard_normal((L, M))
    y = np.arange(L) % K
    return MulticlassOperator(Phi, y, K), make_penalty("l1inf", 20, M, K)


def test_products_side_by_side_are_the_operators_products():
    rng = np.random.default_rng(1)
    op, _ = _problem()
    assert op.shares_products()
    Xs = rng.standard_normal((3, op.n_features + 1, op.n_classes))
    Ys = rng.standard_normal((3, op.n_samples, op.n_classes))
    Ys0 = Ys.copy()
    TX = op.T_many(Xs)
    assert TX.shape == (3, op.n_samples, op.n_classes) and TX.flags.c_contiguous
    for TXj, X in zip(TX, Xs):
        ref = op.T(X)
        np.testing.assert_allclose(TXj, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
        assert np.all(TXj[np.arange(op.n_samples), op.y_idx] == 0.0)  # exactly, as T's
    out = np.full((3, op.n_features + 1, op.n_classes), np.nan)
    V = op.T_adjoint_many(Ys, out=out)
    assert V is out
    for Vj, Y in zip(V, Ys):
        ref = op.T_adjoint(Y)
        np.testing.assert_allclose(Vj, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert np.array_equal(Ys, Ys0)  # the input is not modified
    np.testing.assert_array_equal(op.T_adjoint_many(list(Ys)), V)  # a sequence is stacked
    assert np.array_equal(op.T_adjoint_many(Ys[:1])[0], op.T_adjoint(Ys[0]))  # one: T^T itself
    assert np.array_equal(op.T_many(Xs[:1])[0], op.T(Xs[0]))


@pytest.mark.parametrize("kind", ["sparse", "float32"])
def test_products_side_by_side_fall_back_to_one_product_each(kind):
    rng = np.random.default_rng(2)
    Phi = rng.standard_normal((30, 60))
    Phi[Phi < 0.5] = 0.0
    y = np.arange(30) % 3
    op = (MulticlassOperator(sp.csr_matrix(Phi), y, 3) if kind == "sparse"
          else MulticlassOperator(Phi, y, 3, dtype=np.float32))
    assert not op.shares_products()
    Xs = rng.standard_normal((2, 61, 3))
    Ys = rng.standard_normal((2, 30, 3))
    for TX, X in zip(op.T_many(Xs), Xs):
        assert np.array_equal(TX, op.T(X))
    for V, Y in zip(op.T_adjoint_many(Ys), Ys):
        assert np.array_equal(V, op.T_adjoint(Y))


def test_products_side_by_side_check_shapes():
    op, _ = _problem()
    M1, K, L = op.n_features + 1, op.n_classes, op.n_samples
    with pytest.raises(ValueError, match="Xs must have shape"):
        op.T_many([np.zeros((M1, K)), np.zeros((3, 3))])
    with pytest.raises(ValueError, match="Xs must have shape"):
        op.T_many(np.zeros((M1, K)))
    with pytest.raises(ValueError, match="Ys must have shape"):
        op.T_adjoint_many(np.zeros((2, 3, 3)))
    Ys = np.zeros((2, L, K))
    for bad in (np.zeros((3, M1, K)), np.zeros((2, M1, K), dtype=np.float32),
                np.zeros((2, K, M1)).transpose(0, 2, 1)):
        with pytest.raises(ValueError, match="out must be"):
            op.T_adjoint_many(Ys, out=bad)


def _compare(batch, alone):
    """Each fit of the batch against its solver run alone."""
    for b, a in zip(batch, alone):
        assert abs(b.n_iter - a.n_iter) <= 1 and b.converged == a.converged
        scale = max(np.abs(a.X).max(), 1e-300)
        assert np.abs(b.X - a.X).max() <= 1e-7 * scale
        assert abs(b.objective - a.objective) <= 1e-9 * max(abs(a.objective), 1.0)
        assert abs(b.constraint_violation - a.constraint_violation) <= 1e-9 * max(a.objective, 1.0)
        assert abs(b.rel_gap - a.rel_gap) <= 1e-6 * max(abs(a.rel_gap), 1e-3)
        assert b.fit_time >= 0.0


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("method", SIDE_BY_SIDE_METHODS)
def test_side_by_side_fits_are_the_solvers_fits(monkeypatch, method, compiled):
    if compiled:
        pytest.importorskip("numba")
    # the compiled steps on this small problem, or numpy's everywhere
    monkeypatch.setattr(_kernels, "MIN_SIZE", 0 if compiled else 10**12)
    op, pen = _problem()
    weights = WEIGHTS[method]
    kw = "eta" if method in ("hinge-con", "hinge-lin") else "lam"
    batch = side_by_side(method, op, pen, weights, tol=1e-4, max_iter=4000)
    alone = [SOLVERS[method](op, pen, **{kw: w}, tol=1e-4, max_iter=4000) for w in weights]
    assert len(batch) == len(weights)
    _compare(batch, alone)
    # fits that stop at different iterations leave the batch at their own
    assert len({r.n_iter for r in batch}) > 1


def test_side_by_side_logit_fista_and_max_iter():
    op, pen = _problem(seed=3)
    batch = side_by_side("logit", op, pen, [1.0, 10.0], tol=0.0, max_iter=50, scheme="fista")
    alone = [solvers.logit(op, pen, lam=w, tol=0.0, max_iter=50, scheme="fista") for w in (1.0, 10.0)]
    _compare(batch, alone)
    assert all(r.n_iter == 50 and not r.converged for r in batch)


def test_side_by_side_zero_solution_leaves_at_once():
    op, pen = _problem()
    (r,) = side_by_side("hinge-con", op, pen, [float(op.n_samples)])  # eta >= L: X = 0 solves it
    assert r.n_iter == 0 and r.converged and not r.X.any() and r.rel_gap == 0.0


@pytest.mark.parametrize("call,match", [
    (lambda op, pen: side_by_side("ova", op, pen, [1.0]), "unknown method 'ova'"),
    (lambda op, pen: side_by_side("hinge-reg", op, pen, []), "weights is empty"),
    (lambda op, pen: side_by_side("hinge-reg", op, pen, [1.0, -1.0]), "lam must be a finite number > 0"),
    (lambda op, pen: side_by_side("hinge-con", op, pen, [np.nan]), "eta must be a finite number > 0"),
    (lambda op, pen: side_by_side("hinge-reg", op, pen, [1.0], scheme="fb"), "scheme applies to logit"),
    (lambda op, pen: side_by_side("square", op, pen, [1.0], scheme="fb"), "scheme applies to logit"),
    (lambda op, pen: side_by_side("logit", op, pen, [1.0], scheme="newton"), "unknown scheme"),
    (lambda op, pen: side_by_side("logit", op, pen, [1.0], max_iter=0), "max_iter"),
    (lambda op, pen: side_by_side("hinge-reg", op, pen, [1.0], tol=-1.0), "tol"),
    (lambda op, pen: primal_dual_many([SimplexDual(op, pen, 1.0), EpigraphDual(op, pen, 2.0)],
                                      tol=1e-5, max_iter=10, step_ratio=1.0), "one method"),
    (lambda op, pen: primal_dual_many([], tol=1e-5, max_iter=10, step_ratio=1.0), "at least one"),
])
def test_side_by_side_refuses_bad_input(call, match):
    op, pen = _problem()
    with pytest.raises(ValueError, match=match):
        call(op, pen)
