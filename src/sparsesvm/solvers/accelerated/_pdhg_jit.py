"""The compiled parts of PDHG's iteration beside the paper's kernels (numba; imported only through
:mod:`~sparsesvm.solvers.accelerated.pdhg`).

Module-level, with numba's on-disk cache and one explicit signature, as in
:mod:`sparsesvm.solvers._kernels_jit`: compiled or loaded when this module is
imported (:func:`sparsesvm.solvers.accelerated.pdhg.load_kernels` does it, off the
solver's clock), never at a call. Import it only through that function, which
points the cache at the user's cache directory.

hinge-con's dual step (:func:`sublevel_step`) takes the steps of the numpy one
(:func:`~sparsesvm.solvers.accelerated.pdhg._sublevel_dual_step`) with one step size
for every row (PDHG without preconditioning), in explicit loops: each row sorted by
insertion (K is small), its cumulative sums and breakpoints, then Newton's method on
the common multiplier, to rounding the numpy step's. The Halpern iteration's residual
(:func:`halpern_residual`) and reflected average (:func:`halpern_average`) are one pass
each instead of numpy's temporaries.
"""

import numba
import numpy as np
from numba import types

_C2 = types.float64[:, ::1]
#: ``sublevel_step(Y, TX, TXn, R, sigma, eta, out)``, arrays float64 C-contiguous (L, K)
_SUBLEVEL_SIGNATURE = types.void(_C2, _C2, _C2, _C2, types.float64, types.float64, _C2)


@numba.njit(_SUBLEVEL_SIGNATURE, cache=True, nogil=True)
def sublevel_step(Y, TX, TXn, R, sigma, eta, out):
    """``out = sigma max(U - t 1^T, 0)``, ``U = (Y + sigma (2 TXn - TX)) / sigma + R``.

    The dual step of hinge-con (the prox of ``sigma f*`` with ``f`` the indicator of
    ``{sum_l h_l <= eta}``): row l's threshold ``t_l`` solves ``sum_k max(U_lk - t_l, 0) =
    c`` for the common ``c >= 0`` that makes ``sum_l t_l = eta`` (``t_l = max_k U_lk``,
    ``out = 0``, when that sum is already at most ``eta``). ``c`` by Newton's method from
    0 on the convex, decreasing, piecewise-linear ``sum_l t_l(c) - eta``, stopped within
    ``1e-13 (|eta| + sum_l |max_k U_lk|)`` of the root or when it stops rising.
    """
    L, K = Y.shape
    cs = np.empty((L, K))  # each row of U sorted (descending), then its cumulative sums
    cb = np.empty((L, K))  # the breakpoints c_j = cs_j - j u_(j), non-decreasing in j
    top = 0.0
    scale = 0.0
    for r in range(L):
        for k in range(K):
            u = (Y[r, k] + sigma * (2.0 * TXn[r, k] - TX[r, k])) / sigma + R[r, k]
            out[r, k] = u
            j = k
            while j > 0 and cs[r, j - 1] < u:  # insertion into the sorted row
                cs[r, j] = cs[r, j - 1]
                j -= 1
            cs[r, j] = u
        top += cs[r, 0]
        scale += abs(cs[r, 0])
    if top <= eta:
        for r in range(L):
            for k in range(K):
                out[r, k] = 0.0
        return
    for r in range(L):
        acc = 0.0
        for j in range(K):
            v = cs[r, j]
            acc += v
            cb[r, j] = acc - (j + 1) * v
            cs[r, j] = acc
    tol = 1e-13 * (abs(eta) + scale)
    c = 0.0
    for _ in range(200):
        F = -eta
        dF = 0.0
        for r in range(L):
            jj = 1  # cb[r, 0] = 0 <= c
            while jj < K and cb[r, jj] <= c:
                jj += 1
            F += (cs[r, jj - 1] - c) / jj
            dF -= 1.0 / jj
        if F <= tol:
            break
        cn = c - F / dF
        if not cn > c:
            break
        c = cn
    for r in range(L):
        jj = 1
        while jj < K and cb[r, jj] <= c:
            jj += 1
        t = (cs[r, jj - 1] - c) / jj
        for k in range(K):
            out[r, k] = sigma * max(out[r, k] - t, 0.0)


_HALPERN_RESIDUAL_SIGNATURE = types.float64(_C2, _C2, _C2, _C2, _C2, _C2, types.float64,
                                            types.float64)


@numba.njit(_HALPERN_RESIDUAL_SIGNATURE, cache=True, nogil=True, fastmath={"reassoc"})
def halpern_residual(Xn, X, Yn, Y, TXn, TX, tau, sigma):
    """The squared fixed-point residual of a PDHG step in its metric, one step size for
    every weight (``tau``) and every dual row (``sigma``): ``||Xn - X||^2 / tau + ||Yn -
    Y||^2 / sigma - 2 <Yn - Y, TXn - TX>`` (the sums vectorised: to rounding numpy's)."""
    x, xn = X.ravel(), Xn.ravel()
    dx = 0.0
    for i in range(x.size):
        d = xn[i] - x[i]
        dx += d * d
    yv, yn, t, tn = Y.ravel(), Yn.ravel(), TX.ravel(), TXn.ravel()
    dy = 0.0
    dyt = 0.0
    for i in range(yv.size):
        d = yn[i] - yv[i]
        dy += d * d
        dyt += d * (tn[i] - t[i])
    return dx / tau + dy / sigma - 2.0 * dyt


_HALPERN_AVERAGE_SIGNATURE = types.void(_C2, _C2, _C2, types.float64, types.float64,
                                        types.float64, _C2)


@numba.njit(_HALPERN_AVERAGE_SIGNATURE, cache=True, nogil=True)
def halpern_average(A, B, C, c1, c0, rho, out):
    """Halpern's reflected average ``out = c1 ((1 + rho) A - rho B) + c0 C`` in one pass,
    rounded as numpy's five operations round it (no fused multiply-add)."""
    a, b, c, o = A.ravel(), B.ravel(), C.ravel(), out.ravel()
    r1 = 1.0 + rho
    for i in range(a.size):
        o[i] = c1 * (r1 * a[i] - rho * b[i]) + c0 * c[i]
