"""Reference solutions of every problem of the package by CVXPY (Clarabel).

Written from the formulas of spec.md sections 1 and 4 only (no code shared with
the package), so the solver tests compare against an independent answer.
The scores are an explicit variable ``S = Phi W + 1 b^T`` (much faster for the
interior-point solver). Returns ``(objective, X)`` with ``X`` of shape
``(M + 1, K)`` (last row = biases); ``objective`` as defined in
``SolverResult`` (``g + lam * loss``, or ``g`` for the constrained problem).
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import scipy.sparse as sp


def _blocks(M, size):
    return [np.arange(s, min(s + size, M)) for s in range(0, M, size)]


def regulariser(W, name, groups):
    """CVXPY expression of g(W) (weights only)."""
    M = W.shape[0]
    if name == "l2":
        return 0.5 * cp.sum_squares(W)
    if name == "l1":
        return cp.sum(cp.abs(W))
    if name == "l12":
        if groups == "features":
            return cp.sum(cp.norm(W, 2, axis=1))
        return sum(cp.sum(cp.norm(W[idx, :], 2, axis=0)) for idx in _blocks(M, groups))
    if name == "l1inf":
        if groups == "features":
            return cp.sum(cp.max(cp.abs(W), axis=1))
        return sum(cp.sum(cp.max(cp.abs(W[idx, :]), axis=0)) for idx in _blocks(M, groups))
    raise ValueError(name)


def regulariser_value(W, name, groups):
    """numpy value of g(W) (independent of the package)."""
    W = np.asarray(W)
    M = W.shape[0]
    if name == "l2":
        return 0.5 * float(np.sum(W ** 2))
    if name == "l1":
        return float(np.abs(W).sum())
    if groups == "features":
        parts = [W[j, :] for j in range(M)]
    else:
        parts = [W[idx, k] for idx in _blocks(M, groups) for k in range(W.shape[1])]
    if name == "l12":
        return float(sum(np.linalg.norm(p) for p in parts))
    return float(sum(np.abs(p).max() for p in parts))


def _setup(Phi, y_idx, K):
    Phi = Phi.toarray() if sp.issparse(Phi) else np.asarray(Phi, dtype=float)
    L, M = Phi.shape
    W = cp.Variable((M, K))
    b = cp.Variable(K)
    S = cp.Variable((L, K))
    onehot = np.zeros((L, K))
    onehot[np.arange(L), y_idx] = 1.0
    R = 1.0 - onehot
    cons = [S == Phi @ W + np.ones((L, 1)) @ cp.reshape(b, (1, K), order="C")]
    s_true = cp.sum(cp.multiply(S, onehot), axis=1)
    TX = S - cp.reshape(s_true, (L, 1), order="C") @ np.ones((1, K))
    return W, b, S, TX, R, onehot, cons


#: Clarabel's settings, tried in turn: tight tolerances, then its defaults (1e-8), which
#: end some problems "optimal" where the tight ones end "optimal_inaccurate" (load_digits'
#: hinge-con l1: the same objective to 3e-10 by both, and by HiGHS' simplex) or stall
_ATTEMPTS = (dict(tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9), {})


def _solve(obj, cons, W, b):
    """Solves by Clarabel; the first attempt of :data:`_ATTEMPTS` that ends "optimal",
    else the first one that ends "optimal_inaccurate" (the tests' tolerances then judge
    it), else a ``RuntimeError`` naming the statuses."""
    prob = cp.Problem(cp.Minimize(obj), cons)
    fallback, statuses = None, []
    for settings in _ATTEMPTS:
        try:
            with warnings.catch_warnings():  # "Solution may be inaccurate": handled here
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                prob.solve(solver=cp.CLARABEL, **settings)
        except cp.error.SolverError as exc:
            statuses.append(f"error ({exc})")
            continue
        statuses.append(prob.status)
        if prob.status in ("optimal", "optimal_inaccurate"):
            found = float(prob.value), np.vstack([W.value, b.value[None, :]])
            if prob.status == "optimal":
                return found
            if fallback is None:
                fallback = found
    if fallback is None:
        raise RuntimeError(f"CVXPY statuses {statuses}")
    return fallback


def hinge_loss_np(Phi, y_idx, X):
    """Exact multiclass hinge of X, in numpy, from the definition."""
    Phi = Phi.toarray() if sp.issparse(Phi) else np.asarray(Phi, dtype=float)
    S = Phi @ X[:-1] + X[-1]
    L = S.shape[0]
    st = S[np.arange(L), y_idx]
    other = S.copy()
    other[np.arange(L), y_idx] = -np.inf
    return float(np.maximum(0.0, 1.0 + other.max(axis=1) - st).sum())


def solve(method, Phi, y_idx, K, penalty, groups, *, lam=None, eta=None):
    """Optimal objective and solution of ``method`` in {hinge-reg, hinge-con,
    square, logit, ova} (hinge-lin has the solutions of hinge-con)."""
    W, b, S, TX, R, onehot, cons = _setup(Phi, y_idx, K)
    g = regulariser(W, penalty, groups)
    if method == "hinge-reg":
        obj = g + lam * cp.sum(cp.max(TX + R, axis=1))
    elif method in ("hinge-con", "hinge-lin"):
        cons = cons + [cp.sum(cp.max(TX + R, axis=1)) <= eta]
        if penalty == "l2":
            # same minimiser, but a conic objective: Clarabel stalls on this QP
            value, X = _solve(cp.norm(W, "fro"), cons, W, b)
            return 0.5 * value ** 2, X
        obj = g
    elif method == "square":
        obj = g + lam * cp.sum(cp.square(cp.pos(TX + R)))
    elif method == "logit":
        obj = g + lam * cp.sum(cp.log_sum_exp(TX + R, axis=1))
    elif method == "ova":
        Ypm = 2.0 * onehot - 1.0
        obj = g + lam * cp.sum(cp.square(cp.pos(1.0 - cp.multiply(Ypm, S))))
    else:
        raise ValueError(method)
    return _solve(obj, cons, W, b)
