"""scikit-learn estimators: :class:`SparseSVC` and the peer :class:`CrammerSingerSVC`.

``SparseSVC`` composes a method (data term + problem form), a penalty and a
solver family, in the manner of skglm's (datafit, penalty, solver) estimators.
Its fit core (parameter checks, label encoding, operator and penalty, solver
dispatch through the registry :data:`SOLVERS`, :mod:`sparsesvm.solvers.registry`)
lives in :mod:`sparsesvm.core`, which does
not import scikit-learn, so that a training job of the experiments can use it
without the ~2 s import; this module adds the scikit-learn layer (input
validation, ``n_features_in_``, tags). Solver families are looked up in
:data:`SOLVERS`; another module can add one with :func:`register_solver`
(both re-exported from :mod:`sparsesvm.core`). ``CrammerSingerSVC`` wraps
the liblinear peer, :func:`sparsesvm.solvers.baselines.liblinear_cs`
(also registered as ``solver="liblinear"`` for hinge-reg with l2).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from . import core as _core
from . import solvers as _solvers
from .core import EXACT_HINGE, METHODS, PENALTIES, SOLVERS, register_solver
from .solvers.baselines import liblinear_cs

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - older scikit-learn
    def _validate_data(est, X="no_validation", y="no_validation", reset=True, **kw):
        return est._validate_data(X, y, reset=reset, **kw)

__all__ = ["SparseSVC", "CrammerSingerSVC", "SOLVERS", "register_solver", "METHODS", "PENALTIES",
           "EXACT_HINGE"]


class _LinearClassifierMixin:
    """What the two estimators share: sparse-input tags, ``decision_function``, ``predict``.

    Needs ``classes_``, ``coef_`` (n_classes, n_features) and ``intercept_``
    (n_classes,) once fitted; put it before ``ClassifierMixin`` (which gives
    ``score``) and ``BaseEstimator`` in the bases.
    """

    # scikit-learn >= 1.6 tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _more_tags(self):  # pragma: no cover - scikit-learn < 1.6
        return {"X_types": ["2darray", "sparse"]}

    def _scores(self, X):
        check_is_fitted(self)
        X = _validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return _core.decision_scores(X, self.coef_, self.intercept_)

    def decision_function(self, X):
        """Class scores.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes), or (n_samples,) for 2 classes
            (score of ``classes_[1]`` minus score of ``classes_[0]``).
        """
        S = self._scores(X)
        if S.shape[1] == 2:
            return S[:, 1] - S[:, 0]
        return S

    def predict(self, X):
        """Class of largest score (first class on ties).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        S = self._scores(X)
        return self.classes_[np.argmax(S, axis=1)]


# --------------------------------------------------------------------------- #
# SparseSVC
# --------------------------------------------------------------------------- #
class SparseSVC(_LinearClassifierMixin, ClassifierMixin, BaseEstimator):
    """Sparse multiclass linear classifier with the exact (Crammer-Singer) hinge.

    Parameters
    ----------
    method : {"hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova"}
        Problem solved: regularised exact hinge (Algorithm 1), constrained exact
        hinge (Algorithm 2, epigraphical splitting), constrained with linear
        constraints (timing baseline), squared multiclass hinge (FISTA),
        multinomial logistic (FISTA) or one-vs-all squared hinge (FISTA per class).
    penalty : {"l2", "l1", "l12", "l1inf"}
        Regulariser ``g`` on the weights (biases are never penalised).
    groups : None, int or "features"
        None for l2 and l1; for l12 and l1inf either an int (within-class
        blocks of that many consecutive features, the last block shorter) or
        ``"features"`` (across-class groups: one feature's K weights; not with
        ``method="ova"``).
    alpha : float > 0
        Hyper-parameter: ``lambda = 1/alpha`` (regularised forms) and
        ``eta = alpha * n_samples`` (constrained forms); larger = sparser.
    tol : float >= 0
        Relative-change tolerance ``||X+ - X|| / ||X+|| <= tol``.
    max_iter : int
        Iteration cap.
    step_ratio : float > 0
        Primal-dual step balance ``sigma / tau`` (hinge-reg, hinge-con,
        hinge-lin; ignored by the FISTA methods). Default
        :data:`sparsesvm.solvers.DEFAULT_STEP_RATIO` (chosen by measurement,
        see there).
    solver : str
        Solver family (:mod:`sparsesvm.solvers.registry`): ``"paper"`` (the
        algorithms of the paper and the baselines), ``"liblinear"`` (the l2
        peer, for ``method="hinge-reg", penalty="l2"``: its bias is
        regularised), ``"accelerated"`` (when available) or one added with
        :func:`register_solver`.
    stopping : {"auto", "rel_change", "gap"}
        Stopping rule at ``tol``: ``"rel_change"`` is the paper's relative
        change of the iterates (which does not measure accuracy, see the
        spec's pitfalls); ``"gap"`` is the certified relative duality gap
        (exact-hinge methods only; :mod:`sparsesvm.model.certificates`). ``"auto"``
        = the solver family's first rule: ``"rel_change"`` for ``"paper"``,
        ``"gap"`` for ``"accelerated"``, ``"liblinear"`` (its own rule) for ``"liblinear"``.
    trace : bool or int
        Record the convergence trace every iteration (True) or every
        ``trace`` iterations.
    reference_coef : array of shape (n_classes, n_features + 1), optional
        A reference solution ``[coef | intercept]`` (rows per class, classes
        in the order of ``classes_``) for the ``rel_dist`` trace entry.
    precision : {"double", "single"}, default="double"
        Precision of the two products with the features in each iteration
        (:class:`~sparsesvm.model.operator.MulticlassOperator`'s ``dtype``):
        ``"single"`` runs them in float32 (about half the cost of float64 ones on
        dense features), while the iterates, the step sizes, the stopping
        measure and everything accumulated stay float64, and ``objective_``,
        ``constraint_violation_`` and ``rel_gap_`` are computed with float64
        products. Only for ``solver="paper"`` with hinge-reg, hinge-con,
        hinge-lin, square and logit (``fit`` refuses it for the others, naming
        them); see the README, "Single precision", for what it changes.

    Attributes
    ----------
    classes_ : ndarray (n_classes,)
    coef_ : ndarray (n_classes, n_features)
    intercept_ : ndarray (n_classes,)
    n_iter_ : int
    converged_ : bool
    objective_ : float
        ``g + lambda * loss`` (hinge-reg, square, logit, ova summed over
        classes) or ``g`` (hinge-con, hinge-lin).
    constraint_violation_ : float
        ``max(0, loss - eta)`` for hinge-con and hinge-lin, else 0.0.
    fit_time_ : float
        Seconds in the solver loop (trace evaluation excluded).
    rel_gap_ : float
        Certified relative duality gap of the solution (exact-hinge methods;
        NaN for square, logit and ova), computed whatever the stopping rule.
    stopping_ : str
        The stopping rule used (``"auto"`` resolved).
    trace_ : dict of 1-D ndarrays or None
    n_features_in_ : int

    Notes
    -----
    Inputs: dense arrays or sparse matrices (converted to CSR); every input,
    float32 and integer included, is converted to float64 once in ``fit`` (the
    solvers work in float64; with ``precision="single"`` a float32 copy is kept
    for the products, float32 input being kept as it is). ``coef_`` and
    ``intercept_`` are float64.

    Binary problems (2 classes) use the same multiclass formulation with two
    columns, so ``coef_`` has shape (2, n_features); ``decision_function`` then
    follows scikit-learn's binary convention and returns shape (n_samples,),
    the score of ``classes_[1]`` minus that of ``classes_[0]``.

    The bias shift ``b + c`` (and adding one vector to every ``w_k``) leaves
    the loss unchanged; the solvers start from 0, which keeps
    ``sum_k b_k = 0``.
    """

    def __init__(self, method="hinge-reg", penalty="l1", groups=None, alpha=1.0, tol=1e-5,
                 max_iter=100000, step_ratio=_solvers.DEFAULT_STEP_RATIO, solver="paper",
                 stopping="auto", trace=False, reference_coef=None, precision="double"):
        self.method = method
        self.penalty = penalty
        self.groups = groups
        self.alpha = alpha
        self.tol = tol
        self.max_iter = max_iter
        self.step_ratio = step_ratio
        self.solver = solver
        self.stopping = stopping
        self.trace = trace
        self.reference_coef = reference_coef
        self.precision = precision

    def fit(self, X, y):
        """Fit the model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Features (finite); converted to float64 (CSR if sparse).
        y : array-like of shape (n_samples,)
            Labels of any type; at least two classes.

        Returns
        -------
        self
        """
        params = _core.check_params(self.method, self.penalty, self.alpha, self.tol, self.max_iter,
                                    self.step_ratio, self.solver, self.stopping, self.trace,
                                    self.precision)
        # float32 input stays float32 for single-precision products (the operator keeps
        # both copies); anything else becomes float64
        dtype = np.float64 if params.precision == "double" else [np.float64, np.float32]
        X, y = _validate_data(self, X, y, accept_sparse="csr", dtype=dtype,
                              ensure_min_samples=2)
        _core.check_label_types(y, "SparseSVC")
        check_classification_targets(y)
        res = _core.fit(params, X, y, groups=self.groups, reference_coef=self.reference_coef,
                        owner="SparseSVC")
        self.classes_ = res.classes
        self.coef_ = res.coef
        self.intercept_ = res.intercept
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.objective_ = res.objective
        self.constraint_violation_ = res.constraint_violation
        self.fit_time_ = res.fit_time
        self.rel_gap_ = res.rel_gap
        self.stopping_ = res.stopping
        self.trace_ = res.trace
        return self


# --------------------------------------------------------------------------- #
# peer: liblinear's Crammer-Singer
# --------------------------------------------------------------------------- #
class CrammerSingerSVC(_LinearClassifierMixin, ClassifierMixin, BaseEstimator):
    """Peer for the l2 problem: ``LinearSVC(multi_class="crammer_singer", C=1/alpha)``.

    liblinear solves ``1/2 sum_k (||w_k||^2 + b_k^2) + C * loss`` (hinge as in
    :class:`SparseSVC`): its bias is a weight on a constant feature and *is*
    regularised, unlike the paper's free bias.

    Parameters
    ----------
    alpha : float > 0
        ``C = 1/alpha``.
    tol : float > 0
        liblinear's tolerance.
    max_iter : int
        liblinear's iteration cap.

    Attributes
    ----------
    classes_, coef_ (n_classes, n_features), intercept_ (n_classes,), n_iter_,
    converged_ (``n_iter_ < max_iter``), objective_ (the liblinear objective
    above, bias term included, evaluated at the returned point),
    constraint_violation_ (0.0), fit_time_ (seconds of ``LinearSVC.fit``,
    its input conversion included), trace_ (None).

    Notes
    -----
    For 2 classes liblinear returns ``d = w_1 - w_0``; the Crammer-Singer
    optimum is then ``w_1 = -w_0 = d / 2`` (the loss depends on ``d`` only and
    the regulariser is minimised by the symmetric split), which is stored, so
    ``coef_`` always has shape (n_classes, n_features).
    """

    def __init__(self, alpha=1.0, tol=1e-3, max_iter=100000):
        self.alpha = alpha
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, X, y):
        """Fit liblinear's Crammer-Singer SVM (see class docstring).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        alpha = _core._check_positive_real(self.alpha, "alpha")
        tol = _core._check_positive_real(self.tol, "tol")
        max_iter = _core._check_max_iter(self.max_iter)
        X, y = _validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                              ensure_min_samples=2)
        _core.check_label_types(y, "CrammerSingerSVC")
        check_classification_targets(y)
        self.classes_, y_idx = _core.encode_labels(y, "CrammerSingerSVC")
        res = liblinear_cs(X, y_idx, self.classes_.size, alpha, tol=tol, max_iter=max_iter)
        self.coef_ = np.ascontiguousarray(res.X[:-1].T)
        self.intercept_ = np.array(res.X[-1], dtype=np.float64)
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.objective_ = res.objective
        self.fit_time_ = res.fit_time
        self.constraint_violation_ = 0.0
        self.trace_ = None
        return self
