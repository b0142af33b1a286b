"""The compiled sweep of :mod:`sparsesvm.solvers.accelerated.l2dual` (numba; imported only through it).

Module-level functions with numba's on-disk cache, as in
:mod:`sparsesvm.solvers._kernels_jit`: a new process loads the sweep instead of
compiling it again (functions nested in a factory, or capturing other
compiled functions, are compiled again in every process). The sweep has one
explicit signature, so it is compiled or loaded when this module is imported
(:func:`sparsesvm.solvers.accelerated.l2dual.load_sweep` does it, before the
solver's clock starts) and no call compiles later. Import this module only
through that function, which points the cache at the user's cache directory.

The steps are those of the numpy sweep (:func:`~sparsesvm.solvers.accelerated.l2dual._sweep_py`),
in explicit loops without temporaries, over ``VT`` (K, M) so that the loops over a
sample's features are contiguous and vectorised: a sample's K scores are K dot
products (summed in another order than numpy's, to rounding), and only the classes
whose dual entry moved (usually two or three of the K) update their row of ``VT``.
"""

import numba
import numpy as np
from numba import types

from .l2dual import _simplex_project

_OPTIONS = dict(cache=True, nogil=True)
_F1, _F2, _I1 = types.float64[::1], types.float64[:, ::1], types.int64[::1]
#: ``sweep(Phi, indptr, indices, data, y, Y, V, c, bb, rho, lam, sq, order, changed) -> big``
_SWEEP_SIGNATURE = types.float64(_F2, _I1, _I1, _F1, _I1, _F2, _F2, _F1, _F1, types.float64,
                                 types.float64, _F1, _I1, types.int8[::1])

simplex_project = numba.njit(**_OPTIONS)(_simplex_project)


@numba.njit(**_OPTIONS)
def block(Y, l, z, s, h, lam, t, ynew, d, c, changed):
    """Exact step on sample l from its scores s (K,) and curvature h: Y[l], c
    updated in place, the change in d, ``changed[l]`` set; returns max |d|."""
    K = Y.shape[1]
    s[z] -= 1.0
    for k in range(K):
        t[k] = Y[l, k] + s[k] / h
    simplex_project(t, lam, ynew)
    m = 0.0
    for k in range(K):
        d[k] = ynew[k] - Y[l, k]
        if abs(d[k]) > m:
            m = abs(d[k])
    if m > 0.0:
        for k in range(K):
            Y[l, k] = ynew[k]
            c[k] += d[k]
    changed[l] = 1 if m > 0.0 else 0
    return m


#: reductions may be reassociated (vectorised): the sums of a sample's scores are
#: summed in another order than numpy's, to rounding
_FAST = dict(_OPTIONS, fastmath={"reassoc", "contract"})


@numba.njit(**_FAST)
def scores(js, vs, VT, s, dense):
    """A sample's non-zeros (js, vs) against VT (K, M): ``s -= VT[:, js] @ vs``
    (``js`` unused when ``dense``: vs is the whole row)."""
    K = VT.shape[0]
    n = vs.shape[0]
    for k in range(K):
        acc = 0.0
        if dense:
            for i in range(n):
                acc += VT[k, i] * vs[i]
        else:
            for i in range(n):
                acc += VT[k, js[i]] * vs[i]
        s[k] -= acc


@numba.njit(**_FAST)
def update(js, vs, VT, d, dense):
    """``VT[k, js] += d[k] * vs`` for the classes k whose dual entry moved (d[k] != 0)."""
    K = VT.shape[0]
    n = vs.shape[0]
    for k in range(K):
        dk = d[k]
        if dk == 0.0:
            continue
        if dense:
            for i in range(n):
                VT[k, i] += dk * vs[i]
        else:
            for i in range(n):
                VT[k, js[i]] += dk * vs[i]


@numba.njit(_SWEEP_SIGNATURE, **_OPTIONS)
def sweep(Phi, indptr, indices, data, y, Y, VT, c, bb, rho, lam, sq, order, changed):
    """One pass of exact block steps over the samples in ``order`` (in place).

    Dense features when ``Phi`` (L, M) has rows, then ``indptr``, ``indices``
    and ``data`` are unused; else CSR features (indptr, indices, data) and
    ``Phi`` is an empty (0, 0) array. ``VT`` is (K, M), ``Phi^T (Y - lam E)``
    transposed. Other arguments and the return value as
    :func:`sparsesvm.solvers.accelerated.l2dual._sweep_py`.
    """
    K = Y.shape[1]
    dense = Phi.shape[0] > 0
    nojs = np.empty(0, dtype=np.int64)
    s, t, ynew, d = np.empty(K), np.empty(K), np.empty(K), np.empty(K)
    big = 0.0
    for l in order:
        if dense:
            js, vs = nojs, Phi[l]
        else:
            js, vs = indices[indptr[l]:indptr[l + 1]], data[indptr[l]:indptr[l + 1]]
        for k in range(K):
            s[k] = bb[k] - rho * c[k]
        scores(js, vs, VT, s, dense)
        m = block(Y, l, y[l], s, sq[l] + rho, lam, t, ynew, d, c, changed)
        if m > 0.0:
            big = m if m > big else big
            update(js, vs, VT, d, dense)
    return big
