"""Table 1 of the paper (experiment E1, leukemia): errors and sparsity at the best alpha.

Rows are regularisers (l2, l1, l12, l1inf), columns are methods (hinge-reg,
hinge-con, square, logit, ova); a cell reads ``"e/34 (a+b+c)"``: ``e`` test
errors out of the ``n_test`` test samples (taken from the records, not
hard-coded) and ``a+b+c`` the non-zero weights of each class, both at the best
alpha by test error (the paper's trial-and-error choice). With several
training subsets the mean over subsets is shown (one decimal when not whole).
Methods and regularisers not in the standard order are appended after it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .aggregate import BEST_ALPHA_RULE, METHOD_ORDER, add_labels, best_alpha, ordered

__all__ = ["REGULARISER_ORDER", "METHOD_ORDER", "table1", "table1_long", "write_table1",
           "to_markdown", "to_latex", "format_count"]

REGULARISER_ORDER = ("l2", "l1", "l12", "l1inf")
MISSING = "n/a"


def format_count(x):
    """``3.0 -> "3"``, ``2.5 -> "2.5"``, ``2.25 -> "2.2"`` (one decimal unless whole)."""
    x = float(x)
    if np.isclose(x, round(x), rtol=0, atol=1e-9):
        return str(int(round(x)))
    return f"{x:.1f}"


def table1_long(df):
    """One row per regulariser x method at its best alpha (the data behind Table 1).

    Parameters
    ----------
    df : pandas.DataFrame
        Records of E1 as returned by :func:`sparsesvm.experiments.aggregate.collect`
        (one dataset; needs method, penalty, alpha, test_errors, n_test, nnz and
        the ``nnz_class<k>`` columns).

    Returns
    -------
    pandas.DataFrame
        Columns ``regulariser``, ``method`` (line label, with ``[solver]`` for
        non-paper solvers), ``groups``, ``alpha`` (best), ``test_errors`` (mean),
        ``n_test``, ``nnz_per_class`` (``"a+b+c"``), ``n_subsets``,
        ``at_grid_edge``, ``cell``, ``converged`` (every fit of the cell met its
        stopping rule), ``rel_gap`` (the largest certified relative duality gap of
        its fits; NaN where the records have none).

    Raises
    ------
    ValueError
        If the table mixes datasets, or one regulariser x method pair has
        several group settings, or the test-set size differs between jobs.
    """
    if not len(df):
        raise ValueError("table1: empty table")
    if "dataset" in df.columns and df["dataset"].nunique(dropna=False) > 1:
        raise ValueError(f"table1: several datasets in one table: {sorted(map(str, df['dataset'].unique()))}")
    df = add_labels(df)
    class_cols = sorted((c for c in df.columns if c.startswith("nnz_class") and c[9:].isdigit()),
                        key=lambda c: int(c[9:]))
    if not class_cols:
        raise ValueError("table1: no nnz_class<k> columns (use aggregate.collect on run_job records)")
    by = ["label", "penalty"] + [c for c in ("groups", "L") if c in df.columns]
    best = best_alpha(df, by=by)
    dup = best.duplicated(["label", "penalty"], keep=False)
    if dup.any():
        bad = best.loc[dup, by].to_dict("records")
        raise ValueError(f"table1: several group settings / training sizes for one cell: {bad}")
    rows = []
    for _, b in best.iterrows():
        sel = (df["label"] == b["label"]) & (df["penalty"] == b["penalty"]) & np.isclose(df["alpha"], b["alpha"])
        for c in by[2:]:
            sel &= df[c] == b[c]
        jobs = df[sel]
        n_test = jobs["n_test"].unique()
        if len(n_test) != 1:
            raise ValueError(f"table1: n_test differs between jobs of {b['label']}/{b['penalty']}: {list(n_test)}")
        per_class = jobs[class_cols].mean(axis=0, skipna=True)
        per_class = per_class[jobs[class_cols].notna().any(axis=0).to_numpy()]
        nnz_txt = "+".join(format_count(v) for v in per_class)
        n_test = int(n_test[0])
        cell = f"{format_count(b['test_errors'])}/{n_test} ({nnz_txt})"
        rows.append({
            "regulariser": b["penalty"], "method": b["label"],
            "groups": b["groups"] if "groups" in b else "none",
            "alpha": float(b["alpha"]), "test_errors": float(b["test_errors"]), "n_test": n_test,
            "nnz_per_class": nnz_txt, "n_subsets": int(b["n_subsets"]),
            "at_grid_edge": bool(b["at_grid_edge"]), "cell": cell,
            # whether every fit of the cell met its stopping rule, and the worst certified gap
            "converged": bool(jobs["converged"].astype(bool).all()) if "converged" in jobs else True,
            "rel_gap": float(jobs["rel_gap"].max()) if "rel_gap" in jobs else float("nan"),
        })
    long = pd.DataFrame(rows)
    r_order = {r: i for i, r in enumerate(ordered(long["regulariser"], REGULARISER_ORDER))}
    m_order = {m: i for i, m in enumerate(ordered(long["method"], METHOD_ORDER))}
    long = (long.assign(_r=long["regulariser"].map(r_order), _m=long["method"].map(m_order))
            .sort_values(["_r", "_m"]).drop(columns=["_r", "_m"]).reset_index(drop=True))
    if long["n_test"].nunique() > 1:
        raise ValueError(f"table1: the test-set size differs between cells: {sorted(long['n_test'].unique())}")
    return long


def table1(df):
    """Table 1: rows regulariser, columns method, cells ``"e/n_test (a+b+c)"``.

    Parameters
    ----------
    df : pandas.DataFrame
        E1 records (see :func:`table1_long`).

    Returns
    -------
    pandas.DataFrame
        Index ``regulariser`` (l2, l1, l12, l1inf, those present), columns the
        methods (hinge-reg, hinge-con, square, logit, ova, those present, then
        any other), string cells; ``"n/a"`` where no job ran.
    """
    long = table1_long(df)
    wide = long.pivot(index="regulariser", columns="method", values="cell")
    wide = wide.reindex(index=ordered(long["regulariser"], REGULARISER_ORDER),
                        columns=ordered(long["method"], METHOD_ORDER))
    wide = wide.fillna(MISSING)
    wide.index.name = "regulariser"
    wide.columns.name = None
    return wide


def _alpha_note(long):
    parts = [f"{r.regulariser}/{r.method}: {r.alpha:.3g}" + (" (grid edge)" if r.at_grid_edge else "")
             for r in long.itertuples()]
    return "; ".join(parts)


def _unsolved_note(long):
    """The cells whose fits stopped before their stopping rule (iteration cap, stall), or ""."""
    bad = long[~long["converged"].astype(bool)]
    if not len(bad):
        return ""
    parts = [f"{r.regulariser}/{r.method}" + (f" (certified relative gap {r.rel_gap:.2g})"
                                              if np.isfinite(r.rel_gap) else "")
             for r in bad.itertuples()]
    return ("Not solved to the stopping rule (the solver stopped at its iteration cap or stalled; "
            "the cell is the point it stopped at): " + "; ".join(parts) + ".")


def to_markdown(wide, caption=None, note=None):
    """GitHub-flavoured Markdown table of ``wide`` (index as first column)."""
    header = [wide.index.name or ""] + [str(c) for c in wide.columns]
    lines = []
    if caption:
        lines += [caption, ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] * len(header)) + "|")
    for idx, row in wide.iterrows():
        lines.append("| " + " | ".join([str(idx)] + [str(v) for v in row]) + " |")
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"


_TEX_ESCAPE = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
               "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def _tex(s):
    return "".join(_TEX_ESCAPE.get(ch, ch) for ch in str(s))


def to_latex(wide, caption=None, label=None):
    """LaTeX ``table`` (booktabs) of ``wide``; text is escaped."""
    ncol = len(wide.columns)
    lines = [r"\begin{table}[t]", r"\centering"]
    if caption:
        lines.append(r"\caption{" + _tex(caption) + "}")
    if label:
        lines.append(r"\label{" + label + "}")
    lines.append(r"\begin{tabular}{l" + "c" * ncol + "}")
    lines.append(r"\toprule")
    lines.append(" & ".join([_tex(wide.index.name or "")] + [_tex(c) for c in wide.columns]) + r" \\")
    lines.append(r"\midrule")
    for idx, row in wide.iterrows():
        lines.append(" & ".join([_tex(idx)] + [_tex(v) for v in row]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _cv_note(cv_summary):
    """The test errors at the alpha chosen by cross-validation, cell by cell (one sentence)."""
    from .aggregate import method_label

    parts = [f"{r.penalty}/{method_label(r.method, getattr(r, 'solver', None))}: "
             f"{format_count(r.cv_test_errors)} (alpha {r.cv_alphas})" for r in cv_summary.itertuples()]
    return ("Test errors at the alpha chosen by stratified cross-validation on the training split "
            "instead (beyond the paper): " + "; ".join(parts) + ".")


def write_table1(df, csv, md, tex, cv_summary=None):
    """Write Table 1 as CSV, Markdown and LaTeX.

    Parameters
    ----------
    df : pandas.DataFrame
        E1 records (see :func:`table1_long`).
    csv, md, tex : str or path-like
        Output files (parent directories are created). The CSV holds the wide
        table (regulariser x method); the Markdown and LaTeX versions add a
        caption stating the selection rule and the best alpha of each cell.
    cv_summary : pandas.DataFrame, optional
        :func:`sparsesvm.experiments.cv.cv_summary` of E1: the Markdown and LaTeX
        notes then also give each cell's test errors at the alpha chosen by
        cross-validation.

    Returns
    -------
    pandas.DataFrame
        The wide table (as :func:`table1`).
    """
    long = table1_long(df)
    wide = table1(df)
    n_test = int(long["n_test"].iloc[0])
    caption = (f"Table 1: test errors out of {n_test} test samples and non-zero weights per class "
               f"(a+b+c), at the {BEST_ALPHA_RULE}.")
    if (long["n_subsets"] > 1).any():
        caption += " Means over training subsets."
    note = "Best alpha per cell: " + _alpha_note(long) + "."
    unsolved = _unsolved_note(long)
    if unsolved:
        note += " " + unsolved
    if cv_summary is not None and len(cv_summary):
        note += " " + _cv_note(cv_summary)
    for path in (csv, md, tex):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    wide.to_csv(csv)
    Path(md).write_text(to_markdown(wide, caption=caption, note=note), encoding="utf-8")
    Path(tex).write_text(to_latex(wide, caption=caption + " " + note, label="tab:table1"), encoding="utf-8")
    return wide
