"""The paper's two algorithms for the exact multiclass hinge (spec section 3).

``X`` has shape ``(M + 1, K)``: column ``k`` is ``[w_k; b_k]``, the last row
holds the biases (never penalised). Both start from ``X = 0`` and zero duals,
work in float64 and return a :class:`~sparsesvm.solvers._loop.SolverResult`.

hinge_reg(op, penalty, lam, ...)
    Algorithm 1: ``min g(X) + lam * sum_l h_l((T X)[l])`` by primal-dual
    forward-backward (Chambolle-Pock form, no smooth term).
hinge_con(op, penalty, eta, ...)
    Algorithm 2 (epigraphical splitting): ``min g(X) s.t. sum_l h_l((T X)[l]) <= eta``.

Each is its dual update (:class:`SimplexDual`, :class:`EpigraphDual`) run by
the one primal-dual loop, :func:`sparsesvm.solvers._loop.primal_dual` (the
primal step ``X+ = prox_{tau g}(X - tau T^T Y)``, the clock, the trace, the
stopping rule and the result; timing and step sizes are described there).
The baselines (hinge-lin, square, logit, ova, the liblinear peer) are in
:mod:`sparsesvm.solvers.baselines`.

Stopping rule (by default): ``||X+ - X||_F / ||X+||_F <= tol`` (an iterate
with ``||X+||_F = 0`` never counts as converged), or ``max_iter`` iterations;
``stopping="gap"`` stops on the certified relative duality gap
(:mod:`sparsesvm.model.certificates`), which every result carries (``rel_gap``).
"""

from __future__ import annotations

import numpy as np

from ..model.losses import hinge_loss
from ..model.projections import _project_epigraph_hinge, _project_halfspace, _project_simplex
from . import _kernels
from ._loop import DEFAULT_STEP_RATIO, DualStep, check_weight, primal_dual

__all__ = [
    "hinge_reg",
    "hinge_con",
    "SimplexDual",
    "EpigraphDual",
    "ConstrainedDual",
]


# --------------------------------------------------------------------------- #
# Algorithm 1: hinge-reg
# --------------------------------------------------------------------------- #
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


class SimplexDual(DualStep):
    """Algorithm 1's dual update: ``Y+ = P_{S_lam}(Y + sigma (2 T X+ - T X) + sigma R)`` (row-wise simplex).

    Built in the buffer of the old ``T X`` (L, K). While ``X = X+ = 0`` the
    relative change is the dual's (:func:`_dual_rel_change`). Where the
    compiled kernels are used, one pass (:func:`sparsesvm.solvers._kernels.simplex_step`).
    """

    method, weight = "hinge-reg", "lam"

    def prepare(self, size):
        self.kernel = _kernels.simplex_step(size)  # compiled dual update, or None (numpy)

    def step_norm(self):
        return self.op.norm()

    def start(self, tau, sigma):
        super().start(tau, sigma)
        self.sR = sigma * self.R

    def __call__(self, X, Xn, Y, TX, rel, TXn=None):
        TXn = self.op.T(Xn) if TXn is None else TXn
        if self.kernel is not None:
            nn, dd = self.kernel(Y, TX, TXn, self.sR, self.sigma, self.par, TX)  # in the old TX
            if rel == np.inf and not X.any():
                rel = float(np.sqrt(dd / nn)) if nn > 0 else np.inf
            return TX, TXn, rel
        # Y + sigma*(2 TXn - TX) + sigma R, built in the buffer of the old TX
        TX -= TXn
        TX -= TXn
        TX *= -self.sigma
        TX += Y
        TX += self.sR
        Yn = _project_simplex(TX, self.par)
        if rel == np.inf and not X.any():
            rel = _dual_rel_change(Yn, Y)  # X = X+ = 0: a fixed point once Y stops too
        return Yn, TXn, rel

    def objective(self, X, TX):
        return self.penalty.value(X) + self.par * hinge_loss(TX, self.R)


def hinge_reg(op, penalty, lam, *, tol=1e-5, max_iter=100000, step_ratio=DEFAULT_STEP_RATIO,
              trace=False, reference=None, stopping="rel_change", max_time=None):
    """Regularised exact-hinge problem by Algorithm 1 (primal-dual, Chambolle-Pock).

    ``minimize_X g(X) + lam * sum_l h_l((T X)[l, :])`` (spec section 1, "regularized").

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
        :data:`~sparsesvm.solvers._loop.GAP_CHECK_EVERY` iterations).
    max_time : float > 0, optional
        Stop after this many seconds of loop time (trace evaluations excluded),
        like ``max_iter`` (``converged`` is then False). None: no limit.

    Returns
    -------
    SolverResult
        ``objective = g(X) + lam * loss(X)``; ``rel_gap`` the certified
        relative gap of the returned point (computed after the clock stops).

    Notes
    -----
    Spec section 3, Algorithm 1 (X, Y of shapes (M+1, K), (L, K))::

        X+ = prox_{tau g}(X - tau T^T Y)
        Y+ = P_{S_lam}(Y + sigma (2 T X+ - T X) + sigma R)     (row-wise simplex)

    ``T X`` is kept from the previous iteration, so each iteration does one
    product with ``Phi`` and one with ``Phi^T``. Where the compiled primal step
    is used (:class:`~sparsesvm.solvers._loop.PrimalStep`), the dual update is
    one compiled pass too (:func:`sparsesvm.solvers._kernels.simplex_step`).
    """
    check_weight(lam, "lam")
    return primal_dual(SimplexDual(op, penalty, lam), tol=tol, max_iter=max_iter,
                       step_ratio=step_ratio, trace=trace, reference=reference, stopping=stopping,
                       max_time=max_time)


# --------------------------------------------------------------------------- #
# Algorithm 2: hinge-con
# --------------------------------------------------------------------------- #
class ConstrainedDual(DualStep):
    """A dual update of the constrained problem ``min g(X) s.t. sum_l h_l((T X)[l]) <= eta``.

    ``X = 0`` solves it when ``eta >= L`` (its loss is exactly ``L`` and
    ``g(0) = 0`` is the minimum of ``g``); the objective is ``g(X)`` and the
    violation ``max(0, loss(X) - eta)``.
    """

    weight = "eta"

    def solved_by_zero(self):
        return self.par >= self.op.n_samples

    def violation(self, TX):
        return max(0.0, hinge_loss(TX, self.R) - self.par)


class EpigraphDual(ConstrainedDual):
    """Algorithm 2's dual update (epigraphical splitting), with the half-space step of zeta.

    ``zeta`` (L,) bounds each sample's loss, ``xi`` (L,) is its dual::

        zeta+ = P_{V_eta}(zeta - tau xi)
        Yh = Y + sigma (2 T X+ - T X);   xih = xi + sigma (2 zeta+ - zeta)
        (Yt, xit) = P_epi(Yh / sigma, xih / sigma)     (row l: epigraph of h_l)
        Y+ = Yh - sigma Yt;   xi+ = xih - sigma xit

    Where the compiled kernels are used, one pass
    (:func:`sparsesvm.solvers._kernels.epigraph_step`).
    """

    method = "hinge-con"

    def prepare(self, size):
        self.kernel = _kernels.epigraph_step(size)  # compiled dual update, or None (numpy)

    def step_norm(self):
        return max(self.op.norm(), 1.0)

    def start(self, tau, sigma):
        super().start(tau, sigma)
        L = self.op.n_samples
        self.zeta = np.zeros(L)
        self.xi = np.zeros(L)
        self.zbuf = np.empty(L)  # the compiled path's other half-space buffer (it swaps with zeta)

    def __call__(self, X, Xn, Y, TX, rel, TXn=None):
        sigma, zeta, xi = self.sigma, self.zeta, self.xi
        if self.kernel is not None:
            TXn = self.op.T(Xn) if TXn is None else TXn
            # half-space step, over-relaxation and epigraph projection in one pass;
            # the new Y in the old TX buffer, xi in place, zeta+ in zbuf
            self.kernel(Y, TX, TXn, self.R, zeta, xi, sigma, self.tau, self.par, TX, self.zbuf)
            self.zeta, self.zbuf = self.zbuf, zeta
            return TX, TXn, rel
        zn = _project_halfspace(zeta - self.tau * xi, self.par)
        TXn = self.op.T(Xn) if TXn is None else TXn
        # Yh / sigma = Y / sigma + 2 TXn - TX  (built in the old TX buffer)
        TX -= TXn
        TX -= TXn
        TX *= -1.0
        TX += Y / sigma
        xis = xi / sigma + 2.0 * zn - zeta
        P, theta = _project_epigraph_hinge(TX, xis, self.R)
        TX -= P
        TX *= sigma
        self.xi = sigma * (xis - theta)
        self.zeta = zn
        return TX, TXn, rel


def hinge_con(op, penalty, eta, *, tol=1e-5, max_iter=100000, step_ratio=DEFAULT_STEP_RATIO,
              trace=False, reference=None, stopping="rel_change", max_time=None):
    """Constrained exact-hinge problem by Algorithm 2 (epigraphical splitting).

    ``minimize_X g(X)  s.t.  sum_l h_l((T X)[l, :]) <= eta`` (spec section 1, "constrained").

    Parameters
    ----------
    op, penalty, tol, max_iter, trace, reference, stopping, max_time
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
    Spec section 3, Algorithm 2. Variables X (M+1, K), zeta (L,), duals
    Y (L, K), xi (L,)::

        X+    = prox_{tau g}(X - tau T^T Y)
        zeta+ = P_{V_eta}(zeta - tau xi)
        Yh    = Y + sigma (2 T X+ - T X);   xih = xi + sigma (2 zeta+ - zeta)
        (Yt, xit) = P_epi(Yh / sigma, xih / sigma)     (row l: epigraph of h_l)
        Y+ = Yh - sigma Yt;   xi+ = xih - sigma xit

    When ``eta >= L`` the problem is solved by ``X = 0`` (its loss is exactly
    ``L`` and ``g(0) = 0`` is the minimum of ``g``): that case returns at once
    with ``n_iter = 0`` (the iteration would otherwise never meet the
    relative-change rule, ``||X|| = 0``). Where the compiled primal step is
    used (:class:`~sparsesvm.solvers._loop.PrimalStep`), the half-space step
    and the dual update are one compiled pass too
    (:func:`sparsesvm.solvers._kernels.epigraph_step`).
    """
    check_weight(eta, "eta")
    return primal_dual(EpigraphDual(op, penalty, eta), tol=tol, max_iter=max_iter,
                       step_ratio=step_ratio, trace=trace, reference=reference, stopping=stopping,
                       max_time=max_time)
