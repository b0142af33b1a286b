"""Figure 4 at equal accuracy: the time each l2 solver needs to reach the same relative gap.

Figure 4's first row, like the paper's, compares fit times at each solver's own
stopping rule: the paper's algorithms stop on the relative change of their
iterates (at ``tol = 1e-3`` several percent above the optimum), liblinear on
its dual criterion. This module measures, for one training set and one
``alpha``, the seconds each solver needs to reach a relative gap ``eps``
(default 1e-3 and 1e-4):

- ``hinge-reg`` and ``hinge-con`` (the paper's Algorithms 1 and 2): one run
  stopping on the certified gap (``stopping="gap"``, ``tol = min(eps)``); the
  gap is evaluated every :data:`~sparsesvm.solvers._loop.GAP_CHECK_EVERY`
  iterations, on the clock, and the time of ``eps`` is that of the first check
  at or below it (the trace's ``rel_gap``). A run stops after ``max_time``
  seconds of loop time (the loop's own clock, gap checks included), so that a
  size where the algorithm does not get there in time is reported as not
  reached, with the gap it had;
- ``hinge-reg+accelerated`` (the certified engine, ``solver="accelerated"``):
  one run per ``eps`` with ``tol = eps``, its fit time;
- ``liblinear-cs``: liblinear's Crammer-Singer SVM, whose bias is regularised
  (another problem), exposes no certificate: it is run at each tolerance of
  :data:`LIBLINEAR_TOLS`, and the time of ``eps`` is the shortest run whose
  liblinear objective is within ``eps`` (relative) of the lowest objective of
  all its runs. That accuracy is *not* certified (``certified = False``);
- ``ocas-cs`` (``msvmocas``, the cutting-plane peer of the SVM-struct family,
  when on PATH; skipped otherwise): one run at ``tol = min(eps)``, capped at
  ``max_time``, on liblinear's model; the time of ``eps`` is that of its first
  iteration whose own certified gap ``1 - Q_D/Q_P`` is at or below it (its
  reported ``tim``, file reading excluded).

All certified solvers solve one model: hinge-reg and the accelerated engine
``min g(X) + lambda loss(X)`` (``lambda = 1/alpha``), hinge-con its
constrained form ``min g(X) s.t. loss(X) <= eta`` at ``eta`` = the total hinge
loss of the regularised solution (the accelerated engine's, at a gap of
``min(eps) / 100``), which has the same solution. Each is certified on its own
form (:meth:`~sparsesvm.solvers._loop.Stopper.rel_gap` for hinge-con).
"""

from __future__ import annotations

import numpy as np

from ..core import encode_labels
from ..estimators import CrammerSingerSVC, SparseSVC
from ..model.losses import margins
from ..model.operator import MulticlassOperator
from ..model.penalties import make_penalty
from ..solvers import baselines, paper
from ..solvers._loop import GAP_CHECK_EVERY
from ..solvers.registry import model_parameters

__all__ = ["EPS", "LIBLINEAR_TOLS", "METHODS", "SOLVERS", "ocas_installed", "time_to_accuracy",
           "run_accuracy_job"]

#: the relative gaps of Figure 4's equal-accuracy row
EPS = (1e-3, 1e-4)
#: liblinear's tolerances (its runs are restarts, one per tolerance)
LIBLINEAR_TOLS = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5)
#: the paper loops' iteration cap here: a safety net, ``max_time`` stops them
PAPER_MAX_ITER = 10**8
#: the solvers measured, in Figure 4's order: label -> (method, solver)
SOLVERS = {"hinge-reg": ("hinge-reg", "paper"), "hinge-con": ("hinge-con", "paper"),
           "hinge-reg+accelerated": ("hinge-reg", "accelerated"), "liblinear-cs": ("liblinear-cs", "liblinear"),
           "ocas-cs": ("ocas-cs", "ocas")}
METHODS = tuple(SOLVERS)


def _trace_rows(label, eps, trace, end, max_time, alpha):
    """Rows of one run traced with its certified gap: for each eps, the first entry at or
    below it; ``end`` = (seconds, gap, n_iter) of the run where none is."""
    gaps = np.asarray(trace["rel_gap"])
    rows = []
    for e in eps:
        hit = np.flatnonzero(gaps <= e)
        at = (trace["time"][hit[0]], gaps[hit[0]], trace["iteration"][hit[0]]) if hit.size else end
        rows.append(_row(label, e, *at, True, max_time, alpha))
    return rows


def _row(label, eps, seconds, gap, n_iter, certified, cap_s, alpha):
    reached = gap <= eps
    method, solver = SOLVERS[label]
    return dict(label=label, method=method, solver=solver, alpha=float(alpha), eps=float(eps),
                reached=bool(reached),
                seconds=float(seconds) if reached else float("nan"),
                gap=float(gap), certified=bool(certified), n_iter=int(n_iter),
                run_seconds=float(seconds), cap_seconds=float(cap_s))


def _paper(method, X, y, alpha, eps, max_time, progress):
    """One gap-stopped run of Algorithm 1 or 2, stopped after ``max_time`` loop seconds."""
    classes, y_idx = encode_labels(y)
    op = MulticlassOperator(X, y_idx, classes.size)
    _, par = model_parameters(method, alpha, op.n_samples)
    solve = paper.hinge_reg if method == "hinge-reg" else paper.hinge_con
    res = solve(op, make_penalty("l2", None, op.n_features, op.n_classes), par, tol=min(eps),
                max_iter=PAPER_MAX_ITER, trace=GAP_CHECK_EVERY, stopping="gap", max_time=max_time)
    progress(f"{method}: {res.n_iter} iterations, {res.fit_time:.1f} s, gap {res.rel_gap:.2e}")
    return _trace_rows(method, eps, res.trace, (res.fit_time, res.rel_gap, res.n_iter),
                       max_time, alpha)


def _ocas(X, y, alpha, eps, max_time, progress):
    """One OCAS run to ``min(eps)``; the time of each eps from its own gap per iteration."""
    y_idx = np.unique(np.asarray(y), return_inverse=True)[1]
    res = baselines.ocas_cs(X, y_idx, int(y_idx.max()) + 1, alpha, tol=min(eps), max_time=max_time)
    progress(f"ocas: {res.n_iter} iterations, {res.fit_time:.2f} s, its gap {res.rel_gap:.2e}")
    return _trace_rows("ocas-cs", eps, res.trace, (res.trace["time"][-1], res.rel_gap, res.n_iter),
                       max_time, alpha)


def ocas_installed():
    """Whether ``msvmocas`` is on PATH (OCAS's rows are skipped otherwise)."""
    import shutil

    return shutil.which(baselines.OCAS_EXECUTABLE) is not None


def _accelerated(X, y, alpha, tol):
    return SparseSVC(method="hinge-reg", penalty="l2", alpha=alpha, tol=tol, solver="accelerated").fit(X, y)


def _hinge_loss(model, X, y):
    """Total multiclass hinge of a fitted model on (X, y) (the loss hinge-con bounds)."""
    S = model.decision_function(X)
    y_idx = np.searchsorted(model.classes_, np.asarray(y))
    return float(margins(S, y_idx).max(axis=1).sum())


def _liblinear(X, y, alpha, eps, max_time, progress):
    runs = []
    for tol in LIBLINEAR_TOLS:
        m = CrammerSingerSVC(alpha=alpha, tol=tol).fit(X, y)
        runs.append((m.fit_time_, m.objective_, m.n_iter_))
        progress(f"liblinear tol {tol:g}: {m.fit_time_:.2f} s, objective {m.objective_:.6g}")
    best = min(obj for _, obj, _ in runs)
    rel = [(t, (obj - best) / abs(best), n) for t, obj, n in runs]
    rows = []
    for e in eps:   # the lowest objective's own run is within any eps: always reached
        t, gap, n = min(r for r in rel if r[1] <= e)
        rows.append(_row("liblinear-cs", e, t, gap, n, False, max_time, alpha))
    return rows


def time_to_accuracy(X, y, alpha, *, eps=EPS, max_time=300.0, methods=METHODS, progress=None):
    """Seconds each l2 solver needs to reach a relative gap ``eps`` on one training set.

    Parameters
    ----------
    X : ndarray of shape (L, M) or sparse matrix
    y : array-like of shape (L,)
    alpha : float > 0
        The hyper-parameter of every solver (``lambda = 1/alpha``, ``eta = alpha L``,
        liblinear's ``C = 1/alpha``).
    eps : sequence of float in (0, 1)
    max_time : float > 0
        About the longest loop time of one paper-algorithm run, seconds.
    methods : sequence of str
        A subset of :data:`METHODS` (``ocas-cs`` gives no rows when ``msvmocas`` is
        not installed).
    progress : callable(str) or None
        Called with a line after each run.

    Returns
    -------
    list of dict
        One row per ``(method, eps)``: ``label`` (of :data:`METHODS`), ``method``
        and ``solver`` (as in the training records), ``alpha`` (hinge-con's: ``eta / L``),
        ``reached``, ``seconds`` (NaN when not reached), ``gap`` (the gap at that
        time, or at the end of the run when not reached), ``certified``,
        ``n_iter``, ``run_seconds`` (= ``seconds`` when reached, else the whole
        run's), ``cap_seconds``.
    """
    eps = tuple(float(e) for e in eps)
    if not eps or not all(0 < e < 1 for e in eps):
        raise ValueError(f"eps must be relative gaps in (0, 1), got {eps}")
    if not (isinstance(max_time, (int, float)) and max_time > 0):
        raise ValueError(f"max_time must be a positive number of seconds, got {max_time!r}")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise ValueError(f"unknown methods {unknown}; known: {list(METHODS)}")
    progress = progress or (lambda line: None)
    acc = {}
    if "hinge-reg+accelerated" in methods:
        for e in eps:
            m = acc[e] = _accelerated(X, y, alpha, e)
            progress(f"accelerated tol {e:g}: {m.fit_time_:.2f} s, gap {m.rel_gap_:.2e}")
    alpha_con = None
    if "hinge-con" in methods:   # the constrained form of the same model
        ref = _accelerated(X, y, alpha, min(eps) / 100)
        alpha_con = _hinge_loss(ref, X, y) / X.shape[0]
        progress(f"hinge-con: eta / L = {alpha_con:.6g} (regularised solution at gap {ref.rel_gap_:.1e})")
    rows = []
    for method in METHODS:
        if method not in methods:
            continue
        if method == "hinge-reg":
            rows += _paper(method, X, y, alpha, eps, max_time, progress)
        elif method == "hinge-con":
            if alpha_con > 1e-9:   # mean hinge loss per sample; margins are 1
                rows += _paper(method, X, y, alpha_con, eps, max_time, progress)
            else:   # (numerically) zero loss at the optimum: eta = 0, a hard margin, nothing to time
                progress("hinge-con skipped: the regularised solution has zero hinge loss (eta = 0)")
        elif method == "hinge-reg+accelerated":
            rows += [_row(method, e, m.fit_time_, m.rel_gap_, m.n_iter_, True, max_time, alpha)
                     for e, m in acc.items()]
        elif method == "liblinear-cs":
            rows += _liblinear(X, y, alpha, eps, max_time, progress)
        elif ocas_installed():
            rows += _ocas(X, y, alpha, eps, max_time, progress)
        else:
            progress(f"ocas-cs skipped: {baselines.OCAS_EXECUTABLE} is not on PATH")
    return rows


def run_accuracy_job(features_dir, subset_indices, alpha, *, eps=EPS, max_time=300.0, methods=METHODS,
                     progress=None, **meta):
    """:func:`time_to_accuracy` on one training subset of the stored features, as a record.

    Parameters
    ----------
    features_dir : path
        The workflow's features directory (:func:`sparsesvm.data.features.load_features`).
    subset_indices : array_like of int, shape (L,)
        Training rows.
    alpha, eps, max_time, methods, progress
        As in :func:`time_to_accuracy`.
    **meta
        Copied into the record (dataset, experiment, subset, samples_per_class).

    Returns
    -------
    dict
        ``meta``, ``L``, the package's ``source_hash`` and ``rows``.
    """
    import sparsesvm
    from sparsesvm.data.features import load_features

    X, y = load_features(features_dir, "train", indices=np.asarray(subset_indices))
    rows = time_to_accuracy(X, y, alpha, eps=eps, max_time=max_time, methods=methods, progress=progress)
    return dict(meta, L=int(np.shape(y)[0]), alpha=float(alpha), max_time=float(max_time),
                ocas_installed=ocas_installed(), source_hash=sparsesvm.source_hash(), rows=rows)
