"""The one primal-dual loop of hinge-reg, hinge-con and hinge-lin, and the bookkeeping of every solver.

:func:`primal_dual` runs the iteration shared by Algorithms 1 and 2 of the
paper (:mod:`sparsesvm.solvers.paper`) and the linear-constraint baseline
(:mod:`sparsesvm.solvers.baselines`)::

    X+ = prox_{tau g}(X - tau T^T Y)          (PrimalStep, the same for all three)
    (Y+, T X+) = dual step(X, X+, Y, T X)     (DualStep: the one part that differs)

with the clock, the trace, the stopping rule and the result written once. The
FISTA and one-vs-all loops of the smooth baselines share the rest: the clock
(:class:`Clock`), the trace (:class:`Trace`), the checks of the common
options and :class:`SolverResult`.

Timing (one clock for all methods): ``fit_time`` is the wall time from the
step-size computation (``||T||``, or ``||[Phi, 1]||`` for ova; cached on the
operator, so a second fit on the same operator does not pay it again) to the
end of the iteration loop. The clock is stopped while a trace entry
(objective, relative distance) is evaluated, so a trace does not change the
reported time. Not timed: checking and converting the input to float64 (the
operator's construction; with sparse input, :func:`sparsesvm.core.fit` also leaves out
the features no sample uses, :func:`sparsesvm.core.unused_features_dropped`), choosing
the dense products' BLAS orientations
(:meth:`~sparsesvm.model.operator.MulticlassOperator.prepare`), setting up the compiled kernel
(:mod:`sparsesvm.solvers._kernels`: compiled or loaded from its cache before
the clock starts), and the certificate of the returned point. liblinear's clock
(:class:`sparsesvm.CrammerSingerSVC`) likewise starts on float64 input and
covers its own set-up (the conversion to its sparse row format) and its loop.

Step sizes of the primal-dual solvers: only the product ``tau * sigma`` is
constrained (``tau * sigma * nrm**2 = 1``, ``nrm`` given by the dual step:
:meth:`DualStep.step_norm`); the balance ``step_ratio = sigma / tau`` is free::

    tau = 1 / (nrm * sqrt(step_ratio)),   sigma = sqrt(step_ratio) / nrm.

See :data:`DEFAULT_STEP_RATIO` for how its default was chosen.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from . import _kernels

__all__ = [
    "DEFAULT_STEP_RATIO",
    "GAP_CHECK_EVERY",
    "STOPPING_RULES",
    "SolverResult",
    "Clock",
    "Trace",
    "trace_every",
    "check_weight",
    "check_common",
    "check_stopping",
    "RelChange",
    "RowBuffers",
    "PrimalStep",
    "pd_steps",
    "GapCheck",
    "Stopper",
    "DualStep",
    "primal_dual",
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

#: iterations between two duality-gap evaluations under ``stopping="gap"``
#: (one gap costs about two products with Phi, i.e. one iteration).
GAP_CHECK_EVERY = 50

STOPPING_RULES = ("rel_change", "gap")


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
        ``objective``, when a reference was given ``rel_dist``
        ``= ||X_i - X_ref||_F / ||X_ref||_F``, and for the exact-hinge loops
        stopping on the gap ``rel_gap`` (the rule's certified gap at the
        entry's iteration, NaN where the rule did not evaluate it). ``None``
        when no trace was asked.
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
# clock, trace and option checks (every solver)
# --------------------------------------------------------------------------- #
class Clock:
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

    def elapsed(self):
        """Loop seconds so far (the paused spans excluded), without stopping the clock."""
        return self.total + time.perf_counter() - self._t


class Trace:
    """Trace entries every ``every`` iterations (see :attr:`SolverResult.trace`).

    Parameters
    ----------
    every : int >= 1
    reference : ndarray of shape (M + 1, K) or None
        Non-zero solution for the ``rel_dist`` entry.
    gaps : bool
        Keep a ``rel_gap`` entry (the stopping rule's certified gap).
    """

    def __init__(self, every, reference, gaps=False):
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
        if gaps:
            self.data["rel_gap"] = []

    def due(self, it, last):
        return it % self.every == 0 or last

    def add(self, it, t, rel, obj, X, gap=np.nan):
        d = self.data
        d["iteration"].append(it)
        d["time"].append(t)
        d["rel_change"].append(rel)
        d["objective"].append(obj)
        if self.ref is not None:
            d["rel_dist"].append(float(np.linalg.norm(X - self.ref) / self.nref))
        if "rel_gap" in d:
            d["rel_gap"].append(float(gap))

    def record(self, clock, it, rel, X, objective, *args, gap=np.nan):
        """Add an entry, ``clock`` paused while ``objective(X, *args)`` is evaluated."""
        t = clock.pause()
        self.add(it, t, rel, objective(X, *args), X, gap)
        clock.resume()

    def result(self):
        return {k: np.asarray(v, dtype=np.int64 if k == "iteration" else np.float64)
                for k, v in self.data.items()}


def trace_every(trace):
    """Iterations between two trace entries (0: no trace) from ``trace`` (bool or int >= 1)."""
    if trace is None or trace is False:
        return 0
    if trace is True:
        return 1
    if isinstance(trace, (int, np.integer)) and trace >= 1:
        return int(trace)
    raise ValueError(f"trace must be a bool or a positive int (record every n iterations), got {trace!r}")


def check_weight(value, name):
    """Refuse a loss weight ``lam`` or bound ``eta`` that is not a finite number > 0."""
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def check_common(tol, max_iter, step_ratio=None):
    """Refuse a bad ``tol`` (finite, >= 0), ``max_iter`` (int >= 1) or ``step_ratio`` (finite, > 0)."""
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if step_ratio is not None and not (np.isfinite(step_ratio) and step_ratio > 0):
        raise ValueError(f"step_ratio must be a finite number > 0, got {step_ratio!r}")


def check_stopping(stopping):
    """Refuse a stopping rule not in :data:`STOPPING_RULES`."""
    if stopping not in STOPPING_RULES:
        raise ValueError(f"unknown stopping {stopping!r}; expected one of {STOPPING_RULES}")


# --------------------------------------------------------------------------- #
# the primal step and the stopping rules of the primal-dual loop
# --------------------------------------------------------------------------- #
class RelChange:
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


class RowBuffers:
    """The two buffers of ``X+`` that the row-by-row sparse step
    (:func:`sparsesvm.solvers._kernels.sparse_step`) writes in turn, each with its row marks
    (0: the row holds zeros the kernel wrote, which it does not write again)."""

    def __init__(self):
        self.pair = None
        self.union = None

    def other_than(self, X):
        """``(out, rows)``: the buffer that is not ``X`` (the iterate the step reads) and its
        marks; two zero arrays marked 0 at the first call."""
        if self.pair is None:
            self.pair = tuple((np.zeros_like(X), np.zeros(X.shape[0], dtype=np.uint8))
                              for _ in range(2))
            self.union = np.empty(X.shape[0], dtype=np.uint8)
        first, second = self.pair
        return second if first[0] is X else first

    def marks_of(self, X):
        """The marks of ``X`` if it is one of the two buffers, else None."""
        for buffer, rows in self.pair or ():
            if buffer is X:
                return rows
        return None

    def union_marks(self, X):
        """0 on the rows zero in both buffers (the OR of their marks, in an array kept with
        the pair) if ``X`` is one of them, else None (the other's marks tell nothing of X)."""
        if self.marks_of(X) is None:
            return None
        (_, first), (_, second) = self.pair
        return np.bitwise_or(first, second, out=self.union)


class PrimalStep:
    """The primal update of the primal-dual loops and the stopping measure.

    ``X+ = prox_{tau g}(X - tau V)`` (``V = T^T Y``, overwritten) and
    ``||X+ - X||_F / ||X+||_F``. On problems with at least
    :data:`sparsesvm.solvers._kernels.MIN_SIZE` parameters and numba installed, one
    compiled pass does both (:mod:`sparsesvm.solvers._kernels`); otherwise numpy.

    :meth:`from_dual` takes ``Y`` instead of ``V``: with a sparse ``Phi`` and a
    row-separable penalty (E3's l1,2 across classes) the compiled pass forms ``V`` row by
    row and never stores it (:func:`sparsesvm.solvers._kernels.sparse_step`), writes ``X+``
    into one of two buffers used in turn, where the rows that stay 0 are not written again,
    and keeps :attr:`rows`, the marks of ``X+``'s zero rows that ``T`` then skips
    (:meth:`~sparsesvm.model.operator.MulticlassOperator.T`) and the next step mostly
    settles by a bound, without their sums (l1,2). The values of the product
    and the step one after the other, to rounding (an l1,2 row's sum of squares may differ
    in its last bit; :func:`sparsesvm.solvers._kernels_jit.csr_step`).

    Attributes
    ----------
    rows : ndarray of uint8 of shape (M + 1,) or None
        After :meth:`from_dual` on the row-by-row path, 0 for the rows of the returned
        ``X+`` that hold zeros; None otherwise.
    """

    def __init__(self, penalty, X0, tau=None):
        self.penalty, self.tau = penalty, tau  # tau may be set later (after the clock starts)
        # compile or load the kernels: not timed
        self.fused = _kernels.fused_step(penalty, X0.size)
        self.rowwise = _kernels.sparse_step(penalty, X0.size)
        self.measure = RelChange(X0)
        self.rows = None
        self.buffers = RowBuffers()

    def from_dual(self, X, Y, op):
        """``(X+, rel)`` with ``V = T^T Y`` (``op``'s adjoint): ``self(X, op.T_adjoint(Y))``'s
        values (to rounding), ``T^T Y`` formed row by row inside the step where that serves."""
        rows = op.T_adjoint_rows(Y) if self.rowwise is not None else None
        if rows is None:
            self.rows = None
            return self(X, op.T_adjoint(Y))
        Xn, self.rows = self.buffers.other_than(X)
        # X's marks (the other buffer's, from the second step on): its zero rows, mostly settled
        nn, cross = self.rowwise(*rows, X, self.tau, Xn, self.rows, self.buffers.marks_of(X))
        return Xn, self.measure.from_products(nn, cross, Xn, X)

    def __call__(self, X, V):
        if self.fused is not None:
            nn, cross = self.fused(X, V, self.tau, V)
            return V, self.measure.from_products(nn, cross, V, X)
        V *= -self.tau
        V += X
        Xn = self.penalty.prox(V, self.tau, check_input=False)
        return Xn, self.measure(Xn, X)


def pd_steps(nrm, step_ratio):
    """``(tau, sigma)`` with ``tau * sigma * nrm**2 = 1`` and ``sigma / tau = step_ratio``."""
    r = np.sqrt(step_ratio)
    return 1.0 / (nrm * r), r / nrm


class GapCheck:
    """The certified gap as a stopping rule: ``gap_fn(*state) <= tol``, evaluated every
    :data:`GAP_CHECK_EVERY` iterations.

    It remembers the last value it computed, so that the returned point's gap
    (:meth:`final`) is not computed a second time when the rule has just computed it
    at that point.
    """

    def __init__(self, gap_fn):
        self.gap_fn = gap_fn
        self.last = None

    def __call__(self, it, tol, *state):
        if it % GAP_CHECK_EVERY:
            return False
        self.last = (it, self.gap_fn(*state))
        return self.last[1] <= tol

    def at(self, it):
        """The gap the rule computed at iteration ``it``, NaN if it computed none there."""
        return self.last[1] if self.last is not None and self.last[0] == it else np.nan

    def final(self, it, *state):
        """The gap at iteration ``it``'s point ``state`` (reused if the rule computed it)."""
        if self.last is not None and self.last[0] == it:
            return self.last[1]
        return self.gap_fn(*state)


class Stopper:
    """The stopping rule of the exact-hinge loops.

    ``"rel_change"``: ``||X+ - X||_F / ||X+||_F <= tol`` (the paper's rule).
    ``"gap"``: the certified relative duality gap of (X, Y)
    (:func:`sparsesvm.model.certificates.certify`; for the constrained forms, where
    no scaling of X is feasible, a relative KKT measure, see
    :meth:`rel_gap`) ``<= tol``, evaluated every
    :data:`GAP_CHECK_EVERY` iterations (its cost is part of the fit time).
    """

    def __init__(self, stopping, method, op, penalty, *, lam=None, eta=None):
        check_stopping(stopping)
        self.gap = stopping == "gap"
        self.args = (method, op, penalty)
        self.kw = {"lam": lam, "eta": eta}
        self.check = GapCheck(self.rel_gap)

    def rel_gap(self, X, Y, TX, op=None):
        """Certified relative gap; for the constrained forms, when no scaling
        of X is feasible, the relative KKT measure ``max(|g(X) - D| / D,
        violation / eta)`` (PDLP-style: gap at X plus relative infeasibility).
        ``op``: another operator for the same problem (default: the loop's)."""
        from ..model.certificates import certify

        method, own, penalty = self.args
        res = certify(method, own if op is None else op, penalty, X, Y, TX=TX, **self.kw)
        eta = self.kw["eta"]
        if np.isfinite(res.rel_gap) or eta is None:
            return float(res.rel_gap)
        gX = self.args[2].value(X)
        gap = abs(gX - res.dual) / res.dual if res.dual > 0 else np.inf
        return float(max(gap, res.violation / eta))

    def __call__(self, it, rel, tol, X, Y, TX):
        if not self.gap:
            return rel <= tol
        return self.check(it, tol, X, Y, TX)

    def final(self, it, X, Y, TX):
        """The certified gap of the returned point ``(X, Y)``, ``TX = T X``.

        With float64 products, the rule's last value when it computed one at ``it``;
        with float32 products (``op.dtype``), computed again with float64 ones
        (:meth:`~sparsesvm.model.operator.MulticlassOperator.double`; ``TX`` must then
        come from them), so that the certificate does not depend on the precision.
        """
        exact = self.args[1].double()
        if exact is self.args[1]:
            return self.check.final(it, X, Y, TX)
        return self.rel_gap(X, Y, TX, op=exact)


# --------------------------------------------------------------------------- #
# the loop
# --------------------------------------------------------------------------- #
class DualStep(ABC):
    """The part of a primal-dual method that differs: its dual update.

    A subclass sets :attr:`method` and :attr:`weight` (``"lam"`` or ``"eta"``)
    and implements :meth:`step_norm` and :meth:`__call__`; it may override
    :meth:`prepare`, :meth:`start`, :meth:`solved_by_zero`, :meth:`objective`
    and :meth:`violation`.

    Parameters
    ----------
    op : MulticlassOperator
        ``T`` (L samples, M features, K classes) and ``R`` (L, K).
    penalty : Penalty
        ``g``; X of shape (M + 1, K).
    par : float > 0
        ``lam`` (regularised form) or ``eta`` (constrained forms).
    """

    method = ""
    weight = "lam"

    def __init__(self, op, penalty, par):
        self.op, self.penalty, self.par, self.R = op, penalty, par, op.R
        self.tau = self.sigma = None

    def prepare(self, size):
        """Compile or load a kernel for ``size`` parameters (before the clock starts).

        A hook: the default has no kernel to prepare."""
        return None

    @abstractmethod
    def step_norm(self):
        """``nrm`` of the step sizes (``tau * sigma * nrm**2 = 1``); on the clock."""

    def start(self, tau, sigma):
        """Keep the step sizes and allocate the method's own iterates."""
        self.tau, self.sigma = tau, sigma

    def solved_by_zero(self):
        """Whether ``X = 0`` solves the problem outright (no iteration)."""
        return False

    @abstractmethod
    def __call__(self, X, Xn, Y, TX, rel, TXn=None):
        """One dual update.

        Parameters
        ----------
        X, Xn : ndarray of shape (M + 1, K)
            The primal iterate and its successor.
        Y, TX : ndarray of shape (L, K)
            The dual iterate and ``T X``; ``TX`` may be overwritten.
        rel : float
            The primal relative change (a method may replace it while ``X = 0``).
        TXn : ndarray of shape (L, K), optional
            ``T Xn`` when the caller has it (:func:`primal_dual_many` makes one product
            for several runs); computed here otherwise.

        Returns
        -------
        Yn, TXn : ndarray of shape (L, K)
        rel : float
        """

    def objective(self, X, TX):
        """The reported objective: ``g(X)`` (regularised forms add ``lam * loss``)."""
        return self.penalty.value(X)

    def violation(self, TX):
        """``max(0, loss(X) - eta)`` for the constrained forms, else 0.0."""
        return 0.0


def _zero_result(op, every, reference, gaps=False):
    """``X = 0`` with no iteration, a zero gap and (if asked) a one-entry trace."""
    X = np.zeros((op.n_features + 1, op.n_classes))
    tr = None
    if every:
        tr = Trace(every, reference, gaps)
        tr.add(0, 0.0, 0.0, 0.0, X, 0.0)
        tr = tr.result()
    return SolverResult(X, 0, True, 0.0, 0.0, 0.0, tr, rel_gap=0.0)


def primal_dual(dual, *, tol, max_iter, step_ratio, trace, reference, stopping, max_time=None):
    """Run the primal-dual iteration of ``dual`` from ``X = 0``, ``Y = 0``.

    Parameters
    ----------
    dual : DualStep
        The method's dual update (holds the operator, the penalty and ``lam``
        or ``eta``).
    tol, max_iter, step_ratio, trace, reference, stopping, max_time
        As in :func:`sparsesvm.solvers.paper.hinge_reg`.

    Returns
    -------
    SolverResult
        ``objective`` and ``constraint_violation`` from ``dual``; ``rel_gap``
        from :class:`Stopper` (after the clock stops).

    Notes
    -----
    Precision: the loop computes with the operator as given. With float32
    products (``op.dtype``, :class:`~sparsesvm.model.operator.MulticlassOperator`),
    only ``T X`` and ``T^T Y`` are rounded to float32 accuracy; the iterates, the
    step sizes (``||T||`` in float64), the stopping measure and the dual updates stay
    float64 (the compiled kernels take the float64 results). The objective, the
    violation and the certified gap of the returned point, and the objectives of the
    trace, are computed with float64 products (:meth:`~sparsesvm.model.operator.
    MulticlassOperator.double`, after the clock stops, or with it paused), so they
    compare across precisions; the gap of ``stopping="gap"`` inside the loop uses the
    loop's products.
    """
    op, penalty = dual.op, dual.penalty
    check_common(tol, max_iter, step_ratio)
    if max_time is not None and not (np.isfinite(max_time) and max_time > 0):
        raise ValueError(f"max_time must be None or a positive number of seconds, got {max_time!r}")
    stop = Stopper(stopping, dual.method, op, penalty, **{dual.weight: dual.par})
    every = trace_every(trace)
    if dual.solved_by_zero():
        return _zero_result(op, every, reference, stop.gap)
    X = np.zeros((op.n_features + 1, op.n_classes))
    primal = PrimalStep(penalty, X)
    dual.prepare(X.size)
    # the dense products' BLAS orientations and the product over the non-zero weights, timed
    # once: before the clock; these iterations take the latter where it is faster
    op.prepare(skip_zero_weights=True)
    clock = Clock()
    tau, sigma = pd_steps(dual.step_norm(), step_ratio)
    primal.tau = tau
    dual.start(tau, sigma)
    Y = np.zeros((op.n_samples, op.n_classes))
    TX = np.zeros_like(Y)
    tr = Trace(every, reference, stop.gap) if every else None
    objective = dual.objective
    if op.double() is not op:  # float32 products: the trace's objectives with float64 ones
        def objective(X, TX):
            return dual.objective(X, op.double().T(X))
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        Xn, rel = primal.from_dual(X, Y, op)
        # T X+, skipping the zero rows the primal step marked (if it marked them)
        Y, TXn, rel = dual(X, Xn, Y, TX, rel, op.T(Xn, rows=primal.rows))
        X, TX = Xn, TXn
        converged = stop(it, rel, tol, X, Y, TX)
        if tr is not None and tr.due(it, converged):
            tr.record(clock, it, rel, X, objective, TX, gap=stop.check.at(it))
        if converged or (max_time is not None and clock.elapsed() > max_time):
            break
    fit_time = clock.stop()
    if op.double() is not op:  # float32 products: the returned point's T X in float64
        TX = op.double().T(X)
    return SolverResult(X, it, converged, dual.objective(X, TX), dual.violation(TX), fit_time,
                        tr.result() if tr else None, stop.final(it, X, Y, TX))


def leave_batch(stopped, *rows):
    """The fits of a side-by-side batch without those at positions ``stopped``.

    Parameters
    ----------
    stopped : list of int
        Positions (rows) of the fits that leave.
    *rows : list or ndarray or None
        Per-fit sequences, one row per fit (lists, or arrays indexed on their first axis);
        None stays None.

    Returns
    -------
    list
        Each of ``rows`` with the other fits' rows, in order (arrays copied).
    """
    keep = [i for i in range(len(rows[0])) if i not in stopped]
    return [None if r is None else [r[i] for i in keep] if isinstance(r, list) else r[keep]
            for r in rows]


def primal_dual_many(duals, *, tol, max_iter, step_ratio):
    """Run several primal-dual problems on one operator side by side, sharing the products.

    Each problem is :func:`primal_dual`'s, stopping on the relative change
    (``stopping="rel_change"``, no trace): its own iterates, steps, kernels and stopping
    rule; only ``T X`` and ``T^T Y`` are computed for all the problems still running in one
    product each (:meth:`~sparsesvm.model.operator.MulticlassOperator.T_many`,
    :meth:`~sparsesvm.model.operator.MulticlassOperator.T_adjoint_many`). A problem
    leaves the batch at the iteration where it stops. Each result is the one
    :func:`primal_dual` returns up to the rounding of the products (which can move its
    stopping iteration by a few, as the timed choice of a product's orientation does
    between two runs of one solver; README, "Alphas side by side").

    Parameters
    ----------
    duals : sequence of DualStep
        The problems: one method (one class), one operator and one penalty; their
        weights (``par``) may differ.
    tol, max_iter, step_ratio
        As in :func:`sparsesvm.solvers.paper.hinge_reg`.

    Returns
    -------
    list of SolverResult
        In the order of ``duals``. ``fit_time``: the batch's loop seconds when the problem
        stopped (the step-size norm included), i.e. time shared with the others.
    """
    duals = list(duals)
    if not duals:
        raise ValueError("primal_dual_many needs at least one problem")
    first = duals[0]
    op, penalty = first.op, first.penalty
    if any(type(d) is not type(first) or d.op is not op or d.penalty is not penalty for d in duals):
        raise ValueError("primal_dual_many runs problems of one method on one operator and "
                         "one penalty (only their weights may differ)")
    check_common(tol, max_iter, step_ratio)
    results = [None] * len(duals)
    stops = [Stopper("rel_change", d.method, op, penalty, **{d.weight: d.par}) for d in duals]
    run = []
    for j, d in enumerate(duals):
        if d.solved_by_zero():
            results[j] = _zero_result(op, 0, None)
        else:
            run.append(j)
    if not run:
        return results
    M1, K, L = op.n_features + 1, op.n_classes, op.n_samples
    X0 = np.zeros((M1, K))
    primals = [PrimalStep(penalty, X0) for _ in run]
    for j in run:
        duals[j].prepare(X0.size)
    op.prepare(skip_zero_weights=True)  # as primal_dual: for a problem left alone in the batch
    clock = Clock()
    tau, sigma = pd_steps(first.step_norm(), step_ratio)
    for j, primal in zip(run, primals):
        primal.tau = tau
        duals[j].start(tau, sigma)
    # the running problems' iterates side by side, one row each (kept between iterations:
    # no allocation per iteration); V: T^T Y, then the next X (the compiled step is in place)
    X, V = np.zeros((len(run), M1, K)), np.empty((len(run), M1, K))
    Y, TX = np.zeros((len(run), L, K)), np.zeros((len(run), L, K))
    ends = {}
    it = 0
    for it in range(1, int(max_iter) + 1):
        op.T_adjoint_many(Y, out=V)
        rels = []
        for i, primal in enumerate(primals):
            Vi = V[i]
            Xn, rel = primal(X[i], Vi)
            if Xn is not Vi:  # numpy's prox: a new array
                Vi[...] = Xn
            rels.append(rel)
        TXn = op.T_many(V)
        stopped = []
        for i, j in enumerate(run):
            Yn, TXni, rel = duals[j](X[i], V[i], Y[i], TX[i], rels[i], TXn=TXn[i])
            Y[i] = Yn  # first: the compiled update writes it into TX[i]
            TX[i] = TXni
            if stops[j](it, rel, tol, V[i], Y[i], TX[i]):
                stopped.append(i)
        X, V = V, X
        if stopped:
            for i in stopped:
                ends[run[i]] = (it, True, clock.elapsed(), X[i].copy(), Y[i].copy(), TX[i].copy())
            run, primals, X, Y, TX = leave_batch(stopped, run, primals, X, Y, TX)
            if not run:
                break
            V = np.empty_like(X)
    clock.stop()
    for i, j in enumerate(run):  # max_iter reached
        ends[j] = (it, False, clock.total, X[i], Y[i], TX[i])
    for j, (n_iter, converged, seconds, Xj, Yj, TXj) in ends.items():
        d = duals[j]
        if op.double() is not op:  # float32 products: the returned point's T X in float64
            TXj = op.double().T(Xj)
        results[j] = SolverResult(Xj, n_iter, converged, d.objective(Xj, TXj), d.violation(TXj),
                                  seconds, None, stops[j].final(n_iter, Xj, Yj, TXj))
    return results
