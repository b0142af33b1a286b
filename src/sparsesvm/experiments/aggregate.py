"""Collect job records into tidy tables and choose the best alpha.

:func:`collect` turns the JSON records written by
:func:`sparsesvm.experiments.runner.run_job` into one pandas DataFrame, one row
per job and every parameter as a column. :func:`best_alpha` picks, per
method x regulariser x L (and whatever else identifies a curve), the alpha
with the fewest mean test errors over the training subsets: the best alpha by
test error, the paper's trial-and-error choice (spec section 5).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .plan import method_label
from .runner import read_json

__all__ = [
    "BEST_ALPHA_RULE",
    "ID_COLUMNS",
    "collect",
    "collect_traces",
    "collect_accuracy",
    "records_to_frame",
    "traces_to_frame",
    "best_alpha",
    "default_by",
    "groups_label",
    "method_label",
    "add_labels",
    "METHOD_ORDER",
    "ordered",
]

#: How the best alpha is chosen; printed in tables, captions and legends.
BEST_ALPHA_RULE = "best alpha by test error (the paper's trial-and-error choice)"

#: Columns that identify one curve (one alpha grid); ``best_alpha`` groups by those present.
ID_COLUMNS = ("dataset", "experiment", "method", "solver", "stopping", "penalty", "groups", "L")



def groups_label(groups):
    """Text form of a ``groups`` value: ``None`` -> ``"none"``, ``5`` -> ``"5"``, ``"features"``."""
    if groups is None or (isinstance(groups, float) and np.isnan(groups)):
        return "none"
    if isinstance(groups, (int, np.integer)) and not isinstance(groups, bool):
        return str(int(groups))
    if isinstance(groups, float) and groups.is_integer():
        return str(int(groups))
    return str(groups)


#: Column / line order of the methods in tables and figures.
METHOD_ORDER = ("hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova", "liblinear-cs", "ocas-cs")


def ordered(values, order):
    """Distinct ``values`` in the order of ``order``; labels ``"name [solver]"`` follow
    their ``name`` (e.g. ``"hinge-reg [accelerated]"`` right after ``"hinge-reg"``),
    unknown names last, alphabetically."""
    def key(v):
        name, _, solver = str(v).partition(" [")
        return (order.index(name) if name in order else len(order), name, solver)

    return sorted(dict.fromkeys(values), key=key)


def add_labels(df):
    """Return a copy of ``df`` with a ``label`` column (:func:`method_label` of method and solver)."""
    out = df.copy()
    solvers = out["solver"] if "solver" in out else pd.Series([None] * len(out), index=out.index)
    out["label"] = [method_label(m, s) for m, s in zip(out["method"], solvers)]
    return out


def _flatten_record(rec):
    row = {}
    for key, value in rec.items():
        if key == "trace":
            continue
        if key == "groups":
            row[key] = groups_label(value)
        elif isinstance(value, list):
            if key.endswith("per_class"):
                stem = key[: -len("per_class")].rstrip("_")
                for k, v in enumerate(value):
                    row[f"{stem}_class{k}"] = v
            row[key] = "+".join(str(v) for v in value)
        elif isinstance(value, dict):
            row[key] = json.dumps(value, sort_keys=True)
        else:
            row[key] = value
    return row


def _sort(df):
    keys = [c for c in ("dataset", "experiment", "method", "solver", "stopping", "penalty", "groups",
                        "L", "alpha", "subset") if c in df.columns]
    if keys and len(df):
        df = df.sort_values(keys, kind="mergesort", na_position="first")
    return df.reset_index(drop=True)


def records_to_frame(records):
    """Tidy DataFrame from job records (dicts as returned by ``run_job``).

    Lists become ``"a+b+c"`` strings (``nnz_per_class`` -> ``"12+0+5"``) and,
    for ``*_per_class`` lists, also numeric columns ``nnz_class0``,
    ``nnz_class1``, ... ; ``groups`` becomes text (``"none"``, ``"5"``,
    ``"features"``) so that grouping never drops it; the ``trace`` is left out
    (see :func:`traces_to_frame`). Rows are sorted by the parameters.

    Parameters
    ----------
    records : iterable of dict

    Returns
    -------
    pandas.DataFrame, one row per record
    """
    rows = [_flatten_record(r) for r in records]
    if not rows:
        raise ValueError("no job records to collect")
    df = pd.DataFrame(rows)
    for col in df.columns:
        if df[col].dtype == object:
            non_null = df[col].dropna()
            if len(non_null) and non_null.map(lambda v: isinstance(v, bool)).all():
                continue
            if len(non_null) and not non_null.map(lambda v: isinstance(v, str)).all():
                # mixed types (e.g. a meta field given as int in one job, str in another)
                df[col] = df[col].map(lambda v: v if v is None else str(v))
    return _sort(df)


def collect(json_paths, experiment=None):
    """Read job records (JSON files) into one tidy DataFrame.

    Parameters
    ----------
    json_paths : iterable of str or path-like
        Files written by ``write_json_atomic(path, record)``: one record, or a JSON array
        of records (a grid job's, :func:`sparsesvm.experiments.runner.run_grid_job`).
    experiment : str, optional
        The experiment being collected: records made by another experiment's job (shared
        runs, :meth:`sparsesvm.experiments.plan.Plan.run_owner`) get it as ``experiment``,
        their own in ``run_experiment``.

    Returns
    -------
    pandas.DataFrame
        One row per record (per job, or per alpha of a grid job), all parameters and results
        as columns (see :func:`records_to_frame`), plus ``result_path`` (and ``run_experiment``, the
        experiment whose job made the record, when ``experiment`` is given).

    Raises
    ------
    ValueError
        If ``json_paths`` is empty or a file holds neither a JSON object nor a non-empty
        array of them.
    """
    records = []
    for path in json_paths:
        held = read_json(path)
        many = isinstance(held, list) and len(held) > 0
        for rec in held if many else [held]:
            if not isinstance(rec, dict):
                raise ValueError(f"{path}: expected a JSON object (one job record) or an array of "
                                 f"them (a grid job's), got {type(held).__name__}"
                                 + (f" holding a {type(rec).__name__}" if many else ""))
            rec = dict(rec)
            rec["result_path"] = str(path)
            if experiment is not None:
                rec["run_experiment"] = rec.get("experiment")
                rec["experiment"] = experiment
            records.append(rec)
    if not records:
        raise ValueError("collect() got no result files")
    return records_to_frame(records)


_TRACE_KEYS = ("dataset", "experiment", "method", "solver", "stopping", "penalty", "groups",
               "alpha", "L", "subset")


def traces_to_frame(records):
    """Long table of convergence traces: one row per recorded iteration.

    Columns: the job parameters (dataset, experiment, method, solver,
    stopping, penalty, groups, alpha, L, subset; those present) and the trace
    arrays (``iteration``, ``time``, ``rel_change``, ``objective`` and, when a
    reference solution was given, ``rel_dist``). Records without a trace are
    skipped; with none at all the result is an empty frame with those columns.
    """
    frames = []
    for rec in records:
        tr = rec.get("trace")
        if not tr:
            continue
        lengths = {k: len(v) for k, v in tr.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"trace arrays of unequal lengths {lengths} in job {_describe(rec)}")
        part = pd.DataFrame({k: np.asarray(v, dtype=float) for k, v in tr.items()})
        for key in _TRACE_KEYS:
            if key in rec:
                part.insert(0, key, groups_label(rec[key]) if key == "groups" else rec[key])
        frames.append(part)
    if not frames:
        return pd.DataFrame(columns=list(_TRACE_KEYS) + ["iteration", "time", "rel_change", "objective"])
    out = pd.concat(frames, ignore_index=True)
    front = [k for k in _TRACE_KEYS if k in out.columns]
    return out[front + [c for c in out.columns if c not in front]]


def collect_traces(json_paths):
    """:func:`traces_to_frame` of the records in ``json_paths`` (JSON files)."""
    return traces_to_frame(read_json(p) for p in json_paths)


def collect_accuracy(json_paths):
    """Long table of equal-accuracy records (:func:`sparsesvm.experiments.accuracy.run_accuracy_job`).

    One row per record, solver and ``eps``: dataset, experiment, L, subset, then the
    rows' columns (label, method, solver, alpha, eps, reached, seconds, gap,
    certified, n_iter, run_seconds, cap_seconds).
    """
    rows = []
    for path in json_paths:
        rec = read_json(path)
        if "rows" not in rec:
            raise ValueError(f"{path}: not an equal-accuracy record (no 'rows')")
        head = {k: rec.get(k) for k in ("dataset", "experiment", "L", "subset")}
        rows += [dict(head, **r) for r in rec["rows"]]
    return pd.DataFrame(rows)


def _describe(rec):
    return ", ".join(f"{k}={rec.get(k)!r}" for k in ("method", "penalty", "alpha", "L", "subset") if k in rec)


def default_by(df):
    """The identifying columns (``ID_COLUMNS``) present in ``df``."""
    return [c for c in ID_COLUMNS if c in df.columns]


def best_alpha(df, by=None, *, atol=1e-9):
    """Best alpha by test error (the paper's trial-and-error choice), per curve.

    For each group of ``by`` the jobs are averaged over training subsets at
    each alpha; the best alpha has the fewest mean test errors. Ties (within
    ``atol``) go to the sparser model: the fewer mean non-zero weights, then
    the larger alpha (larger alpha = sparser model in every formulation).

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`collect` (needs ``alpha``, ``test_errors``, ``nnz``).
    by : list of str, optional
        Columns identifying a curve; default: those of ``ID_COLUMNS`` present
        (dataset, experiment, method, solver, stopping, penalty, groups, L).
    atol : float
        Tolerance of the comparison of mean test errors.

    Returns
    -------
    pandas.DataFrame
        One row per group: the ``by`` columns, ``alpha``, ``test_errors``
        (mean), ``test_errors_sd``, ``test_error_pct`` (mean), ``nnz`` (mean),
        ``zero_weights_pct`` (mean), ``n_subsets``, ``n_alphas``, ``at_grid_edge``
        (True when the best alpha is the smallest or largest of its grid: the
        grid should be widened) and ``rule`` (``BEST_ALPHA_RULE``).
    """
    if by is None:
        by = default_by(df)
    by = list(by)
    need = ["alpha", "test_errors", "nnz"] + by
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"best_alpha: missing column(s) {missing}")
    if not len(df):
        raise ValueError("best_alpha: empty table")
    agg = {
        "test_errors": ("test_errors", "mean"),
        "test_errors_sd": ("test_errors", "std"),
        "nnz": ("nnz", "mean"),
        "n_subsets": ("test_errors", "size"),
    }
    if "test_error_pct" in df.columns:
        agg["test_error_pct"] = ("test_error_pct", "mean")
    if "zero_weights_pct" in df.columns:
        agg["zero_weights_pct"] = ("zero_weights_pct", "mean")
    per_alpha = df.groupby(by + ["alpha"], dropna=False, sort=True).agg(**agg).reset_index()
    rows = []
    groups = per_alpha.groupby(by, dropna=False, sort=True) if by else [((), per_alpha)]
    for _, part in groups:
        err = part["test_errors"].to_numpy(dtype=float)
        cand = part[err <= err.min() + atol]
        cand = cand.sort_values(["nnz", "alpha"], ascending=[True, False], kind="mergesort")
        best = cand.iloc[0].copy()
        alphas = part["alpha"].to_numpy(dtype=float)
        best["n_alphas"] = int(alphas.size)
        best["at_grid_edge"] = bool(alphas.size > 1 and best["alpha"] in (alphas.min(), alphas.max()))
        rows.append(best)
    out = pd.DataFrame(rows).reset_index(drop=True)
    out["n_subsets"] = out["n_subsets"].astype(int)
    out["rule"] = BEST_ALPHA_RULE
    return out
