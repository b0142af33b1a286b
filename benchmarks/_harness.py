"""What the benchmark scripts share: data, synthetic problems, timing, fresh processes, output.

Every script in ``benchmarks/`` answers one question (its module docstring says which, and
the command that answers it) and takes from here:

* **one BLAS thread**: importing this module sets the thread variables of OpenBLAS, MKL
  and OpenMP to 1 (unless already set: for the libraries loaded later) and limits the
  pools already loaded to one thread (threadpoolctl); :func:`limit_blas` sets another
  limit and :func:`check_blas` checks that the loaded pools hold what was asked;
* **data**: the offline mirror (``--data``, default ``$SPARSESVM_MIRROR`` or the
  project's ``../shared/data``): :func:`leukemia`, :func:`mnist_images`,
  :func:`scattering`; the workflow's stored features, :func:`stored_features`; synthetic
  problems of a given shape: :func:`scattering_like`,
  :func:`gamma_scattering_like`, :func:`tfidf_like`, :func:`sparse_text_like`,
  :func:`expression_like`; the CVXPY reference of the tests, :func:`cvx_reference`;
* **timing**: :func:`timed` (one call), :func:`repeat_timing` (repeats, min and median),
  :func:`run_fresh` (a fresh Python process: its CPU seconds from ``os.wait4``, its wall
  time, its output);
* **output**: :func:`environment` (machine, load, versions, commit, BLAS pools),
  :func:`add_output_argument` (``--json PATH``) and :func:`write_results` (JSON with the
  environment record, or CSV tables).

Every name of the ``sparsesvm`` package the benchmarks use is listed in :data:`PACKAGE`
and imported nowhere else in the scripts (apart from the code strings that
``bench_job_overhead.py`` and ``bench_kernel_load.py`` run in fresh processes, possibly
against another source tree): when the package's layout changes, fix it here.
"""

from __future__ import annotations

import os

#: the environment variables that pin the BLAS / OpenMP pools (this process's, a child's)
#: to one thread
SINGLE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
for _var, _value in SINGLE_THREAD.items():
    os.environ.setdefault(_var, _value)

import csv  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: the offline mirror (``$SPARSESVM_MIRROR``, else ``../shared/data`` beside the checkout)
DEFAULT_MIRROR = Path(os.environ.get("SPARSESVM_MIRROR", ROOT.parent / "shared" / "data"))

#: Every name of the package that the benchmarks use, the one place to fix when the
#: package's layout changes: ``_harness.<name>`` -> (module, attribute; None: the module).
#: Imported on first use (:func:`package`), so that a script pays only for what it uses.
PACKAGE = {
    "SparseSVC": ("sparsesvm", "SparseSVC"),
    "load_leukemia": ("sparsesvm.data.leukemia", "load_leukemia"),
    "load_mnist": ("sparsesvm.data.mnist", "load_mnist"),
    "load_news20": ("sparsesvm.data.news20", "load_news20"),
    "tfidf_features": ("sparsesvm.data.features", "tfidf"),
    "identity_features": ("sparsesvm.data.features", "identity"),
    "scattering_features": ("sparsesvm.data.features", "scattering"),
    "scattering_layout": ("sparsesvm.data.features", "scattering_layout"),
    "save_features": ("sparsesvm.data.features", "save_features"),
    "load_features": ("sparsesvm.data.features", "load_features"),
    "load_meta": ("sparsesvm.data.features", "load_meta"),
    "core": ("sparsesvm.core", None),
    "balanced_subsets": ("sparsesvm.data.subsets", "balanced_subsets"),
    "best_alpha": ("sparsesvm.experiments.aggregate", "best_alpha"),
    "hinge_losses": ("sparsesvm.model.losses", "hinge_losses"),
    "MulticlassOperator": ("sparsesvm.model.operator", "MulticlassOperator"),
    "DenseProducts": ("sparsesvm.model.operator", "DenseProducts"),
    "make_penalty": ("sparsesvm.model.penalties", "make_penalty"),
    "solvers": ("sparsesvm.solvers", None),
    "side_by_side": ("sparsesvm.solvers.side_by_side", "side_by_side"),
    "kernels": ("sparsesvm.solvers._kernels", None),
    "accelerated": ("sparsesvm.solvers.accelerated.hinge", None),
    "l2dual": ("sparsesvm.solvers.accelerated.l2dual", None),
    "pdhg": ("sparsesvm.solvers.accelerated.pdhg", None),
}


def package(name):
    """The package object :data:`PACKAGE` names ``name``, imported on first use."""
    module, attribute = PACKAGE[name]
    value = importlib.import_module(module)
    return value if attribute is None else getattr(value, attribute)


def __getattr__(name):
    """``_harness.SparseSVC``, ``_harness.accelerated``, ...: the names of :data:`PACKAGE`."""
    if name in PACKAGE:
        return package(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_kernels():
    """Compile or load the package's numba kernels now (those of the paper's loops and, where
    the package has them, PDHG's), so that a benchmark timing whole calls does not charge
    their one-time loading to whichever call comes first (a solve loads them off its own
    clock). Nothing without numba."""
    if not package("kernels").available():
        return
    getattr(package("pdhg"), "load_kernels", lambda: None)()  # a version without PDHG's kernels


# --------------------------------------------------------------------------------------
# BLAS threads
# --------------------------------------------------------------------------------------
def limit_blas(threads=1):
    """Limit every loaded BLAS / OpenMP pool to ``threads`` and check it (threadpoolctl).

    Returns
    -------
    list of dict
        threadpoolctl's description of the pools (see :func:`check_blas`).
    """
    threadpool_limits(threads)
    return check_blas(threads)


def check_blas(threads=1):
    """The loaded BLAS pools, after checking that each runs ``threads`` threads.

    Returns
    -------
    list of dict
        One entry per pool: ``user_api``, ``internal_api``, ``num_threads``, ``version``.

    Raises
    ------
    RuntimeError
        A BLAS pool runs another number of threads (set ``OPENBLAS_NUM_THREADS`` before
        numpy is imported, or import this module first).
    """
    pools = [{k: p.get(k) for k in ("user_api", "internal_api", "num_threads", "version")}
             for p in threadpool_info()]
    wrong = [p for p in pools if p["user_api"] == "blas" and p["num_threads"] != threads]
    if wrong:
        raise RuntimeError(f"BLAS runs {wrong[0]['num_threads']} threads, expected {threads}: "
                           f"{wrong}")
    return pools


limit_blas(1)  # the pools loaded so far, also when numpy was imported before this module


# --------------------------------------------------------------------------------------
# data from the offline mirror
# --------------------------------------------------------------------------------------
def add_data_argument(parser, flag="--data"):
    """Add the mirror option (``flag``, default :data:`DEFAULT_MIRROR`) to ``parser``."""
    parser.add_argument(flag, type=Path, default=DEFAULT_MIRROR,
                        help=f"offline mirror of the datasets (default {DEFAULT_MIRROR})")


def leukemia(mirror, standardize=False):
    """E1's leukemia splits (Golub et al.), raw or standardised with the training statistics.

    Parameters
    ----------
    mirror : path-like
        Folder holding ``leukemia/`` (the three TSV files).
    standardize : bool
        Subtract the training mean, divide by the training deviation (zero-spread genes
        only centred): :func:`sparsesvm.data.features.identity`.

    Returns
    -------
    X_train : ndarray of float64, shape (38, 7129)
    y_train : ndarray of int64, shape (38,)
        0 ALL B-cell, 1 ALL T-cell, 2 AML.
    X_test : ndarray of float64, shape (34, 7129)
    y_test : ndarray of int64, shape (34,)
    """
    d = Path(mirror) / "leukemia"
    ds = package("load_leukemia")(d / "data_set_ALL_AML_train.tsv",
                                d / "data_set_ALL_AML_independent.tsv",
                                d / "table_ALL_AML_samples.tsv")
    identity = package("identity_features")
    X_train, X_test, _ = identity(ds.X_train, ds.X_test, standardize=standardize)
    return X_train, ds.y_train, X_test, ds.y_test


def mnist_images(mirror):
    """The MNIST images and labels of the mirror.

    Returns
    -------
    X_train : ndarray of uint8, shape (60000, 28, 28)
    y_train : ndarray of int64, shape (60000,)
    X_test : ndarray of uint8, shape (10000, 28, 28)
    y_test : ndarray of int64, shape (10000,)
    """
    d = Path(mirror) / "mnist"
    ds = package("load_mnist")(d / "train-images-idx3-ubyte.gz", d / "train-labels-idx1-ubyte.gz",
                             d / "t10k-images-idx3-ubyte.gz", d / "t10k-labels-idx1-ubyte.gz")
    return ds.X_train, ds.y_train, ds.X_test, ds.y_test


def news20_tfidf(mirror, per_class, seed=2014):
    """E3's News20 problem: the workflow's TF-IDF features (vocabulary of the whole training
    split) of the first class-balanced subset of ``per_class`` training documents per class
    drawn with the workflow's seed (:func:`sparsesvm.data.subsets.balanced_subsets`).

    Returns
    -------
    X_train : scipy.sparse.csr_matrix of float64, shape (20 per_class, 26214)
    y_train : ndarray of int64, shape (20 per_class,)
    """
    ds = package("load_news20")(Path(mirror) / "news20" / "20news-bydate.tar.gz")
    X, _, _ = package("tfidf_features")(ds.docs_train, ds.docs_test)
    idx = np.asarray(package("balanced_subsets")(ds.y_train, per_class, 1, seed))[0]
    return sp.csr_matrix(X[idx]), ds.y_train[idx]


def scattering(images):
    """The workflow's MNIST features: kymatio scattering, J = 2, L = 8, position-major.

    Parameters
    ----------
    images : ndarray of uint8, shape (n, 28, 28)

    Returns
    -------
    ndarray of float64, shape (n, 3969), C-ordered
        81 channels of each of 49 positions, the channels of one position contiguous.
    """
    F = package("scattering_features")(images, J=2, L=8, progress=False)
    return np.ascontiguousarray(F, dtype=np.float64)


def mnist_scattering(mirror, n_train, n_test=0, seed=0):
    """Scattering features of ``n_train`` class-balanced, seeded training images (nested:
    the first ``n`` of one order for every ``n``) and of the first ``n_test`` test images.

    Returns
    -------
    X_train : ndarray of float64, shape (n_train, 3969)
    y_train : ndarray of int64, shape (n_train,)
    X_test : ndarray of float64, shape (n_test, 3969)
    y_test : ndarray of int64, shape (n_test,)
    seconds : float
        Time to read the images and compute the features.
    """
    def load():
        tr, ytr, te, yte = mnist_images(mirror)
        # balanced and nested: the j-th image of every class (seeded order), j = 0, 1, ...
        rng = np.random.default_rng(seed)
        per = [rng.permutation(np.flatnonzero(ytr == k)) for k in range(10)]
        n = min(len(p) for p in per)
        idx = np.stack([p[:n] for p in per], axis=1).ravel()[:n_train]
        test = scattering(te[:n_test]) if n_test else np.empty((0, 81 * 49))
        return scattering(tr[idx]), ytr[idx], test, yte[:n_test]

    problem, seconds = timed(load)
    return (*problem, seconds)


def stored_features(directory, split):
    """One split of the workflow's stored features (``results/<dataset>/features``).

    Returns
    -------
    X : ndarray of float64, shape (n, n_features), C-ordered, or scipy.sparse.csr_matrix
        News20's TF-IDF is sparse; the others are dense (stored as float32 or float64).
    y : ndarray of int64, shape (n,)
    """
    X, y = package("load_features")(directory, split, mmap=False)
    X = X.astype(np.float64) if sp.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)
    return X, y


def alpha_parameter(method, alpha, n_samples):
    """The paper's alpha as a solver's keyword (spec section 1: lambda = 1/alpha, eta = alpha L).

    Returns
    -------
    dict
        ``{"eta": alpha * n_samples}`` for the constrained forms (hinge-con, hinge-lin),
        ``{"lam": 1 / alpha}`` for the others.
    """
    if method in ("hinge-con", "hinge-lin"):
        return {"eta": alpha * n_samples}
    return {"lam": 1.0 / alpha}


def paper_fit(method, op, penalty, alpha, **options):
    """The paper's algorithm for ``method`` at ``alpha``: Algorithm 1 (hinge-reg), 2
    (hinge-con), the primal-dual loop on linear constraints (hinge-lin), FISTA (square,
    and one-vs-all's per class: ova) or forward-backward (logit).

    Parameters
    ----------
    method : {"hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova"}
    op : MulticlassOperator
        The problem (Phi of shape (L, M), labels, K classes).
    penalty : Penalty
        From ``make_penalty``.
    alpha : float
    **options
        Passed to the solver (tol, max_iter, step_ratio, trace, ...); ``step_ratio``
        is dropped for square, logit and ova, which have no dual step.

    Returns
    -------
    SolverResult
    """
    solvers = package("solvers")
    solve = {"hinge-reg": solvers.hinge_reg, "hinge-con": solvers.hinge_con,
             "hinge-lin": solvers.hinge_lin, "square": solvers.square, "logit": solvers.logit}
    if method in ("square", "logit", "ova"):
        options.pop("step_ratio", None)
    weight = alpha_parameter(method, alpha, op.n_samples)
    if method == "ova":  # its own products with Phi (no operator T)
        return solvers.ova(op.Phi, op.y_idx, op.n_classes, penalty, **weight, **options)
    return solve[method](op, penalty, **weight, **options)


def cvx_optimum(method, Phi, y, K, penalty, groups, alpha):
    """Optimal objective of ``method``'s problem at ``alpha`` by CVXPY/Clarabel (the tests')."""
    return cvx_reference().solve(method, Phi, y, K, penalty, groups,
                                 **alpha_parameter(method, alpha, Phi.shape[0]))[0]


def clarabel_form(Phi, y, K, penalty, gsize):
    """The exact-hinge problem in CVXPY with the scores explicit, for Clarabel timings.

    ``S = Phi W + 1 b^T`` is a variable with equality constraints (the form that lets an
    interior-point method exploit Phi's sparsity); W is padded to whole within-class
    blocks of ``gsize`` features (l1: blocks of one).

    Returns
    -------
    cp : module
        cvxpy.
    W : cvxpy.Expression, shape (M, K)
    b : cvxpy.Variable, shape (K,)
    cons : list
        The score constraints.
    loss : cvxpy.Expression
        The total multiclass hinge, sum_l max_k (S_lk - S_l,y_l + R_lk).
    g : cvxpy.Expression
        l1, l1,inf or l1,2 over the blocks, or ``||W||_F^2 / 2`` (l2).
    """
    import cvxpy as cp

    L, M = Phi.shape
    gsize = 1 if penalty in ("l1", "l2") else int(gsize)
    nb = -(-M // gsize)
    Wp = cp.Variable((nb * gsize, K))
    b = cp.Variable(K)
    S = cp.Variable((L, K))
    R = np.ones((L, K))
    R[np.arange(L), y] = 0
    E = 1.0 - R
    cons = [S == Phi @ Wp[:M] + np.ones((L, 1)) @ cp.reshape(b, (1, K), order="C")]
    st = cp.sum(cp.multiply(S, E), axis=1)
    loss = cp.sum(cp.max(S - cp.reshape(st, (L, 1), order="C") @ np.ones((1, K)) + R, axis=1))
    blocks = [cp.reshape(Wp[:, k], (nb, gsize), order="C") for k in range(K)]
    if penalty == "l1":
        g = cp.sum(cp.abs(Wp))
    elif penalty == "l1inf":
        g = sum(cp.sum(cp.max(cp.abs(B), axis=1)) for B in blocks)
    elif penalty == "l12":
        g = sum(cp.sum(cp.norm(B, 2, axis=1)) for B in blocks)
    else:
        g = 0.5 * cp.sum_squares(Wp[:M])
    return cp, Wp[:M], b, cons, loss, g


def cvx_reference():
    """The CVXPY / Clarabel reference solutions of the tests (``tests/cvx_reference.py``)."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import cvx_reference as module

    return module


# --------------------------------------------------------------------------------------
# synthetic problems of a given shape
# --------------------------------------------------------------------------------------
def scattering_like(rng, L=100, K=10, channels=81, positions=49, noise=1.0):
    """Dense, non-negative, class-structured features of the scattering layout.

    Class means: |N(0, 1)| on 30 % of the entries; a row is ``|mean + noise * N(0, 1)|``,
    scaled to unit l2 norm; labels cycle through the classes.

    Returns
    -------
    Phi : ndarray of float64, shape (L, channels * positions)
        Position-major: the ``channels`` of one position contiguous.
    y : ndarray of int, shape (L,)
    K : int
    """
    M = channels * positions
    y = np.arange(L) % K
    means = np.abs(rng.standard_normal((K, M))) * (rng.random((K, M)) < 0.3)
    Phi = np.abs(means[y] + noise * rng.standard_normal((L, M)))
    Phi /= np.linalg.norm(Phi, axis=1, keepdims=True)
    return Phi, y, K


def gamma_scattering_like(L=100, K=10, seed=0):
    """Dense non-negative features of the scattering shape with unscaled, gamma-spread columns.

    ``|N(0, 1)|`` times a Gamma(1, 1) scale per column, and class ``k`` shifted by 1.5 on the
    81 columns ``81 k .. 81 k + 80`` (the rows are not normalised: the alphas of
    ``bench_smooth.py`` are set for this scale).

    Returns
    -------
    Phi : ndarray of float64, shape (L, 3969)
    y : ndarray of int, shape (L,)
        Labels cycling through the ``K`` classes.
    """
    rng = np.random.default_rng(seed)
    y = np.arange(L) % K
    M = 81 * 49
    Phi = np.abs(rng.standard_normal((L, M))) * rng.gamma(1.0, 1.0, M)
    Phi[:, :81 * K] += 1.5 * np.repeat(np.eye(K), 81, axis=1)[y]
    return Phi, y


def tfidf_like(rng, L=1000, M=26214, K=20, density=0.01):
    """CSR TF-IDF-like features: ``density`` non-zeros, half drawn from class vocabularies.

    Returns
    -------
    Phi : scipy.sparse.csr_matrix of float64, shape (L, M)
        Non-negative (exponential values), rows of unit l2 norm.
    y : ndarray of int, shape (L,)
    K : int
    """
    y = np.arange(L) % K
    nnz_row = int(round(density * M))
    vocab = [rng.choice(M, size=M // K, replace=False) for _ in range(K)]
    rows, cols = [], []
    for i in range(L):
        own = rng.choice(vocab[y[i]], size=nnz_row // 2, replace=False)
        other = rng.choice(M, size=nnz_row - nnz_row // 2, replace=False)
        c = np.unique(np.concatenate([own, other]))
        rows.append(np.full(c.size, i))
        cols.append(c)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    vals = rng.exponential(1.0, size=rows.size)
    Phi = sp.csr_matrix((vals, (rows, cols)), shape=(L, M))
    norms = np.sqrt(np.asarray(Phi.multiply(Phi).sum(axis=1)).ravel())
    Phi = sp.csr_matrix(sp.diags(1.0 / norms) @ Phi)
    return Phi, y, K


def sparse_text_like(K, per, M=5000, seed=0):
    """Sparse News20-like problem: 0.5 % random terms plus 30 class-specific terms per class.

    Each of a class's 30 terms is present in a row with probability 0.3.

    Returns
    -------
    Phi : scipy.sparse.csr_matrix of float64, shape (K * per, M)
        Rows of unit l2 norm.
    y : ndarray of int, shape (K * per,)
        ``per`` rows of each class, in class order.
    """
    rng = np.random.default_rng(seed)
    L = K * per
    y = np.repeat(np.arange(K), per)
    Phi = sp.random(L, M, density=0.005, random_state=seed + 1, format="lil")
    for k in range(K):
        cols = rng.choice(M, 30, replace=False)
        for r in np.flatnonzero(y == k):
            hit = cols[rng.random(30) < 0.3]
            for c in hit:
                Phi[r, c] = Phi[r, c] + rng.random()
    Phi = sp.csr_matrix(Phi)
    nrm = np.sqrt(np.asarray(Phi.multiply(Phi).sum(axis=1)).ravel())
    return sp.diags(1.0 / np.maximum(nrm, 1e-12)) @ Phi, y


def expression_like(rng, L=38, M=7129, K=3):
    """Standardised Gaussian expression-like data of leukemia's shape, 19/8/11 samples per class.

    Returns
    -------
    Phi : ndarray of float64, shape (L, M)
        2 % of each class mean's genes shifted by 2 N(0, 1); columns standardised.
    y : ndarray of int, shape (L,)
    K : int
    """
    y = np.repeat(np.arange(K), [19, 8, 11])[:L]
    means = rng.standard_normal((K, M)) * (rng.random((K, M)) < 0.02) * 2.0
    Phi = means[y] + rng.standard_normal((L, M))
    Phi = (Phi - Phi.mean(0)) / Phi.std(0)
    return Phi, y, K


# --------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------
def timed(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and the wall seconds (``time.perf_counter``) it took."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


@dataclass
class Timing:
    """Seconds of repeated calls: every repeat, their minimum and median."""

    times: list
    min: float
    median: float


def repeat_timing(fn, repeats=30, clock=time.perf_counter):
    """Time ``fn()`` ``repeats`` times with ``clock`` (wall, or ``time.process_time``)."""
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return Timing(times, float(min(times)), float(np.median(times)))


@dataclass
class Child:
    """A finished fresh process: its output, exit status, CPU (user + system) and wall seconds.

    ``started`` and ``ended`` are the launch and exit as ``time.time()`` stamps (to align
    with stamps the child prints), ``wall_s`` their difference by ``time.perf_counter``.
    """

    stdout: str
    stderr: str
    returncode: int
    cpu_s: float
    wall_s: float
    started: float
    ended: float

    def last_json(self):
        """The JSON object on the last line of the child's standard output."""
        return json.loads(self.stdout.strip().splitlines()[-1])


def child_env(src=None, **extra):
    """This process's environment for a child: one BLAS thread, ``src`` first on PYTHONPATH.

    Parameters
    ----------
    src : path-like, optional
        A source tree's ``src/`` folder whose ``sparsesvm`` the child imports.
    **extra : str
        Further variables to set.
    """
    env = {**os.environ, **SINGLE_THREAD, **extra}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src)] + ([env["PYTHONPATH"]]
                                                          if env.get("PYTHONPATH") else []))
    return env


def run_fresh(code, *args, env=None, cwd=None, check=True):
    """Run ``python -c code *args`` in a fresh process; its CPU time from ``os.wait4``.

    The CPU time is the child's own (user + system), so children run at the same time from
    several threads are measured apart; the wall time runs from the launch to the exit.

    Parameters
    ----------
    code : str
        The Python program.
    *args : str
        Its ``sys.argv[1:]``.
    env : dict, optional
        The child's environment (default :func:`child_env`).
    cwd : path-like, optional
    check : bool
        Raise ``RuntimeError`` (with the child's stderr) when it exits with non-zero status.

    Returns
    -------
    Child
    """
    env = child_env() if env is None else env
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started, t0 = time.time(), time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code, *args], env=env, cwd=cwd,
                                stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall, ended = time.perf_counter() - t0, time.time()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        child = Child(out.read().decode(), err.read().decode(), proc.returncode,
                      usage.ru_utime + usage.ru_stime, wall, started, ended)
    if check and child.returncode != 0:
        raise RuntimeError(f"child exited with status {child.returncode}:\n{child.stderr[-3000:]}")
    return child


# --------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------
def _git(*args):
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment():
    """Where and with what the numbers were measured.

    Returns
    -------
    dict
        ``machine`` (host, processor, cores, load average), ``python``, ``versions`` (numpy,
        scipy, numba, sparsesvm, and the package's source hash), ``commit`` (the checkout's
        HEAD, ``dirty`` when it has uncommitted changes), ``blas`` (the loaded pools), and
        the time of the record.
    """
    import importlib.metadata as md

    import sparsesvm

    versions = {}
    for name in ("numpy", "scipy", "numba", "scikit-learn", "cvxpy", "clarabel", "kymatio"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            versions[name] = None
    versions["sparsesvm"] = sparsesvm.__version__
    versions["sparsesvm_source_hash"] = sparsesvm.source_hash()
    return {
        "machine": {"host": platform.node(),
                    "processor": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(), "load_average": list(os.getloadavg())},
        "python": sys.version.split()[0],
        "versions": versions,
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "blas": [{k: p.get(k) for k in ("user_api", "internal_api", "num_threads")}
                 for p in threadpool_info()],
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def add_output_argument(parser, flag="--json"):
    """Add ``flag PATH`` to ``parser``: where :func:`write_results` writes."""
    parser.add_argument(flag, type=Path, default=None,
                        help="write the results here: JSON with the environment record and the "
                             "options, or, for a name ending in .csv, the tables as CSV")


def write_results(path, tables, args=None):
    """Write the results, atomically (a temporary file renamed).

    Parameters
    ----------
    path : path-like
        ``*.csv``: each table (a list of dicts) as CSV, nested values as JSON text; one
        table to ``path``, several to ``<stem>.<table>.csv``. Any other name: one JSON
        object ``{"environment": ..., "args": ..., **tables}``.
    tables : dict
        ``{name: list of row dicts}`` (JSON also takes other JSON values).
    args : argparse.Namespace, optional
        The options of the run (JSON only).
    """
    path = Path(path)
    if path.suffix == ".csv":
        lists = {k: v for k, v in tables.items() if isinstance(v, list)}
        for name, rows in lists.items():
            target = path if len(lists) == 1 else path.with_suffix(f".{name}.csv")
            _atomic_write(target, _csv_text(rows))
        return
    record = {"environment": environment(),
              "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
              if args is not None else None, **tables}
    _atomic_write(path, json.dumps(record, indent=1, default=str) + "\n")


def _csv_text(rows):
    import io

    columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    for r in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list, tuple)) else v
                         for k, v in r.items()})
    return buf.getvalue()


def _atomic_write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def fmt(value):
    """``value`` to 3 significant digits, ``"-"`` for None (a target never reached)."""
    return "-" if value is None else f"{value:.3g}"
