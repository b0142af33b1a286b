"""A dense interior-point method for the column generation's master LPs.

The masters of MNIST's larger training sets (:mod:`.colgen` with row generation; E5's
L = 5000) have about 700 to 1000 hinge rows and 1000 to 1400 atom columns, about a fifth of
whose entries are non-zero: a dense normal-equations matrix (rows x rows) is then cheap to
form (BLAS' ``syrk``) and to factor, where HiGHS' interior-point method (IPX, sparse and
iterative, then a crossover to a basis) spends several times as long per solve.
:func:`interior_point` is Mehrotra's predictor-corrector method (Mehrotra 1992; Wright,
*Primal-Dual Interior-Point Methods*, 1997, ch. 10) on

    min c^T x   subject to   A x <= r,   x_j >= 0 (j not free),   x_j free (j free),

from the infeasible start x = s = y = z = 1, with the normal equations

    M = A_P diag(x_P / z_P) A_P^T + diag(s / y)

(Cholesky, slightly regularised, with one step of iterative refinement of each direction
against the unregularised system), the free columns eliminated through the small Schur
complement ``A_F^T M^{-1} A_F`` (solved in the least-squares sense: the biases of the hinge
rows are determined up to a common shift), and the columns split into dense ones (``A_dense``, the
atoms) and sparse ones (``A_sparse``, the biases and the hinge values). It returns an
approximate optimum (relative duality gap and infeasibilities below ``tol``), not a
vertex: the column generation prices and certifies from it as from HiGHS' point.
"""

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk

__all__ = ["InteriorPointResult", "interior_point", "iteration_madds"]

#: fraction of the largest step to the boundary taken (Mehrotra's heuristic's usual value)
STEP_FRACTION = 0.995
#: added to the normal matrix's diagonal, relative to its largest entry (near the optimum
#: the ratios s / y and x / z spread over many orders of magnitude)
REGULARISATION = 1e-13
#: iterations without a better iterate after which the method stops (the normal equations'
#: rounding then moves the primal residual more than the steps reduce it)
STALL_ITERATIONS = 5


@dataclass
class InteriorPointResult:
    """The point of :func:`interior_point`.

    Attributes
    ----------
    x : ndarray (n_sparse + n_dense,)
        The columns' values, sparse columns first (empty columns 0).
    y : ndarray (rows,)
        The rows' multipliers (>= 0; the dual objective is ``-r^T y``).
    z : ndarray (n_sparse + n_dense,)
        The columns' reduced costs ``c + A^T y`` (>= 0 but on the free columns).
    slack : ndarray (rows,)
        The rows' slacks ``r - A x`` (>= 0 up to the primal infeasibility).
    iterations : int
    converged : bool
        The relative gap and infeasibilities are below ``tol``.
    status : str
        ``"optimal"``, ``"stalled"`` (the best iterate is returned), ``"max_iter"`` or
        ``"time"`` (``deadline`` passed).
    gap, primal_infeasibility, dual_infeasibility : float
        Relative measures at ``x, y``.
    """

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    slack: np.ndarray
    iterations: int
    converged: bool
    status: str
    gap: float
    primal_infeasibility: float
    dual_infeasibility: float


def iteration_madds(rows, dense_cols):
    """Multiply-adds of an iteration's normal matrix (``syrk``) and Cholesky factor."""
    return rows * rows * dense_cols / 2.0 + rows ** 3 / 6.0


def _step_to_boundary(v, dv):
    """Largest a <= 1 with v + a dv >= 0 (v > 0): ``-1 / min(dv / v)`` (two passes, no
    masked copies; a pair with v = dv = 0 is ignored)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = float(np.fmin.reduce(dv / v, axis=None)) if np.size(v) else 0.0
    return 1.0 if not m < -1.0 else -1.0 / m


class _Columns:
    """The non-negative columns ``A_P = [A_dense, A_sparse]`` (dense first) and the free
    ones ``A_F`` (a dense array) of :func:`interior_point`."""

    def __init__(self, AD, AS, AF):
        self.AD, self.AS, self.AF = AD, AS, AF
        self.nD = AD.shape[1]

    def P(self, v):
        """``A_P v``."""
        return self.AD @ v[:self.nD] + self.AS @ v[self.nD:]

    def Pt(self, w):
        """``A_P^T w``."""
        return np.concatenate([self.AD.T @ w, self.AS.T @ w])

    def normal(self, D, extra):
        """``A_P diag(D) A_P^T + diag(extra)`` (lower triangle; BLAS' syrk for the dense part),
        regularised (:data:`REGULARISATION`)."""
        m, nD = self.AD.shape[0], self.nD
        M = dsyrk(1.0, self.AD * np.sqrt(D[:nD]), lower=1) if nD else np.zeros((m, m))
        part = (self.AS @ sp.diags(D[nD:]) @ self.AS.T).tocoo()
        M[part.row, part.col] += part.data
        diag = np.diag_indices(m)
        M[diag] += extra
        M[diag] += REGULARISATION * M[diag].max()
        return M


class _Newton:
    """The Newton system of one iteration at ``(xF, xP, s, y, z)`` with residuals ``rp``
    (primal), ``rdP`` and ``rdF`` (dual), by the normal equations; raises LinAlgError when
    their Cholesky factorisation fails."""

    def __init__(self, cols, xP, s, y, z, rp, rdP, rdF):
        self.cols, self.xP, self.s, self.y, self.z = cols, xP, s, y, z
        self.rp, self.rdP, self.rdF = rp, rdP, rdF
        self.D = xP / z
        M = cols.normal(self.D, s / y)
        self.factor = (sl.cholesky(M, lower=True, overwrite_a=True, check_finite=False), True)
        self.MiAF = sl.cho_solve(self.factor, cols.AF, check_finite=False)
        self.schur = cols.AF.T @ self.MiAF

    def _reduced(self, h, g):
        """``-M dy + A_F dxF = h, A_F^T dy = g`` by the factor of M (``dxF`` in the
        least-squares sense: the free columns may have null directions)."""
        Mih = sl.cho_solve(self.factor, h, check_finite=False)
        dxF = np.linalg.lstsq(self.schur, g + self.cols.AF.T @ Mih, rcond=None)[0]
        return self.MiAF @ dxF - Mih, dxF

    def direction(self, rcP, rcs):
        """``(dxF, dxP, ds, dy, dz)`` for the complementarity right-hand sides ``rcP`` (of
        ``x_P z``) and ``rcs`` (of ``s y``)."""
        cols, xP, s, y, z, D = self.cols, self.xP, self.s, self.y, self.z, self.D
        q = (rcP + xP * self.rdP) / z
        h = self.rp - cols.P(q) - rcs / y
        dy, dxF = self._reduced(h, self.rdF)
        # one step of iterative refinement against M without the regularisation
        Mdy = cols.P(D * cols.Pt(dy)) + s / y * dy
        ey, eF = self._reduced(h + Mdy - cols.AF @ dxF, self.rdF - cols.AF.T @ dy)
        dy += ey
        dxF += eF
        Atdy = cols.Pt(dy)
        return dxF, q - D * Atdy, (rcs - s * dy) / y, dy, Atdy - self.rdP


def interior_point(A_sparse, A_dense, c, free, r, tol=1e-8, max_iter=80, deadline=None):
    """Solve ``min c^T x, [A_sparse A_dense] x <= r, x >= 0 but on free`` (module docstring).

    Parameters
    ----------
    A_sparse : sparse matrix (rows, n_sparse)
        Columns with few entries (their part of the normal matrix is a sparse product).
    A_dense : ndarray (rows, n_dense)
        Dense columns (their part is one ``syrk``), non-negative variables.
    c : ndarray (n_sparse + n_dense,)
        Costs, sparse columns first.
    free : int ndarray
        Indices (into the sparse columns) of the free variables; the others are >= 0.
    r : ndarray (rows,)
        Right-hand sides.
    tol : float
        Relative duality gap, primal and dual infeasibility at which it stops.
    max_iter : int
    deadline : float, optional
        ``time.perf_counter()`` time after which it stops (status ``"time"``).

    Returns
    -------
    InteriorPointResult

    Raises
    ------
    ValueError
        On inconsistent shapes, or an empty non-negative column of negative cost (the LP
        is unbounded).
    """
    A_sparse = sp.csc_matrix(A_sparse)
    A_dense = np.asarray(A_dense, dtype=float)
    m, n_sparse = A_sparse.shape
    n_dense = A_dense.shape[1]
    c, r = np.asarray(c, dtype=float), np.asarray(r, dtype=float)
    if A_dense.shape[0] != m or c.shape != (n_sparse + n_dense,) or r.shape != (m,):
        raise ValueError(f"interior_point: A_sparse {A_sparse.shape}, A_dense {A_dense.shape}, "
                         f"c {c.shape} and r {r.shape} do not fit together")
    is_free = np.zeros(n_sparse, dtype=bool)
    is_free[np.asarray(free, dtype=int)] = True
    used = np.diff(A_sparse.indptr) > 0
    if np.any(~used & ~is_free & (c[:n_sparse] < 0)):
        raise ValueError("interior_point: an empty non-negative column has a negative cost "
                         "(the LP is unbounded)")
    fcols = np.flatnonzero(is_free & used)
    scols = np.flatnonzero(~is_free & used)
    cols = _Columns(np.asfortranarray(A_dense), A_sparse[:, scols].tocsc(),
                    A_sparse[:, fcols].toarray())
    cF = c[fcols]
    cP = np.concatenate([c[n_sparse:], c[scols]])  # dense columns first, then the sparse ones
    nP = len(cP)
    xF, xP = np.zeros(len(fcols)), np.ones(nP)
    s, y, z = np.ones(m), np.ones(m), np.ones(nP)
    scale_r, scale_c = 1.0 + np.linalg.norm(r), 1.0 + np.linalg.norm(c)
    best = None
    status, it = "max_iter", 0
    for it in range(max_iter + 1):
        rp = r - cols.P(xP) - cols.AF @ xF - s
        rdP = z - cP - cols.Pt(y)
        rdF = -(cF + cols.AF.T @ y)
        pobj, dobj = cP @ xP + cF @ xF, -(r @ y)
        gap = abs(pobj - dobj) / (1.0 + abs(pobj))
        pinf = np.linalg.norm(rp) / scale_r
        dinf = np.sqrt(rdP @ rdP + rdF @ rdF) / scale_c
        merit = max(gap, pinf, dinf)
        if best is None or merit < best[0]:
            best = (merit, it, xF.copy(), xP.copy(), y.copy(), gap, pinf, dinf)
        if merit <= tol:
            status = "optimal"
            break
        if it - best[1] >= STALL_ITERATIONS:
            status = "stalled"
            break
        if it == max_iter:
            break
        if deadline is not None and time.perf_counter() > deadline:
            status = "time"
            break
        try:
            newton = _Newton(cols, xP, s, y, z, rp, rdP, rdF)
        except np.linalg.LinAlgError:
            status = "stalled"
            break
        mu = (xP @ z + s @ y) / (nP + m)
        dxF, dxP, ds, dy, dz = newton.direction(-xP * z, -s * y)  # affine scaling (predictor)
        ap = min(_step_to_boundary(xP, dxP), _step_to_boundary(s, ds))
        ad = min(_step_to_boundary(z, dz), _step_to_boundary(y, dy))
        mu_aff = ((xP + ap * dxP) @ (z + ad * dz) + (s + ap * ds) @ (y + ad * dy)) / (nP + m)
        target = (mu_aff / mu) ** 3 * mu  # Mehrotra's centring
        dxF, dxP, ds, dy, dz = newton.direction(target - xP * z - dxP * dz, target - s * y - ds * dy)
        ap = STEP_FRACTION * min(_step_to_boundary(xP, dxP), _step_to_boundary(s, ds))
        ad = STEP_FRACTION * min(_step_to_boundary(z, dz), _step_to_boundary(y, dy))
        xF += ap * dxF
        xP += ap * dxP
        s += ap * ds
        y += ad * dy
        z += ad * dz
    _, _, bxF, bxP, by, gap, pinf, dinf = best
    x = np.zeros(n_sparse + n_dense)
    x[n_sparse:] = bxP[:n_dense]
    x[scols] = bxP[n_dense:]
    x[fcols] = bxF
    slack = r - A_sparse @ x[:n_sparse] - A_dense @ x[n_sparse:]
    z = c + np.concatenate([A_sparse.T @ by, A_dense.T @ by])
    return InteriorPointResult(x=x, y=by, z=z, slack=slack, iterations=it, converged=status == "optimal",
                               status=status, gap=gap, primal_infeasibility=pinf,
                               dual_infeasibility=dinf)
