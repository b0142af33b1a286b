"""One training job of the experiments: fit on a subset, evaluate on the test split.

A *job* is one dataset x method x regulariser x alpha x training subset
(spec section 5). :func:`run_job` loads the stored features, fits the
estimator on the selected training rows, counts errors on the whole official
test split and returns a JSON-serialisable record (plain ``int``, ``float``,
``bool``, ``str``, ``None`` and lists/dicts of those). :func:`write_json_atomic`
writes such a record so that a file either exists complete or not at all,
which is what file-based workflow targets need.

Only the fit is timed: ``fit_time_s`` is the estimator's ``fit_time_`` (the
solver loop only, trace cost excluded) and ``fit_wall_time_s`` is the wall
time of the whole ``fit()`` call (input validation and ``||T||`` estimation
included); ``fit_cpu_time_s`` is that call's CPU time in the process (with one
BLAS thread, what the fit computed, whatever else loads the machine: the wall
times of jobs run beside other work are longer, their CPU times are not).
Loading features, prediction and writing results are not timed.

A job of the paper's methods fits through :mod:`sparsesvm.core` (the fit core
of :class:`sparsesvm.SparseSVC`, same checks, same solvers, same result) and
predicts with :func:`sparsesvm.core.decision_scores`: the job path imports
neither scikit-learn (about 2 s, more than many E2 fits) nor pandas nor
matplotlib, so that a training job starts quickly. Only the l2 peer
``liblinear-cs`` (:class:`sparsesvm.CrammerSingerSVC`) imports scikit-learn.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import time

import numpy as np

from .. import _io
from .. import core as _core
from ..solvers import DEFAULT_STEP_RATIO

__all__ = [
    "METHODS",
    "RECORD_FIELDS",
    "PEER_METHOD",
    "core_method",
    "PENALTIES",
    "WEIGHT_THRESHOLD",
    "run_job",
    "run_grid_job",
    "write_json_atomic",
    "read_json",
    "to_jsonable",
    "count_weights",
]

#: Methods fitted by :class:`sparsesvm.SparseSVC` (here by its core, :func:`sparsesvm.core.fit`).
METHODS = _core.METHODS
#: The l2 peer (scikit-learn/liblinear Crammer-Singer), fitted by :class:`sparsesvm.CrammerSingerSVC`.
PEER_METHOD = "liblinear-cs"
PENALTIES = _core.PENALTIES


def core_method(method, solver):
    """``(method, solver)`` as :mod:`sparsesvm.core` fits a job's method: the l2 peer
    :data:`PEER_METHOD` is the registry's solver ``"liblinear"`` for hinge-reg, the other
    methods are themselves."""
    return ("hinge-reg", "liblinear") if method == PEER_METHOD else (method, solver)


#: Threshold of ``n_weights_above_1e-5`` (spec E5: weights above 1e-5 in absolute value).
WEIGHT_THRESHOLD = 1e-5

#: Fields every record carries (the contract's list, plus a few extras).
RECORD_FIELDS = (
    "dataset", "experiment", "method", "penalty", "groups", "alpha", "L", "subset",
    "n_features", "n_classes", "n_test", "test_errors", "test_error_pct",
    "nnz_per_class", "nnz", "n_weights", "zero_weights_pct", "n_weights_above_1e-5",
    "fit_time_s", "fit_wall_time_s", "n_iter", "objective", "constraint_violation",
    "converged", "rel_gap", "tol", "max_iter", "solver", "stopping", "precision", "sparsesvm_version",
    "source_hash",
)


# --------------------------------------------------------------------------- JSON helpers

def to_jsonable(obj):
    """Convert ``obj`` recursively into plain JSON types.

    numpy scalars become ``int``/``float``/``bool``, arrays and tuples become
    lists, paths become strings; non-finite floats (NaN, +-inf) become ``None``
    so that the output is strict JSON.

    Parameters
    ----------
    obj : object
        Nested dicts/lists/tuples of scalars, strings, ``None``, numpy arrays.

    Returns
    -------
    object
        The same structure made of ``dict``, ``list``, ``str``, ``int``,
        ``float``, ``bool`` and ``None``.

    Raises
    ------
    ValueError
        If a value has a type that has no JSON counterpart.
    """
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    raise ValueError(f"value of type {type(obj).__name__} is not JSON-serialisable: {obj!r}")


def write_json_atomic(path, obj):
    """Write ``obj`` as JSON to ``path`` atomically (:func:`sparsesvm._io.write_json`).

    A reader sees either the old file, no file, or the complete new file; the
    parent directory is created if needed, and the file has the mode a plain
    ``open`` gives (``0o666 & ~umask``), readable by the group like every other output.

    Parameters
    ----------
    path : str or path-like
        Destination file.
    obj : object
        Anything :func:`to_jsonable` accepts.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    return _io.write_json(path, to_jsonable(obj), indent=1, allow_nan=False, sort_keys=False)


def read_json(path):
    """Read one JSON file (a record written by :func:`write_json_atomic`)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


# --------------------------------------------------------------------------- counting

def count_weights(coef, threshold=WEIGHT_THRESHOLD):
    """Count non-zero weights per class (biases excluded).

    Parameters
    ----------
    coef : array_like, shape (n_classes, n_features)
        Weights only (``coef_``), no bias column.
    threshold : float
        Threshold of the second count.

    Returns
    -------
    dict
        ``nnz_per_class`` (list of int, exact non-zeros: the prox methods return
        exact zeros), ``nnz``, ``n_weights``, ``zero_weights_pct`` (percentage of
        exact zeros), ``n_weights_above_1e-5`` (``|w| > threshold``, the count
        used for E5, meaningful also for solvers with tiny non-zeros) and
        ``n_weights_above_1e-5_per_class``.
    """
    coef = np.asarray(coef)
    if coef.ndim != 2:
        raise ValueError(f"coef must be 2-D (n_classes, n_features), got shape {coef.shape}")
    nnz_per_class = np.count_nonzero(coef, axis=1)
    above = np.count_nonzero(np.abs(coef) > threshold, axis=1)
    n_weights = int(coef.size)
    nnz = int(nnz_per_class.sum())
    return {
        "nnz_per_class": [int(v) for v in nnz_per_class],
        "nnz": nnz,
        "n_weights": n_weights,
        "zero_weights_pct": 100.0 * (n_weights - nnz) / n_weights if n_weights else 0.0,
        "n_weights_above_1e-5": int(above.sum()),
        "n_weights_above_1e-5_per_class": [int(v) for v in above],
    }


# --------------------------------------------------------------------------- the job

def _check_subset(subset_indices):
    if subset_indices is None:
        return None
    idx = np.asarray(subset_indices)
    if idx.ndim != 1:
        raise ValueError(f"subset_indices must be 1-D, got shape {idx.shape}")
    if idx.size == 0:
        raise ValueError("subset_indices is empty")
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"subset_indices must be integers, got dtype {idx.dtype}")
    if idx.min() < 0:
        raise ValueError(f"subset_indices has a negative index ({int(idx.min())})")
    if np.unique(idx).size != idx.size:
        raise ValueError("subset_indices has repeated indices")
    return idx.astype(np.int64)


def run_job(features_dir, subset_indices, method, penalty, groups, alpha, tol, max_iter,
            solver="paper", stopping="rel_change", trace=False, reference_coef=None,
            precision="double", **meta):
    """Fit one model on a training subset and evaluate it on the whole test split.

    Parameters
    ----------
    features_dir : str or path-like
        Directory written by :func:`sparsesvm.data.features.save_features`.
    subset_indices : array_like of int, shape (L,), or None
        Rows of the training split to train on; ``None`` = the whole training split.
    method : str
        One of ``"hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova"``
        (fitted as :class:`sparsesvm.SparseSVC` does, by its scikit-learn-free core
        :func:`sparsesvm.core.fit`) or ``"liblinear-cs"`` (the l2 peer,
        :class:`sparsesvm.CrammerSingerSVC`; requires ``penalty="l2"``,
        ``groups=None``, ``solver="paper"``, ``stopping="rel_change"`` (the
        defaults, ignored) and ``trace=False``; recorded as solver/stopping
        ``"liblinear"``).
    penalty : {"l2", "l1", "l12", "l1inf"}
    groups : None, int or "features"
    alpha : float
        Hyper-parameter (> 0): lambda = 1/alpha, eta = alpha * L.
    tol : float
        Stopping tolerance (> 0).
    max_iter : int
        Iteration cap (> 0).
    solver, stopping : str
        ``groups``, ``solver`` and ``stopping`` are passed to :class:`sparsesvm.SparseSVC`.
    trace : bool or int
        Record the convergence trace (``record["trace"]``: dict of equal-length
        lists): ``True`` every iteration, an int ``n`` every ``n`` iterations
        (keeps the JSON small for long runs).
    reference_coef : array_like or None
        Reference solution passed to :class:`sparsesvm.SparseSVC` so that the trace
        carries ``rel_dist`` = ||X_i - X_inf|| / ||X_inf|| (E4), in the layout
        returned by this function as ``coef_full``.
    precision : {"double", "single"}
        :class:`sparsesvm.SparseSVC`'s ``precision`` (recorded as ``precision``).
    **meta
        Extra fields copied into the record (JSON-serialisable), e.g.
        ``dataset``, ``experiment``, ``subset`` (default 0), ``L``. ``L`` is
        always the number of training rows actually used; a given ``L`` that
        differs raises ``ValueError``.

    Returns
    -------
    record : dict
        JSON-serialisable record with at least the fields of ``RECORD_FIELDS``
        (see the module docstring and the contract), plus ``trace`` when
        ``trace=True``.
    coef_full : ndarray, shape (n_classes, n_features + 1)
        The weights with the biases as last column (float64).

    Raises
    ------
    ValueError
        For an unknown method or penalty, a non-positive alpha/tol/max_iter,
        any parameter :class:`sparsesvm.SparseSVC` rejects (checked before the
        features are read, except ``groups <= n_features``), bad subset indices,
        non-finite test scores (NaN/inf features), or an ``L`` in ``meta`` that
        does not match.
    """
    groups, params, idx, trace = _check_job(method, penalty, groups, alpha, tol, max_iter, solver, stopping,
                                            trace, subset_indices, meta, precision)
    # the training rows are held by the callee alone, which lets them go before the test split is read
    return _fit_and_evaluate(params, _train_split(features_dir, idx, meta.get("L")),
                             lambda: _test_split(features_dir), groups, reference_coef, meta, trace,
                             method=method, penalty=penalty, alpha=alpha, tol=tol, max_iter=max_iter)


def _fit_and_evaluate(params, train, test, groups, reference_coef, meta, trace, *, method, penalty, alpha,
                      tol, max_iter):
    """The part of :func:`run_job` after its checks: fit on ``train`` ((X, y)), count the errors on
    the test split that ``test()`` returns (called once the training rows are let go, when
    ``train`` is the only reference to them), make the record. Returns ``(record, coef_full)``."""
    X_train, y_train = train
    del train
    n_train = int(np.shape(y_train)[0])
    model, clocks = _fit(params, X_train, y_train, groups, reference_coef)
    errors = {"n_train": n_train, "train_errors": _errors(model, X_train, y_train)}
    del X_train
    X_test, y_test = test()
    errors.update(n_test=int(y_test.shape[0]), test_errors=_errors(model, X_test, y_test))
    coef = np.asarray(model.coef, dtype=np.float64)
    coef_full = np.hstack([coef, np.asarray(model.intercept, dtype=np.float64).reshape(-1)[:, None]])
    record = _record(model, coef, errors, meta, clocks=clocks, method=method, penalty=penalty, groups=groups,
                     alpha=alpha, tol=tol, max_iter=max_iter, solver=params.solver,
                     precision=params.precision)
    if trace:
        if not model.trace:
            raise ValueError(f"the estimator returned no trace for method {method!r}")
        record["trace"] = {str(k): np.asarray(v).tolist() for k, v in model.trace.items()}
    return to_jsonable(record), coef_full


def run_grid_job(features_dir, subset_indices, method, penalty, groups, alphas, tol, max_iter,
                 solver="paper", stopping="rel_change", precision="double", side_by_side=True,
                 resume=None, **meta):
    """:func:`run_job` at each of ``alphas`` on one training subset, in one process.

    ``side_by_side=True``: the fits share each iteration's products with the features
    (:func:`sparsesvm.core.fit_alphas`); each record is :func:`run_job`'s at that alpha up
    to the rounding of those products, with two differences: ``fit_time_s`` is the time
    the side-by-side loop had run when that fit stopped, ``fit_wall_time_s`` and
    ``fit_cpu_time_s`` those of the whole batch (time shared by the fits), and the record
    says so (``side_by_side``: the number of fits in the batch).

    ``side_by_side=False``: the fits run one after another, each exactly as
    :func:`run_job` runs it (its own checks, fit, clocks and record; any method, solver
    and stopping rule), in a process that the fits before it have started: the
    interpreter, the imports and the compiled kernels are loaded once, not once per alpha,
    and the clocks of a fit cover what :func:`run_job`'s cover (README, "Alphas in one
    job").

    Either way the features are read once.

    Parameters
    ----------
    alphas : sequence of float > 0
        The grid, at least one alpha.
    side_by_side : bool
        The fits side by side (default) or one after another.
    resume : str or path-like, optional
        One after another only: a file that keeps the records of the fits done so far
        (rewritten atomically after each fit), so that a job interrupted after some of its
        alphas (killed, out of time) fits only the others when it runs again. Its records
        are taken only if the file was written for the same job: the same settings, meta,
        training rows, features (their files' names, sizes and modification times) and
        package sources (:func:`sparsesvm.source_hash`); otherwise it is ignored and
        overwritten at the next fit. The caller removes it once the records are written
        (``workflow/scripts/train_grid.py``).
    features_dir, subset_indices, method, penalty, groups, tol, max_iter, solver, stopping, precision, **meta
        As in :func:`run_job` (no trace). Side by side: ``method`` one of
        :data:`sparsesvm.solvers.side_by_side.SIDE_BY_SIDE_METHODS`, ``solver``
        ``"paper"``, ``stopping`` ``"rel_change"``.

    Returns
    -------
    list of dict
        One record per alpha, in order.

    Raises
    ------
    ValueError
        As :func:`run_job` (every alpha is checked before the features are read); for no
        alphas, or, side by side, a method, solver or stopping rule that the fits side by
        side do not take.
    """
    alphas = list(alphas)
    if not alphas:
        raise ValueError("alphas is empty: give at least one alpha")
    checked = [_check_job(method, penalty, groups, a, tol, max_iter, solver, stopping, False,
                          subset_indices, dict(meta), precision) for a in alphas]
    groups, params, idx, _ = checked[0]
    X_train, y_train = _train_split(features_dir, idx, meta.get("L"))
    if not side_by_side:
        test_split = _test_split(features_dir)  # read once for all the fits
        key, done = None, {}
        if resume is not None:
            key = _job_key(features_dir, idx, dict(method=method, penalty=penalty, groups=groups, tol=tol,
                                                   max_iter=max_iter, solver=solver, stopping=stopping,
                                                   precision=precision, meta=meta))
            done = _read_resume(resume, key)
        records = []
        for alpha, (_, p, _, _) in zip(alphas, checked):
            record = done.get(float(alpha))
            fitted = record is None
            if fitted:
                record = _fit_and_evaluate(p, (X_train, y_train), lambda: test_split, groups, None,
                                           dict(meta), False, method=method, penalty=penalty,
                                           alpha=alpha, tol=tol, max_iter=max_iter)[0]
            records.append(record)
            if fitted and resume is not None:  # what is done so far, for a rerun after an interruption
                _io.write_json(resume, {"key": key, "records": records}, allow_nan=False)
        return records
    n_train = int(np.shape(y_train)[0])
    t0, c0 = time.perf_counter(), time.process_time()
    models = _core.fit_alphas(params, [p.alpha for _, p, _, _ in checked], X_train, y_train,
                              groups=groups)
    clocks = (time.perf_counter() - t0, time.process_time() - c0)
    X_test, y_test = _test_split(features_dir)
    records = []
    for (_, p, _, _), model in zip(checked, models):
        errors = {"n_train": n_train, "train_errors": _errors(model, X_train, y_train),
                  "n_test": int(y_test.shape[0]), "test_errors": _errors(model, X_test, y_test)}
        coef = np.asarray(model.coef, dtype=np.float64)
        record = _record(model, coef, errors, {**meta, "side_by_side": len(alphas)}, clocks=clocks,
                         method=method, penalty=penalty, groups=groups, alpha=p.alpha, tol=tol,
                         max_iter=max_iter, solver=params.solver, precision=params.precision)
        records.append(to_jsonable(record))
    return records


def _job_key(features_dir, idx, fields):
    """sha256 hex digest of what a grid job's records depend on: ``fields`` (its settings and
    meta), the training rows ``idx``, the features (the names, sizes and modification times
    of the files in ``features_dir``) and the package's sources."""
    import hashlib

    import sparsesvm

    h = hashlib.sha256()
    h.update(json.dumps(to_jsonable(fields), sort_keys=True).encode())
    h.update(sparsesvm.source_hash().encode())
    h.update(b"all" if idx is None else np.ascontiguousarray(idx, dtype=np.int64).tobytes())
    folder = os.fspath(features_dir)
    for name in sorted(os.listdir(folder)):
        st = os.stat(os.path.join(folder, name))
        h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def _read_resume(path, key):
    """``{alpha: record}`` kept in ``path`` for the job of ``key`` (:func:`run_grid_job`'s
    ``resume``); empty when there is no such file, or it is another job's or unreadable."""
    try:
        with open(path, encoding="utf-8") as fh:
            held = json.load(fh)
    except (OSError, ValueError):  # none yet; or cut or garbled (not by this code: it writes atomically)
        return {}
    if not isinstance(held, dict) or held.get("key") != key or not isinstance(held.get("records"), list):
        return {}
    return {float(r["alpha"]): r for r in held["records"] if isinstance(r, dict) and "alpha" in r}


def _train_split(features_dir, idx, L=None):
    """(X, y) of the training rows ``idx`` (None: all); ``ValueError`` if ``L`` is given and differs."""
    from sparsesvm.data import features

    X_train, y_train = features.load_features(features_dir, "train", indices=idx)
    n_train = int(np.shape(y_train)[0])
    if L is not None and int(L) != n_train:
        raise ValueError(f"L={L!r} given but the training subset has {n_train} rows")
    return X_train, y_train


def _fit(params, X_train, y_train, groups, reference_coef):
    """Fit one job's model; (a ``sparsesvm.core.LinearFit``, the fit's (wall, process CPU) time in s)."""
    t0, c0 = time.perf_counter(), time.process_time()
    model = _core.fit(params, X_train, y_train, groups=groups, reference_coef=reference_coef)
    return model, (time.perf_counter() - t0, time.process_time() - c0)


def _test_split(features_dir):
    """(X, y) of the whole official test split."""
    from sparsesvm.data import features

    X_test, y_test = features.load_features(features_dir, "test")
    return X_test, np.asarray(y_test)


def _errors(model, X, y):
    """The number of samples of (X, y) that ``model`` misclassifies."""
    return int(np.count_nonzero(model.predict(X) != np.asarray(y)))


def _check_job(method, penalty, groups, alpha, tol, max_iter, solver, stopping, trace, subset_indices, meta,
               precision="double"):
    """The checks of :func:`run_job` before the features are read.

    Returns
    -------
    groups : None, int or "features"
        Checked (``groups <= n_features`` is checked in the fit).
    params : sparsesvm.core.FitParams
        The fit's checked parameters (the peer's: hinge-reg, l2, solver 'liblinear').
    idx : ndarray of int64, shape (L,), or None
        The checked training rows.
    trace : bool or int
    """
    if method not in METHODS and method != PEER_METHOD:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS + (PEER_METHOD,)}")
    if penalty not in PENALTIES:
        raise ValueError(f"unknown penalty {penalty!r}; expected one of {PENALTIES}")
    alpha = _core._check_positive_real(alpha, "alpha")
    tol = _core._check_positive_real(tol, "tol")
    max_iter = _core._check_max_iter(max_iter)
    idx = _check_subset(subset_indices)
    trace = _core._check_trace(False if trace is None else trace)
    if method == PEER_METHOD:
        if solver != "paper" or stopping != "rel_change":
            raise ValueError(f"method {PEER_METHOD!r} takes no solver/stopping option (got {solver!r}, {stopping!r})")
        # the peer is the registry's solver "liblinear" for hinge-reg (imports scikit-learn when run);
        # its family refuses other penalties and a trace (here), and a reference (in the fit)
        (method, solver), stopping = core_method(method, solver), "auto"
    # the checks of SparseSVC, before the features are read (groups <= M is checked in fit)
    groups = _core.check_groups(penalty, groups, None, method)
    params = _core.check_params(method, penalty, alpha, tol, max_iter, DEFAULT_STEP_RATIO,
                                solver, stopping, trace, precision)
    for key in ("trace", "coef_full"):
        if key in meta:
            raise ValueError(f"meta field {key!r} is reserved")
    return groups, params, idx, trace


def _record(model, coef, errors, meta, *, clocks, method, penalty, groups, alpha, tol, max_iter, solver,
            precision="double"):
    """The record of one job (see :func:`run_job`); ``meta``'s extra fields come last.

    ``errors`` holds ``n_train``, ``train_errors``, ``n_test``, ``test_errors``;
    ``coef`` (shape (n_classes, n_features)) the weights without the biases.
    """
    import sparsesvm

    record = {
        "dataset": meta.pop("dataset", None),
        "experiment": meta.pop("experiment", None),
        "method": method,
        "penalty": penalty,
        "groups": groups,
        "alpha": float(alpha),
        "L": errors["n_train"],
        "subset": int(meta.pop("subset", 0)),
        "n_features": int(coef.shape[1]),
        "n_classes": int(coef.shape[0]),
        "n_test": errors["n_test"],
        "test_errors": errors["test_errors"],
        "test_error_pct": 100.0 * errors["test_errors"] / errors["n_test"],
        "train_errors": errors["train_errors"],
        **count_weights(coef),
        "fit_time_s": float(model.fit_time),
        "fit_wall_time_s": float(clocks[0]),
        "fit_cpu_time_s": float(clocks[1]),
        "n_iter": int(model.n_iter),
        "objective": float(model.objective),
        "constraint_violation": float(model.constraint_violation),
        "converged": bool(model.converged),
        # certified relative duality gap (exact-hinge methods; NaN -> null otherwise)
        "rel_gap": float(model.rel_gap),
        "tol": float(tol),
        "max_iter": int(max_iter),
        "solver": solver,
        "stopping": model.stopping,
        "precision": precision,
        "sparsesvm_version": sparsesvm.__version__,
        "source_hash": sparsesvm.source_hash(),
    }
    meta.pop("L", None)
    for key, value in meta.items():
        if key in record:
            raise ValueError(f"meta field {key!r} clashes with a computed record field")
        record[key] = value
    return record
