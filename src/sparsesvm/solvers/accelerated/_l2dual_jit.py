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
in explicit loops without temporaries; the floating-point operations are the
same, in the same order.
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


@numba.njit(**_OPTIONS)
def row_product(js, vs, V, u, into_V):
    """A sample's non-zeros (js, vs) against V (M, K), zeros skipped: the sample's
    scores ``u -= vs @ V[js]`` (into_V False), or its update ``V[js] += outer(vs, u)``."""
    K = u.shape[0]
    for i in range(vs.shape[0]):
        p = vs[i]
        if p != 0.0:
            j = js[i]
            if into_V:
                for k in range(K):
                    V[j, k] += p * u[k]
            else:
                for k in range(K):
                    u[k] -= p * V[j, k]


@numba.njit(_SWEEP_SIGNATURE, **_OPTIONS)
def sweep(Phi, indptr, indices, data, y, Y, V, c, bb, rho, lam, sq, order, changed):
    """One pass of exact block steps over the samples in ``order`` (in place).

    Dense features when ``Phi`` (L, M) has rows, then ``indptr``, ``indices``
    and ``data`` are unused; else CSR features (indptr, indices, data) and
    ``Phi`` is an empty (0, 0) array. Other arguments and the return value as
    :func:`sparsesvm.solvers.accelerated.l2dual._sweep_py`.
    """
    K = Y.shape[1]
    every = np.arange(Phi.shape[1])
    s, t, ynew, d = np.empty(K), np.empty(K), np.empty(K), np.empty(K)
    big = 0.0
    for l in order:
        if Phi.shape[0] > 0:
            js, vs = every, Phi[l]
        else:
            js, vs = indices[indptr[l]:indptr[l + 1]], data[indptr[l]:indptr[l + 1]]
        for k in range(K):
            s[k] = bb[k] - rho * c[k]
        row_product(js, vs, V, s, False)
        m = block(Y, l, y[l], s, sq[l] + rho, lam, t, ynew, d, c, changed)
        if m > 0.0:
            big = m if m > big else big
            row_product(js, vs, V, d, True)
    return big
