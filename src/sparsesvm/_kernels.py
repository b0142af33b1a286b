"""Fused primal step of the primal-dual solvers, compiled with numba (optional).

One iteration of Algorithms 1 and 2 spends its time outside the two products
with ``Phi`` in the primal update ``X+ = prox_{tau g}(X - tau V)`` with
``V = T^T Y``, and in the stopping measure. With numpy, that update is about
ten passes over the (M + 1, K) parameter array (the shifted point, the group
transpose in and out, abs, sums, maxima, candidate masks, the clip, two inner
products). Here it is one pass: each group is shifted, thresholded and
written while it sits in cache, and the two inner products of the stopping
measure (:class:`sparsesvm.solvers._RelChange`) are accumulated on the way.

The kernels compute exactly the proximity operators of
:mod:`sparsesvm.penalties` (tests compare them with those, which are checked
against CVXPY); only the order of the floating-point operations differs.

numba is an optional dependency (``pip install sparsesvm[fast]``; the
workflow's conda environment has it). Without it, or with
``SPARSESVM_NUMBA=0`` in the environment, :func:`fused_step` returns None and
the solvers use the numpy path. It is used only for problems with at least
:data:`MIN_SIZE` parameters: below that, numpy's passes cost less than
importing numba (about 0.3 s) and loading the compiled kernel.
"""

from __future__ import annotations

import os

import numpy as np

#: smallest (M + 1) * K for which the compiled step is used
MIN_SIZE = 10_000

_KIND = {"l2": 0, "l1": 1, "l12": 2, "l1inf": 3}
_kernel = None


def _load():
    """The compiled kernel, or None when numba is missing or switched off."""
    global _kernel
    if _kernel is None:
        if os.environ.get("SPARSESVM_NUMBA", "1") == "0":
            return None
        try:
            import numba
        except ImportError:
            _kernel = False
        else:
            _kernel = _compile(numba)
    return _kernel or None


def available():
    """Whether the compiled kernels can be used here."""
    return _load() is not None


def fused_step(penalty, size, force=False):
    """A callable ``step(X, V, tau, out) -> (||out||^2, <out, X>)``, or None.

    ``out = prox_{tau g}(X - tau V)`` (bias row: ``X - tau V``), with ``X``
    and ``V`` float64 C-contiguous arrays of shape (M + 1, K); ``out`` may be
    ``V`` itself (each entry of V is read before it is overwritten), not
    ``X``. None when the kernels are unavailable, when ``penalty`` is not
    one of :mod:`sparsesvm.penalties`' own classes, or when ``size`` (the
    number of parameters) is below :data:`MIN_SIZE` and ``force`` is False.
    """
    if size < MIN_SIZE and not force:
        return None
    kernel = _load()
    if kernel is None:
        return None
    from .penalties import _CLASSES

    name = getattr(penalty, "name", None)
    if _CLASSES.get(name) is not type(penalty):
        return None  # a penalty of the user's own: its prox is its own
    kind = _KIND[name]
    groups = penalty.groups
    # within-class blocks of b rows; 0 = one row per group (across-class groups)
    b = 0 if groups == "features" else (int(groups) if groups is not None else 1)

    def step(X, V, tau, out):
        return kernel(X, V, float(tau), b, kind, out)

    return step


def _compile(numba):
    # reassociation lets LLVM vectorise the sums; no other fast-math flag
    # (infinities and NaN keep their IEEE meaning)
    njit = numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})

    @njit
    def linf_clip(a, n, radius, s, m):
        """Clip level t of prox_{radius ||.||_inf}: sum(max(a - t, 0)) = radius.

        ``a`` holds n absolute values with sum s > radius and maximum m.
        Newton's method on the convex decreasing piecewise-linear root
        function, started from the lower bound max((s - radius) / n, m -
        radius), rises monotonically and stops when the active set repeats
        (as :func:`sparsesvm.projections._l1_ball_threshold`: counting the
        entries >= t keeps the largest one, so radius 0 gives t = m, the
        identity, with no special case).
        """
        t = max((s - radius) / n, m - radius)
        while True:
            ss = 0.0
            c = 0
            for i in range(n):
                on = a[i] >= t
                ss += a[i] if on else 0.0
                c += on
            new = (ss - radius) / c
            if new <= t:
                return t
            t = new

    @njit
    def group_scale(kind, tau, s, m, a, n):
        """For group kinds: l12 -> the shrink factor; l1inf -> the clip level."""
        if kind == 2:
            nrm = np.sqrt(s)
            return max(0.0, 1.0 - tau / nrm) if nrm > 0 else 0.0
        if s <= tau:
            return 0.0  # inside the l1 ball: the group becomes 0
        return linf_clip(a, n, tau, s, m)

    @njit
    def apply(kind, u, scale, tau):
        """prox of one entry: l2 and l12 scale it, l1 soft-thresholds, l1inf clips."""
        if kind == 1:
            return max(u - tau, 0.0) + min(u + tau, 0.0)  # soft threshold, no branch
        if kind == 3:
            return min(max(u, -scale), scale)
        return u * scale

    @njit
    def step(X, V, tau, b, kind, out):
        M = X.shape[0] - 1
        K = X.shape[1]
        nn = 0.0
        cross = 0.0
        if kind <= 1:
            c = 1.0 / (1.0 + tau)  # l2's scale
            for r in range(M):
                for k in range(K):
                    x = X[r, k]
                    v = apply(kind, x - tau * V[r, k], c, tau)
                    out[r, k] = v
                    nn += v * v
                    cross += v * x
        elif b == 0:
            # across-class groups: row r is one group of K entries
            a = np.empty(K)
            for r in range(M):
                s = 0.0
                m = 0.0
                for k in range(K):
                    u = X[r, k] - tau * V[r, k]
                    out[r, k] = u
                    w = u * u if kind == 2 else abs(u)
                    a[k] = w
                    s += w
                    m = max(m, w)
                sc = group_scale(kind, tau, s, m, a, K)
                for k in range(K):
                    v = apply(kind, out[r, k], sc, tau)
                    out[r, k] = v
                    nn += v * v
                    cross += v * X[r, k]
        else:
            # within-class blocks: rows r0..r1-1 of column k form one group
            s = np.empty(K)
            m = np.empty(K)
            sc = np.empty(K)
            a = np.empty(b)
            for r0 in range(0, M, b):
                r1 = min(r0 + b, M)
                n = r1 - r0
                s[:] = 0.0
                m[:] = 0.0
                for r in range(r0, r1):
                    for k in range(K):
                        u = X[r, k] - tau * V[r, k]
                        out[r, k] = u
                        w = u * u if kind == 2 else abs(u)
                        s[k] += w
                        m[k] = max(m[k], w)
                for k in range(K):
                    if kind == 3 and s[k] > tau:
                        for i in range(n):
                            a[i] = abs(out[r0 + i, k])
                    sc[k] = group_scale(kind, tau, s[k], m[k], a, n)
                for r in range(r0, r1):
                    for k in range(K):
                        v = apply(kind, out[r, k], sc[k], tau)
                        out[r, k] = v
                        nn += v * v
                        cross += v * X[r, k]
        for k in range(K):
            x = X[M, k]
            v = x - tau * V[M, k]
            out[M, k] = v
            nn += v * v
            cross += v * x
        return nn, cross

    return step
