"""Several weights of one method run side by side, sharing each iteration's products with Phi.

The paper's experiments fit every alpha of a grid on the same training subset (E2: nine
alphas for each method, L and subset). Each fit's iteration is dominated by its two
products with ``Phi`` (a (L, M) matrix times an (M, K) one and back); the weights of n
fits laid side by side make them (L, M) times (M, n K), which reads ``Phi`` once instead of
n times and runs BLAS on wider blocks: at E2's MNIST shapes the products cost less per fit
the more fits share them (README, "Alphas side by side").

side_by_side(method, op, penalty, weights, ...)
    One result per weight, each the result of the method's own solver
    (:func:`~sparsesvm.solvers.paper.hinge_reg`, ...) up to the rounding of the products.

Only the products are shared: every fit keeps its own step sizes, iterates, compiled
steps and stopping rule (the paper's relative change), and leaves the batch at its own
stopping iteration. The products are shared where ``Phi`` is dense with float64 products
(:meth:`~sparsesvm.model.operator.MulticlassOperator.shares_products`); otherwise each fit
makes its own, and running them side by side only interleaves them.
"""

from __future__ import annotations

from ..model.losses import logistic_loss, squared_hinge_loss
from ._loop import DEFAULT_STEP_RATIO, check_weight, primal_dual_many
from .baselines import SlackDual, _fista_T_many, _grad_logit, _grad_square
from .paper import EpigraphDual, SimplexDual

__all__ = ["side_by_side", "runs_side_by_side", "SIDE_BY_SIDE_METHODS"]

#: method -> (its weight's name, its dual update) for the primal-dual methods
_PRIMAL_DUAL = {"hinge-reg": ("lam", SimplexDual), "hinge-con": ("eta", EpigraphDual),
                "hinge-lin": ("eta", SlackDual)}
#: method -> (gradient of the loss's conjugate form, loss, curvature, default scheme)
_SMOOTH = {"square": (_grad_square, squared_hinge_loss, 2.0, "fista"),
           "logit": (_grad_logit, logistic_loss, 0.5, "fb")}
SIDE_BY_SIDE_METHODS = tuple(_PRIMAL_DUAL) + tuple(_SMOOTH)


def runs_side_by_side(method, solver, stopping, trace=False):
    """Whether fits of ``method`` with ``solver``, ``stopping`` and ``trace`` can run side by
    side: the paper's solver of :data:`SIDE_BY_SIDE_METHODS`, the relative-change rule, no
    trace (:func:`sparsesvm.core.fit_alphas` and the workflow's grid jobs,
    :meth:`sparsesvm.experiments.plan.Plan.grid_jobs`, ask this)."""
    return (method in SIDE_BY_SIDE_METHODS and solver == "paper" and stopping == "rel_change"
            and not trace)


def side_by_side(method, op, penalty, weights, *, tol=1e-5, max_iter=100000,
                 step_ratio=DEFAULT_STEP_RATIO, scheme=None):
    """Fit ``method`` at each of ``weights`` on one operator, the products shared.

    Parameters
    ----------
    method : {"hinge-reg", "hinge-con", "hinge-lin", "square", "logit"}
    op : MulticlassOperator
        ``T`` built from ``Phi`` (L, M) and the labels.
    penalty : Penalty
        ``g``; X of shape (M + 1, K).
    weights : sequence of float > 0
        ``lam`` for hinge-reg, square and logit, ``eta`` for hinge-con and hinge-lin
        (as the method's own solver takes it); repeated values are fitted twice.
    tol, max_iter : float, int
        The relative-change rule, as in :func:`sparsesvm.solvers.paper.hinge_reg`.
    step_ratio : float > 0
        ``sigma / tau`` of the primal-dual methods (unused by square and logit).
    scheme : {"fb", "fista"}, optional
        logit's iteration (default ``"fb"``, the paper's forward-backward, as
        :func:`sparsesvm.solvers.baselines.logit`); square is always FISTA.

    Returns
    -------
    list of SolverResult
        One per weight, in order: each what the method's solver returns for that weight
        (``stopping="rel_change"``, no trace) up to the rounding of the products, which
        can move a stopping iteration by a few. ``fit_time``: the batch's loop seconds when
        that fit stopped (shared time: the fits ran together).

    Raises
    ------
    ValueError
        For an unknown method, no weights, a weight that is not a finite number > 0, a
        scheme given for a method without one, or a bad ``tol``, ``max_iter`` or
        ``step_ratio``.
    """
    weights = [float(w) for w in weights]
    if not weights:
        raise ValueError("weights is empty: give at least one weight")
    if method in _PRIMAL_DUAL:
        name, Dual = _PRIMAL_DUAL[method]
        if scheme is not None:
            raise ValueError(f"scheme applies to logit only, not to {method!r}")
        for w in weights:
            check_weight(w, name)
        return primal_dual_many([Dual(op, penalty, w) for w in weights], tol=tol,
                                max_iter=max_iter, step_ratio=step_ratio)
    if method in _SMOOTH:
        grad, loss, curvature, default = _SMOOTH[method]
        if scheme is not None and method != "logit":
            raise ValueError(f"scheme applies to logit only, not to {method!r}")
        scheme = default if scheme is None else scheme
        for w in weights:
            check_weight(w, "lam")
        return _fista_T_many(op, penalty, weights, grad, loss, curvature, tol, max_iter,
                             method, scheme)
    raise ValueError(f"unknown method {method!r}; side_by_side runs one of {SIDE_BY_SIDE_METHODS}")
