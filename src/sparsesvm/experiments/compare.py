"""The paper against the reproduction: Table 1 cell by cell and claims C1-C14 as verdicts.

The paper's numbers and the quoted claims come from a data file
(``workflow/resources/paper.yaml`` in the workflow, :func:`load_paper`); the
reproduction's numbers from the tidy per-experiment tables of
:func:`sparsesvm.experiments.aggregate.collect`. Each claim becomes a set of
*comparisons*, each made at every method's best alpha by test error (the paper's
choice, :func:`sparsesvm.experiments.aggregate.best_alpha`):

- a comparison of method ``a`` with method ``b`` (same L) takes the per-subset
  values of both at their own best alphas, pairs them by training subset and
  gives the mean difference ``d = a - b`` and its *spread*: the standard
  deviation over subsets of the paired differences (unpaired subsets:
  ``sqrt(sd_a^2 + sd_b^2)``; one subset: 0), at least, for error counts (E1),
  their counting noise ``sqrt((mean_a + mean_b) / n)``;
- "a better than b": outcome ``better`` or ``worse`` when ``|d|`` exceeds the
  spread, ``tie`` when the spread covers the difference;
- "a as ... as b" (within a margin ``m``): ``equal`` when ``|d| <= m``,
  ``different`` when ``|d| - spread > m``, ``undetermined`` otherwise.

A claim's verdict counts its comparisons: ``agrees`` when those supporting it
outnumber those against it, ``disagrees`` in the opposite case, and
``inconclusive`` when neither does (e.g. every spread covers its difference).
A claim whose experiment is not among the tables gets ``not run``. The margins
(:data:`COMPARABLE_FACTOR`, :data:`SPARSITY_MARGIN_PCT`,
:data:`ROBUST_WITHIN_PCT`) are fixed here, before any comparison with the paper.

Nothing in this module knows Snakemake.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import write_text
from .aggregate import best_alpha, method_label
from .tables import format_count, table1_long

__all__ = [
    "VERDICTS",
    "COMPARABLE_FACTOR",
    "SPARSITY_MARGIN_PCT",
    "ROBUST_WITHIN_PCT",
    "HINGE_METHODS",
    "load_paper",
    "primary_curves",
    "paired_difference",
    "better_outcome",
    "equal_outcome",
    "majority_verdict",
    "alpha_range_width",
    "table1_comparison",
    "claims_comparison",
    "compare",
    "to_markdown",
    "write_comparison",
]

VERDICTS = ("agrees", "disagrees", "inconclusive", "not run")
#: "Comparable" / "competitive" fit times: within this factor of each other.
COMPARABLE_FACTOR = 2.0
#: "As sparse as": % zero weights within this many percentage points.
SPARSITY_MARGIN_PCT = 2.0
#: C7 (robustness): the alpha range whose test error is within this many points of the best.
ROBUST_WITHIN_PCT = 1.0
#: The paper's "hinge": both forms of the exact hinge loss (Algorithms 1 and 2).
HINGE_METHODS = ("hinge-reg", "hinge-con")
_PLAIN = ("paper", "liblinear")
_EPS = 1e-12


# --------------------------------------------------------------------------- inputs

def load_paper(path):
    """Read the paper's numbers (a YAML file with ``table1`` and ``claims``).

    Raises
    ------
    ValueError
        If a required key is missing, naming it.
    """
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping with keys 'table1' and 'claims'")
    for key in ("table1", "claims"):
        if key not in data:
            raise ValueError(f"{path}: missing key {key!r}")
    for key in ("experiment", "n_test", "columns", "cells"):
        if key not in data["table1"]:
            raise ValueError(f"{path}: missing key 'table1.{key}'")
    for cid, claim in data["claims"].items():
        for key in ("where", "quote", "experiments"):
            if key not in claim:
                raise ValueError(f"{path}: missing key 'claims.{cid}.{key}'")
    return data


def primary_curves(df):
    """One curve per method: the paper's algorithm (or the liblinear peer) where present.

    Where a method also ran with another solver (E4's ``hinge-reg [accelerated]``)
    those rows are dropped; a method that ran with one non-paper solver only (E1's
    exact hinge cells) keeps it. Adds ``label`` (method and solver).

    Parameters
    ----------
    df : pandas.DataFrame
        Tidy job records (method, solver, penalty, alpha, L, subset, ...).

    Returns
    -------
    pandas.DataFrame
        A copy of the kept rows, with ``label``.
    """
    out = df.copy()
    solver = out["solver"].astype(str) if "solver" in out.columns else pd.Series("paper", index=out.index)
    out["label"] = [method_label(m, s) for m, s in zip(out["method"], solver)]
    plain = solver.isin(_PLAIN)
    keep = pd.Series(False, index=out.index)
    for (_method, _penalty), idx in out.groupby(["method", "penalty"], sort=False).groups.items():
        p = plain.loc[idx]
        if p.any():
            keep.loc[idx] = p
        else:
            first = out.loc[idx, "label"].iloc[0]
            keep.loc[idx] = out.loc[idx, "label"] == first
    return out[keep].copy()


def _best_rows(df):
    """Best alpha (by test error) per method x penalty x L of the primary curves."""
    return best_alpha(df, by=["method", "penalty", "L"])


def _at_best(df, best, method, penalty, L, value):
    """Per-subset values of ``value`` at the best alpha of one curve (Series indexed by subset)."""
    b = best[(best["method"] == method) & (best["penalty"] == penalty) & (best["L"] == L)]
    if not len(b):
        return None
    a = float(b["alpha"].iloc[0])
    rows = df[(df["method"] == method) & (df["penalty"] == penalty) & (df["L"] == L) & np.isclose(df["alpha"], a)]
    subset = rows["subset"] if "subset" in rows.columns else pd.Series(range(len(rows)), index=rows.index)
    return pd.Series(rows[value].to_numpy(dtype=float), index=subset.to_numpy()).sort_index()


# --------------------------------------------------------------------------- comparisons

def paired_difference(a, b, counts=False):
    """Mean difference ``a - b`` over training subsets and its spread.

    Parameters
    ----------
    a, b : pandas.Series
        Per-subset values (index: subset).
    counts : bool
        The values are error counts on a test set (E1's test errors out of 34).
        The spread is then at least the counting noise of the difference,
        ``sqrt((mean(a) + mean(b)) / n)`` (each count as Poisson), so that one
        training subset (spread 0 over subsets) does not turn a difference of one
        error in 34 into a verdict.

    Returns
    -------
    (float, float, int)
        Mean difference, spread (sd over subsets of the paired differences when
        the subsets are the same; else ``sqrt(sd_a^2 + sd_b^2)``; 0 for one value
        each) and the number of subsets.
    """
    a, b = a.dropna(), b.dropna()
    if not len(a) or not len(b):
        raise ValueError("paired_difference: no values")
    if len(a) == len(b) and set(a.index) == set(b.index):
        d = (a - b.reindex(a.index)).to_numpy(dtype=float)
        sd = float(np.std(d, ddof=1)) if d.size > 1 else 0.0
        n = int(d.size)
        diff = float(d.mean())
    else:
        sd = math.sqrt(sum(float(np.var(x, ddof=1)) if len(x) > 1 else 0.0 for x in (a, b)))
        n = int(min(len(a), len(b)))
        diff = float(a.mean() - b.mean())
    if counts:
        sd = max(sd, math.sqrt(max(float(a.mean()) + float(b.mean()), 0.0) / n))
    return diff, sd, n


def better_outcome(diff, spread, lower_is_better=True):
    """``"better"``, ``"worse"`` or ``"tie"`` (the spread covers the difference) for ``a - b = diff``."""
    d = diff if lower_is_better else -diff
    if abs(d) <= max(spread, 0.0) + _EPS:
        return "tie"
    return "better" if d < 0 else "worse"


def equal_outcome(diff, spread, margin):
    """``"equal"`` (``|diff| <= margin``), ``"different"`` (``|diff| - spread > margin``) or ``"undetermined"``."""
    if abs(diff) <= margin + _EPS:
        return "equal"
    if abs(diff) - max(spread, 0.0) > margin + _EPS:
        return "different"
    return "undetermined"


_SUPPORT = {"better": 1, "equal": 1, "holds": 1, "agrees": 1,
            "worse": -1, "different": -1, "fails": -1, "disagrees": -1}


def majority_verdict(outcomes):
    """Verdict from comparison outcomes: more supporting than opposing -> ``agrees``,
    more opposing -> ``disagrees``, else ``inconclusive``; none -> ``not run``.

    Supporting: better, equal, holds, agrees; opposing: worse, different, fails,
    disagrees; neutral: tie, undetermined, inconclusive (``not run`` is ignored).
    """
    outcomes = [o for o in outcomes if o != "not run"]
    if not outcomes:
        return "not run"
    score = [_SUPPORT.get(o, 0) for o in outcomes]
    pro, con = score.count(1), score.count(-1)
    if pro > con:
        return "agrees"
    if con > pro:
        return "disagrees"
    return "inconclusive"


def alpha_range_width(alphas, errors, within):
    """Width in decades of the contiguous alpha range around the best error within ``within`` of it.

    Parameters
    ----------
    alphas, errors : array-like, shape (n_alphas,)
        One curve (any order); errors in percent.
    within : float
        Percentage points above the smallest error.

    Returns
    -------
    (float, bool)
        ``log10(alpha_hi / alpha_lo)`` of the widest run of consecutive grid
        values (sorted by alpha) that contains a best alpha and stays within
        ``within`` of the best error; and whether that run touches an end of the
        grid (the width is then a lower bound).
    """
    order = np.argsort(np.asarray(alphas, dtype=float))
    a = np.asarray(alphas, dtype=float)[order]
    e = np.asarray(errors, dtype=float)[order]
    ok = e <= e.min() + within + _EPS
    best = np.flatnonzero(e <= e.min() + _EPS)
    width, edge = -1.0, False
    for i in best:
        lo = i
        while lo > 0 and ok[lo - 1]:
            lo -= 1
        hi = i
        while hi < a.size - 1 and ok[hi + 1]:
            hi += 1
        w = float(np.log10(a[hi] / a[lo]))
        if w > width:
            width, edge = w, bool((lo == 0 or hi == a.size - 1) and a.size > 1)
    return width, edge


def _pairs(df, a_methods, b_methods, value, penalty=None, Ls=None, transform=None):
    """Comparisons a - b of ``value`` at each curve's best alpha, per L (and penalty)."""
    best = _best_rows(df)
    rows = []
    penalties = [penalty] if penalty is not None else sorted(df["penalty"].unique())
    for pen in penalties:
        for L in sorted(df.loc[df["penalty"] == pen, "L"].unique()) if Ls is None else Ls:
            for ma in a_methods:
                va = _at_best(df, best, ma, pen, L, value)
                if va is None or not len(va):
                    continue
                for mb in b_methods:
                    vb = _at_best(df, best, mb, pen, L, value)
                    if vb is None or not len(vb) or ma == mb:
                        continue
                    ta, tb = (va, vb) if transform is None else (transform(va), transform(vb))
                    d, s, n = paired_difference(ta, tb, counts=value == "test_errors" and transform is None)
                    rows.append({"penalty": pen, "L": int(L), "a": ma, "b": mb, "a_mean": float(va.mean()),
                                 "b_mean": float(vb.mean()), "diff": d, "spread": s, "n_subsets": n})
    return rows


def _log(x):
    return np.log(np.maximum(x.astype(float), 1e-12))


# --------------------------------------------------------------------------- Table 1

def table1_comparison(e1, paper):
    """Table 1 cell by cell: one row per paper cell and method of this repository.

    Parameters
    ----------
    e1 : pandas.DataFrame or None
        E1 records (tidy table); None when E1 was not run.
    paper : dict
        :func:`load_paper` output.

    Returns
    -------
    pandas.DataFrame
        Columns ``regulariser``, ``paper_column``, ``method`` (line label),
        ``paper_errors``, ``errors``, ``errors_diff`` (reproduction - paper),
        ``paper_nnz_per_class``, ``nnz_per_class``, ``paper_nnz``, ``nnz``,
        ``paper_n_test``, ``n_test`` (the run's), ``alpha``, ``at_grid_edge``; ``errors`` etc. are NaN where
        the cell was not run.
    """

    t1 = paper["table1"]
    long = table1_long(e1) if e1 is not None and len(e1) else None
    rows = []
    for reg, cells in t1["cells"].items():
        for col, cell in cells.items():
            for method in t1["columns"][col]:
                row = {"regulariser": reg, "paper_column": col, "method": method,
                       "paper_errors": int(cell["errors"]),
                       "paper_nnz_per_class": "+".join(str(int(v)) for v in cell["nnz_per_class"]),
                       "paper_nnz": int(sum(cell["nnz_per_class"])), "errors": np.nan,
                       "nnz_per_class": "not run", "nnz": np.nan, "n_test": int(t1["n_test"]),
                       "paper_n_test": int(t1["n_test"]),
                       "alpha": np.nan, "at_grid_edge": False}
                if long is not None:
                    base = long["method"].str.partition(" [")[0]
                    hit = long[(long["regulariser"] == reg) & (base == method)]
                    if len(hit):
                        h = hit.iloc[0]
                        row.update(method=h["method"], errors=float(h["test_errors"]),
                                   nnz_per_class=h["nnz_per_class"],
                                   nnz=float(sum(float(v) for v in str(h["nnz_per_class"]).split("+"))),
                                   n_test=int(h["n_test"]), alpha=float(h["alpha"]),
                                   at_grid_edge=bool(h["at_grid_edge"]))
                rows.append(row)
    out = pd.DataFrame(rows)
    out["errors_diff"] = out["errors"] - out["paper_errors"]
    return out


# --------------------------------------------------------------------------- claims

def _fmt(x, nd=2):
    return "n/a" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{nd}f}"


def _pair_text(p, unit, outcome, scale=None):
    f = (lambda v: v) if scale is None else scale
    L = "all" if p["L"] is None else p["L"]
    return (f"L={L} {p['penalty']}: {p['a']} {_fmt(f(p['a_mean']))}{unit} vs {p['b']} "
            f"{_fmt(f(p['b_mean']))}{unit}, diff {_fmt(p['diff'])} +- {_fmt(p['spread'])} "
            f"(n={p['n_subsets']}) -> {outcome}")


def _not_run(claim, statement, missing):
    return {"verdict": "not run", "statement": statement,
            "reproduction": f"experiment(s) {', '.join(missing)} not in the tables", "details": []}


def _better_claim(pairs, lower_is_better, unit, statement):
    outs = [better_outcome(p["diff"], p["spread"], lower_is_better) for p in pairs]
    details = [_pair_text(p, unit, o) for p, o in zip(pairs, outs)]
    counts = {k: outs.count(k) for k in ("better", "tie", "worse")}
    verdict = majority_verdict(outs) if pairs else "inconclusive"
    summary = f"{counts['better']} better, {counts['tie']} within spread, {counts['worse']} worse"
    if not pairs:
        summary = "no comparable curves in the tables"
    return {"verdict": verdict, "statement": statement, "reproduction": summary, "details": details}


def _hinge(df):
    return [m for m in HINGE_METHODS if m in set(df["method"])]


def _claim_C1(t):
    df = t["e1"]
    sparse = [p for p in ("l1", "l12", "l1inf") if p in set(df["penalty"])]
    best = _best_rows(df)
    pairs = []
    for m in sorted(df["method"].unique()):
        ref = _at_best(df, best, m, "l2", df["L"].iloc[0], "test_errors")
        if ref is None:
            continue
        for p in sparse:
            v = _at_best(df, best, m, p, df["L"].iloc[0], "test_errors")
            if v is None:
                continue
            d, s, n = paired_difference(v, ref, counts=True)
            pairs.append({"penalty": f"{p} vs l2", "L": None, "a": m, "b": m, "a_mean": float(v.mean()),
                          "b_mean": float(ref.mean()), "diff": d, "spread": s, "n_subsets": n})
    return _better_claim(pairs, True, " errors",
                         "E1: test errors at the best alpha, each sparse regulariser (l1, l1,2, l1,inf) "
                         "against l2, per method; better = fewer errors")


def _claim_C2(t):
    df = t["e1"]
    pairs = _pairs(df, _hinge(df), ["square"], "test_errors")
    for p in pairs:
        p["L"] = None
    return _better_claim(pairs, True, " errors",
                         "E1: test errors at the best alpha, hinge-reg and hinge-con against square, "
                         "per regulariser; better = fewer errors")


def _claim_C3(t):
    df = t["e2"]
    pens = sorted(df["penalty"].unique())
    statement = ("E2: mean test error (%) at the best alpha, l1,inf against every other regulariser, "
                 "per method and L; agrees when l1,inf is never worse")
    if "l1inf" not in pens or len(pens) < 2:
        return {"verdict": "not run", "statement": statement,
                "reproduction": f"E2 runs {', '.join(pens)} only (as the paper's figures); no other "
                                "regulariser to compare with", "details": []}
    best = _best_rows(df)
    outs, details = [], []
    for m in sorted(df["method"].unique()):
        for L in sorted(df["L"].unique()):
            ref = _at_best(df, best, m, "l1inf", L, "test_error_pct")
            for p in pens:
                v = _at_best(df, best, m, p, L, "test_error_pct")
                if p == "l1inf" or ref is None or v is None:
                    continue
                d, s, n = paired_difference(ref, v)
                o = better_outcome(d, s)
                outs.append(o)
                details.append(_pair_text({"penalty": f"l1inf vs {p}", "L": int(L), "a": m, "b": m,
                                           "a_mean": float(ref.mean()), "b_mean": float(v.mean()), "diff": d,
                                           "spread": s, "n_subsets": n}, "%", o))
    if not outs:
        verdict = "inconclusive"
    elif "worse" in outs:
        verdict = "disagrees"
    else:
        verdict = "agrees" if "better" in outs else "inconclusive"
    return {"verdict": verdict, "statement": statement,
            "reproduction": f"{outs.count('better')} better, {outs.count('tie')} within spread, "
                            f"{outs.count('worse')} worse", "details": details}


def _claim_accuracy(t, exp, others, statement):
    df = t[exp]
    others = [m for m in others if m in set(df["method"])]
    return _better_claim(_pairs(df, _hinge(df), others, "test_error_pct"), True, "%", statement)


def _claim_C5(t):
    df = t["e2"]
    others = [m for m in ("square", "logit", "ova") if m in set(df["method"])]
    return _better_claim(_pairs(df, _hinge(df), others, "zero_weights_pct"), False, "%",
                         "E2: mean % zero weights at each method's best alpha, hinge-reg and hinge-con "
                         "against square, logit and one-vs-all, per L; better = more zeros")


def _claim_C7(t):
    df = t["e3"]
    hinge = _hinge(df)
    others = [m for m in ("square", "logit") if m in set(df["method"])]
    widths = {}
    for (m, pen, L, s), part in df.groupby(["method", "penalty", "L", "subset"]):
        widths[(m, pen, L, s)] = alpha_range_width(part["alpha"], part["test_error_pct"], ROBUST_WITHIN_PCT)
    outs, details = [], []
    for pen in sorted(df["penalty"].unique()):
        for L in sorted(df["L"].unique()):
            def series(m, pen=pen, L=L):
                items = {s: w for (mm, pp, LL, s), (w, _) in widths.items() if (mm, pp, LL) == (m, pen, L)}
                return pd.Series(items, dtype=float).sort_index()

            def edge(m, pen=pen, L=L):
                return any(e for (mm, pp, LL, _), (_, e) in widths.items() if (mm, pp, LL) == (m, pen, L))

            for a in hinge:
                for b in others:
                    va, vb = series(a), series(b)
                    if not len(va) or not len(vb):
                        continue
                    d, s, n = paired_difference(va, vb)
                    o = better_outcome(d, s, lower_is_better=False)
                    outs.append(o)
                    note = " (a range reaches a grid end: width is a lower bound)" if edge(a) or edge(b) else ""
                    details.append(_pair_text({"penalty": pen, "L": int(L), "a": a, "b": b,
                                               "a_mean": float(va.mean()), "b_mean": float(vb.mean()),
                                               "diff": d, "spread": s, "n_subsets": n}, " dec", o) + note)
    res = {"verdict": majority_verdict(outs) if outs else "inconclusive",
           "statement": f"E3: width (decades) of the contiguous alpha range whose test error is within "
                        f"{ROBUST_WITHIN_PCT:g} point of the best, per training subset, hinge-reg and "
                        f"hinge-con against square and logit, per L; better = wider",
           "reproduction": f"{outs.count('better')} wider, {outs.count('tie')} within spread, "
                           f"{outs.count('worse')} narrower", "details": details}
    return res


def _claim_C8(t):
    df = t["e3"]
    pairs = _pairs(df, _hinge(df), [m for m in ("square",) if m in set(df["method"])], "zero_weights_pct")
    outs = [equal_outcome(p["diff"], p["spread"], SPARSITY_MARGIN_PCT) for p in pairs]
    return {"verdict": majority_verdict(outs) if outs else "inconclusive",
            "statement": f"E3: mean % zero weights at the best alpha, hinge-reg and hinge-con against "
                         f"square, per L; equal = within {SPARSITY_MARGIN_PCT:g} points",
            "reproduction": f"{outs.count('equal')} equal, {outs.count('undetermined')} undetermined, "
                            f"{outs.count('different')} different",
            "details": [_pair_text(p, "%", o) for p, o in zip(pairs, outs)]}


def _time_pairs(df, a, b):
    pairs = _pairs(df, a, b, "fit_time_s", transform=_log)
    return pairs


def _time_text(p, o):
    return (f"L={p['L']} {p['penalty']}: {p['a']} {p['a_mean']:.3g} s vs {p['b']} {p['b_mean']:.3g} s, "
            f"ratio {math.exp(p['diff']):.2f} (x/ {math.exp(p['spread']):.2f}, n={p['n_subsets']}) -> {o}")


def _claim_C9(t):
    df = t["e4"]
    hinge = _hinge(df)
    slow = [m for m in ("hinge-lin", "logit") if m in set(df["method"])]
    fast = _time_pairs(df, hinge, slow)
    comp = _time_pairs(df, hinge, [m for m in ("square",) if m in set(df["method"])])
    o_fast = [better_outcome(p["diff"], p["spread"]) for p in fast]
    o_comp = [equal_outcome(p["diff"], p["spread"], math.log(COMPARABLE_FACTOR)) for p in comp]
    v_fast = majority_verdict(o_fast) if o_fast else "inconclusive"
    v_comp = majority_verdict(o_comp) if o_comp else "inconclusive"
    verdict = majority_verdict([v_fast, v_comp])
    if v_fast == "agrees" and v_comp == "agrees":
        verdict = "agrees"
    return {"verdict": verdict,
            "statement": f"E4: mean fit time at each method's best alpha (log scale, paired by subset), "
                         f"per L: Algorithms 1-2 (hinge-reg, hinge-con) faster than hinge-lin and logit, "
                         f"and within a factor {COMPARABLE_FACTOR:g} of square",
            "reproduction": f"faster: {o_fast.count('better')} yes, {o_fast.count('tie')} within spread, "
                            f"{o_fast.count('worse')} no ({v_fast}); comparable to square: "
                            f"{o_comp.count('equal')} yes, {o_comp.count('undetermined')} undetermined, "
                            f"{o_comp.count('different')} no ({v_comp})",
            "details": [_time_text(p, o) for p, o in zip(fast + comp, o_fast + o_comp)]}


def _claim_C10(t):
    df = t["e4"]
    pairs = _time_pairs(df, [m for m in ("hinge-con",) if m in set(df["method"])],
                        [m for m in ("hinge-reg",) if m in set(df["method"])])
    outs = [better_outcome(p["diff"], p["spread"]) for p in pairs]
    return {"verdict": majority_verdict(outs) if outs else "inconclusive",
            "statement": "E4: mean fit time at the best alpha (log scale, paired by subset), hinge-con "
                         "(Algorithm 2) against hinge-reg (Algorithm 1), per L; better = faster",
            "reproduction": f"{outs.count('better')} faster, {outs.count('tie')} within spread, "
                            f"{outs.count('worse')} slower",
            "details": [_time_text(p, o) for p, o in zip(pairs, outs)]}


def _claim_C11(t):
    df = t["e5"]
    l2 = df[df["penalty"] == "l2"]
    statement = (f"E5 (l2): fit time at the best alpha against the liblinear Crammer-Singer peer (the paper's "
                 f"peer was SVM-struct): competitive (within a factor {COMPARABLE_FACTOR:g}) at the smallest "
                 f"L, not competitive (slower by more than that) at the largest L")
    Ls = sorted(l2["L"].unique())
    if "liblinear-cs" not in set(l2["method"]) or len(Ls) < 2:
        return {"verdict": "inconclusive", "statement": statement,
                "reproduction": "needs the peer and at least two training sizes", "details": []}
    lim = math.log(COMPARABLE_FACTOR)
    outs, details = [], []
    for L, small in ((Ls[0], True), (Ls[-1], False)):
        for p in _pairs(l2, _hinge(l2), ["liblinear-cs"], "fit_time_s", penalty="l2", Ls=[L], transform=_log):
            d, s = p["diff"], p["spread"]
            if small:
                o = "holds" if d + s <= lim else ("fails" if d - s > lim else "undetermined")
            else:
                o = "holds" if d - s > lim else ("fails" if d + s <= lim else "undetermined")
            outs.append(o)
            details.append(_time_text(p, f"{'competitive' if small else 'not competitive'}: {o}"))
    return {"verdict": majority_verdict(outs) if outs else "inconclusive", "statement": statement,
            "reproduction": f"{outs.count('holds')} hold, {outs.count('undetermined')} undetermined, "
                            f"{outs.count('fails')} fail", "details": details}


def _claim_C12(t, claim):
    df = t["e5"]
    pp = claim.get("paper", {})
    paper_l2 = pp["l2_above_threshold"] / pp["n_weights"] * 100
    paper_l1inf = pp["l1inf_above_threshold"] / pp["n_weights"] * 100
    statement = ("E5: % of weights above 1e-5 at the best alpha at the largest L with both l2 and l1,inf "
                 "jobs, l1,inf against l2 (hinge-reg, hinge-con); better = fewer")
    both = [L for L in sorted(df["L"].unique()) if set(df.loc[df["L"] == L, "penalty"]) >= {"l2", "l1inf"}]
    col = "n_weights_above_1e-5"
    if not both or col not in df.columns:
        return {"verdict": "inconclusive", "statement": statement, "paper": "",
                "reproduction": "no training size with both l2 and l1,inf jobs", "details": []}
    L = both[-1]
    sub = df[df["L"] == L].copy()
    sub["above_pct"] = sub[col] / sub["n_weights"] * 100
    best = _best_rows(sub)
    outs, details, vals = [], [], {}
    for m in _hinge(sub):
        v1 = _at_best(sub, best, m, "l1inf", L, "above_pct")
        v2 = _at_best(sub, best, m, "l2", L, "above_pct")
        if v1 is None or v2 is None:
            continue
        d, s, n = paired_difference(v1, v2)
        o = better_outcome(d, s)
        outs.append(o)
        vals[m] = (float(v2.mean()), float(v1.mean()))
        details.append(_pair_text({"penalty": "l1inf vs l2", "L": int(L), "a": m, "b": m, "a_mean": float(v1.mean()),
                                   "b_mean": float(v2.mean()), "diff": d, "spread": s, "n_subsets": n}, "%", o))
    k = sub["n_classes"].iloc[0] if "n_classes" in sub.columns else None
    per_class = f" ({int(L) // int(k)} per class)" if k else ""
    rep = "; ".join(f"{m}: l2 {a:.1f}%, l1inf {b:.1f}%" for m, (a, b) in vals.items())
    return {"verdict": majority_verdict(outs) if outs else "inconclusive", "statement": statement,
            "paper": f"l2 {paper_l2:.1f}%, l1inf {paper_l1inf:.1f}% (L/K = {pp['samples_per_class']})",
            "reproduction": f"L={int(L)}{per_class}: {rep}" if rep else "no hinge curves", "details": details}


def _claim_C13(t):
    outs, details, adv = [], [], []
    for exp in ("e2", "e3"):
        if exp not in t:
            continue
        df = t[exp]
        smooth = [m for m in ("square", "logit") if m in set(df["method"])]
        pairs = _pairs(df, _hinge(df), smooth, "test_error_pct")
        for p in pairs:
            o = better_outcome(p["diff"], p["spread"])
            outs.append(o)
            details.append(f"{exp} " + _pair_text(p, "%", o))
        if pairs:
            frame = pd.DataFrame(pairs)
            by_L = (-frame.groupby("L")["diff"].mean()).sort_index()
            adv.append((exp, by_L))
    part1 = majority_verdict(outs) if outs else "inconclusive"
    decreasing = [float(s.iloc[0]) >= float(s.iloc[-1]) for _, s in adv if len(s) > 1]
    part2 = bool(decreasing) and all(decreasing)
    verdict = part1 if part1 != "agrees" else ("agrees" if part2 else "inconclusive")
    adv_txt = "; ".join(f"{e}: " + ", ".join(f"L={int(L)} {v + 0.0:+.2f}" for L, v in s.items()) for e, s in adv)
    return {"verdict": verdict,
            "statement": "E2 and E3: mean test error (%) at the best alpha, hinge-reg and hinge-con against "
                         "the smooth losses (square, logit), per L; agrees when hinge is better more often "
                         "than worse and its mean advantage is at least as large at the smallest L as at the "
                         "largest",
            "reproduction": f"{outs.count('better')} better, {outs.count('tie')} within spread, "
                            f"{outs.count('worse')} worse; mean advantage (points) by L: {adv_txt or 'n/a'}",
            "details": details}


_MEASURES = {
    "C1": _claim_C1,
    "C2": _claim_C2,
    "C3": _claim_C3,
    "C4": lambda t: _claim_accuracy(t, "e2", ("square", "logit", "ova"),
                                    "E2: mean test error (%) at each method's best alpha, hinge-reg and hinge-con "
                                    "against square, logit and one-vs-all, per L; better = lower"),
    "C5": _claim_C5,
    "C6": lambda t: _claim_accuracy(t, "e3", ("square",),
                                    "E3: mean test error (%) at each method's best alpha, hinge-reg and hinge-con "
                                    "against square, per L; better = lower"),
    "C7": _claim_C7,
    "C8": _claim_C8,
    "C9": _claim_C9,
    "C10": _claim_C10,
    "C11": _claim_C11,
    "C13": _claim_C13,
}


def claims_comparison(tables, paper):
    """Every claim of ``paper["claims"]`` measured on ``tables`` with its verdict.

    Parameters
    ----------
    tables : dict
        Experiment id (``"e1"`` ... ``"e5"``) -> tidy job table; experiments not
        run are absent.
    paper : dict
        :func:`load_paper` output.

    Returns
    -------
    list of dict
        One per claim, in the file's order: ``claim``, ``where``, ``quote``,
        ``experiments``, ``statement`` (the measured statement), ``paper`` (the
        paper's numbers, if any), ``reproduction`` (the measured summary),
        ``verdict`` (one of :data:`VERDICTS`), ``details`` (one line per comparison).
    """
    prim = {e: primary_curves(df) for e, df in tables.items() if df is not None and len(df)}
    out = []
    done = {}
    for cid, claim in paper["claims"].items():
        exps = list(claim["experiments"])
        missing = [e for e in exps if e not in prim]
        if "combines" in claim:
            parts = [(c, done[c]["verdict"]) for c in claim["combines"] if c in done]
            verdicts = [v for _, v in parts]
            res = {"verdict": majority_verdict(verdicts),
                   "statement": "the verdicts of " + ", ".join(claim["combines"]) + " (accuracy, robustness, "
                                "speed): more agreeing than disagreeing -> agrees",
                   "reproduction": ", ".join(f"{c} {v}" for c, v in parts), "details": []}
        elif cid == "C12":
            res = _not_run(cid, "E5: weights above 1e-5, l2 vs l1,inf", missing) if missing else _claim_C12(prim, claim)
        elif cid in _MEASURES:
            # C13 needs at least one of its experiments; the others all of theirs
            absent = missing if cid != "C13" else (missing if len(missing) == len(exps) else [])
            res = _not_run(cid, "", absent) if absent else _MEASURES[cid](prim)
        else:
            res = {"verdict": "inconclusive", "statement": "no measurement defined for this claim",
                   "reproduction": "", "details": []}
        row = {"claim": cid, "where": claim["where"], "quote": " ".join(str(claim["quote"]).split()),
               "experiments": ",".join(exps), "paper": res.pop("paper", ""), **res}
        if row["verdict"] not in VERDICTS:
            raise AssertionError(f"{cid}: verdict {row['verdict']!r} not in {VERDICTS}")
        done[cid] = row
        out.append(row)
    return out


# --------------------------------------------------------------------------- outputs

def compare(tables, paper, cv=None):
    """Table 1 comparison and claims as one long table (the CSV).

    ``cv`` (optional) maps experiment ids to :func:`sparsesvm.experiments.cv.cv_summary`
    tables: their rows (section ``cv``) give the test error at the alpha chosen by
    cross-validation beside the test error at the best alpha by test error, and Table 1's
    rows gain ``cv_errors``.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame, list of dict)
        The long table (columns ``section`` (``table1``, ``claim``,
        ``comparison``), ``item``, ``quantity``, ``paper``, ``reproduction``,
        ``difference``, ``verdict``, ``statement``), the Table 1 comparison
        (:func:`table1_comparison`) and the claims (:func:`claims_comparison`).
    """
    cv = cv or {}
    t1 = table1_comparison(tables.get(paper["table1"]["experiment"]), paper)
    t1["cv_errors"] = np.nan
    cv1 = cv.get(paper["table1"]["experiment"])
    if cv1 is not None and len(cv1):
        for i, r in t1.iterrows():
            hit = cv1[(cv1["penalty"] == r["regulariser"]) & (cv1["method"] == r["method"].partition(" [")[0])]
            if len(hit):
                t1.loc[i, "cv_errors"] = float(hit["cv_test_errors"].iloc[0])
    claims = claims_comparison(tables, paper)
    rows = []
    for r in t1.itertuples():
        item = f"{r.regulariser} / {r.paper_column} / {r.method}"
        ran = np.isfinite(r.errors)
        rows.append({"section": "table1", "item": item,
                     "quantity": f"test errors (paper: of {r.paper_n_test}; here: of {r.n_test})",
                     "paper": str(r.paper_errors), "reproduction": format_count(r.errors) if ran else "not run",
                     "difference": r.errors_diff, "verdict": "", "statement": ""})
        rows.append({"section": "table1", "item": item, "quantity": "non-zero weights per class",
                     "paper": r.paper_nnz_per_class, "reproduction": r.nnz_per_class,
                     "difference": r.nnz - r.paper_nnz, "verdict": "", "statement": ""})
        if np.isfinite(r.cv_errors):
            rows.append({"section": "table1", "item": item, "quantity": "test errors at the alpha chosen by "
                         "cross-validation", "paper": "", "reproduction": format_count(r.cv_errors),
                         "difference": r.cv_errors - r.paper_errors, "verdict": "", "statement": ""})
    for e, summ in sorted(cv.items()):
        for r in summ.itertuples():
            rows.append({"section": "cv", "item": f"{e} / {r.method} / {r.penalty} / L={r.L}",
                         "quantity": "mean test error (%): alpha by cross-validation | best alpha by test error",
                         "paper": "", "reproduction": f"{r.cv_test_error_pct:.2f} | {r.best_test_error_pct:.2f}",
                         "difference": r.cv_test_error_pct - r.best_test_error_pct, "verdict": "",
                         "statement": f"CV alphas by subset {r.cv_alphas}; best alpha {r.best_alpha:.3g}"})
    for c in claims:
        rows.append({"section": "claim", "item": c["claim"], "quantity": c["statement"],
                     "paper": c["paper"] or c["quote"],
                     "reproduction": c["reproduction"], "difference": np.nan, "verdict": c["verdict"],
                     "statement": c["quote"]})
        for d in c["details"]:
            rows.append({"section": "comparison", "item": c["claim"], "quantity": "", "paper": "",
                         "reproduction": d, "difference": np.nan, "verdict": "", "statement": ""})
    return pd.DataFrame(rows), t1, claims


def _md_cell(x):
    return str(x).replace("|", "\\|").replace("\n", " ")


def to_markdown(t1, claims, subsets=None, cv=None):
    """Markdown report: the verdict rules, Table 1 cell by cell, the claims and their comparisons,
    and (``cv``: experiment -> ``cv_summary`` table) the test errors at the CV alpha."""
    lines = ["# The paper against this reproduction", "",
             "Generated by `sparsesvm.experiments.compare` from the tidy tables; the paper's numbers "
             "come from `workflow/resources/paper.yaml`. Every value is at each curve's best alpha by "
             "test error (the paper's trial-and-error choice).", ""]
    if subsets:
        lines += ["Training subsets per experiment: " + ", ".join(f"{e} {n}" for e, n in subsets.items()) + ".", ""]
    lines += ["**Verdicts.** A comparison a - b is *better/worse* when its mean over training subsets "
              "exceeds the spread (sd over subsets of the paired differences; for E1's error counts at least "
              "the counting noise sqrt(errors a + errors b), as one fixed test set of 34 gives no spread), "
              "else *within spread*; "
              f"\"as ... as\" means within a margin ({SPARSITY_MARGIN_PCT:g} points of zero weights, a factor "
              f"{COMPARABLE_FACTOR:g} in time). A claim *agrees* when more of its comparisons support it than "
              "oppose it, *disagrees* in the opposite case, is *inconclusive* otherwise, and *not run* when "
              "its experiment is not in this run.", ""]
    lines += ["## Claims", "", "| claim | where | measured | paper | reproduction | verdict |",
              "|---|---|---|---|---|---|"]
    for c in claims:
        lines.append("| " + " | ".join(_md_cell(v) for v in (c["claim"], c["where"], c["statement"],
                                                                c["paper"] or c["quote"], c["reproduction"],
                                                                f"**{c['verdict']}**")) + " |")
    has_cv = "cv_errors" in t1.columns and t1["cv_errors"].notna().any()
    lines += ["", "## Table 1, cell by cell", "",
              "| regulariser | paper column | method | paper errors | errors | diff "
              "| paper non-zeros | non-zeros | alpha |"
              + (" errors at the CV alpha |" if has_cv else ""),
              "|---|---|---|---|---|---|---|---|---|" + ("---|" if has_cv else "")]
    for r in t1.itertuples():
        ran = np.isfinite(r.errors)
        alpha = (f"{r.alpha:.3g}" + (" (grid edge)" if r.at_grid_edge else "")) if ran else ""
        cells = [r.regulariser, r.paper_column, r.method, f"{r.paper_errors}/{r.paper_n_test}",
                 f"{format_count(r.errors)}/{r.n_test}" if ran else "not run",
                 f"{r.errors_diff:+.1f}" if ran else "", r.paper_nnz_per_class, r.nnz_per_class, alpha]
        if has_cv:
            cells.append(f"{format_count(r.cv_errors)}/{r.n_test}" if np.isfinite(r.cv_errors) else "not run")
        lines.append("| " + " | ".join(_md_cell(v) for v in cells) + " |")
    if cv:
        lines += ["", "## Alpha by cross-validation (beyond the paper)", "",
                  "The paper chooses alpha by test error, which is optimistic. Here alpha is also chosen by "
                  "stratified k-fold cross-validation on each training subset (fewest validation errors "
                  "summed over the folds); the test error of the training job at that alpha is beside the "
                  "test error at the best alpha by test error (means over subsets).", "",
                  "| experiment | method | penalty | L | test error (%), CV alpha | test error (%), best alpha "
                  "| CV alphas (by subset) | best alpha |", "|---|---|---|---|---|---|---|---|"]
        for e, summ in sorted(cv.items()):
            for r in summ.itertuples():
                lines.append("| " + " | ".join(_md_cell(v) for v in (
                    e, method_label(r.method, getattr(r, "solver", None)), r.penalty, r.L,
                    f"{r.cv_test_error_pct:.2f}", f"{r.best_test_error_pct:.2f}", r.cv_alphas,
                    f"{r.best_alpha:.3g}")) + " |")
    lines += ["", "## Comparisons behind each claim", ""]
    for c in claims:
        lines.append(f"**{c['claim']}** ({c['verdict']}): \"{c['quote']}\"")
        lines.append("")
        for d in c["details"] or ["(no comparison)"]:
            lines.append(f"- {d}")
        lines.append("")
    return "\n".join(lines)


def write_comparison(tables, paper, csv, md, cv=None):
    """Write ``paper_comparison.csv`` and ``.md`` (atomically); returns the long table.

    Parameters
    ----------
    tables : dict
        Experiment id -> tidy job table (absent experiments: not run).
    paper : dict or path-like
        :func:`load_paper` output, or the YAML file.
    csv, md : path-like
    cv : dict, optional
        Experiment id -> :func:`sparsesvm.experiments.cv.cv_summary` table.
    """
    if not isinstance(paper, dict):
        paper = load_paper(paper)
    long, t1, claims = compare(tables, paper, cv)
    subsets = {e: int(df["subset"].nunique()) for e, df in sorted(tables.items())
               if df is not None and "subset" in df.columns}
    write_text(csv, long.to_csv(index=False))
    write_text(md, to_markdown(t1, claims, subsets, cv))
    return long
