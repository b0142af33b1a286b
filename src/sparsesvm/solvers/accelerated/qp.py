"""The l2 dual QP engine of ``solver="accelerated"`` (``inner="qp"``): HiGHS' QP solver in sample space.

:func:`_l2_dual_qp` solves the dual of hinge-reg / hinge-con with the l2
penalty as a dense QP (its model built by :func:`_highs_dual_qp`);
:func:`_best_biases` finds the biases of the primal point (an LP).
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from . import highs

__all__ = ["_l2_dual_qp", "_highs_dual_qp", "_best_biases", "QP_MAX_VARS", "QP_TIME_LIMIT"]

#: largest number of dual variables L(K-1) for which inner="auto" takes the dual QP
#: for l2 (it builds the dense (L(K-1))^2 Hessian: 32 MB at 2000)
QP_MAX_VARS = 2000
#: seconds HiGHS may spend on one dual QP (a safety net: it can stall when the
#: Gram matrix is rank-deficient, which inner="auto" avoids by asking M >= L)
QP_TIME_LIMIT = 30.0


def _l2_dual_qp(op, kind, par, regularization=1e-12, time_limit=None):
    """Dual of hinge-reg / hinge-con with g = ||W||_F^2 / 2, as a dense QP.

    Variables a[l, k] >= 0 for k != z_l (n = L(K-1) of them), and nu >= 0
    for hinge-con::

        min  1/2 a^T H a - sum(a) [+ eta * nu]
        s.t. sum_k a[l, k] <= lambda    (hinge-reg)  or  sum_k a[l, k] - nu <= 0
             sum_l G[l, c] = 0 for c = 0..K-2 (biases free; row K-1 is implied)

    with G = a off the true class, G[l, z_l] = -sum_k a[l, k] (G = B a) and
    H = B^T (I_K (x) Phi Phi^T) B, i.e.
    H[(l, k), (m, q)] = (Phi Phi^T)[l, m] ([k = q] - [k = z_m] - [z_l = q] + [z_l = z_m]).
    The primal weights are W = -Phi^T G (the gradient of g* at -T^T Y).

    Parameters
    ----------
    op : MulticlassOperator
    kind : {"reg", "con"}
    par : float
        lambda or eta.
    regularization : float
        HiGHS' ``qp_regularization_value`` (its default, 1e-7, costs about
        1e-7 to 1e-5 of relative accuracy here; 1e-12 gives ~1e-10 gaps when
        the Gram matrix has full rank, but can fail when it does not).
    time_limit : float, optional
        Seconds HiGHS may spend.

    Returns
    -------
    ndarray (L, K) or None
        Y with the off-class entries a and Y[l, z_l] = cap - sum_k a[l, k]
        (cap = lambda, or nu), or None when HiGHS does not report an optimum.
    """
    L, K, y = op.n_samples, op.n_classes, op.y_idx
    ll, kk = np.nonzero(np.arange(K)[None, :] != y[:, None])
    n = len(ll)
    zl = y[ll]
    C = (kk[:, None] == kk[None, :]).astype(float) - (kk[:, None] == zl[None, :]) \
        - (zl[:, None] == kk[None, :]) + (zl[:, None] == zl[None, :])
    H = op.gram()[np.ix_(ll, ll)] * C
    # HiGHS' tolerances are absolute: solve for u = a / s with s H of unit diagonal
    # (objective divided by s: 1/2 u^T (s H) u - sum(u) [+ eta nu / s])
    dmax = float(np.max(np.diag(H))) if n else 0.0
    s = 1.0 / dmax if dmax > 0 else 1.0
    con = kind == "con"
    h = _highs_dual_qp(s * H, L, K, ll, kk, zl, par / s if not con else None, par if con else None,
                       regularization, time_limit)
    h.run()
    if h.getModelStatus() != highs.highspy.HighsModelStatus.kOptimal:
        return None
    x = s * np.maximum(np.asarray(h.getSolution().col_value), 0.0)
    a = np.zeros((L, K))
    a[ll, kk] = x[:n]
    cap = max(float(x[n]), float(a.sum(axis=1).max())) if con else par
    Y = a
    Y[np.arange(L), y] = np.maximum(cap - a.sum(axis=1), 0.0)
    return Y


def _highs_dual_qp(H, L, K, ll, kk, zl, row_cap, eta, regularization, time_limit):
    """The HiGHS model of :func:`_l2_dual_qp` (scaled), not yet run.

    Parameters
    ----------
    H : ndarray (n, n)
        The scaled Hessian, n = L(K-1) variables ``a[ll, kk]``.
    L, K : int
    ll, kk, zl : int ndarray (n,)
        Sample, class and the sample's true class of each variable.
    row_cap : float or None
        hinge-reg: the (scaled) bound ``lambda / s`` on each row sum; None for hinge-con.
    eta : float or None
        hinge-con: the cost of the extra variable nu (then rows ``sum_k a[l, k] - nu <= 0``).
    regularization, time_limit
        As in :func:`_l2_dual_qp`.

    Returns
    -------
    Highs
    """
    n = len(ll)
    con = eta is not None
    nv = n + (1 if con else 0)
    inf = highs.highspy.kHighsInf
    h = highs.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    for opt in ("primal_feasibility_tolerance", "dual_feasibility_tolerance",
                "optimality_tolerance"):
        h.setOptionValue(opt, 1e-10)
    h.setOptionValue("qp_regularization_value", float(regularization))
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
    cost = np.concatenate([-np.ones(n), [eta] if con else []])
    h.addCols(nv, cost, np.zeros(nv), np.full(nv, inf), 0, np.zeros(nv, dtype=np.int32),
              np.zeros(0, dtype=np.int32), np.zeros(0))
    # rows: L row sums, then K-1 bias balances
    A_rows = [ll]
    A_cols = [np.arange(n)]
    A_vals = [np.ones(n)]
    if con:
        A_rows.append(np.arange(L))
        A_cols.append(np.full(L, n))
        A_vals.append(-np.ones(L))
    for c in range(K - 1):  # sum_l G[l, c] = sum_{k = c} a - sum_{z_l = c} a
        sel = (kk == c).astype(float) - (zl == c)
        nz = np.flatnonzero(sel)
        A_rows.append(np.full(len(nz), L + c))
        A_cols.append(nz)
        A_vals.append(sel[nz])
    A = sp.csr_matrix((np.concatenate(A_vals), (np.concatenate(A_rows), np.concatenate(A_cols))),
                      shape=(L + K - 1, nv))
    lo = np.concatenate([np.full(L, -inf), np.zeros(K - 1)])
    up = np.concatenate([np.full(L, 0.0 if con else row_cap), np.zeros(K - 1)])
    h.addRows(L + K - 1, lo, up, A.nnz, A.indptr[:-1].astype(np.int32),
              A.indices.astype(np.int32), A.data.astype(float))
    Hl = sp.csc_matrix(np.tril(H))
    if con:
        Hl = sp.csc_matrix((Hl.data, Hl.indices, np.append(Hl.indptr, Hl.indptr[-1])),
                           shape=(nv, nv))
    Hl.sort_indices()
    h.passHessian(nv, Hl.nnz, highs.highspy.HessianFormat.kTriangular, Hl.indptr.astype(np.int32),
                  Hl.indices.astype(np.int32), Hl.data.astype(float))
    return h


def _best_biases(op, W):
    """Biases b minimising the hinge loss sum_l h_l at fixed weights W (an LP; sum b = 0).

    Parameters
    ----------
    op : MulticlassOperator
    W : ndarray (M, K)

    Returns
    -------
    ndarray (K,)
    """
    L, K, y = op.n_samples, op.n_classes, op.y_idx
    S = np.asarray(op.Phi @ W)
    ll, kk = np.nonzero(np.arange(K)[None, :] != y[:, None])
    nh = len(ll)
    # b_k - b_{z_l} - xi_l <= -(S[l, k] - S[l, z_l] + 1)
    A = sp.csr_matrix((np.concatenate([np.ones(nh), -np.ones(nh), -np.ones(nh)]),
                       (np.tile(np.arange(nh), 3), np.concatenate([kk, y[ll], K + ll]))),
                      shape=(nh, K + L))
    rhs = -(S[ll, kk] - S[ll, y[ll]] + 1.0)
    c = np.concatenate([np.zeros(K), np.ones(L)])
    res = linprog(c, A_ub=A, b_ub=rhs, A_eq=np.concatenate([np.ones(K), np.zeros(L)])[None, :],
                  b_eq=[0.0], bounds=[(None, None)] * K + [(0, None)] * L, method="highs")
    if res.status != 0 or res.x is None:
        return np.zeros(K)
    return res.x[:K]
