"""The compiled kernels of :mod:`sparsesvm.solvers._kernels` (numba; imported only through it).

Module-level functions, so that numba's on-disk cache is reused by every
process (a kernel nested in a function, or one that captures other compiled
functions as closure variables, is compiled again in each new process). The
step has one explicit signature: it is compiled, or loaded from the cache,
when this module is imported (:func:`sparsesvm.solvers._kernels._load` does it,
before any solver clock starts), and no call can trigger a compilation later.
Import this module only through :func:`sparsesvm.solvers._kernels._load`, which
points the cache at the user's cache directory.
"""

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# reassociation lets LLVM vectorise the sums; no other fast-math flag
# (infinities and NaN keep their IEEE meaning)
_OPTIONS = dict(cache=True, nogil=True, fastmath={"reassoc", "contract"})
_C2 = types.float64[:, ::1]
#: read-only input accepted too (features memory-mapped from disk; a writable array converts)
_R2 = types.Array(types.float64, 2, "C", readonly=True)
#: rows per chunk of :func:`step`'s passes over within-class groups (whole blocks of groups)
_CHUNK_ROWS = 64
#: ``step(X, V, tau, b, kind, out) -> (nn, cross)``, arrays float64 C-contiguous
_STEP_SIGNATURE = types.UniTuple(types.float64, 2)(_C2, _C2, types.float64, types.int64,
                                                    types.int64, _C2)


def njit(*args):
    """numba.njit with this module's options (cache, nogil, reassociation)."""
    if args and callable(args[0]):
        return numba.njit(**_OPTIONS)(args[0])
    return numba.njit(*args, **_OPTIONS)


@njit
def linf_clip(a, n, radius, s, m):
    """Clip level t of prox_{radius ||.||_inf}: sum(max(a - t, 0)) = radius.

    ``a`` holds n absolute values with sum s > radius and maximum m.
    Newton's method on the convex decreasing piecewise-linear root
    function, started from the lower bound max((s - radius) / n, m -
    radius), rises monotonically and stops when the active set repeats
    (as :func:`sparsesvm.model.projections._l1_ball_threshold`: counting the
    entries >= t keeps the largest one, so radius 0 gives t = m, the
    identity, with no special case).
    """
    t = max((s - radius) / n, m - radius)
    for _ in range(n + 2):  # the active set shrinks: at most n + 1 steps (NaN: no hang)
        ss = 0.0
        c = 0
        for i in range(n):
            on = a[i] >= t
            ss += a[i] if on else 0.0
            c += on
        if c == 0:  # only with NaN (t >= nothing): NaN out
            return t
        new = (ss - radius) / c
        if new <= t:
            return t
        t = new
    return t


@njit
def group_scale(kind, tau, s, m, a, n):
    """For group kinds: l12 (kind 2) -> the shrink factor; l1inf (kind 3) -> the clip level."""
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
def block_sums(o, start, n, K, squares, sums, mxs, at):
    """The K group sums of a block of n rows of ``o`` (flat, row-major, K per row) from
    ``o[start]``: each column's sum of squares (``squares``) or of absolute values and
    its maximum, into ``sums[at:at + K]`` and ``mxs[at:at + K]``.

    Four columns a pass, each summed row after row in scalars: four independent chains
    that stay in registers (a sum per entry in memory, the whole row's K at once, is bound
    by the stores: about twice as long at E2's K = 10). Each group is summed in row
    order, as one chain would: the same sums to the bit.
    """
    k = np.uint64(0)
    four = np.uint64(4)
    while k < K:
        s0 = s1 = s2 = s3 = 0.0
        m0 = m1 = m2 = m3 = 0.0
        base = start + k
        if k + four <= K:
            for r in range(n):
                i = base + r * K
                a0, a1, a2, a3 = o[i], o[i + 1], o[i + 2], o[i + 3]
                if squares:
                    s0 += a0 * a0
                    s1 += a1 * a1
                    s2 += a2 * a2
                    s3 += a3 * a3
                else:
                    a0, a1, a2, a3 = abs(a0), abs(a1), abs(a2), abs(a3)
                    s0 += a0
                    s1 += a1
                    s2 += a2
                    s3 += a3
                    m0, m1, m2, m3 = max(m0, a0), max(m1, a1), max(m2, a2), max(m3, a3)
            sums[at + k], sums[at + k + 1], sums[at + k + 2], sums[at + k + 3] = s0, s1, s2, s3
            mxs[at + k], mxs[at + k + 1], mxs[at + k + 2], mxs[at + k + 3] = m0, m1, m2, m3
            k += four
        else:  # the last columns one at a time
            for r in range(n):
                a0 = o[base + r * K]
                if squares:
                    s0 += a0 * a0
                else:
                    a0 = abs(a0)
                    s0 += a0
                    m0 = max(m0, a0)
            sums[at + k] = s0
            mxs[at + k] = m0
            k += np.uint64(1)


@njit(_STEP_SIGNATURE)
def step(X, V, tau, b, kind, out):
    """``out = prox_{tau g}(X - tau V)`` (bias row: ``X - tau V``); returns ``(||out||^2, <out, X>)``.

    ``kind`` and ``b`` are the penalty's
    :meth:`~sparsesvm.model.penalties.Penalty.compiled_form`: kind 0 l2, 1 l1,
    2 l12, 3 l1inf (``kernel_code``); ``b`` the block size of within-class
    groups, 0 for across-class groups (one row of W), 1 for l2 and l1.

    l2 and l1: one flat pass. Across-class groups: one pass per row (the row's
    sum, its scale or clip level by :func:`group_scale`, the prox by
    :func:`apply`; an l1,2 row scaled to 0 is written as zeros). Within-class groups: chunks of whole blocks (about
    :data:`_CHUNK_ROWS` rows, in cache throughout), each through short loops
    the compiler vectorises: the shifted point, the groups' sums (for l1,inf
    their maxima too; :func:`block_sums`, four groups' chains at a time in
    registers), their scales or clip levels, the prox of every entry, the two
    inner products. Indices are
    unsigned (numba then drops its negative-index test from every access) and no
    array view is made per row (each view costs a reference count). Same results as one pass per block with
    signed indices, in less time at E2's shapes (README, "One iteration's cost").
    """
    K = np.uint64(X.shape[1])
    M = np.uint64(X.shape[0] - 1)
    x = X.ravel()
    o = out.ravel()
    v = V.ravel()
    nn = 0.0
    cross = 0.0
    a = np.empty(max(b, X.shape[1]))
    sums = np.empty(X.shape[1] * max(1, _CHUNK_ROWS // max(b, 1)))
    mxs = np.empty(X.shape[1] * max(1, _CHUNK_ROWS // max(b, 1)))
    if kind <= 1:
        # l2 and l1: entry by entry, one flat pass
        c = 1.0 / (1.0 + tau)  # l2's scale
        for i in range(M * K):
            w = apply(kind, x[i] - tau * v[i], c, tau)
            o[i] = w
            nn += w * w
            cross += w * x[i]
    elif b == 0:
        # across-class groups: row r is one group of K entries, in one pass (2-D indexing
        # with signed indices measured faster here than the flat unsigned form)
        Ms = X.shape[0] - 1
        Ks = X.shape[1]
        if kind == 2:
            # l1,2: the row's sum of squares and its shrink factor; a row shrunk to 0 (most
            # rows of a sparse solution) is written as zeros, the others scaled. The first
            # loop is the l1,inf branch's (the copy in `a` and the maximum are unused here):
            # so compiled, the sums come out bitwise as before this branch existed (a loop
            # summing only was 5 % faster and moved them by an ulp, a helper shared by the two
            # branches slower and not bitwise either; README, "The l1,2 step across classes")
            for r in range(Ms):
                s = 0.0
                m = 0.0
                for k in range(Ks):
                    u = X[r, k] - tau * V[r, k]
                    out[r, k] = u
                    w = u * u
                    a[k] = w
                    s += w
                    m = max(m, w)
                sc = group_scale(kind, tau, s, m, a, Ks)
                if sc == 0.0:
                    for k in range(Ks):
                        out[r, k] = 0.0
                    continue
                for k in range(Ks):
                    w = out[r, k] * sc
                    out[r, k] = w
                    nn += w * w
                    cross += w * X[r, k]
        else:  # l1,inf: the row's sum and maximum of |u|, its clip level, the clipped row
            for r in range(Ms):
                s = 0.0
                m = 0.0
                for k in range(Ks):
                    u = X[r, k] - tau * V[r, k]
                    out[r, k] = u
                    w = abs(u)
                    a[k] = w
                    s += w
                    m = max(m, w)
                sc = group_scale(kind, tau, s, m, a, Ks)
                for k in range(Ks):
                    w = apply(kind, out[r, k], sc, tau)
                    out[r, k] = w
                    nn += w * w
                    cross += w * X[r, k]
    else:
        # within-class blocks: chunks of nbc whole blocks (about _CHUNK_ROWS rows), which stay in
        # cache through the passes below (shifted point, group sums, scales, prox, inner products)
        bb = np.uint64(max(b, 1))
        nbc = np.uint64(max(1, _CHUNK_ROWS // max(b, 1)))
        B = bb * nbc
        for r0 in range(np.uint64(0), M, B):
            nr = min(B, M - r0)
            lo = r0 * K
            hi = lo + nr * K
            for i in range(lo, hi):  # the shifted point (``out`` may be ``V``)
                o[i] = x[i] - tau * v[i]
            # column k of b consecutive rows is one group
            nbk = (nr + bb - np.uint64(1)) // bb  # blocks in this chunk
            for j in range(nbk):
                block_sums(o, lo + j * bb * K, min(bb, nr - j * bb), K, kind == 2, sums, mxs, j * K)
            for j in range(nbk):
                rj = j * bb
                nj = min(bb, nr - rj)
                for k in range(K):
                    s = sums[j * K + k]
                    m = mxs[j * K + k]
                    if kind == 3 and s > tau:
                        for i in range(nj):
                            a[i] = abs(o[lo + (rj + i) * K + k])
                    sums[j * K + k] = group_scale(kind, tau, s, m, a, np.int64(nj))
            for j in range(nbk):
                sb = j * K
                for r in range(j * bb, min(j * bb + bb, nr)):
                    base = lo + r * K
                    if kind == 3:
                        for k in range(K):
                            c = sums[sb + k]
                            o[base + k] = min(max(o[base + k], -c), c)
                    else:
                        for k in range(K):
                            o[base + k] *= sums[sb + k]
            for i in range(lo, hi):
                w = o[i]
                nn += w * w
                cross += w * x[i]
    for i in range(M * K, M * K + K):  # the bias row: X - tau V
        w = x[i] - tau * v[i]
        o[i] = w
        nn += w * w
        cross += w * x[i]
    return nn, cross


_DUAL_SIGNATURE = types.UniTuple(types.float64, 2)(_C2, _C2, _C2, _C2, types.float64,
                                                    types.float64, _C2)


@njit(_DUAL_SIGNATURE)
def simplex_step(Y, TX, TXn, sR, sigma, lam, out):
    """Dual update of Algorithm 1 in one pass: row-wise simplex projection of the shifted point.

    ``out = P_{S_lam}(Y + sigma (2 TXn - TX) + sR)`` with ``S_lam = {y >= 0,
    sum(y) = lam}`` for each row; returns ``(||out||^2, ||out - Y||^2)``.
    ``out`` may be ``TX`` (each row is read before it is written). The
    threshold t of a row (``sum(max(v - t, 0)) = lam``) by Newton's method
    from the lower bound ``max((sum(v) - lam) / K, max(v) - lam)``, as
    :func:`linf_clip`: it rises monotonically and stops when the active set
    repeats.
    """
    L = Y.shape[0]
    K = Y.shape[1]
    nn = 0.0
    dd = 0.0
    for r in range(L):
        s = 0.0
        m = -np.inf
        for k in range(K):
            v = Y[r, k] + sigma * (2.0 * TXn[r, k] - TX[r, k]) + sR[r, k]
            out[r, k] = v
            s += v
            m = max(m, v)
        t = max((s - lam) / K, m - lam)
        for _ in range(K + 2):  # the active set shrinks: at most K + 1 steps (NaN: no hang)
            ss = 0.0
            c = 0
            for k in range(K):
                on = out[r, k] >= t
                ss += out[r, k] if on else 0.0
                c += on
            if c == 0:  # only with NaN: NaN out
                break
            new = (ss - lam) / c
            if new <= t:
                break
            t = new
        for k in range(K):
            y = max(out[r, k] - t, 0.0)
            out[r, k] = y
            nn += y * y
            d = y - Y[r, k]
            dd += d * d
    return nn, dd


_MOMENTUM_SIGNATURE = types.UniTuple(types.float64, 2)(_C2, _C2, _C2, types.float64)


# reassociation only: the sums vectorise, and the extrapolation keeps numpy's three
# roundings ((Xn - X) * c + Xn, no fused multiply-add), so V is the numpy path's to the bit
@numba.njit(_MOMENTUM_SIGNATURE, cache=True, nogil=True, fastmath={"reassoc"})
def momentum_step(X, Xn, V, c):
    """FISTA's momentum in one pass: its two sums, then ``V = Xn + c (Xn - X)`` in place.

    ``X`` the previous iterate, ``Xn`` the new one, ``V`` the extrapolated point ``Xn``
    was computed from (float64 C-contiguous arrays of one shape; ``V`` neither ``X`` nor
    ``Xn``). Returns ``(||Xn - X||^2, <V - Xn, Xn - X>)`` with the ``V`` read before it is
    overwritten: the stopping measure's numerator and the adaptive restart's test (a
    positive value means a restart, whose extrapolated point is ``Xn`` itself: the caller
    copies it). Each entry of ``V`` is rounded as numpy's ``D = Xn - X; D *= c; D += Xn``.
    """
    x = X.ravel()
    xn = Xn.ravel()
    v = V.ravel()
    dd = 0.0
    rs = 0.0
    for i in range(x.size):
        d = xn[i] - x[i]
        dd += d * d
        rs += (v[i] - xn[i]) * d
        d = d * c
        v[i] = d + xn[i]
    return dd, rs


_COLUMN_SUMS_SIGNATURE = types.void(_C2, _C2, _C2, _C2)


@numba.njit(_COLUMN_SUMS_SIGNATURE, cache=True, nogil=True, fastmath={"reassoc"})
def column_sums(X, Xn, V, out):
    """One-vs-all FISTA's per-class sums in one pass: for each column k of the (M + 1, K)
    arrays, ``out[0, k] = ||Xn[:, k]||^2``, ``out[1, k] = ||Xn[:, k] - X[:, k]||^2`` and
    ``out[2, k] = <V[:, k] - Xn[:, k], Xn[:, k] - X[:, k]>`` (the relative change's two
    norms and the adaptive restart's test of class k); ``out`` (3, K).
    """
    K = X.shape[1]
    for j in range(3):
        for k in range(K):
            out[j, k] = 0.0
    nx = out[0]
    nd = out[1]
    rs = out[2]
    for r in range(X.shape[0]):
        for k in range(K):
            xn = Xn[r, k]
            d = xn - X[r, k]
            nx[k] += xn * xn
            nd[k] += d * d
            rs[k] += (V[r, k] - xn) * d


_COLUMN_EXTRAPOLATE_SIGNATURE = types.void(_C2, _C2, _C2, types.float64[::1])


# the extrapolation rounded as numpy's ``D = Xn - X; D *= c; D += Xn`` (no fused multiply-add)
@numba.njit(_COLUMN_EXTRAPOLATE_SIGNATURE, cache=True, nogil=True)
def column_extrapolate(X, Xn, V, coef):
    """One-vs-all FISTA's next points in one pass: ``V[:, k] = Xn[:, k] + coef[k] (Xn[:, k]
    - X[:, k])`` and ``X = Xn`` (both overwritten; arrays (M + 1, K), ``coef`` (K,))."""
    K = X.shape[1]
    for r in range(X.shape[0]):
        for k in range(K):
            xn = Xn[r, k]
            d = xn - X[r, k]
            d = d * coef[k]
            V[r, k] = d + xn
            X[r, k] = xn


_C1 = types.float64[::1]
_EPI_SIGNATURE = types.void(_C2, _C2, _C2, _C2, _C1, _C1, types.float64, types.float64,
                            types.float64, _C2, _C1)


@njit(_EPI_SIGNATURE)
def epigraph_step(Y, TX, TXn, R, zeta, xi, sigma, tau, eta, out, zn):
    """Dual update of Algorithm 2 in one pass: half-space step, over-relaxation, epigraph projection.

    ``zn = P_{V_eta}(zeta - tau xi)`` (``V_eta = {sum(z) <= eta}``), then, row
    by row, with ``Yh = Y + sigma (2 TXn - TX)``, ``xih = xi + sigma (2 zn -
    zeta)`` and ``(P, theta) = P_epi(Yh / sigma, xih / sigma)`` (epigraph of
    ``h_l(v) = max_k (v_k + R[l, k])``)::

        out = Yh - sigma P = sigma max(nu - theta, 0),   nu = Yh / sigma + R[l]
        xi  = xih - sigma theta                          (in place)

    ``out`` may be ``TX`` (each entry is read before it is written); ``zn``
    must not alias ``zeta`` or ``xi``. ``theta`` solves ``theta - xih / sigma
    = sum(max(nu - theta, 0))``: every ``(xih / sigma + sum_S nu) / (1 + |S|)``
    is a lower bound, and Newton's method from the best of two of them rises
    monotonically and stops when the active set repeats (as
    :func:`simplex_step`); values are shifted by the row maximum of ``nu``
    (precision at large values, as :func:`sparsesvm.model.projections.project_epigraph_hinge`).
    Rows already in the epigraph give ``out = 0``, ``xi = 0``.
    """
    L = Y.shape[0]
    K = Y.shape[1]
    s = 0.0
    for r in range(L):
        z = zeta[r] - tau * xi[r]
        zn[r] = z
        s += z
    excess = (s - eta) / L
    if excess > 0:
        for r in range(L):
            zn[r] -= excess
    inv = 1.0 / sigma
    for r in range(L):
        m = -np.inf
        for k in range(K):
            v = Y[r, k] * inv + 2.0 * TXn[r, k] - TX[r, k] + R[r, k]
            out[r, k] = v
            m = max(m, v)
        z = xi[r] * inv + 2.0 * zn[r] - zeta[r]  # xih / sigma
        if z >= m:  # inside the epigraph: the projection is the point itself
            for k in range(K):
                out[r, k] = 0.0
            xi[r] = 0.0
            continue
        z -= m  # shifted: nu - m <= 0 and z < 0, so the root t < 0 = max(nu - m)
        s = 0.0
        for k in range(K):
            s += out[r, k] - m
        t = max(0.5 * z, (z + s) / (K + 1))
        for _ in range(K + 2):  # the active set shrinks: at most K + 1 steps (NaN: no hang)
            ss = 0.0
            c = 0
            for k in range(K):
                d = out[r, k] - m
                on = d > t
                ss += d if on else 0.0
                c += on
            new = (z + ss) / (1 + c)
            if new <= t:
                break
            t = new
        for k in range(K):
            out[r, k] = sigma * max((out[r, k] - m) - t, 0.0)
        xi[r] = sigma * (z - t)


_SLACK_SIGNATURE = types.void(_C2, _C2, _C2, _C2, _C1, types.float64, types.float64,
                              types.float64, _C2, _C1)


@njit(_SLACK_SIGNATURE)
def slack_step(Y, TX, TXn, sR, c, sigma, tau, eta, out, cn):
    """hinge-lin's dual update in one pass: the slacks' step, then the over-relaxed hinge rows.

    ``cn = P(c + tau mean_k Y)``, the projection onto ``{c >= 0, sum(c) <= eta}`` (the
    positive part when its sum is at most ``eta``, else the projection onto the simplex
    ``{c >= 0, sum(c) = eta}``, whose threshold :func:`linf_clip` finds by Newton's method
    from the lower bound ``max((sum(m) - eta) / L, max(m) - eta)``), then
    row by row::

        out = max(0, Y + sigma (2 TXn - TX - (2 cn - c) 1^T) + sR)

    Matrices float64 C-contiguous (L, K), vectors float64 contiguous (L,); ``out`` may be
    ``TX`` (each entry is read before it is written); ``cn`` must not alias ``c``.
    """
    L = Y.shape[0]
    K = Y.shape[1]
    total = 0.0  # sum of the m_r
    pos = 0.0  # sum of their positive parts
    top = -np.inf
    for r in range(L):
        s = 0.0
        for k in range(K):
            s += Y[r, k]
        m = c[r] + tau * (s / K)
        cn[r] = m
        total += m
        pos += max(m, 0.0)
        top = max(top, m)
    t = 0.0
    if pos > eta:  # outside the capped orthant: onto the simplex of radius eta, whose
        # threshold solves sum(max(m - t, 0)) = eta as an l1,inf group's clip level does
        t = linf_clip(cn, L, eta, total, top)
    for r in range(L):
        cn[r] = max(cn[r] - t, 0.0)
        shift = 2.0 * cn[r] - c[r]
        for k in range(K):
            v = Y[r, k] + sigma * (2.0 * TXn[r, k] - TX[r, k] - shift) + sR[r, k]
            out[r, k] = max(v, 0.0)


_I1 = types.Array(types.int64, 1, "C", readonly=True)
_R1 = types.Array(types.float64, 1, "C", readonly=True)
_LABEL_SIGNATURE = types.void(_C2, _R1, _I1)


# no fast-math flag: numpy's roundings, to the bit
@numba.njit(_LABEL_SIGNATURE, cache=True, nogil=True)
def label_shift(S, bias, y):
    """``T X`` from the products ``S = Phi W`` (L, K), in place: ``S[l, k] = (S[l, k] +
    bias[k]) - (S[l, y[l]] + bias[y[l]])``, numpy's ``S += bias; S -= S[rows, y][:, None]``
    to the bit (column ``y[l]`` of row l exactly 0)."""
    K = S.shape[1]
    for r in range(S.shape[0]):
        z = y[r]
        sz = S[r, z] + bias[z]
        for k in range(K):
            S[r, k] = (S[r, k] + bias[k]) - sz


_ADJOINT_INPUT_SIGNATURE = types.void(_R2, _R1, _I1, _C2, _C1)


# no fast-math flag: numpy's roundings and order of the sums, to the bit
@numba.njit(_ADJOINT_INPUT_SIGNATURE, cache=True, nogil=True)
def adjoint_input(Y, rowsum, y, G, bias):
    """``G`` of ``T^T Y = [Phi^T G; 1^T G]`` and its bias row, in one pass over ``Y`` (L, K).

    ``G = Y`` except ``G[l, y[l]] = Y[l, y[l]] - rowsum[l]`` (``rowsum``: numpy's
    ``Y.sum(axis=1)``, passed in: its pairwise order is numpy's own); ``bias = G.sum(axis=0)``
    summed row after row as numpy sums it (from +0.0, each row added in turn).
    """
    L = Y.shape[0]
    K = Y.shape[1]
    for r in range(L):
        z = y[r]
        for k in range(K):
            G[r, k] = Y[r, k]
        G[r, z] = Y[r, z] - rowsum[r]
    for k in range(K):
        bias[k] = 0.0
    for r in range(L):
        for k in range(K):
            bias[k] += G[r, k]


_FORWARD_SIGNATURE = types.void(_R2, _R2, _C2)


@njit(_FORWARD_SIGNATURE)
def sparse_forward(PhiT, W, outT):
    """``outT = (Phi @ W)^T`` over the non-zero entries of ``W`` only.

    ``PhiT`` is ``Phi^T`` (M, L) C-contiguous, ``W`` (M, K), ``outT`` (K, L):
    each non-zero ``W[j, k]`` adds ``W[j, k] * Phi[:, j]`` (a contiguous row of
    ``PhiT``) to row k of ``outT``, so the work is about ``nnz(W) * L``
    multiply-adds against ``M * K * L`` for the dense product
    (:class:`sparsesvm.model.operator.DenseProducts` chooses between them).
    Four rows of ``PhiT`` at a time, which stay in cache for every class: a class
    with three or four of the four weights non-zero adds them in one pass over its row
    of ``outT`` (one store per entry instead of one per weight), one with fewer adds
    each alone (a group penalty's zeros come in runs, so the choice is mostly the
    same from one class to the next).
    """
    M = PhiT.shape[0]
    L = PhiT.shape[1]
    K = W.shape[1]
    for k in range(K):
        for i in range(L):
            outT[k, i] = 0.0
    M4 = M - M % 4
    for j in range(0, M4, 4):
        p0, p1, p2, p3 = PhiT[j], PhiT[j + 1], PhiT[j + 2], PhiT[j + 3]
        for k in range(K):
            w0, w1, w2, w3 = W[j, k], W[j + 1, k], W[j + 2, k], W[j + 3, k]
            nz = (w0 != 0.0) + (w1 != 0.0) + (w2 != 0.0) + (w3 != 0.0)
            if nz == 0:
                continue
            o = outT[k]
            if nz >= 3:
                for i in range(L):
                    o[i] += (w0 * p0[i] + w1 * p1[i]) + (w2 * p2[i] + w3 * p3[i])
                continue
            if w0 != 0.0:  # written out: a loop over the pairs compiles slower
                for i in range(L):
                    o[i] += w0 * p0[i]
            if w1 != 0.0:
                for i in range(L):
                    o[i] += w1 * p1[i]
            if w2 != 0.0:
                for i in range(L):
                    o[i] += w2 * p2[i]
            if w3 != 0.0:
                for i in range(L):
                    o[i] += w3 * p3[i]
    for j in range(M4, M):
        p0 = PhiT[j]
        for k in range(K):
            w0 = W[j, k]
            if w0 != 0.0:
                o = outT[k]
                for i in range(L):
                    o[i] += w0 * p0[i]


_ADJOINT_SIGNATURE = types.void(_R2, _R2, _C2, _C2)


@njit(_ADJOINT_SIGNATURE)
def sparse_adjoint(Phi, G, bufT, out):
    """``out = Phi^T @ G`` over the non-zero entries of ``G`` only.

    ``Phi`` (L, M), ``G`` (L, K), ``bufT`` (K, M) scratch, ``out`` (M, K), all
    C-contiguous. Column k of the result is the sum of ``G[l, k] * Phi[l, :]`` (a
    contiguous row of ``Phi``) over the samples l with ``G[l, k] != 0``: built in row k
    of ``bufT`` four samples a pass (one store per entry for four rows of ``Phi``: the
    passes are bound by the stores), then written transposed into ``out``. The work is
    about ``nnz(G) * M`` multiply-adds against ``L * M * K`` for the dense product: at
    the supports of E2's hinge jobs 62-81 % of ``G``'s entries are 0 (its rows hold the
    dual's active classes). :class:`sparsesvm.model.operator.DenseProducts` chooses
    between them by the count of non-zeros.
    """
    L = Phi.shape[0]
    M = Phi.shape[1]
    K = G.shape[1]
    rows = np.empty(L, np.int64)
    for k in range(K):
        n = 0
        for r in range(L):
            if G[r, k] != 0.0:
                rows[n] = r
                n += 1
        o = bufT[k]
        q = 0
        if n == 0:
            for i in range(M):
                o[i] = 0.0
        elif n % 2 == 1:  # an odd count: one row first, then pairs and quadruples
            g0 = G[rows[0], k]
            p0 = Phi[rows[0]]
            for i in range(M):
                o[i] = g0 * p0[i]
            q = 1
        else:
            g0, g1 = G[rows[0], k], G[rows[1], k]
            p0, p1 = Phi[rows[0]], Phi[rows[1]]
            for i in range(M):
                o[i] = g0 * p0[i] + g1 * p1[i]
            q = 2
        while q + 4 <= n:
            g0, g1, g2, g3 = G[rows[q], k], G[rows[q + 1], k], G[rows[q + 2], k], G[rows[q + 3], k]
            p0, p1, p2, p3 = Phi[rows[q]], Phi[rows[q + 1]], Phi[rows[q + 2]], Phi[rows[q + 3]]
            for i in range(M):
                o[i] += (g0 * p0[i] + g1 * p1[i]) + (g2 * p2[i] + g3 * p3[i])
            q += 4
        if q < n:  # the last pair
            g0, g1 = G[rows[q], k], G[rows[q + 1], k]
            p0, p1 = Phi[rows[q]], Phi[rows[q + 1]]
            for i in range(M):
                o[i] += g0 * p0[i] + g1 * p1[i]
    for m in range(M):
        for k in range(K):
            out[m, k] = bufT[k, m]


@njit(types.int64(_R2))
def nonzero_count(W):
    """``np.count_nonzero(W)`` for a float64 C-contiguous ``W``, on the bits (an integer
    loop that vectorises; -0.0 counts as zero, NaN as non-zero, as in numpy), faster than
    numpy's own count on float64 (README, "The library on its own")."""
    b = W.ravel().view(np.uint64)
    one = np.uint64(1)
    c = 0
    for i in range(b.size):
        c += (b[i] << one) != 0
    return c


_U1 = types.uint64[::1]
_B1 = types.uint8[::1]
_CSC_SIGNATURE = types.void(_U1, _U1, _C1, _C2, _C2)
#: ``csc_forward(indptr, indices, data, X, rows, out)``
_CSC_FORWARD_SIGNATURE = types.void(_U1, _U1, _C1, _C2, _B1, _C2)


# no fast-math flag: the products are summed in scipy's order and rounded as scipy rounds them
@numba.njit(_CSC_FORWARD_SIGNATURE, cache=True, nogil=True)
def csc_forward(indptr, indices, data, X, rows, out):
    """``out = A @ X`` over the non-zero rows of ``X``, ``A`` (L, N) sparse by columns.

    ``indptr`` (N + 1,), ``indices`` and ``data`` are ``A``'s compressed columns (the CSR
    arrays of ``A^T``), ``X`` (N, K), ``out`` (L, K). Each row j of ``X`` with a non-zero
    entry adds ``A[i, j] * X[j, :]`` to row i of ``out`` for the stored ``A[i, j]``;
    rows of zeros are skipped: found from the bits of ``X`` or, when ``rows`` has N
    entries, those with ``rows[j] == 0`` (rows the caller knows to hold zeros, as
    :func:`csr_step` marks them). Each ``out[i, k]`` sums its terms in increasing j, as
    scipy's CSR product does (sorted indices): the same result to the bit, the skipped
    terms being exact zeros (a zero row taken adds only zeros: the same bits too).
    """
    N = np.uint64(X.shape[0])
    K = np.uint64(X.shape[1])
    x = X.ravel()
    xb = x.view(np.uint64)  # the bits: a row is zero when all but the signs are 0 (NaN is not)
    o = out.ravel()
    for i in range(o.size):
        o[i] = 0.0
    one = np.uint64(1)
    marked = rows.size == X.shape[0]
    for j in range(N):
        base = j * K
        if marked:
            if rows[j] == 0:
                continue
        else:
            bits = np.uint64(0)
            for k in range(K):  # an integer OR: vectorised, no branch per entry
                bits |= xb[base + k] << one
            if bits == 0:
                continue
        for p in range(indptr[j], indptr[j + np.uint64(1)]):
            ob = indices[p] * K
            d = data[p]
            for k in range(K):
                o[ob + k] += d * x[base + k]


@numba.njit(_CSC_SIGNATURE, cache=True, nogil=True)
def csr_product(indptr, indices, data, G, out):
    """``out = A @ G``, ``A`` (N, L) sparse by rows (its CSR arrays), ``G`` (L, K), ``out`` (N, K).

    Row j of ``out`` sums ``A[j, i] * G[i, :]`` over the stored entries of row j in their
    stored order, as scipy's CSR product does: the same result to the bit (no fast-math
    flag), without scipy's zero-filled temporary. Serves ``[Phi^T; 1^T] @ G``, the adjoint
    of a sparse ``Phi``, on the same arrays as :func:`csc_forward`.
    """
    N = np.uint64(out.shape[0])
    K = np.uint64(G.shape[1])
    g = G.ravel()
    o = out.ravel()
    for j in range(N):
        ob = j * K
        for k in range(K):
            o[ob + k] = 0.0
        for p in range(indptr[j], indptr[j + np.uint64(1)]):
            gb = indices[p] * K
            d = data[p]
            for k in range(K):
                o[ob + k] += d * g[gb + k]


@intrinsic
def muladd(typingctx, a, b, c):
    """``a * b + c``, fused (rounded once) where the CPU has a fused multiply-add
    (LLVM's ``llvm.fmuladd.f64``): what the fast-math contraction of the other kernels
    makes of such a product and sum, in a kernel compiled without that flag."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        double = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(double, [double] * 3),
                                            "llvm.fmuladd.f64")
        return builder.call(fn, args)

    return sig, codegen


#: ``csr_step(indptr, indices, data, G, X, tau, kind, out, rows, xrows) -> (nn, cross)``
_CSR_STEP_SIGNATURE = types.UniTuple(types.float64, 2)(_U1, _U1, _C1, _C2, _C2, types.float64,
                                                        types.int64, _C2, _B1, _B1)

#: csr_step settles an l1,2 row of X at +0 as 0 when its bound on ||(A G)_r|| is at most
#: this: the computed row's norm, within (nnz + K + 3) units of rounding of the bound, is
#: then below 1, and the prox makes it 0 (the margin covers rows of up to about 4e6 terms)
_SETTLE_BELOW = 1.0 - 1e-9


# no fast-math flag: each row of A G is summed in scipy's order (csr_product's bits: a fast-math
# caller would have its callees contract these sums too); the shift X - tau V as step's
# contraction computes it
@numba.njit(_CSR_STEP_SIGNATURE, cache=True, nogil=True)
def csr_step(indptr, indices, data, G, X, tau, kind, out, rows, xrows):
    """:func:`step` for a row-separable penalty with ``V = A G`` formed row by row:
    ``out = prox_{tau g}(X - tau A G)`` (bias row: no prox); returns ``(||out||^2, <out, X>)``.

    ``indptr``, ``indices``, ``data``: the CSR arrays of ``A = [Phi^T; 1^T]`` (M + 1, L), as
    :func:`csr_product` takes them; ``G`` (L, K); ``X`` and ``out`` (M + 1, K), ``out`` not
    ``X``; ``kind`` as in :func:`step` (0 l2, 1 l1, 2 l1,2 and 3 l1,inf with groups of one
    row, across classes). Each row of ``A G`` is summed into a scratch row of K entries and
    goes through the prox at once, so the (M + 1, K) array ``A G`` is never written nor read
    back: the values of :func:`csr_product` followed by :func:`step` (the rows of ``A G``
    summed in the same order, the shift rounded as step's contraction rounds it; an l1,2
    row's sum of squares in row order, which step's compiled loop may reassociate: its
    last bit, hence the row's, may differ; the two inner products too: each class's terms
    are summed down the rows, then the K sums). Four l1,2 rows at a time, their sums of
    squares in four independent chains.

    ``rows`` (M + 1,) marks the rows of ``out``: 0 where the row holds zeros this kernel
    wrote, 1 elsewhere; the kernel updates it (the bias row stays 1). An l1,2 row shrunk to
    0 where ``out`` already holds zeros is not written again: E3's solutions hold 93-98 %
    of their rows at 0, so a buffer reused every other iteration keeps most of them. A
    new buffer comes with ``rows`` all 1 (or zeros with ``rows`` all 0).
    :func:`csc_forward` takes the same marks to skip the zero rows.

    ``xrows`` (M + 1,): for l1,2, the marks of ``X``'s rows, 0 where the row holds +0.0 (as
    this kernel writes a zero row: ``X`` the other buffer of a pair); empty: none known.
    Such a row's shift does not read it (``muladd(-tau, v, 0.0)``), and a safe bound settles
    most of them without their K-wide sums: the prox of ``-tau v`` is 0 when ``||v|| <= 1``,
    and ``||(A G)_r|| <= sum_p |A_rp| ||G_p||``, one product per stored entry (``G``'s row
    norms taken once); a row whose bound is at most
    :data:`_SETTLE_BELOW` is 0 (written only where ``out`` does not hold zeros already),
    the others are summed as above. The same bits as without the marks: a settled row is
    one the prox makes 0, and zero rows add nothing to the two inner products.
    """
    M = np.uint64(X.shape[0] - 1)
    K = np.uint64(X.shape[1])
    one = np.uint64(1)
    four = np.uint64(4)
    g = G.ravel()
    x = X.ravel()
    o = out.ravel()
    u = np.empty(4 * X.shape[1])  # up to four rows of A G, then of X - tau A G
    at_row = np.empty(4, dtype=np.uint64)  # the row in each of u's four slots
    ss = np.empty(4)
    a = np.empty(X.shape[1])  # group_scale's work array (l1,inf)
    c = 1.0 / (1.0 + tau)  # l2's scale
    known = kind == 2 and xrows.size == X.shape[0]  # X's zero rows: not read, most settled
    gn = np.empty(G.shape[0] if known else 0)  # the norms of G's rows, for the bound
    for i in range(gn.size):
        s = 0.0
        for k in range(K):
            s += g[i * K + k] * g[i * K + k]
        gn[i] = np.sqrt(s)
    # the two inner products' terms summed by class down the rows, then over the classes: K
    # independent sums, which the loop over a row's entries vectorises without a fast-math
    # flag (a sum per row is a chain of dependent additions; README, "E3's row path
    # whatever the product's timing, and its inner products")
    nk = np.zeros(X.shape[1])
    ck = np.zeros(X.shape[1])
    r = np.uint64(0)
    while r <= M:
        # rows of A G, as csr_product sums them, and the shifted point: up to four l1,2 rows
        # below the bias row (their sums of squares in four chains), else one row
        single = kind != 2 or r == M
        cap = one if single else four  # rows gathered in this pass
        end = M + one if single else M  # l1,2 rows: not the bias row
        nb = np.uint64(0)
        while nb < cap and r < end:
            zero = known and r < M and xrows[r] == 0  # X's row r holds +0.0
            if zero:
                bound = 0.0
                for p in range(indptr[r], indptr[r + one]):
                    bound += abs(data[p]) * gn[indices[p]]
                if bound <= _SETTLE_BELOW:  # the prox makes this row 0
                    if rows[r]:
                        base = r * K
                        for k in range(K):
                            o[base + k] = 0.0
                        rows[r] = 0
                    r += one
                    continue
            at = nb * K
            for k in range(K):
                u[at + k] = 0.0
            for p in range(indptr[r], indptr[r + one]):
                gb = indices[p] * K
                d = data[p]
                for k in range(K):
                    u[at + k] += d * g[gb + k]
            # the shift X - tau v: a zero row of X not read (one loop, reading X's row or a
            # row of zeros for it, took 1.00-1.28 times as long on E3's hinge states)
            if zero:
                for k in range(K):
                    u[at + k] = muladd(-tau, u[at + k], 0.0)
            else:
                base = r * K
                for k in range(K):
                    u[at + k] = muladd(-tau, u[at + k], x[base + k])
            at_row[nb] = r
            nb += one
            r += one
        if nb == 0:  # every row up to the bias row settled
            continue
        if single:
            # the bias row (no prox), l2 and l1 (entry by entry), l1,inf (the row's clip level)
            rr = at_row[0]
            base = rr * K
            sc = c
            if kind == 3 and rr < M:
                s = 0.0
                m = 0.0
                for k in range(K):
                    w = abs(u[k])
                    a[k] = w
                    s += w
                    m = max(m, w)
                sc = group_scale(kind, tau, s, m, a, X.shape[1])
            nonzero = rr == M
            for k in range(K):
                w = u[k] if rr == M else apply(kind, u[k], sc, tau)
                o[base + k] = w
                nk[k] += w * w
                ck[k] += w * x[base + k]
                nonzero |= w != 0.0
            rows[rr] = nonzero
            continue
        # l1,2: each row's sum of squares (in row order, a chain per row) and shrink factor;
        # a row shrunk to 0 is zeros
        if nb == 4:
            s0 = s1 = s2 = s3 = 0.0
            for k in range(K):
                a0, a1, a2, a3 = u[k], u[K + k], u[2 * K + k], u[3 * K + k]
                s0 += a0 * a0
                s1 += a1 * a1
                s2 += a2 * a2
                s3 += a3 * a3
            ss[0], ss[1], ss[2], ss[3] = s0, s1, s2, s3
        else:
            for j in range(nb):
                s0 = 0.0
                for k in range(K):
                    s0 += u[j * K + k] * u[j * K + k]
                ss[j] = s0
        for j in range(nb):
            rj = at_row[j]
            base = rj * K
            at = j * K
            sc = group_scale(kind, tau, ss[j], 0.0, a, X.shape[1])
            if sc == 0.0:
                if rows[rj]:
                    for k in range(K):
                        o[base + k] = 0.0
                    rows[rj] = 0
                continue
            rows[rj] = 1
            # a row of X marked 0 holds +0.0: its terms of <out, X> add +0
            for k in range(K):
                w = u[at + k] * sc
                o[base + k] = w
                nk[k] += w * w
                ck[k] += w * x[base + k]
    nn = 0.0
    cross = 0.0
    for k in range(K):
        nn += nk[k]
        cross += ck[k]
    return nn, cross
