"""The methods the paper compares against (spec section 4).

``X`` has shape ``(M + 1, K)``: column ``k`` is ``[w_k; b_k]``, the last row
holds the biases (never penalised). All start from ``X = 0``, work in float64
and return a :class:`~sparsesvm.solvers._loop.SolverResult` carrying the
certified relative duality gap of their point (``rel_gap``).

hinge_lin(op, penalty, eta, ...)
    The constrained hinge problem written with linear constraints (LP-style
    timing baseline), by the primal-dual loop of
    :func:`sparsesvm.solvers._loop.primal_dual` on ``(X, zeta) -> T X - zeta``.
square(op, penalty, lam, ...)
    Squared multiclass hinge (Blondel et al. 2013) by FISTA.
logit(op, penalty, lam, ...)
    Multinomial logistic regression by forward-backward (the paper's), or
    FISTA with ``scheme="fista"``.
ova(Phi, y_idx, n_classes, penalty, lam, ...)
    One-vs-all squared hinge, one FISTA per class (run side by side).
liblinear_cs(Phi, y_idx, n_classes, alpha, ...)
    The l2 peer (stand-in for the paper's SVM-struct): scikit-learn's
    Crammer-Singer ``LinearSVC`` (liblinear), bias regularised.
ocas_cs(Phi, y_idx, n_classes, alpha, ...)
    The cutting-plane peer of the SVM-struct family: ``msvmocas`` (OCAS,
    Debian's ``libocas-tools``) on the same model as liblinear's, when installed.

Stopping rule (by default): ``||X+ - X||_F / ||X+||_F <= tol`` (an iterate
with ``||X+||_F = 0`` never counts as converged), or ``max_iter`` iterations;
``stopping="gap"`` stops on the certified gap. Timing: as described in
:mod:`sparsesvm.solvers._loop`.
"""

from __future__ import annotations

import numpy as np

from .._sparse import issparse
from ..model.losses import logistic_loss, squared_hinge_loss
from ..model.operator import DenseProducts, power_norm
from ..model.projections import _project_simplex
from . import _kernels
from ._loop import (
    DEFAULT_STEP_RATIO,
    Clock,
    GapCheck,
    RelChange,
    RowBuffers,
    SolverResult,
    Trace,
    check_common,
    check_stopping,
    check_weight,
    leave_batch,
    primal_dual,
    trace_every,
)
from .paper import ConstrainedDual

__all__ = ["hinge_lin", "SlackDual", "square", "logit", "ova", "liblinear_cs", "ocas_cs", "SMOOTH_SCHEMES"]


# --------------------------------------------------------------------------- #
# hinge-lin: linear-constraint baseline
# --------------------------------------------------------------------------- #
def _project_capped_orthant(m, eta):
    """Projection of m (L,) onto {c >= 0, sum c <= eta}."""
    p = np.maximum(m, 0.0)
    if p.sum() <= eta:
        return p
    return _project_simplex(m[None, :], eta)[0]


class SlackDual(ConstrainedDual):
    """hinge-lin's dual update, with the projection of the slacks ``zeta = c 1^T``::

        c+ = P(c + tau * mean_k Y)          (onto {c >= 0, sum c <= eta})
        Y+ = max(0, Y + sigma (2 T X+ - T X - (2 c+ - c) 1^T) + sigma R)

    Where the compiled kernels are used, one pass
    (:func:`sparsesvm.solvers._kernels.slack_step`).
    """

    method = "hinge-lin"

    def prepare(self, size):
        self.kernel = _kernels.slack_step(size)  # compiled dual update, or None (numpy)

    def step_norm(self):
        return float(np.sqrt(self.op.norm() ** 2 + 1.0))

    def start(self, tau, sigma):
        super().start(tau, sigma)
        self.c = np.zeros(self.op.n_samples)
        self.cbuf = np.empty(self.op.n_samples)  # the compiled path's other slack buffer
        self.sR = sigma * self.R

    def __call__(self, X, Xn, Y, TX, rel, TXn=None):
        c = self.c
        if self.kernel is not None:
            TXn = self.op.T(Xn) if TXn is None else TXn
            # the slacks' step into cbuf, the new Y in the old TX buffer
            self.kernel(Y, TX, TXn, self.sR, c, self.sigma, self.tau, self.par, TX, self.cbuf)
            self.c, self.cbuf = self.cbuf, c
            return TX, TXn, rel
        cn = _project_capped_orthant(c + self.tau * Y.mean(axis=1), self.par)
        TXn = self.op.T(Xn) if TXn is None else TXn
        TX -= TXn
        TX -= TXn
        TX += (2.0 * cn - c)[:, None]
        TX *= -self.sigma
        TX += Y
        TX += self.sR
        np.maximum(TX, 0.0, out=TX)
        self.c = cn
        return TX, TXn, rel


def hinge_lin(op, penalty, eta, *, tol=1e-5, max_iter=100000, step_ratio=DEFAULT_STEP_RATIO,
              trace=False, reference=None, stopping="rel_change"):
    """Constrained problem with linear constraints (LP-style timing baseline).

    Variables X and zeta (L, K) with ``zeta[l, :]`` constant along k,
    ``zeta >= 0``, ``sum zeta <= K eta`` and ``T X + R - zeta <= 0``;
    minimise ``g(X)``. Same solution set in X as
    :func:`sparsesvm.solvers.paper.hinge_con`.

    Parameters
    ----------
    op, penalty, eta, tol, max_iter, trace, reference, stopping
        As in :func:`sparsesvm.solvers.paper.hinge_con`.
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

    ``eta >= L`` returns ``X = 0`` at once (see :func:`sparsesvm.solvers.paper.hinge_con`).
    """
    check_weight(eta, "eta")
    return primal_dual(SlackDual(op, penalty, eta), tol=tol, max_iter=max_iter,
                       step_ratio=step_ratio, trace=trace, reference=reference, stopping=stopping)


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
    """Certified relative duality gap of a smooth baseline at X (shape (M + 1, K))
    (:func:`sparsesvm.model.certificates.smooth_gap_scores`; ``penalty`` is built for
    (M, K), so it serves as the certificate's penalty as it is)."""
    from ..model.certificates import smooth_gap_scores

    if S is None:
        S = np.asarray(Phi @ X[:-1]) + X[-1]
    return float(smooth_gap_scores(method, Phi, y_idx, S, X[:-1], penalty, lam).rel_gap)


SMOOTH_SCHEMES = ("fista", "fb")


def _next_t(t):
    """FISTA's momentum sequence: ``t+ = (1 + sqrt(1 + 4 t^2)) / 2``."""
    return 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))


class _ForwardStep:
    """One iteration of FISTA or forward-backward after the product ``T V``.

    ``Xn = prox_{step g}(V - step * lam * T^T P)`` (``P`` the loss's derivative
    at ``T V``), the stopping measure ``||Xn - X||_F / ||Xn||_F`` and, for FISTA
    (``momentum=True``), the next extrapolated point with the gradient-based
    adaptive restart (O'Donoghue & Candes: the momentum is dropped when it points
    against the step, ``<V - Xn, Xn - X> > 0``). On problems with at least
    :data:`sparsesvm.solvers._kernels.MIN_SIZE` parameters and numba installed the
    shift and the prox are one compiled pass (the primal step of Algorithms 1-2,
    :func:`sparsesvm.solvers._kernels.fused_step`), and FISTA's two sums and
    extrapolation another (:func:`sparsesvm.solvers._kernels.momentum`, writing into
    V); otherwise numpy, the reference they are tested against. Forward-backward
    (``momentum=False``, ``V = X``) takes the measure from the compiled pass's two
    inner products (:class:`~sparsesvm.solvers._loop.RelChange`) and forms no
    difference. With a sparse ``Phi`` and a row-separable penalty (E3's), ``T^T P`` is
    formed row by row inside the compiled pass and never stored, as in the primal-dual
    loops (:class:`~sparsesvm.solvers._loop.PrimalStep`), and :attr:`rows` marks the zero
    rows of the next point, which the next ``T V`` skips: ``Xn``'s for forward-backward,
    those zero in both ``Xn`` and ``X`` for FISTA (the OR of the two buffers' marks,
    :meth:`~sparsesvm.solvers._loop.RowBuffers.union_marks`), which the next step mostly
    settles by a bound (l1,2); the caller hands back as ``V`` the ``V+`` it was given (both
    loops here do). ``step`` is set once the
    clock runs (it needs ``||T||``), as :class:`~sparsesvm.solvers._loop.PrimalStep`'s ``tau``.
    """

    def __init__(self, op, penalty, lam, momentum=True):
        self.op, self.penalty, self.lam, self.step = op, penalty, lam, None
        self.momentum = momentum
        size = (op.n_features + 1) * op.n_classes
        # compile or load the kernels (call before the clock starts)
        self.fused = _kernels.fused_step(penalty, size)
        self.rowwise = _kernels.sparse_step(penalty, size)
        self.compiled_momentum = _kernels.momentum(size) if momentum and self.fused else None
        self.measure = None if momentum else RelChange(np.zeros(1))
        self.buffers = RowBuffers()
        # on the row-by-row path, the marks of the zero rows of the next point V+ (forward-
        # backward: Xn's; FISTA: those of Xn and X), which the next T V+ skips and the next
        # step mostly settles
        self.rows = None

    def adjoint_input(self, P):
        """The argument of this step's product ``T^T``: ``lam P`` on the compiled path
        (scaled in place), ``P`` on the numpy one (which scales the product)."""
        if self.fused is not None:
            P *= self.lam
        return P

    def _compiled_prox(self, V, X, P, G):
        """``(Xn, ||Xn||^2, <Xn, V>)``, ``Xn = prox_{step g}(V - step T^T (lam P))``, compiled:
        ``T^T`` formed row by row inside the step where the operator offers it
        (:meth:`~sparsesvm.model.operator.MulticlassOperator.T_adjoint_rows`, a sparse
        ``Phi``; :func:`sparsesvm.solvers._kernels.sparse_step`: ``Xn`` in whichever of
        :attr:`buffers` is not ``X``, :attr:`rows` its marks on forward-backward), else the
        product (or the given ``G``) and the fused step, which writes ``Xn`` over it."""
        known, self.rows = self.rows, None  # V's zero rows (V: the V+ of the last step)
        if G is None:
            P = self.adjoint_input(P)
            rows = self.op.T_adjoint_rows(P) if self.rowwise is not None else None
            if rows is not None:
                Xn, marks = self.buffers.other_than(X)
                nn, cross = self.rowwise(*rows, V, self.step, Xn, marks, known)
                # forward-backward: V+ = Xn; FISTA's V+ = Xn + beta (Xn - X) (or Xn at a
                # restart), written into V, is 0 on the rows zero in both Xn and X: the OR
                # of the two buffers' marks (none at the first step, X not a buffer)
                self.rows = self.buffers.union_marks(X) if self.momentum else marks
                return Xn, nn, cross
            G = self.op.T_adjoint(P)
        Xn = np.ascontiguousarray(G)
        return (Xn, *self.fused(V, Xn, self.step, Xn))

    def __call__(self, V, X, P, t, G=None):
        """``(Xn, rel, V+, t+)`` from the extrapolated point V, the iterate X, ``P`` (L, K)
        and FISTA's ``t``; forward-backward: ``V+ = Xn``, ``t`` as given. The compiled
        FISTA path overwrites V with V+. ``G``: ``T^T adjoint_input(P)`` when the caller
        has it (:func:`_fista_T_many`), ``P`` then unused; computed here otherwise."""
        if self.fused is not None:
            Xn, nn, cross = self._compiled_prox(V, X, P, G)  # ||Xn||^2, <Xn, V>: the same pass
            if not self.momentum:  # V is X: ||Xn - X||^2 from the two inner products
                return Xn, self.measure.from_products(nn, cross, Xn, X), Xn, t
            tn = _next_t(t)
            dd, rs = self.compiled_momentum(X, Xn, V, (t - 1.0) / tn)  # V <- the next point
            if rs > 0:  # restart: t = 1, whose coefficient (t - 1) / t+ is 0: V+ = Xn
                tn = _next_t(1.0)
                np.copyto(V, Xn)
            return Xn, float(np.sqrt(dd / nn)) if nn > 0 else np.inf, V, tn
        if G is None:
            G = self.op.T_adjoint(P)
        G *= -self.step * self.lam
        G += V
        Xn = self.penalty.prox(G, self.step, check_input=False)
        if not self.momentum:
            return Xn, self.measure(Xn, X), Xn, t
        D = Xn - X
        nrm = np.linalg.norm(Xn)
        rel = float(np.linalg.norm(D) / nrm) if nrm > 0 else np.inf
        if np.vdot(V - Xn, D) > 0:
            t = 1.0
        tn = _next_t(t)
        D *= (t - 1.0) / tn
        D += Xn
        return Xn, rel, D, tn


def _fista_T(op, penalty, lam, dual_fn, loss_fn, curvature, tol, max_iter, trace, reference,
             method="square", stopping="rel_change", scheme="fista"):
    """FISTA with gradient-based adaptive restart (``scheme="fista"``) or plain
    forward-backward (``scheme="fb"``) on ``g(X) + lam * f(T X)``.

    Step ``1 / (curvature * lam * ||T||**2)`` (the gradient's Lipschitz
    constant; ``||T||`` on the clock).
    Each iteration does one ``T`` (at the extrapolated point) and one ``T^T``; the rest
    of it is :class:`_ForwardStep` (compiled passes on problems of at least
    :data:`sparsesvm.solvers._kernels.MIN_SIZE` parameters).
    ``stopping="gap"``: the certified relative gap of X (``method``'s
    certificate) ``<= tol``, checked every :data:`~sparsesvm.solvers._loop.GAP_CHECK_EVERY` iterations.
    With float32 products (``op.dtype``) only the iteration's ``T V`` and ``T^T P`` are
    float32; the step (``||T||``), the objectives (trace and result) and the gap are
    computed in float64 (:meth:`~sparsesvm.model.operator.MulticlassOperator.double`,
    ``op.Phi``), as in :func:`sparsesvm.solvers._loop.primal_dual`.
    """
    check_common(tol, max_iter)
    check_stopping(stopping)
    if scheme not in SMOOTH_SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {SMOOTH_SCHEMES}")
    every = trace_every(trace)
    R = op.R

    exact = op.double()  # float32 products (op.dtype): the objectives with float64 ones

    def objective(X):
        return penalty.value(X) + lam * loss_fn(exact.T(X), R)

    gap = GapCheck(lambda X: _smooth_rel_gap(method, op.Phi, op.y_idx, penalty, lam, X))
    fista = scheme == "fista"
    # compiles or loads the kernel: before the clock
    forward = _ForwardStep(op, penalty, lam, momentum=fista)
    # the dense products' BLAS orientations: before the clock too. FISTA keeps BLAS' dense
    # product (its restarts are discrete decisions that last-bit differences can move);
    # forward-backward's T V is a prox output, whose zero weights the product may skip
    op.prepare(skip_zero_weights=not fista)
    clock = Clock()
    forward.step = 1.0 / (curvature * lam * op.norm() ** 2)
    X = np.zeros((op.n_features + 1, op.n_classes))
    V = X.copy()  # a buffer of its own: the compiled momentum writes the next point into it
    TV = np.zeros_like(R, dtype=np.float64)
    t = 1.0
    tr = Trace(every, reference) if every else None
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        X, rel, V, t = forward(V, X, dual_fn(TV, R), t)
        if stopping == "gap":
            converged = gap(it, tol, X)
        else:
            converged = rel <= tol
        if not converged:
            TV = op.T(V, rows=forward.rows)
        if tr is not None and tr.due(it, converged):
            tr.record(clock, it, rel, X, objective)
        if converged:
            break
    fit_time = clock.stop()
    return SolverResult(X, it, converged, objective(X), 0.0, fit_time, tr.result() if tr else None,
                        gap.final(it, X))


def _fista_T_many(op, penalty, lams, dual_fn, loss_fn, curvature, tol, max_iter, method, scheme):
    """:func:`_fista_T` for several weights ``lams`` on one operator, side by side.

    Each run is :func:`_fista_T`'s (relative-change rule, no trace): its own step, iterates
    and momentum; the products ``T V`` and ``T^T P`` of all the runs still going are one
    product each (:meth:`~sparsesvm.model.operator.MulticlassOperator.T_many`,
    :meth:`~sparsesvm.model.operator.MulticlassOperator.T_adjoint_many`). A run leaves the
    batch at the iteration where it stops; its ``fit_time`` is the batch's loop seconds
    then. Returns the list of results in the order of ``lams``.
    """
    check_common(tol, max_iter)
    if scheme not in SMOOTH_SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {SMOOTH_SCHEMES}")
    lams = list(lams)
    R = op.R
    exact = op.double()
    fista = scheme == "fista"
    forwards = [_ForwardStep(op, penalty, lam, momentum=fista) for lam in lams]  # before the clock
    op.prepare(skip_zero_weights=not fista)
    clock = Clock()
    nrm2 = op.norm() ** 2
    for f, lam in zip(forwards, lams):
        f.step = 1.0 / (curvature * lam * nrm2)
    run = list(range(len(lams)))
    n, M1, K = len(run), op.n_features + 1, op.n_classes
    # the running fits side by side, one row each, kept between iterations: X, the
    # extrapolated point V (FISTA; forward-backward's is X), T V, and G: T^T of the loss's
    # derivative, then the next X (the compiled step is in place)
    X, G = np.zeros((n, M1, K)), np.empty((n, M1, K))
    V = np.zeros((n, M1, K)) if fista else None
    TV = np.zeros((n,) + R.shape)
    ts = [1.0] * n
    ends = {}
    it = 0
    for it in range(1, int(max_iter) + 1):
        P = np.stack([forwards[j].adjoint_input(dual_fn(TV[i], R)) for i, j in enumerate(run)])
        op.T_adjoint_many(P, out=G)
        stopped = []
        for i, j in enumerate(run):
            Xi, Gi = X[i], G[i]
            Xn, rel, Vn, ts[i] = forwards[j](V[i] if fista else Xi, Xi, None, ts[i], G=Gi)
            if Xn is not Gi:  # the numpy path: new arrays
                Gi[...] = Xn
                if fista:
                    V[i] = Vn
            if rel <= tol:
                stopped.append(i)
        X, G = G, X
        if stopped:
            for i in stopped:
                ends[run[i]] = (it, True, clock.elapsed(), X[i].copy())
            run, ts, X, V = leave_batch(stopped, run, ts, X, V)
            if not run:
                break
            G = np.empty_like(X)
        TV = op.T_many(V if fista else X)
    clock.stop()
    for i, j in enumerate(run):  # max_iter reached
        ends[j] = (it, False, clock.total, X[i])
    results = [None] * len(lams)
    for j, (n_iter, converged, seconds, X) in ends.items():
        lam = lams[j]
        objective = penalty.value(X) + lam * loss_fn(exact.T(X), R)
        gap = _smooth_rel_gap(method, op.Phi, op.y_idx, penalty, lam, X)
        results[j] = SolverResult(X, n_iter, converged, objective, 0.0, seconds, None, gap)
    return results


def square(op, penalty, lam, *, tol=1e-5, max_iter=100000, trace=False, reference=None,
           stopping="rel_change"):
    """Squared multiclass hinge (Blondel et al. 2013) by FISTA.

    ``minimize_X g(X) + lam * sum_l sum_{k != z_l} max(0, (T X + R)[l, k])**2``.

    Parameters
    ----------
    op, penalty, lam, tol, max_iter, trace, reference
        As in :func:`sparsesvm.solvers.paper.hinge_reg`.
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
    check_weight(lam, "lam")
    return _fista_T(op, penalty, lam, _grad_square, squared_hinge_loss, 2.0, tol, max_iter,
                    trace, reference, method="square", stopping=stopping)


def logit(op, penalty, lam, *, tol=1e-5, max_iter=100000, trace=False, reference=None,
          stopping="rel_change", scheme="fb"):
    """Multinomial logistic regression by forward-backward (the paper's) or FISTA.

    ``minimize_X g(X) + lam * sum_l log sum_k exp((T X + R)[l, k])``.

    Parameters
    ----------
    op, penalty, lam, tol, max_iter, trace, reference
        As in :func:`sparsesvm.solvers.paper.hinge_reg`.
    stopping : {"rel_change", "gap"}
        As in :func:`square`.
    scheme : {"fb", "fista"}
        ``"fb"`` (default): the paper's forward-backward iteration (spec
        section 4); ``"fista"``: FISTA with gradient-based adaptive restart
        (this package's solver for logit before issue 13).

    Returns
    -------
    SolverResult
        As :func:`square`'s.

    Notes
    -----
    The Hessian of log-sum-exp has norm <= 1/2, so the gradient is Lipschitz
    with constant ``lam ||T||**2 / 2``; step ``1 / that``.
    """
    check_weight(lam, "lam")
    return _fista_T(op, penalty, lam, _grad_logit, logistic_loss, 0.5, tol, max_iter,
                    trace, reference, method="logit", stopping=stopping, scheme=scheme)


# --------------------------------------------------------------------------- #
# one-vs-all squared hinge
# --------------------------------------------------------------------------- #
def _augmented_norm(Phi):
    """``||[Phi, 1]||_2`` (Phi dense or CSR, float64) by :func:`~sparsesvm.model.operator.power_norm`."""
    return power_norm(lambda v: Phi @ v[:-1] + v[-1], lambda u: np.append(Phi.T @ u, u.sum()),
                      (Phi.shape[1] + 1,))


class _OneVsAll:
    """The K one-vs-all squared-hinge problems, sharing the products with ``Phi``.

    Parameters
    ----------
    Phi : ndarray (L, M) or CSR
        Features (converted to float64).
    y_idx : int ndarray (L,)
    n_classes : int
    penalty : Penalty
        For all K classes.
    lam : float
    make_penalty : callable or None
        ``make_penalty(n_active)``, the penalty for ``n_active`` classes.

    Attributes
    ----------
    Phi : float64 ndarray or CSR (L, M)
    Ypm : ndarray (L, K)
        ``+1`` on the sample's class, ``-1`` elsewhere.
    """

    def __init__(self, Phi, y_idx, n_classes, penalty, lam, make_penalty):
        if issparse(Phi):
            import scipy.sparse as sp

            Phi = sp.csr_matrix(Phi, dtype=np.float64)
        else:
            Phi = np.ascontiguousarray(Phi, dtype=np.float64)
        L, M = Phi.shape
        K = int(n_classes)
        self.Phi, self.y_idx, self.penalty, self.lam = Phi, np.asarray(y_idx), penalty, lam
        # dense Phi: each product in its faster BLAS orientation (timed before the clock)
        self.products = None if issparse(Phi) else DenseProducts(Phi, K)
        self.Ypm = -np.ones((L, K))
        self.Ypm[np.arange(L), self.y_idx] = 1.0
        if make_penalty is None:
            from ..model.penalties import make_penalty as _mk

            def make_penalty(n):
                return _mk(penalty.name, penalty.groups, M, n)
        self.make_penalty = make_penalty
        self.pens = {K: penalty}
        # the compiled forward step per number of active classes (the first loads the kernel)
        self.fused = {K: _kernels.fused_step(penalty, (M + 1) * K)}
        # and the compiled momentum, used with it (the numpy path is the reference)
        self.momentum = _kernels.column_momentum((M + 1) * K)
        self.gap = GapCheck(self.rel_gap)

    def residual(self, Xa, Ya):
        """``max(0, 1 - Ya * (Phi w + b))`` (L, n_active); gradient wrt scores = ``-2 Ya P``."""
        S = self.Phi @ Xa[:-1] if self.products is None else self.products.forward(Xa[:-1])
        S += Xa[-1]
        S *= Ya
        P = np.subtract(1.0, S, out=S)
        np.maximum(P, 0.0, out=P)
        return P

    def objective(self, X):
        """``g(X) + lam * sum_k sum_l max(0, 1 - y_l s_lk)**2`` over all K classes."""
        P = self.residual(X, self.Ypm)
        return self.penalty.value(X) + self.lam * float(np.vdot(P, P))

    def rel_gap(self, X):
        return _smooth_rel_gap("ova", self.Phi, self.y_idx, self.penalty, self.lam, X)

    def fista_step(self, X, V, t, active, step):
        """One FISTA step of the ``active`` classes, in place on X, V (M + 1, K) and t (K,).

        Returns
        -------
        rel_cols, nd : ndarray (n_active,)
            Each class's relative change and ``||X+ - X||`` of its column.
        """
        full = active.size == X.shape[1]
        # the active columns (advanced indexing copies them, not C-ordered: made so once)
        Va = V if full else np.ascontiguousarray(V[:, active])
        Xa = X if full else np.ascontiguousarray(X[:, active])
        Ya = self.Ypm if full else self.Ypm[:, active]
        P = self.residual(Va, Ya)
        P *= Ya
        na = active.size
        if na not in self.pens:
            self.pens[na] = self.make_penalty(na)
            self.fused[na] = _kernels.fused_step(self.pens[na], Va.size)
        fused = self.fused[na]
        # P becomes the gradient wrt the scores (compiled path) or step times its negative
        P *= -2.0 * self.lam if fused is not None else 2.0 * self.lam * step
        G = np.empty(Va.shape) if fused is not None else np.empty_like(Va)  # C order for the kernel
        if self.products is None:
            G[:-1] = self.Phi.T @ P
        else:
            self.products.adjoint(P, G[:-1])
        G[-1] = P.sum(axis=0)
        if fused is not None:
            fused(Va, G, step, G)  # G = prox_{step g}(Va - step * gradient)
            Xn = G
        else:
            G += Va
            Xn = self.pens[na].prox(G, step)
        compiled = fused is not None and self.momentum is not None
        # each class's ||X+||, ||X+ - X|| and restart test <V - X+, X+ - X>
        if compiled:  # one compiled pass
            nx2, nd2, rs = self.momentum[0](Xa, Xn, Va)
            nx, nd = np.sqrt(nx2), np.sqrt(nd2)
        else:
            D = Xn - Xa
            nx = np.linalg.norm(Xn, axis=0)
            nd = np.linalg.norm(D, axis=0)
            rs = np.einsum("ij,ij->j", Va - Xn, D)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel_cols = np.where(nx > 0, nd / nx, np.inf)
        ta = t[active]
        ta[rs > 0] = 1.0  # restart: coefficient 0, the next point is X+
        tn = _next_t(ta)
        coef = (ta - 1.0) / tn
        if compiled:  # another pass: Va becomes the next points, Xa becomes X+
            self.momentum[1](Xa, Xn, Va, coef)
            Xn, D = Xa, Va
        else:
            D *= coef
            D += Xn
        if not (compiled and full):  # X and V were not updated in place
            X[:, active] = Xn
            V[:, active] = D
        t[active] = tn
        return rel_cols, nd


def _ova_loop(prob, step, tol, max_iter, stopping, clock, tr):
    """The side-by-side FISTA runs of :func:`ova`: ``(X, n_iter per class, converged per class)``."""
    M1, K = prob.Phi.shape[1] + 1, prob.Ypm.shape[1]
    X = np.zeros((M1, K))
    V = X.copy()
    t = np.ones(K)
    active = np.arange(K)
    n_it = np.zeros(K, dtype=np.int64)
    conv = np.zeros(K, dtype=bool)
    for it in range(1, int(max_iter) + 1):
        rel_cols, nd = prob.fista_step(X, V, t, active, step)
        n_it[active] = it
        if stopping == "gap":
            ok = prob.gap(it, tol, X)
            done = np.full(active.size, ok)
        else:
            done = rel_cols <= tol
        conv[active[done]] = True
        nX = np.linalg.norm(X)
        rel = float(np.sqrt(np.sum(nd ** 2)) / nX) if nX > 0 else np.inf
        active = active[~done]
        last = active.size == 0
        if tr is not None and tr.due(it, last):
            tr.record(clock, it, rel, X, prob.objective)
        if last:
            break
    return X, n_it, conv


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
        As in :func:`sparsesvm.solvers.paper.hinge_reg`; ``tol`` applies to
        each class separately.
    make_penalty : callable, optional
        ``make_penalty(n_active)`` returning the same penalty for ``n_active``
        classes (used once classes drop out); defaults to
        ``penalties.make_penalty(penalty.name, penalty.groups, M, n_active)``.
    stopping : {"rel_change", "gap"}
        ``"gap"``: all K classes run until the certified relative gap of the
        whole problem (:func:`sparsesvm.model.certificates.smooth_gap`) is
        ``<= tol``, checked every :data:`~sparsesvm.solvers._loop.GAP_CHECK_EVERY` iterations.

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
    check_weight(lam, "lam")
    if getattr(penalty, "groups", None) == "features":
        raise ValueError("ova cannot use across-class groups (groups='features')")
    check_common(tol, max_iter)
    check_stopping(stopping)
    every = trace_every(trace)
    prob = _OneVsAll(Phi, y_idx, n_classes, penalty, lam, make_penalty)
    if prob.products is not None:
        prob.products.tune()  # the products' BLAS orientations: before the clock
    clock = Clock()
    step = 1.0 / (2.0 * lam * _augmented_norm(prob.Phi) ** 2)
    tr = Trace(every, reference) if every else None
    X, n_it, conv = _ova_loop(prob, step, tol, max_iter, stopping, clock, tr)
    fit_time = clock.stop()
    return SolverResult(X, int(n_it.max()), bool(conv.all()), prob.objective(X), 0.0, fit_time,
                        tr.result() if tr else None, prob.gap.final(int(n_it.max()), X))


# --------------------------------------------------------------------------- #
# the l2 peer: liblinear's Crammer-Singer
# --------------------------------------------------------------------------- #
def liblinear_cs(Phi, y_idx, n_classes, alpha, *, tol=1e-3, max_iter=100000):
    """The l2 peer: scikit-learn's ``LinearSVC(multi_class="crammer_singer", C=1/alpha)`` (liblinear).

    liblinear solves ``1/2 sum_k (||w_k||^2 + b_k^2) + loss / alpha`` (the
    multiclass hinge of hinge-reg): its bias is a weight on a constant feature
    and *is* regularised, unlike the paper's free bias. Imports scikit-learn.

    Parameters
    ----------
    Phi : float64 ndarray (L, M) or CSR
    y_idx : int ndarray (L,)
        Class indices in ``0..n_classes-1``.
    n_classes : int
    alpha : float > 0
        ``C = 1 / alpha`` (the ``lambda`` of hinge-reg,
        :func:`sparsesvm.solvers.registry.model_parameters`).
    tol : float > 0
        liblinear's tolerance.
    max_iter : int
        liblinear's iteration cap.

    Returns
    -------
    SolverResult
        ``X`` (M + 1, K) with the biases as last row; ``converged = n_iter <
        max_iter``; ``objective`` the liblinear objective above, bias term
        included; ``fit_time`` the seconds of ``LinearSVC.fit`` (its input
        conversion included); no trace; ``rel_gap`` NaN.

    Notes
    -----
    For 2 classes liblinear returns ``d = w_1 - w_0``; the Crammer-Singer
    optimum is then ``w_1 = -w_0 = d / 2`` (the loss depends on ``d`` only and
    the regulariser is minimised by the symmetric split), which is returned, so
    ``X`` always has K columns.
    """
    import time
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    svc = LinearSVC(multi_class="crammer_singer", C=1.0 / alpha, tol=tol, max_iter=max_iter,
                    random_state=0)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc.fit(Phi, y_idx)
    fit_time = time.perf_counter() - t0
    if n_classes == 2:
        d = svc.coef_.ravel()
        db = float(svc.intercept_[0])
        coef = np.vstack([-0.5 * d, 0.5 * d])
        intercept = np.array([-0.5 * db, 0.5 * db])
    else:
        coef = np.array(svc.coef_, dtype=np.float64)
        intercept = np.array(svc.intercept_, dtype=np.float64)
    n_iter = int(svc.n_iter_)
    S = np.asarray(Phi @ coef.T)
    S += intercept
    L = S.shape[0]
    st = S[np.arange(L), y_idx]
    S[np.arange(L), y_idx] = -np.inf
    loss = float(np.maximum(0.0, 1.0 + S.max(axis=1) - st).sum())
    objective = float(0.5 * (np.sum(coef ** 2) + np.sum(intercept ** 2)) + loss / alpha)
    return SolverResult(np.vstack([coef.T, intercept]), n_iter, bool(n_iter < max_iter), objective,
                        0.0, fit_time, None, float("nan"))


# --------------------------------------------------------------------------- #
# the cutting-plane peer: OCAS (msvmocas)
# --------------------------------------------------------------------------- #
#: the command-line solver of Debian's ``libocas-tools``
OCAS_EXECUTABLE = "msvmocas"


def ocas_cs(Phi, y_idx, n_classes, alpha, *, tol=1e-3, max_time=None):
    """The cutting-plane peer: ``msvmocas`` (OCAS, Franc and Sonnenburg) with ``C = 1/alpha``.

    msvmocas learns ``f(x) = W^T x`` without a bias; a constant feature of value 1
    is appended, so that it solves liblinear's model (:func:`liblinear_cs`:
    ``1/2 sum_k (||w_k||^2 + b_k^2) + loss / alpha``, bias regularised). It stops
    on its own certified relative gap ``1 - Q_D / Q_P <= tol`` of that model.
    The examples go through an SVM-light file in a temporary directory.

    Parameters
    ----------
    Phi : float64 ndarray (L, M) or CSR
    y_idx : int ndarray (L,)
        Class indices in ``0..n_classes-1``.
    n_classes : int
    alpha : float > 0
    tol : float > 0
        OCAS's relative tolerance (``-r``).
    max_time : float > 0 or None
        OCAS's time limit (``-t``), seconds.

    Returns
    -------
    SolverResult
        ``X`` (M + 1, K) with the biases as last row; ``n_iter`` OCAS's
        iterations; ``converged`` whether its gap met ``tol``; ``objective`` its
        primal value ``Q_P``; ``fit_time`` its ``ocas_time`` (the solve, file
        reading excluded); ``rel_gap`` its final ``1 - Q_D/Q_P`` (of its model,
        not the paper's); ``trace`` its per-iteration ``iteration``, ``time``,
        ``objective`` (Q_P) and ``rel_gap``.

    Raises
    ------
    FileNotFoundError
        When ``msvmocas`` is not on PATH (``apt-get install libocas-tools``).
    RuntimeError
        When it fails or writes a model of another shape.
    """
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    from sklearn.datasets import dump_svmlight_file

    exe = shutil.which(OCAS_EXECUTABLE)
    if exe is None:
        raise FileNotFoundError(f"{OCAS_EXECUTABLE} is not on PATH (Debian: apt-get install libocas-tools)")
    L, M = Phi.shape
    K = int(n_classes)
    aug = _with_ones_column(Phi)
    with tempfile.TemporaryDirectory() as tmp:
        train, model = Path(tmp) / "train.light", Path(tmp) / "model.txt"
        dump_svmlight_file(aug, np.asarray(y_idx) + 1, str(train), zero_based=False)
        cmd = [exe, "-c", repr(1.0 / float(alpha)), "-r", repr(float(tol)), "-v", "1"]
        if max_time is not None:
            cmd += ["-t", repr(float(max_time))]
        proc = subprocess.run(cmd + [str(train), str(model)], capture_output=True, text=True)
        if proc.returncode != 0 or not model.exists():
            raise RuntimeError(f"{OCAS_EXECUTABLE} failed (exit {proc.returncode}): "
                               f"{(proc.stderr or proc.stdout)[-300:]}")
        A = np.loadtxt(model, ndmin=2)
    if A.shape != (M + 1, K):
        raise RuntimeError(f"{OCAS_EXECUTABLE} wrote a model of shape {A.shape}, expected {(M + 1, K)}")
    trace, fit_time = _ocas_log(proc.stdout)
    if not trace["iteration"]:
        raise RuntimeError(f"{OCAS_EXECUTABLE} printed no iterations: {proc.stdout[-300:]}")
    gap = float(trace["rel_gap"][-1])
    return SolverResult(A, int(trace["iteration"][-1]), bool(gap <= tol), float(trace["objective"][-1]), 0.0,
                        fit_time, {k: np.asarray(v) for k, v in trace.items()}, gap)


def _ocas_log(text):
    """msvmocas's verbose output -> (trace dict, ocas_time in seconds)."""
    import re

    row = re.compile(r"^\s*(\d+): tim=([0-9.eE+-]+), Q_P=([0-9.eE+-]+),.*1-Q_D/Q_P=([0-9.eE+-]+)")
    trace = {"iteration": [], "time": [], "objective": [], "rel_gap": []}
    fit_time = float("nan")
    for line in text.splitlines():
        m = row.match(line)
        if m:
            for key, v in zip(trace, m.groups()):
                trace[key].append(int(v) if key == "iteration" else float(v))
        elif line.strip().startswith("ocas_time"):
            fit_time = float(line.split(":", 1)[1].split("[")[0])
    return trace, fit_time


def _with_ones_column(Phi):
    """``[Phi, 1]`` (a constant feature for a bias), sparse (CSR) when ``Phi`` is."""
    ones = np.ones((Phi.shape[0], 1))
    if issparse(Phi):
        import scipy.sparse as sp

        return sp.hstack([Phi, sp.csr_matrix(ones)], format="csr")
    return np.hstack([np.asarray(Phi, dtype=np.float64), ones])

