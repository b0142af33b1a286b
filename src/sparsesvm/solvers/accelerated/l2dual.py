"""Exact l2 engine of the accelerated solver: dual coordinate descent (issue 16).

Solves hinge-reg and hinge-con with g(W) = ||W||_F^2 / 2 and *free* biases
(the paper's model) through the Crammer-Singer dual, one sample at a time, as
liblinear's sequential dual method (Keerthi et al., KDD 2008), which has no
bias. How the bias is kept exact:

The dual of hinge-reg (certificates module) is::

    max_Y  sum_l (lam - Y[l, z_l]) - 1/2 ||Phi^T G||^2
    s.t.   Y_l in lam * simplex (Y_l >= 0, sum_k Y_lk = lam),
           c(Y) := sum_l G_l = 0,          G = Y - lam * E,

with E the one-hot labels; the primal point is W = -Phi^T G, and the K
equalities c = 0 are the optimality conditions of the free biases b (their
multipliers). Coordinate descent cannot keep K equalities coupling all
samples, so they are handled by the **method of multipliers** (augmented
Lagrangian, Hestenes-Powell): the inner problem::

    max_Y  sum_l (lam - Y[l, z_l]) - 1/2 ||Phi^T G||^2 + <b, c(Y)> - rho/2 ||c(Y)||^2

has the same separable constraints as liblinear's bias-free dual (the
rho-term is a constant feature of value sqrt(rho)), so each sample's block is
one exact step: with scores s_l = Phi_l W + b - rho c (the biases in effect),
``Y_l <- P(Y_l + (s_l - e_{z_l}) / (||Phi_l||^2 + rho))``, P the projection
onto lam * simplex (exact: the sub-problem is isotropic in Y_l). After each
sweep the multiplier is updated, ``b <- b - rho c``. It is the augmented
Lagrangian of the dual, i.e. the proximal-point method on the primal biases:
at a fixed point c = 0 and b is an optimal bias, so the model is the paper's
(unpenalised biases), not liblinear's (a bias penalised as a constant feature).

hinge-con: its dual adds the multiplier nu >= 0 of the constraint
(Y_l in nu * simplex, objective minus nu * eta). For fixed nu it is the
hinge-reg dual with lam = nu; the optimal nu is where the hinge loss of the
hinge-reg solution equals eta (the derivative of the concave hinge-reg
optimum in lam is that loss). It is found by a safeguarded secant search on
log nu, each hinge-reg solve warm-started from the previous one (Y scaled).

Every stop is decided by the certified relative gap of the full problem
(:mod:`sparsesvm.model.certificates`), as for the other engines.

The sweep is compiled with numba when it is installed (the ``fast`` extra) and
the problem has at least :data:`NUMBA_MIN_WORK` entries L * M * K;
``SPARSESVM_NUMBA=0`` or a missing numba gives the numpy sweep (same steps).
The compiled sweep lives in :mod:`sparsesvm.solvers.accelerated._l2dual_jit`,
in numba's on-disk cache (compiled once, then loaded by every process) and is
loaded by :func:`set_up` before the solver's clock starts.
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp

from ...model.certificates import hinge_con_gap, hinge_reg_gap
from .._kernels import import_compiled

_sweep = None

#: augmented-Lagrangian penalty rho relative to the mean squared sample norm;
#: measured on MNIST scattering features (L = 500, alpha = 1, benchmarks/bench_l2.py):
#: sweeps to a 1e-4 gap 420 at 0.01, 440 at 0.07, 520 at 0.23, 760 at 1, 2000+ at 5
RHO_SCALE = 0.05
#: smallest L * M * K for which the compiled sweeps are used by default (below it the
#: numpy sweep costs less than importing numba and loading the compiled sweep)
NUMBA_MIN_WORK = 1_000_000
#: hinge-con's multiplier search gives up (eta cannot be met) beyond nu = exp(this)
CON_MAX_LOG_NU = 25.0
#: smallest relative gap asked of one hinge-reg solve of the hinge-con search
CON_MIN_INNER = 1e-13
#: fewest sweeps between certificate checks (each check also makes the next sweep a
#: full one; the sweeps between are over the samples whose block moved)
CHECK_EVERY = 10
#: most sweeps between certificate checks
MAX_CHECK_EVERY = 100
#: sweeps over the moving samples between two checks: as many as cost CHECK_COST full
#: sweeps (a check, two products with Phi and the dual repair, costs about one full
#: sweep). Measured on E5's features (L = 5000, alpha = 1, about 420 of the 5000 samples
#: moving, tol 1e-4, one BLAS thread): 10 sweeps between checks (55 of 550
#: sweeps full, 40 % of the time in checks); CHECK_COST 3, 6, 12, 24: 6.6, 5.6, 5.5,
#: 5.9 s (584, 603, 682, 748 sweeps)
CHECK_COST = 6.0


# ---------------------------------------------------------------------------
# one sample's exact block step (shared by the numpy and numba sweeps)
def _simplex_project(t, radius, out):
    """Euclidean projection of t (K,) onto {x >= 0, sum x = radius}, written to out."""
    K = t.shape[0]
    u = np.sort(t)[::-1]
    css = 0.0
    theta = 0.0
    for j in range(K):
        css += u[j]
        th = (css - radius) / (j + 1)
        if j == K - 1 or u[j + 1] <= th:
            theta = th
            break
    for k in range(K):
        v = t[k] - theta
        out[k] = v if v > 0.0 else 0.0


def _sweep_py(Phi, indptr, indices, data, y, Y, VT, c, bb, rho, lam, sq, order, changed):
    """One pass of exact block steps over the samples in ``order`` (in place; numpy).

    Parameters
    ----------
    Phi : ndarray (L, M)
        Dense features; an empty (0, 0) array with CSR features.
    indptr, indices, data : ndarray
        CSR features (int64, int64, float64); unused with dense ones.
    y : int64 ndarray (L,)
    Y : ndarray (L, K)
        Dual iterate on lam * simplex (row-wise).
    VT : ndarray (K, M)
        ``(Phi^T (Y - lam E))^T``: the primal weights transposed, negated
        (class-major, so that a sample's features are contiguous per class).
    c : ndarray (K,)
        ``sum_l (Y - lam E)_l``.
    bb : ndarray (K,)
        The current multiplier b (the scores use ``bb - rho c``).
    rho, lam : float
    sq : ndarray (L,)
        Squared row norms of Phi.
    order : int64 ndarray
        The samples to visit, in order.
    changed : int8 ndarray (L,)
        Output: 1 where the sample's block moved, 0 where it did not.

    Returns
    -------
    float
        The largest change of a Y entry. The compiled sweep
        (:mod:`sparsesvm.solvers.accelerated._l2dual_jit`) takes the same steps.
    """
    K = Y.shape[1]
    everything = slice(None)
    ynew = np.empty(K)
    big = 0.0
    for l in order:
        if Phi.shape[0]:
            js, vs = everything, Phi[l]
        else:
            js, vs = indices[indptr[l]:indptr[l + 1]], data[indptr[l]:indptr[l + 1]]
        s = bb - rho * c - VT[:, js] @ vs
        s[y[l]] -= 1.0
        _simplex_project(Y[l] + s / (sq[l] + rho), lam, ynew)
        d = ynew - Y[l]
        m = np.abs(d).max()
        changed[l] = m > 0.0
        if m == 0.0:
            continue
        big = max(big, m)
        Y[l] = ynew
        c += d
        moved = np.flatnonzero(d)  # the classes whose dual entry moved
        if Phi.shape[0]:
            VT[moved] += np.outer(d[moved], vs)
        else:
            VT[np.ix_(moved, js)] += np.outer(d[moved], vs)
    return big


def load_sweep(use_numba=None):
    """The compiled sweep (loaded from numba's cache, or compiled once), or the numpy one.

    The numpy sweep when ``use_numba`` is False, when numba is missing, or (for
    ``use_numba=None``) with ``SPARSESVM_NUMBA=0``. Called when a state is set
    up, before any solver clock starts.
    """
    global _sweep
    if use_numba is None:
        use_numba = os.environ.get("SPARSESVM_NUMBA", "1") != "0"
    if not use_numba:
        return _sweep_py
    if _sweep is None:
        module = import_compiled("sparsesvm.solvers.accelerated._l2dual_jit")
        _sweep = module.sweep if module is not None else False
    return _sweep or _sweep_py


def _use_numba(op, use_numba):
    """``use_numba``, or for None whether the problem is large enough for the compiled sweep."""
    if use_numba is None and op.n_samples * op.n_features * op.n_classes < NUMBA_MIN_WORK:
        return False  # importing numba and loading the sweep costs more
    return use_numba


def set_up(op, use_numba=None):
    """Load the sweep that a state of this problem will use (call before the clock starts)."""
    return load_sweep(_use_numba(op, use_numba))


def compiled():
    """Whether the numba sweep is used."""
    return load_sweep() is not _sweep_py


# ---------------------------------------------------------------------------
class _State:
    """Dual iterate of the augmented-Lagrangian coordinate descent.

    Attributes
    ----------
    Y : ndarray (L, K)
        On lam * simplex row-wise.
    VT : ndarray (K, M)
        (Phi^T (Y - lam E))^T; the primal weights are W = -VT^T.
    c : ndarray (K,)
        Bias residual sum_l (Y - lam E)_l (0 at a dual-feasible point).
    b : ndarray (K,)
        Multiplier of c = 0: the biases.
    """

    def __init__(self, op, lam, rho, use_numba=None):
        self.op, self.lam, self.rho = op, float(lam), float(rho)
        Phi = op.Phi
        L, K = op.n_samples, op.n_classes
        self.E = np.zeros((L, K))
        self.E[np.arange(L), op.y_idx] = 1.0
        if sp.issparse(Phi):
            self.sq = np.asarray(Phi.multiply(Phi).sum(axis=1)).ravel()
            self.rows = (np.empty((0, 0)), Phi.indptr.astype(np.int64), Phi.indices.astype(np.int64),
                         Phi.data)
        else:
            self.sq = np.einsum("ij,ij->i", Phi, Phi)
            self.rows = (Phi, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0))
        self.y = np.ascontiguousarray(op.y_idx, dtype=np.int64)
        self.Y = self.lam * self.E
        self.VT = np.zeros((K, op.n_features))
        self.c = np.zeros(K)
        self.b = np.zeros(K)
        self.kernel = set_up(op, use_numba)
        self.rng = np.random.default_rng(0)
        self.changed = np.ones(L, dtype=np.int8)
        self.active = None

    def rescale(self, lam):
        """Move to another lam (hinge-con's search): Y scaled, VT and c recomputed."""
        f = float(lam) / self.lam
        self.lam = float(lam)
        self.Y *= f
        self.b *= f
        self.refresh()

    def refresh(self):
        """Recompute VT and c from Y (removes the drift of the incremental updates)."""
        G = self.Y - self.lam * self.E
        self.VT = np.ascontiguousarray((self.op.Phi.T @ G).T)
        self.c = G.sum(axis=0)

    def sweep(self, full=True):
        """One random-order pass of block steps, then the multiplier update.

        With ``full=False`` only the samples whose block moved at their last
        visit are visited (shrinking: a block left where it was, e.g. a
        correctly classified sample at Y_l = lam e_z, is skipped until the
        next full pass).
        """
        L = self.op.n_samples
        if full or self.active is None:
            order = self.rng.permutation(L)
        else:
            order = self.rng.permutation(self.active)
        big = self.kernel(*self.rows, self.y, self.Y, self.VT, self.c, self.b, self.rho, self.lam,
                          self.sq, order, self.changed)
        self.active = np.sort(order[self.changed[order] != 0])
        self.b -= self.rho * self.c
        return big

    def primal(self):
        """X = [W; b] (M+1, K) with W = -VT^T, biases centred (sum b = 0)."""
        return np.vstack([-self.VT.T, (self.b - self.b.mean())[None, :]])


def _default_rho(op):
    """Penalty of the augmented Lagrangian: RHO_SCALE times the mean squared norm of a sample."""
    Phi = op.Phi
    if sp.issparse(Phi):
        ms = float(Phi.multiply(Phi).sum()) / op.n_samples
    else:
        ms = float(np.einsum("ij,ij->", Phi, Phi)) / op.n_samples
    return RHO_SCALE * ms if ms > 0 else 1.0


def _reg_solve(st, tol, max_sweeps, deadline, check_every, record, n0=0):
    """Sweeps on hinge-reg (lam = st.lam) until the certified gap <= tol.

    After each check a full sweep, then sweeps over the samples that moved,
    ``check_every`` of them or, when few samples move, as many as cost
    :data:`CHECK_COST` full sweeps (at most :data:`MAX_CHECK_EVERY`).

    Returns (GapResult, sweeps done, converged, stop reason).
    """
    op = st.op
    L = op.n_samples
    best = None
    n = 0
    every, since = check_every, 0
    while n < max_sweeps:
        full = since == 0
        st.sweep(full=full)
        if full:  # the samples that moved in this full sweep set the interval
            moving = max(1, len(st.active))
            every = int(min(MAX_CHECK_EVERY, max(check_every, np.ceil(CHECK_COST * L / moving))))
        n += 1
        since += 1
        if since < every and n < max_sweeps:
            continue
        since = 0
        X = st.primal()
        best = hinge_reg_gap(op, X, st.Y, "l2", lam=st.lam)
        record(best, n0 + n, X)
        if best.rel_gap <= tol:
            return best, n, True, "converged"
        if deadline is not None and time.perf_counter() > deadline:
            return best, n, False, "time"
    return best, n, False, "max_iter"


def solve(op, kind, par, tol, max_sweeps, deadline, record, rho=None, check_every=CHECK_EVERY,
          use_numba=None):
    """Dual coordinate descent for l2 hinge-reg (par = lam) or hinge-con (par = eta).

    Parameters
    ----------
    op : MulticlassOperator
    kind : {"reg", "con"}
    par : float
    tol : float
        Target certified relative gap.
    max_sweeps : int
        Cap on passes over the samples (all hinge-reg solves together).
    deadline : float or None
        time.perf_counter() value after which to stop.
    record : callable(GapResult, int, X)
        Called at every certificate check.
    rho : float, optional
        Augmented-Lagrangian penalty (default: mean squared sample norm).
    check_every : int
        Fewest sweeps between certificate checks (see :func:`_reg_solve`).
    use_numba : bool, optional
        Force the compiled (True) or numpy (False) sweep.

    Returns
    -------
    X : ndarray (M+1, K)
    Y : ndarray (L, K)
    best : GapResult
    n : int
        Sweeps done.
    converged : bool
    """
    rho = _default_rho(op) if rho is None else float(rho)
    if kind == "reg":
        st = _State(op, par, rho, use_numba)
        best, n, conv, _ = _reg_solve(st, tol, max_sweeps, deadline, check_every, record)
        return st.primal(), st.Y, best, n, conv
    return _con_search(op, par, tol, max_sweeps, deadline, record, rho, check_every, use_numba)


def _con_search(op, eta, tol, max_sweeps, deadline, record, rho, check_every, use_numba):
    """hinge-con: search the multiplier nu (hinge-reg with lam = nu has loss eta).

    Each step solves hinge-reg at lam = nu (warm-started, Y scaled) to a
    relative gap ``inner`` (from 1e-2 down to tol / 10, and at most a tenth of
    the relative loss error r = |loss - eta| / eta and r^2: the loss error of a
    point grows like the square root of its gap), certifies the hinge-con problem at that
    point, and moves log nu (the loss is non-increasing in nu): by +-2 until
    the root is bracketed, then by regula falsi (Illinois variant: no one-sided
    stagnation) inside the bracket; a bracket that closes without a certificate
    (a sign from a too inexact solve) is dropped and rebuilt by small steps
    with 100 times more exact solves. The stop is the certified hinge-con gap; a
    point exactly on the constraint at a kink of the loss (no scaling makes it
    feasible: an infinite certificate) is left for the strictly feasible side
    of the bracket.
    """
    st = _State(op, 1.0, rho, use_numba)
    total = 0
    lo = hi = None  # [log nu, loss - eta]: largest with loss > eta, smallest with loss < eta
    side = 0        # which end moved last (Illinois: halve the other end's value on repeats)
    lognu = 0.0
    best = None
    floor = max(CON_MIN_INNER, 0.1 * tol)
    step = 2.0
    inner = max(floor, 1e-2)
    while total < max_sweeps:
        if lognu > CON_MAX_LOG_NU:
            raise ValueError(
                f"hinge-con: eta = {eta:g} cannot be met: the hinge loss is still "
                f"{best[0].loss:g} with a multiplier of {np.exp(lognu - 2.0):g} on the "
                "constraint (eta is below the loss that the data allow, e.g. duplicated "
                "samples with different labels, or reachable only with a larger multiplier)")
        st.rescale(np.exp(lognu))
        g, n, _, reason = _reg_solve(st, inner, max_sweeps - total, deadline, check_every,
                                     lambda *a: None, total)
        total += n
        X = st.primal()
        cert = hinge_con_gap(op, X, st.Y, "l2", eta=eta)
        record(cert, total, X)
        if best is None or cert.rel_gap < best[0].rel_gap:
            best = (cert, X, st.Y.copy())
        if cert.rel_gap <= tol:
            return X, st.Y, cert, total, True
        if reason == "time":
            break
        f = g.loss - eta
        if f > 0:
            if side == 1 and hi is not None:
                hi[1] *= 0.5
            lo, side = [lognu, f], 1
        else:
            if side == -1 and lo is not None:
                lo[1] *= 0.5
            hi, side = [lognu, f], -1
        r = abs(f) / eta
        inner = max(floor, min(inner, 0.1 * r, r * r))
        if lo is not None and hi is not None and not hi[0] - lo[0] > 1e-14 * max(1.0, abs(lo[0])):
            # the bracket closed on a point without a certificate: a sign came from a
            # too inexact solve; solve more exactly and bracket again, by small steps
            if inner <= floor and step < 1.0:
                break
            inner = max(floor, inner / 100.0)
            lo, hi, side, step = None, None, 0, 1e-2
            continue
        if lo is None:
            lognu -= step
        elif hi is None:
            lognu += step
        else:
            (a, fa), (bnd, fb) = lo, hi
            lognu = a - fa * (bnd - a) / (fb - fa)
    cert, X, Y = best
    return X, Y, cert, total, False
