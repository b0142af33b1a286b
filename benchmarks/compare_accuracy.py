"""Test errors of the paper's solvers vs the accelerated (certified) solvers (issue 6).

The "no loss in accuracy" check: for the exact-hinge problems (hinge-reg,
hinge-con) and the sparse penalties l1 and l1inf, fit on the same data and
alpha grid

* ``SparseSVC(solver="paper")``: Algorithms 1 and 2 of the paper with the
  paper's stopping rule (relative change <= ``--tol``, as in the E1/E2
  configs) and an iteration cap ``--paper-max-iter`` (the configs use
  100000; the default here is lower so that the run fits in ~10 minutes on
  the shared machines: say which cap was used when quoting numbers);
* ``SparseSVC(solver="accelerated")``: certified relative duality gap <= ``--tol``,

and report per alpha the test errors, the exact non-zero weights per class,
the certified relative gap of each fit (computed for the paper's fits too,
whatever their stopping rule) and the objective; then each solver's best
alpha by test error (the paper's trial-and-error choice, ties to the sparser
model: :func:`sparsesvm.experiments.aggregate.best_alpha`, the workflow's rule).

Data (offline mirror, ``--data`` or ``$SPARSESVM_MIRROR``):

* ``leukemia``: E1 (whole training split, 38 samples; test split, 34),
  phi(u) = u as in config/config.yaml (``--features raw``) and/or
  standardised with the training mean and deviation (``std``); l1, and l1inf
  with within-class blocks of 5 genes; alphas: five values of the E1 grids
  where the solutions move (:data:`ALPHAS`).
* ``mnist`` (opt-in, ``--mnist``): E2's smallest case, subset 0 of L = 3K
  (seed 2014, as the workflow draws it), kymatio scattering (M = 3969),
  l1inf with the 81 channels of one position; the whole 10000-image test split
  (scattering of the 10000 test images: about half a minute).

Question: at each solver's best alpha, do the paper's early-stopped iterates and the
exact optima give the same test errors? Answered by
``python benchmarks/compare_accuracy.py --features raw std`` (leukemia) and
``--datasets mnist --subsets 0 1`` (MNIST). One BLAS thread (:mod:`_harness`).

Usage::

    .venv/bin/python benchmarks/compare_accuracy.py                       # leukemia, raw
    .venv/bin/python benchmarks/compare_accuracy.py --features raw std --paper-max-iter 5000
    .venv/bin/python benchmarks/compare_accuracy.py --datasets mnist --json mnist.json
    .venv/bin/python benchmarks/compare_accuracy.py --penalties l1inf --methods hinge-reg \
        --alphas 1e4 --paper-max-iter 100000                                # one config-cap fit
    .venv/bin/python benchmarks/compare_accuracy.py --penalties l1 --methods hinge-reg \
        --alphas 1e3 --paper-max-iter 200                                   # quick
"""

import argparse
import json
import time

import _harness as h  # one BLAS thread
import numpy as np
import pandas as pd

#: subsets of the config's grids (E1: leukemia, E2: MNIST), where the solutions move
#: (leukemia is separable: below these alphas the hinge-reg optimum no longer changes;
#: raw values need larger alphas than standardised ones)
ALPHAS = {
    ("leukemia", "raw", "hinge-reg"): [10.0, 1e3, 1e4, 3e4, 1e5],
    ("leukemia", "raw", "hinge-con"): [1e-4, 1e-3, 1e-2, 1e-1, 3e-1],
    ("leukemia", "std", "hinge-reg"): [1.0, 3.0, 10.0, 30.0, 100.0],
    ("leukemia", "std", "hinge-con"): [1e-3, 1e-2, 3e-2, 1e-1, 3e-1],
    ("mnist", "scattering", "hinge-reg"): [1e-3, 1e-2, 1e-1, 1.0, 10.0],
    ("mnist", "scattering", "hinge-con"): [1e-3, 1e-2, 3e-2, 1e-1, 3e-1],
}
GROUPS = {"leukemia": 5, "mnist": 81}


def load_mnist(data, per_class=3, subset_ids=(0,), seed=2014):
    """E2's L = per_class * K subsets ``subset_ids`` and the whole test split, scattering features.

    Returns a list of ``(subset, (Xtr, ytr, Xte, yte))``; the test features are computed once.
    """
    X_train, y_train, X_test, y_test = h.mnist_images(data)
    all_idx = h.balanced_subsets(y_train, per_class, max(subset_ids) + 1, seed=seed)
    Xte = h.scattering(X_test)
    return [(s, (h.scattering(X_train[all_idx[s]]), y_train[all_idx[s]], Xte, y_test))
            for s in subset_ids]


def fit_one(Xtr, ytr, Xte, yte, method, penalty, groups, alpha, solver, tol, max_iter):
    kw = dict(tol=tol, max_iter=max_iter) if solver == "paper" else dict(tol=tol)
    clf, wall = h.timed(h.SparseSVC(method=method, penalty=penalty, groups=groups, alpha=alpha,
                                    solver=solver, **kw).fit, Xtr, ytr)
    nnz_pc = np.count_nonzero(clf.coef_, axis=1)
    return dict(method=method, penalty=penalty, groups=groups, alpha=alpha, solver=solver,
                test_errors=int((clf.predict(Xte) != yte).sum()), n_test=int(len(yte)),
                nnz=int(nnz_pc.sum()), nnz_per_class="+".join(str(int(v)) for v in nnz_pc),
                rel_gap=float(clf.rel_gap_), objective=float(clf.objective_),
                violation=float(clf.constraint_violation_), converged=bool(clf.converged_),
                n_iter=int(clf.n_iter_), fit_time=float(clf.fit_time_), wall=wall)


def fmt_gap(g):
    return "inf" if not np.isfinite(g) else f"{g:.1e}"


def report(df):
    """Markdown tables: per alpha, then the best alpha of each solver."""
    out = []
    key = ["dataset", "features", "penalty", "method"]
    for k, part in df.groupby(key, sort=False):
        out.append(f"\n### {k[0]} ({k[1]}), {k[2]}, {k[3]}\n")
        out.append("| alpha | errors paper | errors acc. | nnz paper | nnz acc. | rel_gap paper "
                   "| rel_gap acc. | obj paper / obj acc. - 1 | paper iters (converged) "
                   "| time paper / acc. s |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for alpha, pa in part.groupby("alpha", sort=True):
            p = pa[pa.solver == "paper"].iloc[0]
            a = pa[pa.solver == "accelerated"].iloc[0]
            n = p.n_test
            rel_obj = p.objective / a.objective - 1 if a.objective > 0 else float("nan")
            out.append(f"| {alpha:g} | {p.test_errors}/{n} | {a.test_errors}/{n} "
                       f"| {p.nnz_per_class} | {a.nnz_per_class} | {fmt_gap(p.rel_gap)} "
                       f"| {fmt_gap(a.rel_gap)} | "
                       f"{rel_obj:+.2e} | {p.n_iter} ({'yes' if p.converged else 'no'}) | "
                       f"{p.fit_time:.1f} / {a.fit_time:.2f} |")
    best = h.best_alpha(df, by=key + ["solver"])
    fits = df.set_index(key + ["solver", "alpha"])
    out.append("\n### Best alpha by test error (the paper's trial-and-error choice; ties to the "
               "sparser model)\n")
    out.append("| data | penalty | method | paper: alpha, errors, nnz | accelerated: alpha, "
               "errors, nnz | rel_gap of the best fits (paper / acc.) |")
    out.append("|---|---|---|---|---|---|")
    for k, part in best.groupby(key, sort=False):
        cells, gaps = [], []
        for solver in ("paper", "accelerated"):
            b = part[part.solver == solver].iloc[0]
            fit = fits.loc[tuple(k) + (solver, b.alpha)]
            edge = " (grid edge)" if b.at_grid_edge else ""
            cells.append(f"{b.alpha:g}{edge}, {int(b.test_errors)}/{int(fit.n_test)}, {int(b.nnz)}")
            gaps.append(fmt_gap(fit.rel_gap))
        out.append(f"| {k[0]} ({k[1]}) | {k[2]} | {k[3]} | {cells[0]} | {cells[1]} | "
                   f"{gaps[0]} / {gaps[1]} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    h.add_data_argument(ap)
    ap.add_argument("--datasets", nargs="+", choices=["leukemia", "mnist"], default=["leukemia"])
    ap.add_argument("--mnist", action="store_true",
                    help="add the MNIST case (= --datasets ... mnist)")
    ap.add_argument("--features", nargs="+", choices=["raw", "std"], default=["raw"],
                    help="leukemia features: raw values (config e1) and/or standardised")
    ap.add_argument("--penalties", nargs="+", choices=["l1", "l1inf"], default=["l1", "l1inf"])
    ap.add_argument("--methods", nargs="+", choices=["hinge-reg", "hinge-con"],
                    default=["hinge-reg", "hinge-con"])
    ap.add_argument("--tol", type=float, default=1e-5,
                    help="paper: relative-change tol; accelerated: certified relative gap "
                         "(configs: 1e-5)")
    ap.add_argument("--paper-max-iter", type=int, default=8000,
                    help="iteration cap of the paper's solvers (the configs use 100000)")
    ap.add_argument("--alphas", nargs="+", type=float, default=None,
                    help="override the alpha grids (the same alphas for every selected grid)")
    ap.add_argument("--subsets", nargs="+", type=int, default=[0],
                    help="MNIST: which of E2's L = 3K subsets (seed 2014) to fit")
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    if args.paper_max_iter < 1:
        ap.error("--paper-max-iter must be >= 1")
    if not args.tol > 0:
        ap.error("--tol must be > 0")
    if min(args.subsets) < 0:
        ap.error("--subsets must be >= 0")
    names = list(dict.fromkeys(args.datasets + (["mnist"] if args.mnist else [])))
    rows, t_fits = h.timed(fit_all, load_problems(names, args), args)
    print(f"\ntotal fit wall time {t_fits:.0f}s; paper: tol {args.tol:g} "
          f"(relative change), max_iter {args.paper_max_iter}; "
          f"accelerated: certified gap {args.tol:g}")
    print(report(pd.DataFrame(rows)))
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)


def load_problems(names, args):
    """(dataset, feature label, (Xtr, ytr, Xte, yte)) of the selected datasets."""
    problems = []
    for name in names:
        if name == "leukemia":
            for feat in args.features:
                problems.append((name, feat, h.leukemia(args.data, feat == "std")))
        else:
            t0 = time.perf_counter()
            for sub, prob in load_mnist(args.data, subset_ids=args.subsets):
                problems.append((name, f"scattering, subset {sub}", prob))
            print(f"mnist features: {time.perf_counter() - t0:.1f}s", flush=True)
    return problems


def fit_all(problems, args):
    """Every (problem, penalty, method, alpha) fitted by both solvers; the rows, printed as JSON."""
    rows = []
    for name, feat, (Xtr, ytr, Xte, yte) in problems:
        for pen in args.penalties:
            groups = None if pen == "l1" else GROUPS[name]
            if name == "mnist" and pen == "l1":
                continue  # E2 is l1inf only
            for method in args.methods:
                for alpha in args.alphas or ALPHAS[(name, feat.split(',')[0], method)]:
                    for solver in ("paper", "accelerated"):
                        r = fit_one(Xtr, ytr, Xte, yte, method, pen, groups, alpha, solver,
                                    args.tol, args.paper_max_iter)
                        r.update(dataset=name, features=feat, paper_max_iter=args.paper_max_iter,
                                 tol=args.tol)
                        rows.append(r)
                        print(json.dumps(r), flush=True)
    return rows


if __name__ == "__main__":
    main()
