"""Alpha by cross-validation (sparsesvm.experiments.cv): folds, validation errors against the
estimator's own predictions, the CV alpha against a brute-force choice, the summary against
the records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sparsesvm import SparseSVC
from sparsesvm.experiments import cv


def test_stratified_folds_deal_every_class_evenly():
    y = np.array([0] * 7 + [1] * 5 + [2] * 10)
    fold = cv.stratified_folds(y, 3, seed=4)
    assert fold.shape == y.shape and set(fold) == {0, 1, 2}
    for c, n in ((0, 7), (1, 5), (2, 10)):
        counts = np.bincount(fold[y == c], minlength=3)
        assert counts.sum() == n and counts.max() - counts.min() <= 1, (c, counts)
    assert np.array_equal(fold, cv.stratified_folds(y, 3, seed=4))          # seeded
    assert not np.array_equal(fold, cv.stratified_folds(y, 3, seed=[4, 1]))  # another subset, other folds
    with pytest.raises(ValueError, match=r"class\(es\) with fewer \(class: count\): \{1: 2\}"):
        cv.stratified_folds(np.array([0, 0, 0, 1, 1]), 3, seed=0)
    with pytest.raises(ValueError, match="n_folds must be >= 2"):
        cv.stratified_folds(y, 1, seed=0)


@pytest.mark.parametrize("method", ["hinge-reg", "square", "ova"])
def test_validation_errors_match_the_estimator(method, random_problem):
    Phi, y, K = random_problem(seed=0, L=30, M=6, K=3)
    rng = np.random.default_rng(3)
    X_val = rng.standard_normal((40, Phi.shape[1]))
    y_val = rng.integers(0, K, size=40)
    clf = SparseSVC(method=method, penalty="l1", alpha=1.0, tol=1e-4, max_iter=500).fit(Phi, y)
    coef_full = np.hstack([clf.coef_, clf.intercept_[:, None]])
    want = int(np.count_nonzero(clf.predict(X_val) != y_val))
    assert cv.validation_errors(coef_full, X_val, y_val, clf.classes_) == want


def cv_records(val_errors):
    """CV records of one curve: ``val_errors[(alpha, subset)] = [errors of fold 0, fold 1]``."""
    rows = []
    for (alpha, subset), errs in val_errors.items():
        for k, e in enumerate(errs):
            rows.append({"method": "hinge-reg", "solver": "paper", "penalty": "l1", "L": 20, "subset": subset,
                         "fold": k, "alpha": alpha, "val_errors": e, "n_val": 10, "nnz": 100 - 10 * alpha})
    return pd.DataFrame(rows)


def test_cv_alpha_and_summary_against_brute_force():
    rng = np.random.default_rng(0)
    alphas = [0.1, 1.0, 3.0, 10.0]
    val = {(a, s): list(rng.integers(0, 6, size=2)) for a in alphas for s in range(3)}
    table = cv.cv_alpha(cv_records(val))
    assert len(table) == 3
    for s in range(3):
        totals = {a: sum(val[(a, s)]) for a in alphas}
        m = min(totals.values())
        want = max(a for a in alphas if totals[a] == m)  # tie: sparser = larger alpha here
        row = table[table["subset"] == s].iloc[0]
        assert row["cv_alpha"] == want and row["cv_errors"] == m
        assert row["cv_error_pct"] == pytest.approx(100 * m / 20) and row["n_folds"] == 2
    # the training records: test errors per alpha and subset
    runs = pd.DataFrame([{"method": "hinge-reg", "solver": "paper", "penalty": "l1", "L": 20, "subset": s,
                          "alpha": a, "test_errors": int(10 * a + s) % 7, "test_error_pct": (int(10 * a + s) % 7) / 2,
                          "nnz": 100 - 10 * a} for a in alphas for s in range(3)])
    summ = cv.cv_summary(runs, table)
    assert len(summ) == 1
    picked = [runs[(runs["subset"] == s) & (runs["alpha"] == table.set_index("subset").loc[s, "cv_alpha"])]
              ["test_errors"].item() for s in range(3)]
    assert summ["cv_test_errors"].item() == pytest.approx(np.mean(picked))
    means = runs.groupby("alpha")["test_errors"].mean()
    assert summ["best_test_errors"].item() == pytest.approx(means.min())
    assert summ["cv_alphas"].item() == "+".join(f"{table.set_index('subset').loc[s, 'cv_alpha']:.3g}"
                                                for s in range(3))
    with pytest.raises(ValueError, match="no training record at the CV alpha"):
        cv.cv_summary(runs[runs["alpha"] != table["cv_alpha"].iloc[0]], table)


def test_table1_notes_the_cv_errors(tmp_path):
    """Table 1's Markdown and LaTeX note each cell's test errors at the CV alpha; the CSV is unchanged."""
    from sparsesvm.experiments import tables

    rows = []
    for pen in ("l2", "l1"):
        for method in ("hinge-reg", "square"):
            for alpha, errors in ((1.0, 2), (10.0, 5)):
                rows.append({"dataset": "leukemia", "experiment": "e1", "method": method, "solver": "paper",
                             "penalty": pen, "groups": "none", "alpha": alpha, "L": 38, "subset": 0,
                             "test_errors": errors, "n_test": 34, "nnz": 30, "nnz_class0": 10, "nnz_class1": 10,
                             "nnz_class2": 10})
    df = pd.DataFrame(rows)
    summ = pd.DataFrame([{"method": m, "solver": "paper", "penalty": p, "L": 38, "cv_test_errors": 5.0,
                          "cv_alphas": "10"} for p in ("l2", "l1") for m in ("hinge-reg", "square")])
    plain = [tmp_path / f"a.{e}" for e in ("csv", "md", "tex")]
    with_cv = [tmp_path / f"b.{e}" for e in ("csv", "md", "tex")]
    tables.write_table1(df, *plain)
    tables.write_table1(df, *with_cv, cv_summary=summ)
    assert plain[0].read_text() == with_cv[0].read_text()
    md = with_cv[1].read_text()
    for p in ("l2", "l1"):
        for m in ("hinge-reg", "square"):
            assert f"{p}/{m}: 5 (alpha 10)" in md
    assert "cross-validation" in with_cv[2].read_text() and "cross-validation" not in plain[1].read_text()
