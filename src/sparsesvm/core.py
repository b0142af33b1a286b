"""The fit core of :class:`sparsesvm.SparseSVC`, without scikit-learn.

A training job of the experiments (:func:`sparsesvm.experiments.runner.run_job`)
and :class:`sparsesvm.SparseSVC` fit through the same code: parameter checks
(:func:`check_params`, :func:`check_groups`), label encoding
(:func:`encode_labels`), building the operator and the penalty, dispatch through the
method registry (:mod:`sparsesvm.solvers.registry`: ``(method, solver)`` ->
fit function, re-exported here as :data:`SOLVERS`, :func:`register_solver`,
:func:`solver_family`) in :func:`fit`, and the scores of a linear model
(:func:`decision_scores`). This module imports numpy and the solvers
(scipy.sparse only where they do: see :mod:`sparsesvm._sparse`), never
scikit-learn, whose import costs about 2 s (more than many E2 fits), so that a
training job of the paper's methods starts quickly; :mod:`sparsesvm.estimators`
adds the scikit-learn layer (``validate_data``, ``n_features_in_``, tags).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from ._sparse import issparse
from .model.operator import MAX_NORM, MulticlassOperator
from .model.penalties import check_groups, make_penalty
from .solvers.registry import (
    EXACT_HINGE,
    METHODS,
    OPTIONAL_SOLVERS,
    PENALTIES,
    PRECISIONS,
    SOLVERS,
    check_precision,
    lookup,
    register_solver,
    solver_family,
)

__all__ = [
    "METHODS",
    "EXACT_HINGE",
    "PENALTIES",
    "PRECISIONS",
    "SOLVERS",
    "OPTIONAL_SOLVERS",
    "register_solver",
    "solver_family",
    "FitParams",
    "LinearFit",
    "check_params",
    "check_groups",
    "encode_labels",
    "fit",
    "fit_alphas",
    "unused_features_dropped",
    "decision_scores",
]


# --------------------------------------------------------------------------- #
# parameter checks
# --------------------------------------------------------------------------- #
def _check_positive_real(value, name, *, allow_zero=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    ok = value >= 0 if allow_zero else value > 0
    if not (np.isfinite(value) and ok):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return float(value)


def _check_max_iter(max_iter):
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    return int(max_iter)


def _check_trace(trace):
    if isinstance(trace, (bool, np.bool_)):
        return bool(trace)
    if isinstance(trace, numbers.Integral) and trace >= 1:
        return int(trace)
    raise ValueError(f"trace must be a bool or a positive int (record every n iterations), got {trace!r}")


@dataclass(frozen=True)
class FitParams:
    """Checked parameters of a fit (see :func:`check_params`).

    Attributes
    ----------
    method, penalty : str
    alpha, tol : float
    max_iter : int
    step_ratio : float
    solver : str
    stopping : str
        The rule used (``"auto"`` resolved to the family's first rule).
    trace : bool or int
    run : callable
        The fit function of ``(method, solver)`` (:func:`sparsesvm.solvers.registry.lookup`).
    precision : {"double", "single"}
        Precision of the products with the features (:data:`PRECISIONS`).
    """

    method: str
    penalty: str
    alpha: float
    tol: float
    max_iter: int
    step_ratio: float
    solver: str
    stopping: str
    trace: object
    run: object = field(repr=False, compare=False)
    precision: str = "double"


def check_params(method, penalty, alpha, tol, max_iter, step_ratio, solver, stopping, trace,
                 precision="double"):
    """Check the parameters of :class:`sparsesvm.SparseSVC` (all but ``groups``, which
    needs the data: :func:`check_groups`, and ``reference_coef``).

    Parameters
    ----------
    method : {"hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova"}
    penalty : {"l2", "l1", "l12", "l1inf"}
    alpha : float > 0
    tol : float >= 0
    max_iter : int >= 1
    step_ratio : float > 0
    solver : str
        A family of :data:`SOLVERS` (optional families imported on demand) that
        fits ``method`` (:func:`sparsesvm.solvers.registry.lookup`).
    stopping : str
        ``"auto"`` or one of the family's rules.
    trace : bool or int >= 1
    precision : {"double", "single"}, default="double"
        Precision of the products with the features (:data:`PRECISIONS`);
        ``"single"`` only for the methods the family lists under ``"single"``
        (:data:`SOLVERS`).

    Returns
    -------
    FitParams

    Raises
    ------
    ValueError
        Naming the first bad parameter, in the order above.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if penalty not in PENALTIES:
        raise ValueError(f"unknown penalty {penalty!r}; expected one of {PENALTIES}")
    alpha = _check_positive_real(alpha, "alpha")
    tol = _check_positive_real(tol, "tol", allow_zero=True)
    max_iter = _check_max_iter(max_iter)
    step_ratio = _check_positive_real(step_ratio, "step_ratio")
    run, family = lookup(method, solver)
    if penalty not in family["penalties"]:
        raise ValueError(f"solver {solver!r} fits the {'/'.join(family['penalties'])} problem only; "
                         f"got penalty {penalty!r}")
    rules = family["stopping"]
    rule = rules[0] if stopping == "auto" else stopping
    if rule not in rules:
        raise ValueError(f"unknown stopping {stopping!r} for solver {solver!r}; "
                         f"expected 'auto' or one of {rules}")
    trace = _check_trace(trace)
    if trace and not family["trace"]:
        raise ValueError(f"solver {solver!r} records no convergence trace (trace={trace!r} given)")
    precision = check_precision(precision, method, solver)
    return FitParams(method, penalty, alpha, tol, max_iter, step_ratio, solver, rule, trace, run,
                     precision=precision)


def check_label_types(y, owner="SparseSVC"):
    """Refuse labels that cannot be sorted together (e.g. str and int mixed in an object array).

    Parameters
    ----------
    y : array_like of shape (n_samples,)
    owner : str
        Estimator named in the error message.

    Raises
    ------
    ValueError
        Naming the label types found and what to do (instead of numpy's bare
        ``TypeError: '<' not supported``).
    """
    y = np.asarray(y)
    if y.dtype != object:
        return
    kinds = sorted({type(v).__name__ for v in y.ravel().tolist()})
    try:
        np.unique(y)
    except TypeError as exc:
        raise ValueError(
            f"{owner}: the labels in y cannot be sorted together (types {kinds}: {exc}); "
            "use labels of one type, e.g. y.astype(str)"
        ) from None


def encode_labels(y, owner="SparseSVC"):
    """Sorted classes and class indices of ``y``.

    Parameters
    ----------
    y : array_like of shape (n_samples,)
        Labels of any sortable type.
    owner : str
        Estimator named in the error message.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
    y_idx : ndarray of int of shape (n_samples,)
        ``classes[y_idx] == y``.

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, has fewer than 2 classes, or mixes labels that cannot
        be sorted together (e.g. str and int).
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (n_samples,), got shape {y.shape}")
    check_label_types(y, owner)
    classes, y_idx = np.unique(y, return_inverse=True)
    if classes.size < 2:
        got = f"1 class ({classes[0]!r})" if classes.size else "no samples"
        raise ValueError(f"{owner} needs at least 2 classes in y; got {got}")
    return classes, y_idx.ravel()


# --------------------------------------------------------------------------- #
# fit and scores
# --------------------------------------------------------------------------- #
@dataclass
class LinearFit:
    """A fitted linear multiclass model and how the fit went.

    Attributes
    ----------
    classes : ndarray (n_classes,)
    coef : ndarray (n_classes, n_features), float64
    intercept : ndarray (n_classes,), float64
    groups : None, int or "features"
        The checked ``groups``.
    n_iter : int
    converged : bool
    objective, constraint_violation, fit_time, rel_gap : float
        As :class:`sparsesvm.SparseSVC`'s ``objective_``, ... (``fit_time``:
        seconds in the solver loop).
    stopping : str
        The stopping rule used.
    trace : dict of 1-D ndarrays or None
    """

    classes: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    groups: object
    n_iter: int
    converged: bool
    objective: float
    constraint_violation: float
    fit_time: float
    rel_gap: float
    stopping: str
    trace: dict | None = field(default=None, repr=False)

    def predict(self, X):
        """Class of largest score (first class on ties).

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Any real dtype (see :func:`decision_scores`).

        Returns
        -------
        ndarray of shape (n_samples,)

        Raises
        ------
        ValueError
            If a score is NaN or infinite (X holds NaN or inf, or overflows).
        """
        S = decision_scores(X, self.coef, self.intercept)
        if not np.all(np.isfinite(S)):
            raise ValueError("X contains NaN or inf (or values so large that the scores overflow)")
        return self.classes[np.argmax(S, axis=1)]


#: methods whose ``solver="paper"`` runs start from 0 and take the norm ``||T||`` of
#: :class:`~sparsesvm.model.operator.MulticlassOperator` (one-vs-all computes its own)
_RESTRICTABLE = ("hinge-reg", "hinge-con", "hinge-lin", "square", "logit")


def unused_features_dropped(op, method, solver, groups):
    """The features to fit on when the others, unused by every sample, can be dropped.

    With sparse features (News20's TF-IDF: a few hundred documents use a fraction of the
    vocabulary), the paper's algorithms started from 0 never move the weights of a
    feature no sample uses, under a penalty whose groups do not mix features (l2, l1,
    ``groups=None``, or ``groups="features"``): those rows of ``T^T Y`` are 0 and the
    proximal step keeps 0 at 0. Fitting on the used features only gives the same
    iterates (to rounding: the sums over the parameter array skip exact zeros) and the
    same step sizes (:meth:`~sparsesvm.model.operator.MulticlassOperator.restrict_features`
    keeps the full operator's norm), at a fraction of the cost of each pass over the
    (M + 1, K) parameter array. Within-class blocks (``groups`` an int) are kept whole.

    Returns
    -------
    ndarray of int or None
        The used features' indices (increasing), or None to fit on all of them: dense
        features, another solver or method, within-class blocks, or every feature used
        (:meth:`~sparsesvm.model.operator.MulticlassOperator.used_features`).
    """
    if solver != "paper" or method not in _RESTRICTABLE or groups not in (None, "features"):
        return None
    return op.used_features()


def fit(params, X, y, *, groups=None, reference_coef=None, owner="SparseSVC"):
    """Fit the model of ``params`` (the body of :meth:`sparsesvm.SparseSVC.fit`).

    Parameters
    ----------
    params : FitParams
        From :func:`check_params`.
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        Real, finite features (any real dtype; used as float64, CSR if sparse:
        :class:`~sparsesvm.model.operator.MulticlassOperator` checks and converts; with
        ``params.precision="single"`` a float32 copy as well, for its products).
    y : array_like of shape (n_samples,)
        Labels of any sortable type; at least two classes.
    groups : None, int or "features"
        Checked here with :func:`check_groups`.
    reference_coef : array_like of shape (n_classes, n_features + 1), optional
        ``[coef | intercept]`` for the ``rel_dist`` trace entry.
    owner : str
        Estimator named in the error messages.

    Returns
    -------
    LinearFit

    Raises
    ------
    ValueError
        Fewer than 2 classes; bad groups or reference; bad data (from the operator).
    """
    problem = _Problem(params, X, y, groups, reference_coef, owner)
    res = params.run(problem.op, problem.penalty, params.alpha, tol=params.tol,
                     max_iter=params.max_iter, step_ratio=params.step_ratio, trace=params.trace,
                     reference=problem.reference, stopping=params.stopping)
    return problem.linear_fit(res, params)


def fit_alphas(params, alphas, X, y, *, groups=None, owner="SparseSVC"):
    """Fit the model of ``params`` at each of ``alphas``, the fits side by side.

    The fits share each iteration's products with the features
    (:func:`sparsesvm.solvers.side_by_side.side_by_side`); each is :func:`fit`'s at that
    alpha up to the rounding of the products. For the paper's solvers
    (``solver="paper"``) of hinge-reg, hinge-con, hinge-lin, square and logit with the
    relative-change rule and no trace.

    Parameters
    ----------
    params : FitParams
        From :func:`check_params`; its ``alpha`` is not used.
    alphas : sequence of float > 0
    X, y, groups, owner
        As in :func:`fit`.

    Returns
    -------
    list of LinearFit
        One per alpha, in order; ``fit_time``: the seconds the side-by-side loop had run
        when that fit stopped (time shared with the other fits).

    Raises
    ------
    ValueError
        As :func:`fit`; and for a method, solver, stopping rule or trace that the fits
        side by side do not take, or a bad alpha.
    """
    from .solvers.registry import model_parameters
    from .solvers.side_by_side import SIDE_BY_SIDE_METHODS, runs_side_by_side, side_by_side

    if not runs_side_by_side(params.method, params.solver, params.stopping, params.trace):
        raise ValueError(f"{owner}: fits side by side take solver 'paper', one of "
                         f"{SIDE_BY_SIDE_METHODS}, stopping 'rel_change' and no trace; got "
                         f"method {params.method!r}, solver {params.solver!r}, stopping "
                         f"{params.stopping!r}, trace {params.trace!r}")
    alphas = [_check_positive_real(a, "alpha") for a in alphas]
    problem = _Problem(params, X, y, groups, None, owner)
    weights = [model_parameters(params.method, a, problem.op.n_samples)[1] for a in alphas]
    results = side_by_side(params.method, problem.op, problem.penalty, weights, tol=params.tol,
                           max_iter=params.max_iter, step_ratio=params.step_ratio)
    return [problem.linear_fit(res, params) for res in results]


class _Problem:
    """The operator and penalty of a fit (:func:`fit`, :func:`fit_alphas`), and its results
    as :class:`LinearFit` (the weights of features dropped as unused put back as 0)."""

    def __init__(self, params, X, y, groups, reference_coef, owner):
        if not issparse(X):
            X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
        if X.shape[0] and X.shape[1] and (X.size if not issparse(X) else X.nnz):
            amax = max(float(X.max()), -float(X.min()))
            if MAX_NORM < amax < np.inf:  # then ||T|| > MAX_NORM too (NaN, inf, the rest: the operator)
                raise ValueError(
                    f"{owner}: X has entries up to {amax:.3g} in absolute value, too large for float64 "
                    f"arithmetic (the solvers use ||T||**2 >= {amax:.3g}**2). Rescale X, e.g. divide it by "
                    f"{amax:.3g} (its largest entry) or standardise its features "
                    "(sklearn.preprocessing.StandardScaler), and fit again"
                )
        self.classes, y_idx = encode_labels(y, owner)
        K = self.classes.size
        M = X.shape[1]
        self.M, self.K = M, K
        self.groups = groups = check_groups(params.penalty, groups, M, params.method)
        reference = None
        if reference_coef is not None:
            if not solver_family(params.solver)["trace"]:
                raise ValueError(f"{owner}: solver {params.solver!r} records no convergence trace "
                                 "(reference_coef given)")
            ref = np.asarray(reference_coef, dtype=np.float64)
            if ref.shape != (K, M + 1):
                raise ValueError(f"reference_coef must have shape (n_classes, n_features + 1) = "
                                 f"{(K, M + 1)}, got {ref.shape}")
            if not np.all(np.isfinite(ref)):
                raise ValueError("reference_coef contains NaN or inf")
            reference = np.ascontiguousarray(ref.T)
        op = MulticlassOperator(X, y_idx, K, dtype=PRECISIONS[params.precision])
        used = unused_features_dropped(op, params.method, params.solver, groups)
        if used is not None and reference is not None and np.delete(reference[:-1], used, axis=0).any():
            used = None  # a trace reference with weights on unused features: its distance in full
        if used is not None:  # fitted on the used features; the others' weights stay 0
            op = op.restrict_features(used)
            if reference is not None:
                reference = reference[np.append(used, M)]
        self.op, self.used, self.reference = op, used, reference
        self.penalty = make_penalty(params.penalty, groups, op.n_features, K)

    def linear_fit(self, res, params):
        """A solver's result as the :class:`LinearFit` of the whole feature set."""
        if self.used is not None:
            full = np.zeros((self.M + 1, self.K))
            full[self.used] = res.X[:-1]
            full[-1] = res.X[-1]
            res = replace(res, X=full)
        return LinearFit(
            classes=self.classes,
            coef=np.ascontiguousarray(res.X[:-1].T),
            intercept=np.array(res.X[-1], dtype=np.float64),
            groups=self.groups,
            n_iter=int(res.n_iter),
            converged=bool(res.converged),
            objective=float(res.objective),
            constraint_violation=float(res.constraint_violation),
            fit_time=float(res.fit_time),
            rel_gap=float(res.rel_gap),
            stopping=params.stopping,
            trace=res.trace if params.trace else None,
        )


def decision_scores(X, coef, intercept, *, block_rows=256):
    """Class scores ``X @ coef.T + intercept`` in float64.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        float64 input is used as is; a dense array of another dtype (e.g. a
        float32 memory map of stored features) is converted ``block_rows`` rows
        at a time, so no float64 copy of the whole matrix is made.
    coef : ndarray of shape (n_classes, n_features)
    intercept : ndarray of shape (n_classes,)
    block_rows : int
        Rows per converted block.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    W = coef.T
    if issparse(X):
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        S = np.asarray(X @ W)
    elif X.dtype == np.float64 or X.shape[0] <= block_rows:
        S = np.asarray(np.asarray(X, dtype=np.float64) @ W)
    else:
        S = np.empty((X.shape[0], W.shape[1]))
        for start in range(0, X.shape[0], block_rows):
            stop = min(start + block_rows, X.shape[0])
            np.matmul(np.asarray(X[start:stop], dtype=np.float64), W, out=S[start:stop])
    S += intercept
    return S
