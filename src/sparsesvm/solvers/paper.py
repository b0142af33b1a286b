"""Solvers for the sparse multiclass SVM problems of the paper and its baselines.

All solvers start from ``X = 0`` (and zero dual variables), work in float64 and
return a :class:`SolverResult`. ``X`` has shape ``(M + 1, K)``: column ``k`` is
``[w_k; b_k]``, the last row holds the biases (never penalised).

Solvers
-------
hinge_reg(op, penalty, lam, ...)
    Algorithm 1 of the paper: ``min g(X) + lam * sum_l h_l((T X)[l])`` by
    forward-backward primal-dual (Chambolle-Pock form, no smooth term).
hinge_con(op, penalty, eta, ...)
    Algorithm 2 (epigraphical splitting): ``min g(X) s.t. sum_l h_l((T X)[l]) <= eta``.
hinge_lin(op, penalty, eta, ...)
    The same constrained problem written with linear constraints (LP-style
    timing baseline), by FBPD on ``(X, zeta) -> T X - zeta``.
square(op, penalty, lam, ...)
    Squared multiclass hinge (Blondel et al. 2013) by FISTA.
logit(op, penalty, lam, ...)
    Multinomial logistic regression by forward-backward (the paper's), or
    FISTA with ``scheme="fista"``.
ova(Phi, y_idx, n_classes, penalty, lam, ...)
    One-vs-all squared hinge, one FISTA per class (run side by side).

Every result carries the certified relative duality gap of its point
(``rel_gap``, :mod:`sparsesvm.model.certificates`); ``stopping="gap"`` stops on it.

Stopping rule (all solvers, by default): ``||X+ - X||_F / ||X+||_F <= tol`` (an iterate
with ``||X+||_F = 0`` never counts as converged), or ``max_iter`` iterations.

Timing (one clock for all methods): ``fit_time`` is the wall time from the
step-size computation (``||T||``, or ``||[Phi, 1]||`` for ova; cached on the
operator, so a second fit on the same operator does not pay it again) to the
end of the iteration loop. The clock is stopped while a trace entry
(objective, relative distance) is evaluated, so a trace does not change the
reported time. Not timed: checking and converting the input to float64 (the
operator's construction), setting up the compiled kernel
(:mod:`sparsesvm.solvers._kernels`: compiled or loaded from its cache before the clock
starts), and the certificate of the returned point. liblinear's clock
(:class:`sparsesvm.CrammerSingerSVC`) likewise starts on float64 input and
covers its own set-up (the conversion to its sparse row format) and its loop.

Step sizes of the primal-dual solvers: only the product ``tau * sigma`` is
constrained (``tau * sigma * nrm**2 = 1`` with ``nrm = ||T||`` for hinge-reg,
``max(||T||, 1)`` for hinge-con and ``sqrt(||T||**2 + 1)`` for hinge-lin); the
balance ``step_ratio = sigma / tau`` is free::

    tau = 1 / (nrm * sqrt(step_ratio)),   sigma = sqrt(step_ratio) / nrm.

See :data:`DEFAULT_STEP_RATIO` for how its default was chosen.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from . import _kernels
from .._sparse import issparse

from ..model.losses import hinge_loss, logistic_loss, squared_hinge_loss
from ..model.projections import _project_epigraph_hinge, _project_halfspace, _project_simplex

__all__ = [
    "SolverResult",
    "DEFAULT_STEP_RATIO",
    "hinge_reg",
    "hinge_con",
    "hinge_lin",
    "square",
    "logit",
    "ova",
    "hinge_loss",
    "squared_hinge_loss",
    "logistic_loss",
]

#: Default balance ``sigma / tau`` of the primal-dual step sizes
#: (hinge-reg, hinge-con, hinge-lin).
#:
#: Chosen by measurement with ``benchmarks/bench_iteration.py`` (l1inf,
#: within-class groups; single-threaded BLAS; 2026-11):
#:
#: * leukemia-like random problem (L=38, M=7129, K=3, groups of 5), hinge-reg,
#:   alpha=1: relative objective gap to CVXPY after 5000 iterations (the 1e-5
#:   rule had not fired for any ratio) 6.3 % (ratio 0.1), 3.2 % (1), 1.9 % (10),
#:   1.5 % (100);
#: * MNIST-like random problem (L=100, M=3969, K=10, groups of 81): hinge-reg
#:   at alpha=0.01, objective after 1500 iterations 1741 (ratio 1), 576 (10),
#:   210 (100), 100 (1000); hinge-con at alpha=0.1: ratios 1 and 10 were still
#:   infeasible after 1500 iterations (violation 2.4 % and 1.3 % of eta), 100
#:   feasible with g=32.6, 1000 feasible with g=35.4;
#: * small random problems of the tests (L=18, M=5, K=3): 10 and 100 similar,
#:   1 slower.
#:
#: 100 is best or close to it on all of these. The best ratio grows with the
#: scale of the dual variables (for hinge-reg, entries up to lambda = 1/alpha),
#: so for small alpha larger ratios may pay off: it is a parameter.
DEFAULT_STEP_RATIO = 100.0


@dataclass
class SolverResult:
    """Outcome of one solver run.

    Attributes
    ----------
    X : ndarray of shape (M + 1, K)
        Solution; last row = biases.
    n_iter : int
        Iterations done.
    converged : bool
        Whether the relative-change rule fired before ``max_iter``.
    objective : float
        ``g(X) + lam * loss(X)`` (hinge-reg, square, logit, ova: summed over
        classes) or ``g(X)`` (hinge-con, hinge-lin).
    constraint_violation : float
        ``max(0, loss(X) - eta)`` for hinge-con and hinge-lin, else 0.0.
    fit_time : float
        Seconds spent in the step-size norm and the iteration loop, trace
        evaluation excluded (see the module docstring, "Timing").
    trace : dict of 1-D ndarrays or None
        ``iteration``, ``time`` (loop seconds so far), ``rel_change``,
        ``objective`` and, when a reference was given, ``rel_dist``
        ``= ||X_i - X_ref||_F / ||X_ref||_F``. ``None`` when no trace was asked.
    rel_gap : float
        Certified relative duality gap of the returned point
        (:mod:`sparsesvm.model.certificates`), for every method.
    """

    X: np.ndarray
    n_iter: int
    converged: bool
    objective: float
    constraint_violation: float = 0.0
    fit_time: float = 0.0
    trace: dict | None = field(default=None, repr=False)
    rel_gap: float = float("nan")


# --------------------------------------------------------------------------- #
# bookkeeping shared by all solvers
# --------------------------------------------------------------------------- #
class _Clock:
    """Loop timer that can be paused while a trace entry is evaluated."""

    def __init__(self):
        self.total = 0.0
        self._t = time.perf_counter()

    def pause(self):
        now = time.perf_counter()
        self.total += now - self._t
        return self.total

    def resume(self):
        self._t = time.perf_counter()

    def stop(self):
        return self.pause()


class _Trace:
    def __init__(self, every, reference):
        self.every = int(every)
        if reference is not None:
            reference = np.asarray(reference, dtype=np.float64)
            nref = np.linalg.norm(reference)
            if nref == 0:
                raise ValueError("reference solution must be non-zero for rel_dist")
            self.ref, self.nref = reference, nref
        else:
            self.ref = None
        self.data = {"iteration": [], "time": [], "rel_change": [], "objective": []}
        if self.ref is not None:
            self.data["rel_dist"] = []

    def due(self, it, last):
        return it % self.every == 0 or last

    def add(self, it, t, rel, obj, X):
        d = self.data
        d["iteration"].append(it)
        d["time"].append(t)
        d["rel_change"].append(rel)
        d["objective"].append(obj)
        if self.ref is not None:
            d["rel_dist"].append(float(np.linalg.norm(X - self.ref) / self.nref))

    def result(self):
        out = {k: np.asarray(v, dtype=np.int64 if k == "iteration" else np.float64)
               for k, v in self.data.items()}
        return out


def _trace_every(trace):
    if trace is None or trace is False:
        return 0
    if trace is True:
        return 1
    if isinstance(trace, (int, np.integer)) and trace >= 1:
        return int(trace)
    raise ValueError(f"trace must be a bool or a positive int (record every n iterations), got {trace!r}")


def _check_common(tol, max_iter, step_ratio=None):
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if step_ratio is not None and not (np.isfinite(step_ratio) and step_ratio > 0):
        raise ValueError(f"step_ratio must be a finite number > 0, got {step_ratio!r}")


class _RelChange:
    """The paper's stopping measure ``||X+ - X||_F / ||X+||_F``, without a temporary.

    ``||X+ - X||^2 = ||X+||^2 + ||X||^2 - 2 <X+, X>`` from two inner products
    (``||X||^2`` is kept from the previous call). The cancellation error of this
    form is about ``1e-15 ||X+||^2``, i.e. a relative error below 1e-3 on the
    measure while it is above 1e-6; below that, the difference is formed
    explicitly. ``inf`` while ``X+ = 0`` (it cannot count).
    """

    def __init__(self, X0):
        self.sq = float(np.vdot(X0, X0))

    def __call__(self, Xn, X):
        xn = Xn.ravel()
        return self.from_products(float(xn @ xn), float(xn @ X.ravel()), Xn, X)

    def from_products(self, nn, cross, Xn, X):
        """The measure from ``nn = ||X+||^2`` and ``cross = <X+, X>``."""
        d2 = nn + self.sq - 2.0 * cross
        self.sq = nn
        if nn == 0.0:
            return np.inf
        if d2 <= 1e-12 * nn:
            D = Xn - X
            d2 = float(np.vdot(D, D))
        return float(np.sqrt(d2 / nn))


class _PrimalStep:
    """The primal update of the primal-dual loops and the stopping measure.

    ``X+ = prox_{tau g}(X - tau V)`` (``V = T^T Y``, overwritten) and
    ``||X+ - X||_F / ||X+||_F``. On problems with at least
    :data:`sparsesvm.solvers._kernels.MIN_SIZE` parameters and numba installed, one
    compiled pass does both (:mod:`sparsesvm.solvers._kernels`); otherwise numpy.
    """

    def __init__(self, penalty, X0, tau=None):
        self.penalty, self.tau = penalty, tau  # tau may be set later (after the clock starts)
        self.fused = _kernels.fused_step(penalty, X0.size)  # compiles or loads the kernel: not timed
        self.measure = _RelChange(X0)

    def __call__(self, X, V):
        if self.fused is not None:
            nn, cross = self.fused(X, V, self.tau, V)
            return V, self.measure.from_products(nn, cross, V, X)
        V *= -self.tau
        V += X
        Xn = self.penalty.prox(V, self.tau, check_input=False)
        return Xn, self.measure(Xn, X)


def _dual_rel_change(Yn, Y):
    """``||Y+ - Y||_F / ||Y+||_F`` (``inf`` while ``Y+ = 0``).

    hinge-reg's measure while the primal iterate stays exactly 0: from
    ``X = 0`` the first iterates can stay 0 (the paper's measure is then 0/0,
    which cannot count), but when the solution is ``W = 0`` (large alpha) they
    stay 0 for good. ``(0, Y)`` with ``Y+ = Y`` is a fixed point of the
    iteration, hence a saddle point: the dual's relative change tells the two
    cases apart, instead of running to ``max_iter`` at the solution.
    """
    n = np.linalg.norm(Yn)
    return float(np.linalg.norm(Yn - Y) / n) if n > 0 else np.inf


def _pd_steps(nrm, step_ratio):
    r = np.sqrt(step_ratio)
    return 1.0 / (nrm * r), r / nrm


#: iterations between two duality-gap evaluations under ``stopping="gap"``
#: (one gap costs about two products with Phi, i.e. one iteration).
GAP_CHECK_EVERY = 50

STOPPING_RULES = ("rel_change", "gap")


class _Stopper:
    """The stopping rule of the exact-hinge loops.

    ``"rel_change"``: ``||X+ - X||_F / ||X+||_F <= tol`` (the paper's rule).
    ``"gap"``: the certified relative duality gap of (X, Y)
    (:func:`sparsesvm.model.certificates.certify`; for the constrained forms, where
    no scaling of X is feasible, a relative KKT measure, see
    :meth:`rel_gap`) ``<= tol``, evaluated every
    :data:`GAP_CHECK_EVERY` iterations (its cost is part of the fit time).
    """

    def __init__(self, stopping, method, op, penalty, *, lam=None, eta=None):
        if stopping not in STOPPING_RULES:
            raise ValueError(f"unknown stopping {stopping!r}; expected one of {STOPPING_RULES}")
        self.gap = stopping == "gap"
        self.args = (method, op, penalty)
        self.kw = {"lam": lam, "eta": eta}

    def rel_gap(self, X, Y, TX):
        """Certified relative gap; for the constrained forms, when no scaling
        of X is feasible, the relative KKT measure ``max(|g(X) - D| / D,
        violation / eta)`` (PDLP-style: gap at X plus relative infeasibility)."""
        from ..model.certificates import certify

        res = certify(*self.args, X, Y, TX=TX, **self.kw)
        eta = self.kw["eta"]
        if np.isfinite(res.rel_gap) or eta is None:
            return float(res.rel_gap)
        gX = self.args[2].value(X)
        gap = abs(gX - res.dual) / res.dual if res.dual > 0 else np.inf
        return float(max(gap, res.violation / eta))

    def __call__(self, it, rel, tol, X, Y, TX):
        if not self.gap:
            return rel <= tol
        return it % GAP_CHECK_EVERY == 0 and self.rel_gap(X, Y, TX) <= tol


# --------------------------------------------------------------------------- #
# Algorithm 1: hinge-reg
# --------------------------------------------------------------------------- #
def hinge_reg(op, penalty, lam, *, tol=1e-5, max_iter=100000, step_ratio=DEFAULT_STEP_RATIO,
              trace=False, reference=None, stopping="rel_change"):
    """Regularised exact-hinge problem by Algorithm 1 (primal-dual, Chambolle-Pock).

    ``minimize_X g(X) + lam * sum_l h_l((T X)[l, :])``.

    Parameters
    ----------
    op : MulticlassOperator
        Operator ``T`` built from ``Phi`` (L, M) and the labels.
    penalty : Penalty
        ``g`` with ``value(X)`` and ``prox(X, step)``; X of shape (M + 1, K).
    lam : float > 0
        Weight of the hinge loss.
    tol : float
        Relative-change tolerance (while ``X`` stays exactly 0, applied to the
        dual iterate ``Y``: see :func:`_dual_rel_change`).
    max_iter : int
        Iteration cap.
    step_ratio : float > 0
        ``sigma / tau``; ``tau * sigma * ||T||**2 = 1``.
    trace : bool or int
        Record a trace entry every iteration (True) or every ``trace`` iterations.
    reference : ndarray (M + 1, K), optional
        Solution used for the ``rel_dist`` trace entry.
    stopping : {"rel_change", "gap"}
        ``"rel_change"``: the paper's rule, relative change ``<= tol``;
        ``"gap"``: certified relative duality gap ``<= tol`` (checked every
        :data:`GAP_CHECK_EVERY` iterations).

    Returns
    -------
    SolverResult
        ``objective = g(X) + lam * loss(X)``; ``rel_gap`` the certified
        relative gap of the returned point (computed after the clock stops).

    Notes
    -----
    Iteration (X, Y of shapes (M+1, K), (L, K))::

        X+ = prox_{tau g}(X - tau T^T Y)
        Y+ = P_{S_lam}(Y + sigma (2 T X+ - T X) + sigma R)     (row-wise simplex)

    ``T X`` is kept from the previous iteration, so each iteration does one
    product with ``Phi`` and one with ``Phi^T``. Where the compiled primal step
    is used (:class:`_PrimalStep`), the dual update is one compiled pass too
    (:func:`sparsesvm.solvers._kernels.simplex_step`).
    """
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    _check_common(tol, max_iter, step_ratio)
    stop = _Stopper(stopping, "hinge-reg", op, penalty, lam=lam)
    every = _trace_every(trace)
    R = op.R
    shape = (op.n_features + 1, op.n_classes)
    X = np.zeros(shape)
    primal = _PrimalStep(penalty, X)
    dual = _kernels.simplex_step(X.size)  # compiled dual update, or None (numpy)
    clock = _Clock()
    tau, sigma = _pd_steps(op.norm(), step_ratio)
    primal.tau = tau
    Y = np.zeros_like(R, dtype=np.float64)
    TX = np.zeros_like(Y)
    sR = sigma * R
    tr = _Trace(every, reference) if every else None
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        Xn, rel = primal(X, op.T_adjoint(Y))
        TXn = op.T(Xn)
        if dual is not None:
            nn, dd = dual(Y, TX, TXn, sR, sigma, lam, TX)  # one pass, in the old TX buffer
            Yn = TX
            if rel == np.inf and not X.any():
                rel = float(np.sqrt(dd / nn)) if nn > 0 else np.inf
        else:
            # Y + sigma*(2 TXn - TX) + sigma R, built in the buffer of the old TX
            TX -= TXn
            TX -= TXn
            TX *= -sigma
            TX += Y
            TX += sR
            Yn = _project_simplex(TX, lam)
            if rel == np.inf and not X.any():
                rel = _dual_rel_change(Yn, Y)  # X = X+ = 0: a fixed point once Y stops too
        X, TX, Y = Xn, TXn, Yn
        converged = stop(it, rel, tol, X, Y, TX)
        if tr is not None and tr.due(it, converged):
            t = clock.pause()
            tr.add(it, t, rel, penalty.value(X) + lam * hinge_loss(TX, R), X)
            clock.resume()
        if converged:
            break
    fit_time = clock.stop()
    obj = penalty.value(X) + lam * hinge_loss(TX, R)
    return SolverResult(X, it, converged, obj, 0.0, fit_time, tr.result() if tr else None,
                        stop.rel_gap(X, Y, TX))


# --------------------------------------------------------------------------- #
# Algorithm 2: hinge-con
# --------------------------------------------------------------------------- #
def _trivial_constrained(op, penalty, eta, every, reference):
    """X = 0 solves the constrained problem when ``eta >= L`` (loss(0) = L, g(0) = 0 = min g)."""
    X = np.zeros((op.n_features + 1, op.n_classes))
    tr = None
    if every:
        tr = _Trace(every, reference)
        tr.add(0, 0.0, 0.0, 0.0, X)
        tr = tr.result()
    return SolverResult(X, 0, True, 0.0, 0.0, 0.0, tr, rel_gap=0.0)


def hinge_con(op, penalty, eta, *, tol=1e-5, max_iter=100000, step_ratio=DEFAULT_STEP_RATIO,
              trace=False, reference=None, stopping="rel_change"):
    """Constrained exact-hinge problem by Algorithm 2 (epigraphical splitting).

    ``minimize_X g(X)  s.t.  sum_l h_l((T X)[l, :]) <= eta``.

    Parameters
    ----------
    op, penalty, tol, max_iter, trace, reference, stopping
        As in :func:`hinge_reg`.
    eta : float > 0
        Bound on the total hinge loss.
    step_ratio : float > 0
        ``sigma / tau``; ``tau * sigma * max(||T||**2, 1) = 1``.

    Returns
    -------
    SolverResult
        ``objective = g(X)``, ``constraint_violation = max(0, loss(X) - eta)``.

    Notes
    -----
    Variables X (M+1, K), zeta (L,), duals Y (L, K), xi (L,)::

        X+    = prox_{tau g}(X - tau T^T Y)
        zeta+ = P_{V_eta}(zeta - tau xi)
        Yh    = Y + sigma (2 T X+ - T X);   xih = xi + sigma (2 zeta+ - zeta)
        (Yt, xit) = P_epi(Yh / sigma, xih / sigma)     (row l: epigraph of h_l)
        Y+ = Yh - sigma Yt;   xi+ = xih - sigma xit

    When ``eta >= L`` the problem is solved by ``X = 0`` (its loss is exactly
    ``L`` and ``g(0) = 0`` is the minimum of ``g``): that case returns at once
    with ``n_iter = 0`` (the iteration would otherwise never meet the
    relative-change rule, ``||X|| = 0``). Where the compiled primal step is
    used (:class:`_PrimalStep`), the half-space step and the dual update are
    one compiled pass too (:func:`sparsesvm.solvers._kernels.epigraph_step`).
    """
    if not (np.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
    _check_common(tol, max_iter, step_ratio)
    stop = _Stopper(stopping, "hinge-con", op, penalty, eta=eta)
    every = _trace_every(trace)
    if eta >= op.n_samples:
        return _trivial_constrained(op, penalty, eta, every, reference)
    R = op.R
    L = op.n_samples
    X = np.zeros((op.n_features + 1, op.n_classes))
    primal = _PrimalStep(penalty, X)
    dual = _kernels.epigraph_step(X.size)  # compiled dual update, or None (numpy)
    clock = _Clock()
    tau, sigma = _pd_steps(max(op.norm(), 1.0), step_ratio)
    primal.tau = tau
    Y = np.zeros((L, op.n_classes))
    TX = np.zeros_like(Y)
    zeta = np.zeros(L)
    xi = np.zeros(L)
    zbuf = np.empty(L)  # the compiled path's other half-space buffer (it swaps with zeta)
    tr = _Trace(every, reference) if every else None
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        Xn, rel = primal(X, op.T_adjoint(Y))
        if dual is not None:
            TXn = op.T(Xn)
            # half-space step, over-relaxation and epigraph projection in one pass;
            # the new Y in the old TX buffer, xi in place, zeta+ in zbuf
            dual(Y, TX, TXn, R, zeta, xi, sigma, tau, eta, TX, zbuf)
            Y = TX
            zn, zbuf = zbuf, zeta
        else:
            zn = _project_halfspace(zeta - tau * xi, eta)
            TXn = op.T(Xn)
            # Yh / sigma = Y / sigma + 2 TXn - TX  (built in the old TX buffer)
            TX -= TXn
            TX -= TXn
            TX *= -1.0
            TX += Y / sigma
            xis = xi / sigma + 2.0 * zn - zeta
            P, theta = _project_epigraph_hinge(TX, xis, R)
            TX -= P
            TX *= sigma
            Y = TX
            xi = sigma * (xis - theta)
        X, TX, zeta = Xn, TXn, zn
        converged = stop(it, rel, tol, X, Y, TX)
        if tr is not None and tr.due(it, converged):
            t = clock.pause()
            tr.add(it, t, rel, penalty.value(X), X)
            clock.resume()
        if converged:
            break
    fit_time = clock.stop()
    viol = max(0.0, hinge_loss(TX, R) - eta)
    return SolverResult(X, it, converged, penalty.value(X), viol, fit_time,
                        tr.result() if tr else None, stop.rel_gap(X, Y, TX))


# --------------------------------------------------------------------------- #
# hinge-lin: linear-constraint baseline
# --------------------------------------------------------------------------- #
def _project_capped_orthant(m, eta):
    """Projection of m (L,) onto {c >= 0, sum c <= eta}."""
    p = np.maximum(m, 0.0)
    if p.sum() <= eta:
        return p
    return _project_simplex(m[None, :], eta)[0]


def hinge_lin(op, penalty, eta, *, tol=1e-5, max_iter=100000, step_ratio=DEFAULT_STEP_RATIO,
              trace=False, reference=None, stopping="rel_change"):
    """Constrained problem with linear constraints (LP-style timing baseline).

    Variables X and zeta (L, K) with ``zeta[l, :]`` constant along k,
    ``zeta >= 0``, ``sum zeta <= K eta`` and ``T X + R - zeta <= 0``;
    minimise ``g(X)``. Same solution set in X as :func:`hinge_con`.

    Parameters
    ----------
    op, penalty, eta, tol, max_iter, trace, reference, stopping
        As in :func:`hinge_con`.
    step_ratio : float > 0
        ``sigma / tau``; ``tau * sigma * (||T||**2 + 1) = 1``.

    Returns
    -------
    SolverResult
        ``objective = g(X)``, ``constraint_violation = max(0, loss(X) - eta)``
        (loss = the exact hinge of X, not the slack sum).

    Notes
    -----
    FBPD with the operator ``(X, zeta) -> T X - zeta``. zeta has constant rows,
    so it is stored as ``c`` (L,) with ``zeta = c 1^T``; its projection
    averages over k and projects the L averages onto ``{c >= 0, sum c <= eta}``::

        X+ = prox_{tau g}(X - tau T^T Y)
        c+ = P(c + tau * mean_k Y)
        Y+ = max(0, Y + sigma (2 T X+ - T X - (2 c+ - c) 1^T) + sigma R)

    ``eta >= L`` returns ``X = 0`` at once (see :func:`hinge_con`).
    """
    if not (np.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
    _check_common(tol, max_iter, step_ratio)
    stop = _Stopper(stopping, "hinge-lin", op, penalty, eta=eta)
    every = _trace_every(trace)
    if eta >= op.n_samples:
        return _trivial_constrained(op, penalty, eta, every, reference)
    R = op.R
    L = op.n_samples
    X = np.zeros((op.n_features + 1, op.n_classes))
    primal = _PrimalStep(penalty, X)
    clock = _Clock()
    nrm = float(np.sqrt(op.norm() ** 2 + 1.0))
    tau, sigma = _pd_steps(nrm, step_ratio)
    primal.tau = tau
    Y = np.zeros((L, op.n_classes))
    TX = np.zeros_like(Y)
    c = np.zeros(L)
    sR = sigma * R
    tr = _Trace(every, reference) if every else None
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        Xn, rel = primal(X, op.T_adjoint(Y))
        cn = _project_capped_orthant(c + tau * Y.mean(axis=1), eta)
        TXn = op.T(Xn)
        TX -= TXn
        TX -= TXn
        TX += (2.0 * cn - c)[:, None]
        TX *= -sigma
        TX += Y
        TX += sR
        np.maximum(TX, 0.0, out=TX)
        Y = TX
        X, TX, c = Xn, TXn, cn
        converged = stop(it, rel, tol, X, Y, TX)
        if tr is not None and tr.due(it, converged):
            t = clock.pause()
            tr.add(it, t, rel, penalty.value(X), X)
            clock.resume()
        if converged:
            break
    fit_time = clock.stop()
    viol = max(0.0, hinge_loss(TX, R) - eta)
    return SolverResult(X, it, converged, penalty.value(X), viol, fit_time,
                        tr.result() if tr else None, stop.rel_gap(X, Y, TX))


# --------------------------------------------------------------------------- #
# FISTA baselines on T: square and logit
# --------------------------------------------------------------------------- #
def _grad_square(TV, R):
    # d/dV of sum max(0, TV + R)^2 is 2 T^T max(0, TV + R) (z_l column is 0)
    P = TV + R
    np.maximum(P, 0.0, out=P)
    P *= 2.0
    return P


def _grad_logit(TV, R):
    P = TV + R
    P -= P.max(axis=1, keepdims=True)
    np.exp(P, out=P)
    P /= P.sum(axis=1, keepdims=True)
    return P


def _smooth_rel_gap(method, Phi, y_idx, penalty, lam, X, S=None):
    """Certified relative duality gap of a smooth baseline at X
    (:func:`sparsesvm.model.certificates.smooth_gap_scores`)."""
    from ..model.certificates import smooth_gap_scores
    from ..model.penalties import make_penalty

    geo = make_penalty(penalty.name, penalty.groups, X.shape[0] - 1, X.shape[1])
    if S is None:
        S = np.asarray(Phi @ X[:-1]) + X[-1]
    return float(smooth_gap_scores(method, Phi, y_idx, S, X[:-1], geo, lam).rel_gap)


SMOOTH_SCHEMES = ("fista", "fb")


def _fista_T(op, penalty, lam, dual_fn, loss_fn, curvature, tol, max_iter, trace, reference,
             method="square", stopping="rel_change", scheme="fista"):
    """FISTA with gradient-based adaptive restart (``scheme="fista"``) or plain
    forward-backward (``scheme="fb"``) on ``g(X) + lam * f(T X)``.

    Step ``1 / (curvature * lam * ||T||**2)`` (the gradient's Lipschitz
    constant; ``||T||`` on the clock).
    Each iteration does one ``T`` (at the extrapolated point) and one ``T^T``.
    ``stopping="gap"``: the certified relative gap of X (``method``'s
    certificate) ``<= tol``, checked every :data:`GAP_CHECK_EVERY` iterations.
    """
    _check_common(tol, max_iter)
    if stopping not in STOPPING_RULES:
        raise ValueError(f"unknown stopping {stopping!r}; expected one of {STOPPING_RULES}")
    if scheme not in SMOOTH_SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {SMOOTH_SCHEMES}")
    every = _trace_every(trace)
    R = op.R
    clock = _Clock()
    step = 1.0 / (curvature * lam * op.norm() ** 2)
    X = np.zeros((op.n_features + 1, op.n_classes))
    V = X.copy()
    TV = np.zeros_like(R, dtype=np.float64)
    t = 1.0
    tr = _Trace(every, reference) if every else None
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        G = op.T_adjoint(dual_fn(TV, R))
        G *= -step * lam
        G += V
        Xn = penalty.prox(G, step, check_input=False)
        D = Xn - X
        nrm = np.linalg.norm(Xn)
        rel = float(np.linalg.norm(D) / nrm) if nrm > 0 else np.inf
        if scheme == "fista":
            # adaptive restart (O'Donoghue & Candes): momentum against the step
            if np.vdot(V - Xn, D) > 0:
                t = 1.0
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            D *= (t - 1.0) / tn
            D += Xn
            V = D
            t = tn
        else:
            V = Xn
        X = Xn
        if stopping == "gap":
            converged = (it % GAP_CHECK_EVERY == 0
                         and _smooth_rel_gap(method, op.Phi, op.y_idx, penalty, lam, X) <= tol)
        else:
            converged = rel <= tol
        if not converged:
            TV = op.T(V)
        if tr is not None and tr.due(it, converged):
            tm = clock.pause()
            tr.add(it, tm, rel, penalty.value(X) + lam * loss_fn(op.T(X), R), X)
            clock.resume()
        if converged:
            break
    fit_time = clock.stop()
    obj = penalty.value(X) + lam * loss_fn(op.T(X), R)
    return SolverResult(X, it, converged, obj, 0.0, fit_time, tr.result() if tr else None,
                        _smooth_rel_gap(method, op.Phi, op.y_idx, penalty, lam, X))


def square(op, penalty, lam, *, tol=1e-5, max_iter=100000, trace=False, reference=None,
           stopping="rel_change"):
    """Squared multiclass hinge (Blondel et al. 2013) by FISTA.

    ``minimize_X g(X) + lam * sum_l sum_{k != z_l} max(0, (T X + R)[l, k])**2``.

    Parameters
    ----------
    op, penalty, lam, tol, max_iter, trace, reference
        As in :func:`hinge_reg`.
    stopping : {"rel_change", "gap"}
        The paper's relative-change rule, or the certified relative duality
        gap (:func:`sparsesvm.model.certificates.smooth_gap`) ``<= tol``.

    Returns
    -------
    SolverResult
        ``rel_gap``: the certified relative gap of the returned point.

    Notes
    -----
    Step ``1 / (2 lam ||T||**2)`` (the gradient's Lipschitz constant); FISTA
    with gradient-based adaptive restart.
    """
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    return _fista_T(op, penalty, lam, _grad_square, squared_hinge_loss, 2.0, tol, max_iter,
                    trace, reference, method="square", stopping=stopping)


def logit(op, penalty, lam, *, tol=1e-5, max_iter=100000, trace=False, reference=None,
          stopping="rel_change", scheme="fb"):
    """Multinomial logistic regression by forward-backward (the paper's) or FISTA.

    ``minimize_X g(X) + lam * sum_l log sum_k exp((T X + R)[l, k])``.

    Parameters
    ----------
    op, penalty, lam, tol, max_iter, trace, reference
        As in :func:`hinge_reg`.
    stopping : {"rel_change", "gap"}
        As in :func:`square`.
    scheme : {"fb", "fista"}
        ``"fb"`` (default): the paper's forward-backward iteration (spec
        section 4); ``"fista"``: FISTA with gradient-based adaptive restart
        (this package's solver for logit before issue 13).

    Returns
    -------
    SolverResult
        ``rel_gap``: the certified relative gap of the returned point.

    Notes
    -----
    The Hessian of log-sum-exp has norm <= 1/2, so the gradient is Lipschitz
    with constant ``lam ||T||**2 / 2``; step ``1 / that``.
    """
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    return _fista_T(op, penalty, lam, _grad_logit, logistic_loss, 0.5, tol, max_iter,
                    trace, reference, method="logit", stopping=stopping, scheme=scheme)


# --------------------------------------------------------------------------- #
# one-vs-all squared hinge
# --------------------------------------------------------------------------- #
def _augmented_norm(Phi, max_iter=200, tol=1e-6):
    """``||[Phi, 1]||_2`` by power iteration (Phi dense or CSR, float64)."""
    rng = np.random.default_rng(0)
    v = rng.standard_normal(Phi.shape[1] + 1)
    v /= np.linalg.norm(v)
    est = 0.0
    for _ in range(max_iter):
        u = Phi @ v[:-1] + v[-1]
        w = np.empty_like(v)
        w[:-1] = Phi.T @ u
        w[-1] = u.sum()
        new = np.linalg.norm(w)
        if new == 0:
            return 0.0
        v = w / new
        if abs(new - est) <= tol * new:
            est = new
            break
        est = new
    return float(np.sqrt(est))


def ova(Phi, y_idx, n_classes, penalty, lam, *, tol=1e-5, max_iter=100000, trace=False,
        reference=None, make_penalty=None, stopping="rel_change"):
    """One-vs-all squared hinge: one FISTA per class, run side by side.

    For each class k: ``minimize_x g_k(x) + lam * sum_l max(0, 1 - y_l s_l)**2``
    with ``s = Phi w + b`` and ``y_l = +1`` if ``z_l = k`` else ``-1``.

    Parameters
    ----------
    Phi : ndarray (L, M) or CSR
        Features (converted to float64).
    y_idx : int ndarray (L,)
        Class indices in ``0..n_classes-1``.
    n_classes : int
    penalty : Penalty
        Column-separable ``g`` (l2, l1, or within-class groups).
    lam, tol, max_iter, trace, reference
        As in :func:`hinge_reg`; ``tol`` applies to each class separately.
    make_penalty : callable, optional
        ``make_penalty(n_active)`` returning the same penalty for ``n_active``
        classes (used once classes drop out); defaults to
        ``penalties.make_penalty(penalty.name, penalty.groups, M, n_active)``.
    stopping : {"rel_change", "gap"}
        ``"gap"``: all K classes run until the certified relative gap of the
        whole problem (:func:`sparsesvm.model.certificates.smooth_gap`) is
        ``<= tol``, checked every :data:`GAP_CHECK_EVERY` iterations.

    Returns
    -------
    SolverResult
        ``n_iter`` = iterations of the slowest class; ``converged`` = every class
        met the rule; ``objective`` = sum over classes; ``rel_gap``: the
        certified relative gap of the returned point.

    Notes
    -----
    Each class runs its own FISTA (own momentum, own gradient-based restart,
    own stopping rule); the K runs share the products with ``Phi`` until a
    class stops, after which it is left out. Step ``1 / (2 lam ||[Phi, 1]||**2)``.
    """
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    if getattr(penalty, "groups", None) == "features":
        raise ValueError("ova cannot use across-class groups (groups='features')")
    _check_common(tol, max_iter)
    if stopping not in STOPPING_RULES:
        raise ValueError(f"unknown stopping {stopping!r}; expected one of {STOPPING_RULES}")
    every = _trace_every(trace)
    if issparse(Phi):
        import scipy.sparse as sp

        Phi = sp.csr_matrix(Phi, dtype=np.float64)
    else:
        Phi = np.ascontiguousarray(Phi, dtype=np.float64)
    L, M = Phi.shape
    K = int(n_classes)
    y_idx = np.asarray(y_idx)
    Ypm = -np.ones((L, K))
    Ypm[np.arange(L), y_idx] = 1.0
    if make_penalty is None:
        from ..model.penalties import make_penalty as _mk

        def make_penalty(n):
            return _mk(penalty.name, penalty.groups, M, n)
    pens = {K: penalty}
    clock = _Clock()
    step = 1.0 / (2.0 * lam * _augmented_norm(Phi) ** 2)

    def loss_grad(Xa, Ya):
        S = Phi @ Xa[:-1] + Xa[-1]
        S *= Ya
        P = np.subtract(1.0, S, out=S)
        np.maximum(P, 0.0, out=P)
        return P  # residual; gradient wrt scores = -2 * Ya * P

    def full_obj(Xf):
        P = loss_grad(Xf, Ypm)
        return penalty.value(Xf) + lam * float(np.vdot(P, P))

    X = np.zeros((M + 1, K))
    V = X.copy()
    t = np.ones(K)
    active = np.arange(K)
    n_it = np.zeros(K, dtype=np.int64)
    conv = np.zeros(K, dtype=bool)
    tr = _Trace(every, reference) if every else None
    it = 0
    for it in range(1, int(max_iter) + 1):
        full = active.size == K
        Va = V if full else V[:, active]
        Xa = X if full else X[:, active]
        Ya = Ypm if full else Ypm[:, active]
        P = loss_grad(Va, Ya)
        P *= Ya
        P *= 2.0 * lam * step  # step * gradient wrt scores, sign flipped
        G = np.empty_like(Va)
        G[:-1] = Phi.T @ P
        G[-1] = P.sum(axis=0)
        G += Va
        na = active.size
        if na not in pens:
            pens[na] = make_penalty(na)
        Xn = pens[na].prox(G, step)
        D = Xn - Xa
        nx = np.linalg.norm(Xn, axis=0)
        nd = np.linalg.norm(D, axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel_cols = np.where(nx > 0, nd / nx, np.inf)
        restart = np.einsum("ij,ij->j", Va - Xn, D) > 0
        ta = t[active]
        ta[restart] = 1.0
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * ta * ta))
        D *= (ta - 1.0) / tn
        D += Xn
        X[:, active] = Xn
        V[:, active] = D
        t[active] = tn
        n_it[active] = it
        if stopping == "gap":
            ok = it % GAP_CHECK_EVERY == 0 and _smooth_rel_gap("ova", Phi, y_idx, penalty, lam, X) <= tol
            done = np.full(active.size, ok)
        else:
            done = rel_cols <= tol
        conv[active[done]] = True
        nX = np.linalg.norm(X)
        rel = float(np.sqrt(np.sum(nd ** 2)) / nX) if nX > 0 else np.inf
        active = active[~done]
        last = active.size == 0
        if tr is not None and tr.due(it, last):
            tm = clock.pause()
            tr.add(it, tm, rel, full_obj(X), X)
            clock.resume()
        if last:
            break
    fit_time = clock.stop()
    return SolverResult(X, int(n_it.max()), bool(conv.all()), full_obj(X), 0.0, fit_time,
                        tr.result() if tr else None,
                        _smooth_rel_gap("ova", Phi, y_idx, penalty, lam, X))
