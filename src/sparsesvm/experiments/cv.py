"""Alpha chosen by stratified k-fold cross-validation on the training subset only.

The paper picks alpha by test error, which is optimistic. Here each training
subset is split into ``n_folds`` class-stratified folds (:func:`stratified_folds`);
one CV job per grid point, subset and fold fits on the other folds and counts
the errors on the held-out fold (:func:`validation_errors`). :func:`cv_alpha`
picks, per curve and subset, the alpha with the fewest validation errors summed
over the folds, and :func:`cv_summary` reads the *test* error of the ordinary
training job at that alpha, beside the best alpha by test error.
"""

from __future__ import annotations

import numpy as np

from .aggregate import best_alpha

__all__ = ["CV_RULE", "stratified_folds", "validation_errors", "cv_alpha", "cv_summary"]

#: How the CV alpha is chosen; printed in the tables.
CV_RULE = "alpha by stratified k-fold cross-validation on the training subset"

_CURVE = ["dataset", "experiment", "method", "solver", "stopping", "penalty", "groups", "L"]


def stratified_folds(y, n_folds, seed):
    """Fold of each sample: class-stratified, seeded.

    The samples of each class are shuffled (one generator seeded by ``seed``,
    classes in sorted order) and dealt to the folds in turn, so every fold holds
    ``floor`` or ``ceil`` of ``n_k / n_folds`` samples of class ``k``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels.
    n_folds : int
        Number of folds (>= 2).
    seed : int or sequence of int

    Returns
    -------
    ndarray of int, shape (n_samples,)
        Fold index (0 .. n_folds - 1) of each sample.

    Raises
    ------
    ValueError
        If ``n_folds < 2`` or a class has fewer samples than folds (naming it).
    """
    y = np.asarray(y)
    n_folds = int(n_folds)
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2, got {n_folds}")
    classes, counts = np.unique(y, return_counts=True)
    small = {c.item(): int(n) for c, n in zip(classes, counts) if n < n_folds}
    if small:
        raise ValueError(f"stratified {n_folds}-fold cross-validation needs at least {n_folds} samples per "
                         f"class; class(es) with fewer (class: count): {small}")
    rng = np.random.default_rng(seed)
    fold = np.empty(y.shape[0], dtype=np.int64)
    for c in classes:
        pos = np.flatnonzero(y == c)
        pos = pos[rng.permutation(pos.size)]
        fold[pos] = np.arange(pos.size) % n_folds
    return fold


def validation_errors(coef_full, X, y, classes):
    """Errors of the linear classifier ``argmax_k (X w_k + b_k)`` on ``(X, y)``.

    Parameters
    ----------
    coef_full : ndarray, shape (n_classes, n_features + 1)
        Weights with the biases as last column (as returned by ``run_job``).
    X : ndarray or sparse matrix, shape (n_samples, n_features)
    y : array-like, shape (n_samples,)
    classes : array-like, shape (n_classes,)
        Label of each row of ``coef_full``.

    Returns
    -------
    int
    """
    coef_full = np.asarray(coef_full, dtype=np.float64)
    scores = X @ coef_full[:, :-1].T + coef_full[:, -1]
    pred = np.asarray(classes)[np.argmax(np.asarray(scores), axis=1)]
    return int(np.count_nonzero(pred != np.asarray(y)))


def cv_alpha(cv_df):
    """The CV alpha per curve and training subset: fewest validation errors summed over folds.

    Ties go to the sparser model (fewer mean non-zeros over the folds), then the larger alpha.

    Parameters
    ----------
    cv_df : pandas.DataFrame
        CV job records: the curve columns present (method, solver, penalty, L, ...),
        ``subset``, ``fold``, ``alpha``, ``val_errors``, ``n_val``, ``nnz``.

    Returns
    -------
    pandas.DataFrame
        One row per curve and subset: the curve columns, ``subset``, ``cv_alpha``,
        ``cv_errors`` (validation errors summed over folds), ``cv_error_pct``,
        ``n_folds``, ``cv_at_grid_edge``.
    """
    need = ["subset", "fold", "alpha", "val_errors", "n_val", "nnz"]
    missing = [c for c in need if c not in cv_df.columns]
    if missing:
        raise ValueError(f"cv_alpha: missing column(s) {missing}")
    by = [c for c in _CURVE if c in cv_df.columns] + ["subset"]
    per = cv_df.groupby(by + ["alpha"], dropna=False).agg(
        cv_errors=("val_errors", "sum"), n_val=("n_val", "sum"), nnz=("nnz", "mean"),
        n_folds=("fold", "nunique")).reset_index()
    fold_counts = per.groupby(by, dropna=False)["n_folds"].nunique()
    if (fold_counts > 1).any():
        raise ValueError("cv_alpha: some alphas of a curve miss folds (incomplete CV jobs)")
    best = best_alpha(per.rename(columns={"cv_errors": "test_errors"}), by=by)
    out = best[by + ["alpha", "test_errors", "at_grid_edge"]].rename(
        columns={"alpha": "cv_alpha", "test_errors": "cv_errors", "at_grid_edge": "cv_at_grid_edge"})
    out = out.merge(per[by + ["alpha", "n_val", "n_folds"]].rename(columns={"alpha": "cv_alpha"}),
                    on=by + ["cv_alpha"], how="left")
    out["cv_error_pct"] = 100.0 * out["cv_errors"] / out["n_val"]
    return out


def cv_summary(runs_df, cv_alpha_df):
    """Test error at the CV alpha beside the test error at the best alpha by test error, per curve.

    Parameters
    ----------
    runs_df : pandas.DataFrame
        The experiment's ordinary training records (tidy table).
    cv_alpha_df : pandas.DataFrame
        :func:`cv_alpha` output.

    Returns
    -------
    pandas.DataFrame
        One row per curve: the curve columns, ``cv_test_errors`` and ``cv_test_error_pct``
        (means over subsets of the test errors at each subset's CV alpha),
        ``cv_test_error_pct_sd``, ``cv_alphas`` (the CV alphas, "+"-joined by subset),
        ``best_alpha``, ``best_test_errors`` and ``best_test_error_pct`` (the paper's
        choice), ``n_subsets``.
    """
    curve = [c for c in _CURVE if c in runs_df.columns and c in cv_alpha_df.columns]
    picked = cv_alpha_df.merge(runs_df, left_on=curve + ["subset", "cv_alpha"],
                               right_on=curve + ["subset", "alpha"], how="left")
    if picked["test_errors"].isna().any():
        bad = picked.loc[picked["test_errors"].isna(), curve + ["subset", "cv_alpha"]].to_dict("records")
        raise ValueError(f"cv_summary: no training record at the CV alpha for {bad[:3]}")
    agg = picked.groupby(curve, dropna=False).agg(
        cv_test_errors=("test_errors", "mean"), cv_test_error_pct=("test_error_pct", "mean"),
        cv_test_error_pct_sd=("test_error_pct", "std"),
        cv_alphas=("cv_alpha", lambda a: "+".join(f"{v:.3g}" for v in a)),
        n_subsets=("subset", "nunique")).reset_index()
    best = best_alpha(runs_df, by=curve)[curve + ["alpha", "test_errors", "test_error_pct"]].rename(
        columns={"alpha": "best_alpha", "test_errors": "best_test_errors", "test_error_pct": "best_test_error_pct"})
    return agg.merge(best, on=curve, how="left")
