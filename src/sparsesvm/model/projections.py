"""Closed-form projections and proximity operators used by the solvers.

Every function works row-wise on a 2-D array ``V`` of shape ``(L, K)`` and is
vectorised over the rows (one sort per row, no Python loop over rows).

dtype: the result has the floating dtype of the inputs (``numpy.result_type``
of ``V`` and the other array arguments, at least ``float32``); a float32 ``V``
with scalar parameters stays float32. Integer inputs are computed in float64.
Scalars and per-row arrays of radius, eta, lam never promote the result (but a
float64 ``R`` or ``zeta`` next to a float32 ``V`` gives float64).

Functions
---------
project_simplex(V, radius)
    Row-wise projection onto {u >= 0, sum(u) = radius}.
project_l1_ball(V, radius)
    Row-wise projection onto {||u||_1 <= radius}.
project_halfspace(z, eta)
    Projection onto {zeta : sum(zeta) <= eta}.
prox_hinge(V, R, lam)
    Row-wise prox of lam * h_l, h_l(v) = max_k (v_k + R[l, k]).
project_epigraph_hinge(V, zeta, R)
    Row-wise projection onto the epigraph of h_l.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

__all__ = [
    "project_simplex",
    "project_l1_ball",
    "project_halfspace",
    "prox_hinge",
    "project_epigraph_hinge",
]


# --------------------------------------------------------------------------- #
# validation helpers
# --------------------------------------------------------------------------- #
def _float_dtype(*arrays):
    dt = np.result_type(*arrays)
    if dt.kind != "f":
        return np.dtype(np.float64)
    if dt.itemsize < 4:
        return np.dtype(np.float32)
    return dt


def _as_matrix(V, name):
    V = np.asarray(V)
    if V.dtype.kind not in "fiub":
        raise ValueError(f"{name} must be a real numeric array, got dtype {V.dtype}")
    if V.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (L, K), got shape {V.shape}")
    if V.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column, got shape {V.shape}")
    if not np.all(np.isfinite(V)):
        raise ValueError(f"{name} contains NaN or inf")
    return V


def _as_vector(z, name, length=None):
    z = np.asarray(z)
    if z.dtype.kind not in "fiu":
        raise ValueError(f"{name} must be a real numeric array, got dtype {z.dtype}")
    if z.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {z.shape}")
    if length is not None and z.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {z.shape[0]}")
    if not np.all(np.isfinite(z)):
        raise ValueError(f"{name} contains NaN or inf")
    return z


def _radius(radius, n_rows, name="radius", strictly_positive=False):
    """Return radius as a float scalar or a (n_rows,) float64 array."""
    if isinstance(radius, numbers.Real) and not isinstance(radius, bool) or (
        isinstance(radius, np.ndarray) and radius.ndim == 0
    ):
        r = float(radius)
        if not np.isfinite(r):
            raise ValueError(f"{name} must be finite, got {r}")
        if r < 0 or (strictly_positive and r == 0):
            sign = "> 0" if strictly_positive else ">= 0"
            raise ValueError(f"{name} must be {sign}, got {r}")
        return r
    r = np.asarray(radius)
    if r.dtype == object or not (
        np.issubdtype(r.dtype, np.floating) or np.issubdtype(r.dtype, np.integer)
    ):
        raise ValueError(f"{name} must be a real scalar or 1-D array, got {radius!r}")
    if r.ndim != 1 or r.shape[0] != n_rows:
        raise ValueError(
            f"{name} must be a scalar or of shape ({n_rows},), got shape {r.shape}"
        )
    if not np.all(np.isfinite(r)):
        raise ValueError(f"{name} contains NaN or inf")
    if np.any(r < 0) or (strictly_positive and np.any(r == 0)):
        sign = "> 0" if strictly_positive else ">= 0"
        raise ValueError(f"{name} must be {sign} in every entry")
    return r


def _rows_and_radius(V, radius):
    """Checked ``(V, radius)`` of a row-wise projection: V (L, K) as a float array, radius per row or scalar."""
    V = _as_matrix(V, "V")
    r = _radius(radius, V.shape[0])
    return V.astype(_float_dtype(V), copy=False), r


# --------------------------------------------------------------------------- #
# unchecked kernels (float arrays in, same dtype out)
# --------------------------------------------------------------------------- #
@functools.lru_cache(maxsize=64)
def _counts(K, dtype_str):
    """1..K as a read-only array of the given dtype (cached: hot path)."""
    a = np.arange(1, K + 1, dtype=np.dtype(dtype_str))
    a.flags.writeable = False
    return a


def _simplex_threshold(V, radius, overwrite=False):
    """Row-wise threshold t with sum(max(V - t, 0)) = radius; shape (L, 1).

    With ``overwrite=True`` the rows of ``V`` (C-contiguous) are sorted in place
    and then scaled (``V`` is used as workspace: fewer temporaries).
    """
    dt = V.dtype
    if overwrite:
        V.sort(axis=1)
        S = V
    else:
        S = np.sort(V, axis=1)
    # decreasing order as a reversed view (sorting -V is markedly slower in numpy 2)
    U = S[:, ::-1]
    css = np.cumsum(U, axis=1)
    if np.ndim(radius) == 0:
        css -= dt.type(radius)
    else:
        css -= np.asarray(radius, dtype=dt)[:, None]
    U *= _counts(V.shape[1], dt.str)
    # U_j > (css_j - radius) / j holds exactly for j <= rho (a prefix)
    rho = np.count_nonzero(U > css, axis=1, keepdims=True)
    np.maximum(rho, 1, out=rho)  # radius 0 (or rounding at huge values)
    t = np.take_along_axis(css, rho - 1, axis=1)
    t /= rho.astype(dt)
    return t


def _project_simplex(V, radius):
    t = _simplex_threshold(V, radius)
    out = V - t
    np.maximum(out, 0, out=out)
    return out


#: rows of :func:`_l1_ball_threshold` with at most this fraction of their K
#: entries as candidates are solved by Newton's method on the candidates; the
#: others are sorted.
_FEW_CANDIDATES = 0.25
#: rows of at most this many entries are always sorted (cheaper than the
#: bookkeeping of the candidates; measured on leukemia's blocks of 5)
_SORT_MAX_K = 16


def _sort_rows(A, r, rows, t, overwrite):
    """Write the threshold of the selected ``rows`` of ``A`` into ``t`` (n,), by sorting."""
    if rows.all():
        t[:] = _simplex_threshold(A if overwrite else A.copy(), r, overwrite=True)[:, 0]
    elif rows.any():
        idx = np.flatnonzero(rows)
        t[idx] = _simplex_threshold(A[idx], r if np.ndim(r) == 0 else r[idx], overwrite=True)[:, 0]


def _l1_ball_threshold(A, radius, overwrite=False):
    """Row-wise threshold of the l1-ball projection, sorting only where it pays.

    For each row a of ``A`` (non-negative) returns t >= 0 with
    ``sum(max(a - t, 0)) = radius`` when ``sum(a) > radius``, and t = 0 otherwise,
    so that ``P_{B1(radius)}(v) = sign(v) max(|v| - t, 0)`` and
    ``prox_{radius ||.||_inf}(v) = clip(v, -t, t)`` for ``A = |v|``.

    Parameters
    ----------
    A : ndarray, shape (n, K)
        Non-negative float array, C-contiguous; not modified unless ``overwrite``.
    radius : float or ndarray of shape (n,)
        ``>= 0``.
    overwrite : bool, default=False
        Allow sorting ``A`` in place (a workspace the caller discards).

    Returns
    -------
    t : ndarray, shape (n, 1)
        Same dtype as ``A``.

    Notes
    -----
    ``f(t) = sum(max(a - t, 0)) - radius`` is convex, piecewise linear and
    decreasing; ``(sum(a) - radius) / K`` (Michelot's start) and
    ``max(a) - radius`` (the root when only the largest entry is active) are lower
    bounds of its root t*. Entries at or below the larger bound ``lo`` are never
    active at t*: only the *candidates* above it matter. Rows with few candidates
    (at most ``_FEW_CANDIDATES * K``: the usual case once the iterates settle)
    run Newton's method from ``lo`` on their candidates,
    ``t <- (sum_{a > t} a - radius) / #{a > t}``, which rises monotonically and
    stops exactly at t* when the active set repeats (at most K steps); the rows
    with many candidates are sorted (:func:`_simplex_threshold`), and so are all
    rows outside the ball when ``K <= _SORT_MAX_K`` or when candidates make more
    than ``_FEW_CANDIDATES`` of their entries overall (early iterates, small
    weights). All rows at once: a few passes over ``A`` for sums, maxima and
    candidates, then work in proportion to the candidates.
    """
    n, K = A.shape
    dt = A.dtype
    r = radius if np.ndim(radius) == 0 else np.asarray(radius, dtype=np.float64)
    s = A.sum(axis=1, dtype=np.float64)
    t = np.zeros(n, dtype=np.float64)
    outside = s > r
    if not outside.any():
        return t.astype(dt)[:, None]
    if K <= _SORT_MAX_K:  # short rows: sorting them is cheapest
        _sort_rows(A, r, outside, t, overwrite)
        return t.astype(dt)[:, None]
    lo = np.maximum((s - r) / K, A.max(axis=1) - r)
    lo[~outside] = np.inf
    # the candidates, row-major; >= keeps the largest entry of every row (lo <= max(a))
    cand = A >= lo.astype(dt)[:, None]
    if np.count_nonzero(cand) > _FEW_CANDIDATES * K * np.count_nonzero(outside):
        # candidates are many on average: sorting the rows outside the ball is cheaper
        _sort_rows(A, r, outside, t, overwrite)
        return t.astype(dt)[:, None]
    _threshold_from_candidates(A, r, cand, outside, t)
    return t.astype(dt)[:, None]


def _threshold_from_candidates(A, r, cand, outside, t):
    """The threshold of :func:`_l1_ball_threshold` for the rows ``outside`` the ball, into ``t`` (n,).

    Rows with few candidates (``cand``, the entries at or above the lower bound
    of the root) run Newton's method on them; the other rows are sorted.
    """
    n, K = A.shape
    flat = np.flatnonzero(cand)
    rows = flat // K
    few = outside & (np.bincount(rows, minlength=n) <= max(1, int(_FEW_CANDIDATES * K)))
    if not few.all():
        _sort_rows(A, r, outside & ~few, t, False)
        keep = few[rows]
        flat, rows = flat[keep], rows[keep]
    if rows.size:
        # (rows, vals): the entries >= the current bound t of the rows in `few`
        vals = A.ravel()[flat].astype(np.float64)
        count = np.bincount(rows, minlength=n)
        for _ in range(K + 1):
            # Newton from below: counting the entries >= t uses a subgradient of f, so
            # every step stays a lower bound; count >= 1 since max(a) >= t* >= t. An
            # entry equal to t* adds 0 to f, so t* is a fixed point (also at radius 0,
            # where t* = max(a)).
            tf = (np.bincount(rows, weights=vals, minlength=n) - r) / np.maximum(count, 1)
            keep = vals >= tf[rows]  # t only rises: drop what can no longer be active
            rows, vals = rows[keep], vals[keep]
            new = np.bincount(rows, minlength=n)
            if np.array_equal(new, count):  # same active set on every row: tf is the root
                break
            count = new
        t[few] = np.maximum(tf[few], 0.0)


def _project_halfspace(z, eta):
    """Project the float vector ``z`` onto {sum(zeta) <= eta}, in place; returns ``z``."""
    excess = (float(z.sum(dtype=np.float64)) - eta) / z.shape[0]
    if excess > 0:
        z -= z.dtype.type(excess)
    return z


def _project_l1_ball(V, radius):
    A = np.abs(V)
    t = _l1_ball_threshold(A, radius)
    A -= t
    np.maximum(A, 0, out=A)
    return np.copysign(A, V, out=A)  # rows inside the ball: t = 0, V bit for bit


def _prox_linf_rows(G, tau, out=None):
    """Row-wise prox of tau * ||.||_inf, i.e. G - P_{B1(tau)}(G), for tau >= 0.

    ``clip(g, -t, t)`` with t the l1-ball threshold of |g| at radius tau (0 for
    rows with ||g||_1 <= tau, which become 0), since
    ``g - sign(g) max(|g| - t, 0) = sign(g) min(|g|, t)``. Written into ``out``
    (same shape as G, may be G itself) if given.
    """
    t = _l1_ball_threshold(np.abs(G), tau, overwrite=True)
    if out is None:
        out = np.empty_like(G)
    np.minimum(G, t, out=out)
    np.maximum(out, -t, out=out)
    return out


# --------------------------------------------------------------------------- #
# public functions
# --------------------------------------------------------------------------- #
def project_simplex(V, radius):
    """Project each row of ``V`` onto the simplex of the given radius.

    Parameters
    ----------
    V : array_like, shape (L, K)
        Points, one per row.
    radius : float or array_like of shape (L,)
        Radius ``lambda >= 0`` of the simplex (per row if an array).

    Returns
    -------
    U : ndarray, shape (L, K)
        ``U[l] = argmin_{u >= 0, sum(u) = radius_l} ||u - V[l]||``, same float
        dtype as ``V`` (float32 stays float32; integers give float64).

    Raises
    ------
    ValueError
        If ``V`` is not 2-D or not finite, or the radius is negative, non-finite
        or of the wrong shape.

    Notes
    -----
    The projection onto :math:`S_\\lambda = \\{u \\ge 0, \\sum_k u_k = \\lambda\\}`
    is :math:`u = \\max(v - t, 0)` where :math:`t` solves
    :math:`\\sum_k \\max(v_k - t, 0) = \\lambda`. With :math:`\\nu` the entries
    of :math:`v` in decreasing order and :math:`c_j = \\sum_{i \\le j} \\nu_i`,
    :math:`\\rho = \\max\\{j : \\nu_j > (c_j - \\lambda)/j\\}` and
    :math:`t = (c_\\rho - \\lambda)/\\rho` (sort-based; Held et al. 1974,
    Condat 2016). The cost is one sort per row, :math:`O(L K \\log K)`.
    """
    return _project_simplex(*_rows_and_radius(V, radius))


def project_l1_ball(V, radius):
    """Project each row of ``V`` onto the l1 ball of the given radius.

    Parameters
    ----------
    V : array_like, shape (L, K)
        Points, one per row.
    radius : float or array_like of shape (L,)
        Radius ``>= 0`` of the ball (per row if an array).

    Returns
    -------
    U : ndarray, shape (L, K)
        ``U[l] = argmin_{||u||_1 <= radius_l} ||u - V[l]||``; rows already in the
        ball are returned unchanged (bit for bit). Same float dtype as ``V``.

    Raises
    ------
    ValueError
        If ``V`` is not 2-D or not finite, or the radius is invalid.

    Notes
    -----
    For :math:`\\|v\\|_1 > r`, :math:`P_{B_1(r)}(v) = \\mathrm{sign}(v) \\odot
    P_{S_r}(|v|)` (Duchi et al. 2008); the threshold by
    :func:`_l1_ball_threshold` (Newton on few candidates, or a sort per row).
    """
    return _project_l1_ball(*_rows_and_radius(V, radius))


def project_halfspace(z, eta):
    """Project ``z`` onto the half-space ``{zeta : sum(zeta) <= eta}``.

    Parameters
    ----------
    z : array_like, shape (L,)
        Point.
    eta : float
        Bound on the sum (any finite real).

    Returns
    -------
    p : ndarray, shape (L,)
        Projection, same float dtype as ``z``; ``z`` itself (a copy) when
        ``sum(z) <= eta``.

    Raises
    ------
    ValueError
        If ``z`` is not 1-D, empty or not finite, or ``eta`` is not a finite real.

    Notes
    -----
    :math:`P_{V_\\eta}(\\zeta) = \\zeta - \\max(0, (\\mathbf 1^\\top\\zeta - \\eta)/L)\\,
    \\mathbf 1` (projection onto a half-space with normal :math:`\\mathbf 1`).
    """
    z = _as_vector(z, "z")
    if z.shape[0] == 0:
        raise ValueError("z must not be empty")
    if isinstance(eta, bool) or not isinstance(eta, (numbers.Real, np.ndarray)) or np.ndim(eta) != 0:
        raise ValueError(f"eta must be a real scalar, got {eta!r}")
    eta = float(eta)
    if not np.isfinite(eta):
        raise ValueError(f"eta must be finite, got {eta}")
    return _project_halfspace(z.astype(_float_dtype(z), copy=True), eta)


def prox_hinge(V, R, lam):
    """Row-wise proximity operator of ``lam * h_l``.

    Parameters
    ----------
    V : array_like, shape (L, K)
        Points, one per row.
    R : array_like, shape (L, K)
        Offsets ``r_l`` of ``h_l(v) = max_k (v_k + R[l, k])``.
    lam : float or array_like of shape (L,)
        Multiplier ``lambda > 0`` (per row if an array).

    Returns
    -------
    P : ndarray, shape (L, K)
        ``P[l] = prox_{lam h_l}(V[l])``, dtype ``result_type(V, R)`` (float).

    Raises
    ------
    ValueError
        On shape mismatch, NaN/inf, or ``lam <= 0``.

    Notes
    -----
    :math:`\\lambda h_l(v) = \\sigma_{S_\\lambda}(v + r_l)`, the support function
    of the simplex :math:`S_\\lambda` at :math:`v + r_l`. Its conjugate is the
    indicator of :math:`S_\\lambda` (shifted), so by Moreau's identity
    :math:`\\mathrm{prox}_{\\lambda h_l}(v) = v - P_{S_\\lambda}(v + r_l)`.
    """
    V = _as_matrix(V, "V")
    R = _as_matrix(R, "R")
    if R.shape != V.shape:
        raise ValueError(f"R must have the shape of V {V.shape}, got {R.shape}")
    lam = _radius(lam, V.shape[0], name="lam", strictly_positive=True)
    dt = _float_dtype(V, R)
    V = V.astype(dt, copy=False)
    return V - _project_simplex(V + R.astype(dt, copy=False), lam)


def project_epigraph_hinge(V, zeta, R):
    """Row-wise projection onto the epigraph of ``h_l(v) = max_k (v_k + R[l, k])``.

    Parameters
    ----------
    V : array_like, shape (L, K)
        The ``v`` parts of the points, one per row.
    zeta : array_like, shape (L,)
        The scalar parts of the points.
    R : array_like, shape (L, K)
        Offsets ``r_l``.

    Returns
    -------
    P : ndarray, shape (L, K)
        ``v`` part of the projection of ``(V[l], zeta[l])``.
    theta : ndarray, shape (L,)
        Scalar part of the projection; ``max_k (P[l, k] + R[l, k]) <= theta[l]``
        (equality unless the point was already inside). Rows already in the
        epigraph are returned unchanged (bit for bit). dtype is
        ``result_type(V, zeta, R)`` (float).

    Raises
    ------
    ValueError
        On shape mismatch or NaN/inf.

    Notes
    -----
    :math:`\\mathrm{epi}\\,h_l = \\{(v, \\zeta) : v_k + r_{l,k} \\le \\zeta\\ \\forall k\\}`.
    Let :math:`\\nu = v + r_l` sorted decreasingly, :math:`\\nu_{(0)} = +\\infty`,
    :math:`\\nu_{(K+1)} = -\\infty`, and for :math:`j = 0..K`,
    :math:`\\theta_j = (\\zeta + \\nu_{(1)} + \\dots + \\nu_{(j)})/(j + 1)`.
    With the unique :math:`j` such that :math:`\\nu_{(j)} > \\theta_j \\ge
    \\nu_{(j+1)}`, the projection is :math:`(p, \\theta_j)` with
    :math:`p_k = \\min(v_k, \\theta_j - r_{l,k})`. The test
    :math:`\\theta_j \\ge \\nu_{(j+1)}` is monotone in :math:`j` (its slack grows by
    :math:`(j+2)(\\nu_{(j+1)} - \\nu_{(j+2)}) \\ge 0`), so :math:`j` is the first index
    that passes it; it is found for all rows at once. The row maximum is
    subtracted before the cumulative sums, which keeps precision for large
    values (e.g. 1e8).
    """
    V = _as_matrix(V, "V")
    L, K = V.shape
    zeta = _as_vector(zeta, "zeta", length=L)
    R = _as_matrix(R, "R")
    if R.shape != V.shape:
        raise ValueError(f"R must have the shape of V {V.shape}, got {R.shape}")
    dt = _float_dtype(V, zeta, R)
    V = V.astype(dt, copy=False)
    zeta = zeta.astype(dt, copy=False)
    R = R.astype(dt, copy=False)
    return _project_epigraph_hinge(V, zeta, R)


def _project_epigraph_hinge(V, zeta, R):
    L, K = V.shape
    dt = V.dtype
    nu = V + R
    nu_sorted = np.sort(nu, axis=1)[:, ::-1]  # decreasing (reversed view)
    shift = nu_sorted[:, :1].copy()  # row maximum
    nu_sorted = nu_sorted - shift
    zs = zeta - shift[:, 0]
    # theta_j for j = 0..K (shifted)
    css = np.empty((L, K + 1), dtype=dt)
    css[:, 0] = 0
    np.cumsum(nu_sorted, axis=1, out=css[:, 1:])
    css += zs[:, None]
    theta_all = css / np.arange(1, K + 2, dtype=dt)
    # first j in 0..K-1 with theta_j >= nu_(j+1); j = K if none
    passes = theta_all[:, :K] >= nu_sorted
    j = np.where(passes.any(axis=1), np.argmax(passes, axis=1), K)
    theta = theta_all[np.arange(L), j] + shift[:, 0]
    inside = j == 0
    P = np.minimum(V, theta[:, None] - R)
    if np.any(inside):
        P[inside] = V[inside]
        theta[inside] = zeta[inside]
    return P, theta
