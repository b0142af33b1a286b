"""Figures 1-4 of the paper from the tidy job tables (matplotlib + seaborn styling).

Figures are built as :class:`matplotlib.figure.Figure` objects without pyplot
(no global state, no GUI backend: rendering goes through Agg), inside
seaborn's style context. Every public ``*_figure`` function saves a PNG and a
PDF and returns their paths; the matching ``make_*`` function returns the
Figure itself (used by the tests to inspect axes, lines and markers).

Lines are data-driven: one line per *curve*, labelled by the method and, for
solvers other than the paper's iterations, ``[solver]`` (e.g.
``"hinge-reg [accelerated]"``); colour follows the method, line style the
solver. Each artist carries a ``gid``: ``"line:<curve>"``, ``"band:<curve>"``,
``"best:<curve>"`` (the best-alpha circle), ``"cv:<curve>"`` (the triangles
at the alphas chosen by cross-validation, Figures 1-2 only),
``"cvcount:<curve>"`` (their subset counts), ``"trace:<curve>:<subset>"``,
``"bar:<curve>:<penalty>"``.

Best alpha = fewest mean test errors over subsets (the paper's
trial-and-error choice), computed by :func:`sparsesvm.experiments.aggregate.best_alpha`.
CV alpha (when the experiment has ``cv``) = the alpha chosen by stratified
k-fold cross-validation on each training subset, :func:`sparsesvm.experiments.cv.cv_alpha`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .aggregate import METHOD_ORDER, best_alpha, method_label, ordered
from .plan import PLAIN_SOLVERS

__all__ = [
    "BANDS",
    "accuracy_sparsity_figure",
    "make_accuracy_sparsity_figure",
    "timing_figure",
    "make_timing_figure",
    "l2_timing_figure",
    "make_l2_timing_figure",
    "save_figure",
    "curve_styles",
]

_MARKERS = ("s", "^", "v", "D", "P", "X", "*", "h", "<", ">")
_DASHES = ("--", ":", "-.", (0, (5, 1, 1, 1)))
#: Spread bands: "sd" = mean +- 1 standard deviation over subsets, "iqr" = 25th-75th percentile.
BANDS = {"sd": "mean \u00b1 1 sd over subsets", "iqr": "interquartile range over subsets"}
#: Legend entry of the best-alpha circles (the full rule, BEST_ALPHA_RULE, is in the captions).
BEST_LEGEND = "circle: best \u03b1 (fewest test errors)"
#: Legend entry of the CV-alpha triangles (``{folds}``: the number of folds; placement rule in the captions).
CV_LEGEND = "triangle: \u03b1 by {folds}-fold CV, per training subset"
ALPHA_LABEL = r"$\alpha$ (log scale)"
PENALTY_ORDER = ("l2", "l1", "l12", "l1inf")


# --------------------------------------------------------------------------- helpers

def _style():
    import seaborn as sns  # imported here: only figure jobs pay for it

    return sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=1.1)


def _palette(n):
    import seaborn as sns

    return sns.color_palette("colorblind", n)


def _require(df, cols, what):
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: missing column(s) {missing}")
    if not len(df):
        raise ValueError(f"{what}: empty table")


def _with_curves(frame, multi):
    """Add ``curve`` (line label) to a copy of ``frame``.

    ``multi`` lists extra columns (penalty, stopping, groups) that vary in the
    figure's data and must therefore be part of the label.
    """
    out = frame.copy()
    solvers = out["solver"] if "solver" in out.columns else pd.Series([None] * len(out), index=out.index)
    labels = [method_label(m, s) for m, s in zip(out["method"], solvers)]
    for col in multi:
        if col in out.columns:
            prefix = "" if col == "penalty" else f"{col}="
            labels = [f"{lab} / {prefix}{v}" for lab, v in zip(labels, out[col])]
    out["curve"] = labels
    return out


def _varying(df, cols=("penalty", "groups", "stopping")):
    return [c for c in cols if c in df.columns and df[c].nunique(dropna=False) > 1]


def curve_styles(frame):
    """Colour, line style and marker of every curve of ``frame`` (needs ``curve``, ``method``).

    Colour is fixed by the method (standard order hinge-reg, hinge-con,
    hinge-lin, square, logit, ova, liblinear-cs, then others), the line style
    by the solver (the paper's iterations and liblinear solid, others dashed).

    Returns
    -------
    dict
        ``curve -> {"color", "linestyle", "marker", "method", "solver"}``, in
        display order.
    """
    methods = ordered(frame["method"], METHOD_ORDER)
    colors = dict(zip(methods, _palette(max(len(methods), 1))))
    markers = {m: _MARKERS[i % len(_MARKERS)] for i, m in enumerate(methods)}
    solvers_all = frame["solver"] if "solver" in frame.columns else pd.Series(["paper"] * len(frame), index=frame.index)
    other = sorted({str(s) for s in solvers_all if str(s) not in PLAIN_SOLVERS})
    dash = {s: _DASHES[i % len(_DASHES)] for i, s in enumerate(other)}
    styles = {}
    pairs = frame[["curve", "method"]].assign(solver=solvers_all.astype(str).to_numpy()).drop_duplicates("curve")
    pairs = pairs.assign(_m=pairs["method"].map({m: i for i, m in enumerate(methods)}))
    for row in pairs.sort_values(["_m", "curve"]).itertuples():
        styles[row.curve] = {
            "color": colors[row.method], "linestyle": dash.get(row.solver, "-"),
            "marker": markers[row.method], "method": row.method, "solver": row.solver,
        }
    return styles


def _summary(df, value, band):
    """Mean of ``value`` per (curve, L, alpha) with the spread band (lo, hi)."""
    if band not in BANDS:
        raise ValueError(f"band must be one of {sorted(BANDS)}, got {band!r}")
    g = df.groupby(["curve", "L", "alpha"], sort=True)[value]
    out = g.agg(mean="mean", sd="std", n="size").reset_index()
    if band == "sd":
        sd = out["sd"].fillna(0.0)
        out["lo"], out["hi"] = out["mean"] - sd, out["mean"] + sd
    else:
        q = g.quantile([0.25, 0.75]).unstack()
        out["lo"], out["hi"] = q[0.25].to_numpy(), q[0.75].to_numpy()
    return out


def _best(df):
    by = ["curve", "L"] + [c for c in ("dataset", "experiment") if c in df.columns]
    return best_alpha(df, by=by)


def _panel_title(df, L):
    title = f"L = {int(L)}"
    if "n_classes" in df.columns:
        k = df.loc[df["L"] == L, "n_classes"].dropna().unique()
        if len(k) == 1 and int(k[0]) > 0 and L % int(k[0]) == 0:
            title += f" ({int(L) // int(k[0])} per class)"
    return title


def _plot_curve(ax, s, curve, st, band_on=True, label=True):
    ax.plot(s["alpha"], s["mean"], color=st["color"], linestyle=st["linestyle"], marker=st["marker"],
            markersize=4, linewidth=1.5, label=curve if label else None, gid=f"line:{curve}")
    if band_on and (s["hi"] - s["lo"]).abs().max() > 0:
        ax.fill_between(s["alpha"], s["lo"], s["hi"], color=st["color"], alpha=0.18, linewidth=0,
                        gid=f"band:{curve}")


def _circle(ax, x, y, curve, st):
    ax.scatter([x], [y], s=170, facecolors="none", edgecolors=[st["color"]], linewidths=1.8, zorder=5,
               gid=f"best:{curve}")


def _triangles(ax, alphas, ys, curve, st, counts=None):
    """Hollow triangles at the CV alphas of one curve; ``counts``: text under each ("n/N")."""
    ax.scatter(alphas, ys, s=200, marker="^", facecolors="none", edgecolors=[st["color"]], linewidths=1.6,
               zorder=6, gid=f"cv:{curve}")
    for a, y, text in zip(alphas, ys, counts or ()):
        ax.annotate(text, (a, y), xytext=(0, -14), textcoords="offset points", ha="center", va="top",
                    fontsize="x-small", color=st["color"], gid=f"cvcount:{curve}")


def _cv_marks(ax, s, picks, curve, st):
    """Mark the CV alphas of one curve at one L on its mean test-error line ``s``.

    ``picks``: the CV alpha of each training subset (column ``cv_alpha``). One
    triangle per distinct alpha, at the mean test error over all subsets there;
    when the subsets chose different alphas, each triangle is labelled "n/N"
    (n of the N subsets chose it).
    """
    counts = picks["cv_alpha"].value_counts().sort_index()
    ys = []
    for a in counts.index:
        at = s.loc[np.isclose(s["alpha"], a), "mean"]
        if not len(at):
            raise ValueError(f"accuracy_sparsity_figure: the CV alpha {a:g} of {curve!r} at L={s['L'].iloc[0]} "
                             f"is not on its grid {sorted(s['alpha'])}")
        ys.append(at.iloc[0])
    n = int(counts.sum())
    labels = [f"{k}/{n}" for k in counts] if len(counts) > 1 else None
    _triangles(ax, list(counts.index), ys, curve, st, labels)


def _cv_picks(data, cv_alpha, multi):
    """The rows of ``cv_alpha`` with the figure's ``curve`` labels; every (curve, L) of ``data`` must have some."""
    _require(cv_alpha, ["method", "L", "subset", "cv_alpha", "n_folds"], "accuracy_sparsity_figure cv_alpha")
    picks = _with_curves(cv_alpha, multi)
    have = set(zip(picks["curve"], picks["L"]))
    missing = sorted({(c, L) for c, L in zip(data["curve"], data["L"]) if (c, L) not in have})
    if missing:
        raise ValueError(f"accuracy_sparsity_figure: no CV alpha for (curve, L) {missing[:3]}")
    return picks


def _legend_handles(styles, band=None, best=True, cv_folds=None):
    handles = [Line2D([], [], color=st["color"], linestyle=st["linestyle"], marker=st["marker"],
                      markersize=4, label=curve) for curve, st in styles.items()]
    if band is not None:
        handles.append(Patch(facecolor="0.6", alpha=0.35, label=f"band: {BANDS[band]}"))
    if best:
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=10, markerfacecolor="none",
                              markeredgecolor="0.2", label=BEST_LEGEND))
    if cv_folds is not None:
        handles.append(Line2D([], [], linestyle="none", marker="^", markersize=11, markerfacecolor="none",
                              markeredgecolor="0.2", label=CV_LEGEND.format(folds=cv_folds)))
    return handles


def _figure_legend(fig, handles):
    """One legend under the panels, as many columns as the figure width allows."""
    width = fig.get_figwidth()
    longest = max(len(h.get_label()) for h in handles)
    per_col = 0.6 + 0.065 * longest  # inches per legend column at the 'paper' font size
    ncol = max(1, min(len(handles), int(width // per_col)))
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False)


def _new_figure(ncols, nrows, panel=(3.6, 2.9)):
    return Figure(figsize=(panel[0] * ncols, panel[1] * nrows + 0.9), layout="constrained")


def save_figure(fig, path_png, path_pdf, dpi=150):
    """Save ``fig`` as PNG (``dpi``) and PDF; returns ``(Path(png), Path(pdf))``."""
    paths = []
    for p in (path_png, path_pdf):
        p = Path(p)
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, dpi=dpi)
        paths.append(p)
    return tuple(paths)


# --------------------------------------------------------------------------- Figures 1 and 2

def _accuracy_panel(ax, summ, best, styles, picks=None):
    """One panel of Figures 1/2: the mean line and band of every curve of ``styles``, its best alpha circled.

    ``summ``: the :func:`_summary` of one value at one L; ``best``: the best alpha
    of each curve at that L; ``picks`` (test-error panels of an experiment with
    ``cv``): the CV alpha of each curve and subset at that L, marked by :func:`_cv_marks`.
    """
    for curve, st in styles.items():
        s = summ[summ["curve"] == curve]
        if not len(s):
            continue
        _plot_curve(ax, s, curve, st)
        b = best[best["curve"] == curve]
        if len(b):
            a = b["alpha"].iloc[0]
            _circle(ax, a, s.loc[np.isclose(s["alpha"], a), "mean"].iloc[0], curve, st)
        if picks is not None:
            _cv_marks(ax, s, picks[picks["curve"] == curve], curve, st)
    ax.set_xscale("log")


def make_accuracy_sparsity_figure(df, title=None, band="sd", cv_alpha=None):
    """Figures 1/2: test error (%) and zero weights (%) vs alpha, one panel pair per L.

    Parameters
    ----------
    df : pandas.DataFrame
        Job records of one experiment (``aggregate.collect``): needs method,
        alpha, L, subset, test_errors, test_error_pct, nnz, zero_weights_pct.
    title : str, optional
        Figure title.
    band : {"sd", "iqr"}
        Spread band around the mean over subsets: +-1 sd, or interquartile range.
    cv_alpha : pandas.DataFrame, optional
        The experiment's CV alphas (:func:`sparsesvm.experiments.cv.cv_alpha`,
        one row per curve and training subset: the curve columns, subset,
        cv_alpha, n_folds), for an experiment with ``cv``. Every curve and L of
        ``df`` must have rows (``groups`` as text, as in ``df``).

    Returns
    -------
    matplotlib.figure.Figure
        ``2 x n_L`` axes (row 0: test error, row 1: zero weights; columns by
        increasing L), one line per curve in each, its band, and a circle at
        the best alpha of each curve (fewest mean test errors). With
        ``cv_alpha``, the test-error panels also carry a hollow triangle at each
        distinct CV alpha of each curve, on its mean line, labelled "n/N" (n of
        the N subsets chose it) when the subsets disagree.
    """
    _require(df, ["method", "alpha", "L", "test_errors", "test_error_pct", "nnz", "zero_weights_pct"],
             "accuracy_sparsity_figure")
    multi = _varying(df)
    data = _with_curves(df, multi)
    picks = None if cv_alpha is None else _cv_picks(data, cv_alpha, multi)
    styles = curve_styles(data)
    Ls = sorted(data["L"].unique())
    best = _best(data)
    summaries = {v: _summary(data, v, band) for v in ("test_error_pct", "zero_weights_pct")}
    ax_style, ctx = _style()
    with ax_style, ctx:
        fig = _new_figure(len(Ls), 2)
        axes = fig.subplots(2, len(Ls), squeeze=False, sharex="col")
        for j, L in enumerate(Ls):
            for i, (value, ylabel) in enumerate((("test_error_pct", "test error (%)"),
                                                 ("zero_weights_pct", "zero weights (%)"))):
                ax = axes[i, j]
                summ = summaries[value]
                _accuracy_panel(ax, summ[summ["L"] == L], best[best["L"] == L], styles,
                                picks[picks["L"] == L] if picks is not None and i == 0 else None)
                ax.set_ylabel(ylabel)
                if i == 0:
                    ax.set_title(_panel_title(data, L))
                else:
                    ax.set_xlabel(ALPHA_LABEL)
                    ax.set_ylim(-3, 103)
        folds = None if picks is None else "/".join(str(k) for k in sorted(set(picks["n_folds"].astype(int))))
        _figure_legend(fig, _legend_handles(styles, band, cv_folds=folds))
        if title:
            fig.suptitle(title)
    return fig


def accuracy_sparsity_figure(df, path_png, path_pdf, title=None, band="sd", dpi=150, cv_alpha=None):
    """Build (:func:`make_accuracy_sparsity_figure`) and save Figure 1 or 2; returns ``(png, pdf)`` paths."""
    fig = make_accuracy_sparsity_figure(df, title=title, band=band, cv_alpha=cv_alpha)
    return save_figure(fig, path_png, path_pdf, dpi=dpi)


# --------------------------------------------------------------------------- Figure 3

def _positive(x):
    x = np.asarray(x, dtype=float)
    return np.isfinite(x) & (x > 0)


def _fit_time_panel(ax, summ, best, styles):
    """Mean fit time vs alpha, log-log, one line per curve of ``styles``, its best alpha circled.

    ``summ``: the mean ``fit_time_s`` per curve and alpha at one L; ``best``: the
    best alpha of each curve at that L. A mean time of 0 (every subset solved by
    ``X = 0`` before the first iteration, e.g. hinge-con when ``eta`` admits W = 0)
    has no place on a log axis and is left out.
    """
    for curve, st in styles.items():
        s = summ[(summ["curve"] == curve) & _positive(summ["fit_time_s"])]
        if not len(s):
            continue
        ax.plot(s["alpha"], s["fit_time_s"], color=st["color"], linestyle=st["linestyle"],
                marker=st["marker"], markersize=4, linewidth=1.5, label=curve, gid=f"line:{curve}")
        b = best[best["curve"] == curve]
        at = s.loc[np.isclose(s["alpha"], b["alpha"].iloc[0]), "fit_time_s"] if len(b) else ()
        if len(at):
            _circle(ax, b["alpha"].iloc[0], at.iloc[0], curve, st)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(ALPHA_LABEL)
    ax.set_ylabel("mean fit time (s)")


def _trace_panel(ax, tr, best, styles):
    """Relative distance to the solution vs time, log-log, one line per curve and subset.

    ``tr``: the traces at one L; with an ``alpha`` column only those at each
    curve's best alpha (``best``, at that L) are drawn.
    """
    if "alpha" in tr.columns:
        mask = np.zeros(len(tr), dtype=bool)
        for b in best.itertuples():
            mask |= ((tr["curve"] == b.curve) & np.isclose(tr["alpha"], b.alpha, rtol=1e-9, atol=0)).to_numpy()
        tr = tr[mask]
    for curve, st in styles.items():
        part = tr[tr["curve"] == curve]
        for n, (subset, t) in enumerate(part.groupby("subset", sort=True)):
            t = t.sort_values("time")
            ok = _positive(t["time"]) & _positive(t["rel_dist"])
            ax.plot(t["time"].to_numpy()[ok], t["rel_dist"].to_numpy()[ok], color=st["color"],
                    linestyle=st["linestyle"], linewidth=1.0, alpha=0.75,
                    label=curve if n == 0 else None, gid=f"trace:{curve}:{subset}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(r"$\|X_i - X_\infty\|_F\,/\,\|X_\infty\|_F$")


def make_timing_figure(df, traces_df=None, title=None):
    """Figure 3: mean fit time vs alpha per method; relative distance vs time at the best alpha.

    Parameters
    ----------
    df : pandas.DataFrame
        E4 job records: needs method, alpha, L, test_errors, nnz, fit_time_s.
    traces_df : pandas.DataFrame or None
        Long trace table (``aggregate.traces_to_frame``): columns method, L,
        subset, time, rel_dist (and solver, alpha when present). When it has an
        ``alpha`` column only the traces at each curve's best alpha are drawn;
        otherwise every row is taken to be at the best alpha.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Row 0: one log-log panel per L, mean fit time (s) vs alpha, one line
        per curve, best alpha circled. Row 1 (when ``traces_df`` has rows): one
        panel per L, ||X_i - X_inf||_F / ||X_inf||_F vs time (s), log-log, one
        line per curve and subset.
    """
    _require(df, ["method", "alpha", "L", "test_errors", "nnz", "fit_time_s"], "timing_figure")
    multi = _varying(df)
    data = _with_curves(df, multi)
    has_traces = traces_df is not None and len(traces_df) > 0
    if has_traces:
        _require(traces_df, ["method", "L", "subset", "time", "rel_dist"], "timing_figure traces")
        traces = _with_curves(traces_df, [c for c in multi if c in traces_df.columns])
        styles = curve_styles(pd.concat([data[["curve", "method"] + (["solver"] if "solver" in data else [])],
                                         traces[["curve", "method"] + (["solver"] if "solver" in traces else [])]],
                                        ignore_index=True))
    else:
        styles = curve_styles(data)
    Ls = sorted(data["L"].unique())
    best = _best(data)
    summ = data.groupby(["curve", "L", "alpha"], sort=True)["fit_time_s"].mean().reset_index()
    ax_style, ctx = _style()
    with ax_style, ctx:
        nrows = 2 if has_traces else 1
        fig = _new_figure(len(Ls), nrows)
        axes = fig.subplots(nrows, len(Ls), squeeze=False)
        for j, L in enumerate(Ls):
            _fit_time_panel(axes[0, j], summ[summ["L"] == L], best[best["L"] == L], styles)
            axes[0, j].set_title(_panel_title(data, L))
            if has_traces:
                _trace_panel(axes[1, j], traces[traces["L"] == L], best[best["L"] == L], styles)
                axes[1, j].set_title(f"{_panel_title(data, L)}, at the best $\\alpha$", fontsize="medium")
        _figure_legend(fig, _legend_handles(styles))
        if title:
            fig.suptitle(title)
    return fig


def timing_figure(df, traces_df, path_png, path_pdf, title=None, dpi=150):
    """Build (:func:`make_timing_figure`) and save Figure 3; returns ``(png, pdf)`` paths."""
    return save_figure(make_timing_figure(df, traces_df, title=title), path_png, path_pdf, dpi=dpi)


# --------------------------------------------------------------------------- Figure 4

COUNT_COLUMN = "n_weights_above_1e-5"


def _bar_L(frame):
    """Largest L that has both l2 and l1inf jobs, else the largest L."""
    both = set(frame.loc[frame["penalty"] == "l2", "L"]) & set(frame.loc[frame["penalty"] == "l1inf", "L"])
    return max(both) if both else frame["L"].max()


def _weight_counts(at):
    """Mean count of weights above 1e-5 at each curve's and penalty's best alpha, in the records ``at`` (one L).

    Returns
    -------
    pandas.DataFrame
        One row per curve and penalty: curve, penalty, alpha, count, n_weights.
    """
    counts = []
    for b in best_alpha(at, by=["curve", "penalty"]).itertuples():
        sel = at[(at["curve"] == b.curve) & (at["penalty"] == b.penalty) & np.isclose(at["alpha"], b.alpha)]
        counts.append({"curve": b.curve, "penalty": b.penalty, "alpha": b.alpha,
                       "count": sel[COUNT_COLUMN].mean(),
                       "n_weights": sel["n_weights"].iloc[0] if "n_weights" in sel else np.nan})
    return pd.DataFrame(counts)


def _count_bars(ax, counts, styles, L_bar):
    """Grouped bars of :func:`_weight_counts`: one group per curve, one hatched bar per penalty."""
    penalties = ordered(counts["penalty"], PENALTY_ORDER)
    curves = [c for c in styles if c in set(counts["curve"])]
    width = 0.8 / max(len(penalties), 1)
    hatches = ("", "//", "..", "xx")
    for p_i, pen in enumerate(penalties):
        for c_i, curve in enumerate(curves):
            row = counts[(counts["curve"] == curve) & (counts["penalty"] == pen)]
            if not len(row):
                continue
            x = c_i + (p_i - (len(penalties) - 1) / 2) * width
            v = float(row["count"].iloc[0])
            ax.bar([x], [v], width=width * 0.95, color=styles[curve]["color"], edgecolor="0.2",
                   hatch=hatches[p_i % len(hatches)], gid=f"bar:{curve}:{pen}")
            ax.annotate(f"{v / 1000:.1f}k" if v >= 10000 else f"{v:.0f}", (x, v), ha="center",
                        va="bottom", fontsize="x-small", xytext=(0, 1), textcoords="offset points")
    ax.set_xticks(range(len(curves)))
    ax.set_xticklabels(curves, rotation=20, ha="right")
    ax.set_ylabel(r"weights with $|w| > 10^{-5}$")
    ax.set_title(f"L = {int(L_bar)}, at the best $\\alpha$")
    ax.legend(handles=[Patch(facecolor="white", edgecolor="0.2", hatch=hatches[i % len(hatches)], label=p)
                       for i, p in enumerate(penalties)], title="penalty", fontsize="small",
              loc="upper center", ncol=max(1, len(penalties)))
    top = float(np.nanmax(counts["count"])) if len(counts) else 1.0
    ax.set_ylim(0, 1.8 * top if top > 0 else 1.0)  # head-room for the legend above the bars


#: legend entries of Figure 4's equal-accuracy row
MISS_LEGEND = "open triangle: gap not reached (the capped run's time)"
UNCERTIFIED_LEGEND = "dotted: liblinear, within eps of its own lowest objective (not certified)"


def _accuracy_curves(acc, multi=()):
    """A copy of the equal-accuracy table with ``curve``, labelled as the training records are.

    When the stopping rule is part of the training curves' labels (``"stopping"`` in
    ``multi``), the certified solvers' curves read ``stopping=gap`` (they stop on a
    relative gap) and liblinear's its own rule, so its label is that of its training
    curve and the paper's algorithms are not mistaken for their relative-change runs.
    """
    out = acc.copy()
    out["stopping"] = np.where(out["solver"] == "liblinear", "liblinear", "gap")
    return _with_curves(out, [c for c in multi if c == "stopping"])


def _time_to_gap_panel(ax, acc, eps, styles):
    """Seconds to a relative gap ``eps`` vs L, log-log, one line per solver of ``styles``.

    ``acc``: the equal-accuracy rows (with ``curve``). A size where the solver did not
    reach ``eps`` is an open triangle at the time of its capped run; solvers whose
    accuracy is not certified (liblinear) are dotted.
    """
    part = acc[np.isclose(acc["eps"], eps, rtol=1e-9, atol=0)]
    for curve, st in styles.items():
        s = part[part["curve"] == curve]
        if not len(s):
            continue
        ls = st["linestyle"] if s["certified"].all() else ":"
        hit = s[s["reached"]].groupby("L")["seconds"].mean()
        if len(hit):
            ax.plot(hit.index, hit.to_numpy(), color=st["color"], linestyle=ls, marker=st["marker"],
                    markersize=4, linewidth=1.5, label=curve, gid=f"eps:{eps:g}:{curve}")
        miss = s[~s["reached"]].groupby("L")["run_seconds"].mean()
        if len(miss):
            ax.plot(miss.index, miss.to_numpy(), linestyle="none", marker="^", markersize=8,
                    markerfacecolor="none", markeredgecolor=st["color"], gid=f"miss:{eps:g}:{curve}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training size L")
    ax.set_ylabel(f"seconds to a relative gap of {eps:g}")
    alphas = sorted(set(part.loc[part["method"] != "hinge-con", "alpha"]))
    at = f", \u03b1 = {alphas[0]:g}" if len(alphas) == 1 else ""
    ax.set_title(f"equal accuracy: gap {eps:g}{at}")


def make_l2_timing_figure(df, sparse_df=None, title=None, accuracy_df=None):
    """Figure 4: l2 fit time vs alpha per method and L, and the count of weights above 1e-5.

    Parameters
    ----------
    df : pandas.DataFrame
        E5 job records: needs method, penalty, alpha, L, test_errors, nnz,
        fit_time_s and ``n_weights_above_1e-5``. Rows with penalty ``l2`` give
        the timing panels; rows of other penalties only enter the bar panel.
    sparse_df : pandas.DataFrame, optional
        Further records (e.g. the l1inf jobs) for the bar panel.
    title : str, optional
    accuracy_df : pandas.DataFrame, optional
        Equal-accuracy rows (:func:`sparsesvm.experiments.aggregate.collect_accuracy`):
        L, method, solver, alpha, eps, reached, seconds, run_seconds, certified.

    Returns
    -------
    matplotlib.figure.Figure
        One log-log panel per L (fit time (s) vs alpha, one line per curve, best
        alpha circled) and a panel of grouped bars: mean number of weights
        with ``|w| > 1e-5`` at each curve's best alpha, per penalty, at the
        largest L that has both l2 and l1inf jobs (else the largest L). With
        ``accuracy_df``, a last row: one log-log panel per ``eps``, the seconds
        each solver needs to reach a relative gap of ``eps`` vs L.
    """
    _require(df, ["method", "penalty", "alpha", "L", "test_errors", "nnz", "fit_time_s", COUNT_COLUMN],
             "l2_timing_figure")
    both = df if sparse_df is None else pd.concat([df, sparse_df], ignore_index=True)
    l2 = df[df["penalty"] == "l2"]
    if not len(l2):
        raise ValueError("l2_timing_figure: no jobs with penalty 'l2'")
    multi = _varying(l2)
    data = _with_curves(l2, multi)
    allc = _with_curves(both, [c for c in multi if c != "penalty"])
    styles = curve_styles(allc)
    Ls = sorted(data["L"].unique())
    best = _best(data)
    summ = data.groupby(["curve", "L", "alpha"], sort=True)["fit_time_s"].mean().reset_index()
    L_bar = _bar_L(allc)
    counts = _weight_counts(allc[allc["L"] == L_bar])
    n_panels = len(Ls) + 1
    ncols = min(4, n_panels)
    nrows = math.ceil(n_panels / ncols)
    eps_list, acc = [], None
    if accuracy_df is not None:
        _require(accuracy_df, ["L", "method", "solver", "alpha", "eps", "reached", "seconds", "run_seconds",
                               "certified"], "l2_timing_figure (accuracy_df)")
        acc = _accuracy_curves(accuracy_df, multi)
        eps_list = sorted(acc["eps"].unique(), reverse=True)
        ncols = max(ncols, len(eps_list))
        styles = curve_styles(pd.concat([allc[["curve", "method", "solver"]],
                                         acc[["curve", "method", "solver"]]], ignore_index=True))
    ax_style, ctx = _style()
    with ax_style, ctx:
        fig = _new_figure(ncols, nrows + (1 if eps_list else 0))
        rows = fig.subplots(nrows + (1 if eps_list else 0), ncols, squeeze=False)
        grid = rows[:nrows].ravel()
        for ax in grid[n_panels:]:
            fig.delaxes(ax)
        for j, L in enumerate(Ls):
            _fit_time_panel(grid[j], summ[summ["L"] == L], best[best["L"] == L], styles)
            grid[j].set_title(f"l2, {_panel_title(data, L)}")
        _count_bars(grid[len(Ls)], counts, styles, L_bar)
        handles = _legend_handles(styles)
        if eps_list:
            for ax, eps in zip(rows[-1], eps_list):
                _time_to_gap_panel(ax, acc, eps, styles)
            for ax in rows[-1][len(eps_list):]:
                fig.delaxes(ax)
            handles += [Line2D([], [], linestyle="none", marker="^", markersize=8, markerfacecolor="none",
                               markeredgecolor="0.2", label=MISS_LEGEND),
                        Line2D([], [], color="0.2", linestyle=":", label=UNCERTIFIED_LEGEND)]
        _figure_legend(fig, handles)
        if title:
            fig.suptitle(title)
    return fig


def l2_timing_figure(df, path_png, path_pdf, title=None, sparse_df=None, dpi=150, accuracy_df=None):
    """Build (:func:`make_l2_timing_figure`) and save Figure 4; returns ``(png, pdf)`` paths."""
    fig = make_l2_timing_figure(df, sparse_df=sparse_df, title=title, accuracy_df=accuracy_df)
    return save_figure(fig, path_png, path_pdf, dpi=dpi)
