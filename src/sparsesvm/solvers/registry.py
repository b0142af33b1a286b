"""Which function fits which method: the one dispatch of every fit, and where alpha becomes lambda or eta.

A fit is asked for by ``(method, solver)``; :func:`lookup` returns its
function ``run(op, penalty, alpha, *, tol, max_iter, step_ratio, trace,
reference, stopping) -> SolverResult`` or raises an error naming the known
pairs. Each run maps the user's ``alpha`` to the problem's parameter with
:func:`model_parameters` (spec section 1: ``lambda = 1/alpha``, ``eta = alpha * L``).

Solver families (:data:`SOLVERS`):

- ``"paper"``: the paper's algorithms and the baselines of spec section 4
  (:mod:`sparsesvm.solvers.paper`, :mod:`sparsesvm.solvers.baselines`);
- ``"liblinear"``: the l2 peer, scikit-learn's ``LinearSVC(multi_class=
  "crammer_singer")`` for hinge-reg with the l2 penalty
  (:func:`sparsesvm.solvers.baselines.liblinear_cs`; imports scikit-learn when run);
- ``"accelerated"`` (optional, :data:`OPTIONAL_SOLVERS`): the certified
  engines of :mod:`sparsesvm.solvers.accelerated`, which register themselves
  with :func:`register_solver` when imported; imported only when asked for by
  name, or to list every family in an error message (their modules import
  ``scipy.optimize``).

This module imports numpy and the solvers, never scikit-learn, so that a
training job of the paper's methods starts quickly.
"""

from __future__ import annotations

import importlib

import numpy as np

from ..model.penalties import PENALTIES
from .baselines import hinge_lin, liblinear_cs, logit, ova, square
from .paper import hinge_con, hinge_reg

__all__ = [
    "METHODS",
    "EXACT_HINGE",
    "CONSTRAINED",
    "PENALTIES",
    "PRECISIONS",
    "SOLVERS",
    "OPTIONAL_SOLVERS",
    "model_parameters",
    "register_solver",
    "solver_family",
    "lookup",
    "check_precision",
]

METHODS = ("hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova")
#: methods with the exact hinge loss: they can stop on a certified duality gap
EXACT_HINGE = ("hinge-reg", "hinge-con", "hinge-lin")
#: methods of the constrained problem ``min g(X) s.t. loss(X) <= eta``
CONSTRAINED = ("hinge-con", "hinge-lin")
#: ``SparseSVC(precision=...)``: the dtype of the operator's products with Phi
#: (:class:`sparsesvm.model.operator.MulticlassOperator`); ``"double"`` first (the default)
PRECISIONS = {"double": np.float64, "single": np.float32}


def model_parameters(method, alpha, n_samples):
    """The problem's parameter for the hyper-parameter ``alpha`` (spec section 1).

    ``lambda = 1 / alpha`` (the weight of the loss) for the regularised forms
    (hinge-reg, square, logit, ova); ``eta = alpha * L`` (the bound on the
    total hinge loss, L = ``n_samples``) for the constrained forms
    (:data:`CONSTRAINED`: hinge-con, hinge-lin). Larger alpha gives a sparser
    model in both.

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.
    alpha : float > 0
    n_samples : int
        L, the number of training rows.

    Returns
    -------
    name : {"lam", "eta"}
    value : float
    """
    if method in CONSTRAINED:
        return "eta", alpha * n_samples
    return "lam", 1.0 / alpha


def _ova_on_operator(op, penalty, lam, **options):
    return ova(op.Phi, op.y_idx, op.n_classes, penalty, lam, **options)


def _alpha_adapter(method, solve, primal_dual):
    """``run(op, penalty, alpha, **options)`` calling ``solve(op, penalty, lam or eta, ...)``;
    ``step_ratio`` is passed to the primal-dual methods only."""

    def run(op, penalty, alpha, *, tol, max_iter, step_ratio, trace, reference, stopping):
        _, par = model_parameters(method, alpha, op.n_samples)
        options = dict(tol=tol, max_iter=max_iter, trace=trace, reference=reference,
                       stopping=stopping)
        if primal_dual:
            options["step_ratio"] = step_ratio
        return solve(op, penalty, par, **options)

    return run


def _liblinear_run(op, penalty, alpha, *, tol, max_iter, step_ratio, trace, reference, stopping):
    # the family declares l2 only and no trace: core.check_params and core.fit refuse the rest
    return liblinear_cs(op.Phi, op.y_idx, op.n_classes, alpha, tol=tol, max_iter=max_iter)


#: ``SOLVERS[solver] = {"methods": {method: run}, "stopping": (rules...),
#: "penalties": (names...), "trace": bool, "single": (methods...)}``: the methods,
#: the stopping rules (default first), the penalties its methods fit, whether they
#: record a convergence trace and the methods that compute with an operator of
#: float32 products (``precision="single"``; every method takes ``"double"``);
#: ``run(op, penalty, alpha, *, tol, max_iter, step_ratio, trace, reference,
#: stopping) -> SolverResult`` with ``op`` a :class:`MulticlassOperator`
#: (``op.Phi``, ``op.y_idx``, ``op.n_classes`` for methods that need the raw
#: data) and ``alpha`` mapped by :func:`model_parameters`.
SOLVERS = {
    "paper": {
        "methods": {
            "hinge-reg": _alpha_adapter("hinge-reg", hinge_reg, True),
            "hinge-con": _alpha_adapter("hinge-con", hinge_con, True),
            "hinge-lin": _alpha_adapter("hinge-lin", hinge_lin, True),
            "square": _alpha_adapter("square", square, False),
            "logit": _alpha_adapter("logit", logit, False),
            "ova": _alpha_adapter("ova", _ova_on_operator, False),
        },
        "stopping": ("rel_change", "gap"),
        "penalties": PENALTIES,
        "trace": True,
        # the loops whose products with Phi are the operator's (ova makes its own)
        "single": ("hinge-reg", "hinge-con", "hinge-lin", "square", "logit"),
    },
    "liblinear": {"methods": {"hinge-reg": _liblinear_run}, "stopping": ("liblinear",),
                  "penalties": ("l2",), "trace": False, "single": ()},
}

#: Optional families: ``{name: (module, ...)}``; the modules register the family's
#: methods when imported, in order (one may be missing, or fail to import: its
#: methods are then unknown). ``"accelerated"``: the exact-hinge methods
#: (:mod:`sparsesvm.solvers.accelerated.hinge`) and the smooth baselines
#: (:mod:`sparsesvm.solvers.accelerated.smooth`).
OPTIONAL_SOLVERS = {"accelerated": ("sparsesvm.solvers.accelerated.hinge",
                                    "sparsesvm.solvers.accelerated.smooth")}


def register_solver(name, methods, stopping, *, penalties=PENALTIES, trace=True, single=()):
    """Add a solver family usable as ``SparseSVC(solver=name)``, or add methods to it.

    Parameters
    ----------
    name : str
    methods : dict
        ``{method: run}`` for the methods it supports (see :data:`SOLVERS`);
        when the family exists, these are added to (or replace) its methods.
    stopping : tuple of str
        Stopping rules it accepts (the family's rules when it exists must be
        the same).
    penalties : tuple of str, default=PENALTIES
        Penalties its methods fit (a new family only).
    trace : bool, default=True
        Whether its methods record a convergence trace (a new family only).
    single : tuple of str, default=()
        The methods of ``methods`` that compute with the operator's float32
        products when given one (``precision="single"``, :data:`PRECISIONS`);
        the others are refused that precision.

    Raises
    ------
    ValueError
        Adding to a family with other stopping rules.
    """
    stopping = tuple(stopping)
    if name in SOLVERS:
        if SOLVERS[name]["stopping"] != stopping:
            raise ValueError(f"solver family {name!r} has stopping rules {SOLVERS[name]['stopping']}, "
                             f"cannot add methods with {stopping}")
        entry = SOLVERS[name]
        entry["methods"].update(methods)
        entry["single"] = tuple(m for m in entry["single"] if m not in methods) + tuple(single)
        return
    SOLVERS[name] = {"methods": dict(methods), "stopping": stopping, "penalties": tuple(penalties),
                     "trace": bool(trace), "single": tuple(single)}


_LOADED = set()


def _load_optional(name):
    modules = OPTIONAL_SOLVERS.get(name, ())
    if isinstance(modules, str):
        modules = (modules,)
    for module in modules:
        if module in _LOADED:
            continue
        _LOADED.add(module)
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def solver_family(name):
    """The entry ``SOLVERS[name]``, importing an optional family on first use.

    Parameters
    ----------
    name : str

    Returns
    -------
    dict
        The family's entry: ``"methods"``, ``"stopping"``, ``"penalties"`` and
        ``"trace"`` (see :data:`SOLVERS`).

    Raises
    ------
    ValueError
        If no family of that name exists (the message lists every family,
        the optional ones that import included).
    """
    if isinstance(name, str):
        _load_optional(name)
    if not isinstance(name, str) or name not in SOLVERS:
        for other in OPTIONAL_SOLVERS:
            _load_optional(other)
        raise ValueError(f"unknown solver {name!r}; expected one of {tuple(SOLVERS)}")
    return SOLVERS[name]


def lookup(method, solver):
    """The fit function of ``(method, solver)`` and the family's entry.

    Parameters
    ----------
    method : str
    solver : str
        A family of :data:`SOLVERS` (optional families imported on demand).

    Returns
    -------
    run : callable
        ``run(op, penalty, alpha, *, tol, max_iter, step_ratio, trace, reference, stopping)``.
    family : dict
        ``SOLVERS[solver]``: its stopping rules (default first), the penalties
        it fits and whether it records a trace.

    Raises
    ------
    ValueError
        An unknown solver (naming every family) or a method the family does
        not fit (naming the methods it fits).
    """
    family = solver_family(solver)
    if method not in family["methods"]:
        raise ValueError(f"solver {solver!r} does not support method {method!r}; "
                         f"it supports {tuple(family['methods'])}")
    return family["methods"][method], family


def check_precision(precision, method, solver):
    """``precision`` if ``solver`` computes ``method`` in it (the one check of
    ``SparseSVC(precision=...)`` and of a workflow grid's ``precision:``).

    Parameters
    ----------
    precision : str
        A key of :data:`PRECISIONS`.
    method, solver : str
        A method the solver family fits (not checked here: :func:`lookup` does).

    Raises
    ------
    ValueError
        An unknown precision, or one the family does not offer for the method
        (naming the methods it offers it for, if any).
    """
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected one of {tuple(PRECISIONS)}")
    single = solver_family(solver).get("single", ())
    if precision != "double" and method not in single:
        raise ValueError(
            f"precision={precision!r} is not available for method {method!r} with solver {solver!r}: "
            "it computes in float64 only; use precision='double'"
            + (f" (solver {solver!r} offers precision={precision!r} for {single})" if single else ""))
    return precision
