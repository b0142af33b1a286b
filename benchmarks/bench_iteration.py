"""Cost of one iteration of a method (the paper's two, hinge-lin, square, logit, ova) against the two products with Phi.

Question: how close is one iteration of the paper's algorithms to its floor, the two
products with Phi every iteration needs, with the compiled kernels and without? Answered
by ``python benchmarks/bench_iteration.py --clock cpu`` with the shapes below.

For l1inf with within-class groups of 81 on

* ``mnist``:  dense Phi, L = 100, M = 3969 (= 81 channels x 49 positions, the
  channels of one position contiguous), K = 10; non-negative, class-structured
  synthetic features of the shape of kymatio's scattering output;
* ``news20``: CSR Phi, L = 1000, M = 26214, K = 20, 1 % non-zeros,
  TF-IDF-like (non-negative, rows of unit l2 norm, class-specific vocabularies),

it reports

* ``floor``: the larger of ``products``, the median time of one ``Phi @ W``
  (W: (M, K)) plus one ``Phi.T @ G`` (G: (L, K)), measured in the same run (the
  two products every iteration needs), and ``passes``, two passes over the
  (M + 1, K) parameter array (two copies); ``binds`` says which is larger;
* ``iter``: time per iteration of a run of ``--iters`` iterations with ``tol = 0``
  (``--clock cpu``, the default: the process's CPU seconds around the run, robust
  to a shared machine's load; ``--clock wall``: ``fit_time / n_iter``) and
  ``ratio = iter / floor`` (target <= 1.25),
  the median of ``--repeats`` (floor, run) pairs taken back to back;
* both primal-update paths (``--paths``): ``numba``, the compiled fused step
  of :mod:`sparsesvm.solvers._kernels`, and ``numpy``, in the same run;
* time and iterations to the paper's stop (relative change <= 1e-5, cap
  ``--max-iter``) and, with ``--cvxpy``, the relative objective gap to CVXPY's
  optimum at that point (Clarabel; slow: minutes for news20).

(The balance of the primal-dual steps, ``sparsesvm.solvers.DEFAULT_STEP_RATIO``:
``bench_step_ratio.py``.)

Usage::

    .venv/bin/python benchmarks/bench_iteration.py [--problems mnist news20]
        [--L 30 50 100] [--penalty l1inf] [--groups 81|features]
        [--methods hinge-reg hinge-con hinge-lin square logit ova] [--paths numba numpy]
        [--iters 200]
        [--max-iter 20000] [--cvxpy]
        [--json out.json]
    .venv/bin/python benchmarks/bench_iteration.py --problems mnist --L 30 --iters 20 \
        --max-iter 50 --repeats 1 --paths numpy                             # quick

``--problems results/news20/features`` times the workflow's stored features (real
TF-IDF or scattering) instead of a synthetic problem: their first ``--L`` training rows.
Sparse features are fitted on the features that some sample uses, as
:func:`sparsesvm.core.fit` does (``M`` in the output; ``M_all``: all of them).
``--problems mnist-real`` / ``news20-real`` computes real ones from the data mirror
(``--mirror``): scattering features of ``--L`` seeded training images, E3's TF-IDF of
``--L / 20`` seeded documents per class. From ``X = 0`` the first iterations' proximal
steps see all-zero groups, while a job spends its time at its support: ``--skip N``
times the iterations after the first N (a run of N + ``--iters`` iterations minus a run
of N, on the chosen clock: with ``--clock cpu`` their set-up and certificate about cancel).

The issue-11 shapes: ``--problems mnist --L 30 50 100`` (E2/E4),
``--problems news20 --penalty l12 --groups features --L 100 200 1000`` (E3),
``--problems mnist --penalty l2 --L 5000`` (E5).
"""

from __future__ import annotations

import argparse
import json
import time

import _harness as h  # one BLAS thread
import numpy as np
import scipy.sparse as sp

#: the clock of every measurement: ``time.process_time`` (CPU seconds of this process,
#: ``--clock cpu``, robust to a shared machine's load) or ``time.perf_counter`` (wall)
CLOCK = time.process_time

#: problem name -> (synthetic problem of that shape, default group size)
PROBLEMS = {"mnist": (h.scattering_like, 81), "news20": (h.tfidf_like, 81)}


#: real data read from the mirror (``--mirror``), made by :func:`real_problem`
REAL = ("mnist-real", "news20-real")


def real_problem(name, mirror):
    """A maker like those of :data:`PROBLEMS` for real data read from the mirror.

    ``mnist-real``: scattering features of ``L`` class-balanced seeded training images
    (:func:`_harness.mnist_scattering`, L = 100 by default); ``news20-real``: the workflow's
    TF-IDF of ``L / 20`` seeded training documents per class (E3's first subset,
    :func:`_harness.news20_tfidf`, L = 1000 by default)."""
    def make(rng, L=None):
        if name == "mnist-real":
            Phi, y, _, _, _ = h.mnist_scattering(mirror, 100 if L is None else L)
            return Phi, y, 10
        Phi, y = h.news20_tfidf(mirror, (1000 if L is None else L) // 20)
        return Phi, y, 20

    return make, (81 if name == "mnist-real" else "features")


def stored_problem(directory):
    """A maker like those of :data:`PROBLEMS` for the workflow's stored training features.

    ``make(rng, L=None)`` returns the first ``L`` stored training rows (all by default) of
    ``directory`` (``results/<dataset>/features``), their labels and the number of classes;
    the default group size is 81 (MNIST's channels).
    """
    def make(rng, L=None):
        X, y = h.stored_features(directory, "train")
        L = len(y) if L is None else L
        return X[:L], y[:L], int(y.max()) + 1

    return make, 81


# --------------------------------------------------------------------------- #
# measurements
# --------------------------------------------------------------------------- #
def passes_floor(M, K, repeats=30):
    """Median seconds of two passes over a (M + 1, K) float64 parameter array (two copies)."""
    A = np.random.default_rng(1).standard_normal((M + 1, K))
    B = np.empty_like(A)

    def two_passes():
        np.copyto(B, A)
        np.copyto(A, B)

    return h.repeat_timing(two_passes, repeats, CLOCK).median


def product_floor(Phi, K, repeats=30, rng=None):
    """Median seconds of ``Phi @ W`` + ``Phi.T @ G`` (float64, C-ordered operands, every
    weight non-zero), each product in the faster of its two BLAS orientations (dense
    ``Phi``: both timed here, as :class:`sparsesvm.model.operator.DenseProducts` does) or of
    its two implementations (CSR: scipy's, with the operator's CSR copy of ``Phi^T``, and the
    operator's compiled ones where numba is installed; ``MulticlassOperator.prepare``)."""
    rng = np.random.default_rng(0) if rng is None else rng
    L, M = Phi.shape
    W = rng.standard_normal((M, K))
    G = rng.standard_normal((L, K))
    if sp.issparse(Phi):
        PhiT = Phi.T.tocsr()
        forward = [lambda: Phi @ W]
        adjoint = [lambda: PhiT @ G]
        prods = h.MulticlassOperator(Phi, np.arange(L) % K, K).prepare().products
        if prods.compiled:  # the compiled products (on [Phi 1]: one more row, the biases)
            X = np.vstack([W, np.ones((1, K))])
            forward.append(lambda: prods.forward(X, True))
            adjoint.append(lambda: prods.adjoint(G, True))
    else:
        prods, out = h.DenseProducts(Phi, K), np.empty((M, K))
        forward = [lambda t=t: prods.forward(W, t) for t in (False, True)]
        adjoint = [lambda t=t: prods.adjoint(G, out, t) for t in (False, True)]
    return sum(min(h.repeat_timing(f, repeats, CLOCK).median for f in fs)
               for fs in (forward, adjoint))


def steady_iteration(method, op, pen, alpha, skip, iters, step_ratio):
    """Seconds per iteration on :data:`CLOCK`, and the run of ``skip + iters`` iterations.

    With ``skip`` = 0, one run of ``iters`` iterations (``--clock cpu``: the run's set-up
    and certificate included, so use enough of them). With ``skip`` > 0, the iterations
    after the first ``skip``: a run of ``skip + iters`` iterations minus a run of ``skip``
    (their set-up and certificate about cancel). From ``X = 0`` the first iterations'
    proximal steps see all-zero groups; a job spends its time later, at its support."""
    def run(n):
        t0 = CLOCK()
        res = h.paper_fit(method, op, pen, alpha, tol=0.0, max_iter=n, step_ratio=step_ratio)
        return (CLOCK() - t0 if CLOCK is time.process_time else res.fit_time), res

    spent, res = run(skip + iters)
    if skip:
        spent -= run(skip)[0]
    return spent / iters, res


def use_path(path):
    """Route the primal update of the solvers through ``path`` ("numba" or "numpy")."""
    if path == "numba" and not h.kernels.available():
        raise SystemExit("numba is not installed: pip install sparsesvm[fast], or --paths numpy")
    h.kernels.MIN_SIZE = 0 if path == "numba" else 1 << 62


def bench(problem, iters, max_iter, alphas, use_cvxpy, step_ratio, seed=0, repeats=3,
          path="numpy", L=None, penalty="l1inf", groups=None, methods=("hinge-reg", "hinge-con"),
          skip=0, mirror=None):
    """Per-iteration cost ratio, and the run to the 1e-5 stop, for each of ``methods``.

    The ratio is measured ``repeats`` times as a pair (floor just before and just
    after a run of ``iters`` iterations, the smaller kept): on a shared machine the
    load drifts, so each ratio compares times taken within seconds of each other;
    the median pair is reported.
    """
    if problem in REAL:
        make, default_groups = real_problem(problem, mirror)
    else:
        make, default_groups = PROBLEMS[problem] if problem in PROBLEMS else stored_problem(problem)
    groups = default_groups if groups is None else groups
    groups = None if penalty in ("l1", "l2") else groups
    rng = np.random.default_rng(seed)
    Phi, y, K = make(rng) if L is None else make(rng, L=L)
    M_all = Phi.shape[1]
    op = h.MulticlassOperator(Phi, y, K)
    # as a fit does: the features no sample uses left out, the full operator's norm kept
    used = h.core.unused_features_dropped(op, methods[0], "paper", groups)
    if used is not None:
        op = op.restrict_features(used)
        Phi = op.Phi
    op.norm()
    pen = h.make_penalty(penalty, groups, Phi.shape[1], K)
    passes = passes_floor(Phi.shape[1], K)
    use_path(path)
    rows = []
    for method in methods:
        alpha = alphas[method]
        # warm-up: numba loads (or compiles) its kernel at the first fit
        h.paper_fit(method, op, pen, alpha, tol=0.0, max_iter=5, step_ratio=step_ratio)
        pairs = []
        for _ in range(repeats):
            before = product_floor(op.Phi, K)
            per_it, fixed = steady_iteration(method, op, pen, alpha, skip, iters, step_ratio)
            products = min(before, product_floor(op.Phi, K))
            floor = max(products, passes)
            pairs.append((per_it / floor, per_it, floor, products))
        ratio, per_it, floor, products = sorted(pairs)[len(pairs) // 2]
        full = h.paper_fit(method, op, pen, alpha, tol=1e-5, max_iter=max_iter,
                           step_ratio=step_ratio)
        row = dict(problem=problem, path=path, method=method, alpha=alpha, L=Phi.shape[0],
                   M=Phi.shape[1], M_all=M_all,
                   K=K, penalty=penalty, groups=groups, sparse=sp.issparse(Phi),
                   floor_ms=1e3 * floor, products_ms=1e3 * products, passes_ms=1e3 * passes,
                   binds="products" if products >= passes else "passes",
                   iter_ms=1e3 * per_it, ratio=ratio, skip=skip,
                   timed_zero_weights_pct=100.0 * float(np.mean(fixed.X[:-1] == 0)),
                   ratio_range=[min(p[0] for p in pairs), max(p[0] for p in pairs)],
                   stop_iters=full.n_iter, stop_converged=full.converged,
                   stop_time_s=full.fit_time, stop_objective=full.objective,
                   stop_violation=full.constraint_violation,
                   zero_weights_pct=100.0 * float(np.mean(full.X[:-1] == 0)))
        if use_cvxpy:
            opt, row["cvxpy_time_s"] = h.timed(h.cvx_optimum, method, Phi, y, K, penalty,
                                               groups, alpha)
            row["cvxpy_objective"] = opt
            row["rel_gap_at_stop"] = (full.objective - opt) / abs(opt)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=["mnist", "news20"],
                    help=f"synthetic problems ({', '.join(PROBLEMS)}), real data from --mirror "
                         f"({', '.join(REAL)}: --L seeded training samples) or feature folders "
                         "of the workflow (results/<dataset>/features: its first --L training rows)")
    ap.add_argument("--iters", type=int, default=200,
                    help="iterations of the per-iteration timing run")
    ap.add_argument("--skip", type=int, default=0,
                    help="time the iterations after the first SKIP (a run of SKIP + ITERS "
                         "iterations minus a run of SKIP): the iterates then have their support")
    h.add_data_argument(ap, "--mirror")
    ap.add_argument("--repeats", type=int, default=3,
                    help="(floor, run) pairs; the median ratio is reported")
    ap.add_argument("--max-iter", type=int, default=20000, help="cap of the run to the 1e-5 stop")
    ap.add_argument("--alpha-reg", type=float, default=0.01)
    ap.add_argument("--alpha-con", type=float, default=0.05)
    ap.add_argument("--step-ratio", type=float, default=h.solvers.DEFAULT_STEP_RATIO)
    ap.add_argument("--cvxpy", action="store_true", help="also solve with CVXPY (slow)")
    h.add_output_argument(ap)
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                    help="cpu: process CPU seconds around the run (set-up and certificate "
                         "included, so use enough --iters); wall: the solver's fit_time")
    ap.add_argument("--L", type=int, nargs="+", default=[None],
                    help="training sizes (default: the problem's own, 100 / 1000)")
    ap.add_argument("--penalty", default="l1inf", choices=["l2", "l1", "l12", "l1inf"])
    ap.add_argument("--groups", default=None,
                    help="group size or 'features' (default 81 for l12/l1inf)")
    ap.add_argument("--methods", nargs="+",
                    choices=["hinge-reg", "hinge-con", "hinge-lin", "square", "logit", "ova"],
                    default=["hinge-reg", "hinge-con"],
                    help="hinge-lin takes --alpha-con; square (FISTA), logit (forward-backward) "
                         "and ova (one FISTA per class) --alpha-reg")
    ap.add_argument("--paths", nargs="+", choices=["numba", "numpy"], default=None,
                    help="primal-update paths to time (default: both where numba is installed)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    h.limit_blas(args.threads)
    alphas = {"hinge-reg": args.alpha_reg, "hinge-con": args.alpha_con,
              "hinge-lin": args.alpha_con, "square": args.alpha_reg, "logit": args.alpha_reg,
              "ova": args.alpha_reg}
    paths = args.paths or (["numba", "numpy"] if h.kernels.available() else ["numpy"])
    rows = []
    groups = args.groups
    if groups is not None and groups != "features":
        groups = int(groups)
    for p in args.problems:
        for L in args.L:
            for path in paths:
                rows += bench(p, args.iters, args.max_iter, alphas, args.cvxpy,
                              args.step_ratio, repeats=args.repeats, path=path, L=L,
                              penalty=args.penalty, groups=groups, methods=args.methods,
                              skip=args.skip, mirror=args.mirror)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)


if __name__ == "__main__":
    main()
