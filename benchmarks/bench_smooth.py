"""Certified smooth-baseline solver (sparsesvm.solvers.accelerated.smooth) against an anchor, same problems, one run.

Times ``SparseSVC(method, solver="accelerated", tol=TOL)`` (certified relative duality gap)
against CVXPY + Clarabel (the generic anchor: it solves the same problem, offsets mu = 1
inside the losses included; scikit-learn's multinomial logistic regression has no offset,
so it does not solve the paper's logit problem), and against the paper's algorithm
(FISTA / forward-backward) stopped on the same certified gap with an iteration cap.

Problems: leukemia's raw values (L = 38, M = 7129, K = 3; from the offline mirror) and a
same-shape stand-in for MNIST L = 100 scattering features (M = 81 x 49 non-negative
features, groups of 81; the real features need the workflow's scattering transform).

Usage (one BLAS thread)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_smooth.py --mirror ../shared/data
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def leukemia(mirror):
    from sparsesvm.data.datasets import load_leukemia

    d = Path(mirror) / "leukemia"
    ds = load_leukemia(d / "data_set_ALL_AML_train.tsv", d / "data_set_ALL_AML_independent.tsv",
                       d / "table_ALL_AML_samples.tsv")
    return ds.X_train, ds.y_train


def mnist_like(L=100, K=10, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(L) % K
    M = 81 * 49
    Phi = np.abs(rng.standard_normal((L, M))) * rng.gamma(1.0, 1.0, M)
    Phi[:, :81 * K] += 1.5 * np.repeat(np.eye(K), 81, axis=1)[y]
    return Phi, y


def run(name, Phi, y, method, penalty, groups, alpha, tol, anchor, paper_iter):
    from sparsesvm import SparseSVC

    t = time.perf_counter()
    ours = SparseSVC(method=method, penalty=penalty, groups=groups, alpha=alpha, tol=tol,
                     solver="accelerated").fit(Phi, y)
    t_ours = time.perf_counter() - t
    row = dict(problem=name, method=method, penalty=f"{penalty}/{groups}" if groups else penalty,
               alpha=alpha, ours_s=t_ours, ours_gap=ours.rel_gap_, ours_obj=ours.objective_)
    if paper_iter:
        t = time.perf_counter()
        pap = SparseSVC(method=method, penalty=penalty, groups=groups, alpha=alpha, tol=tol,
                        stopping="gap", max_iter=paper_iter).fit(Phi, y)
        row.update(paper_s=time.perf_counter() - t, paper_gap=pap.rel_gap_, paper_iter=pap.n_iter_)
    if anchor:
        import cvx_reference as cr

        t = time.perf_counter()
        try:
            obj, _ = cr.solve(method, Phi, y, int(y.max()) + 1, penalty, groups, lam=1.0 / alpha)
            row.update(cvx_s=time.perf_counter() - t, cvx_rel_diff=(ours.objective_ - obj) / obj)
        except Exception as e:  # noqa: BLE001 - report the anchor's failure
            row.update(cvx_s=time.perf_counter() - t, cvx_rel_diff=f"failed: {type(e).__name__}")
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", default="../shared/data")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--methods", default="square,logit,ova")
    ap.add_argument("--problems", default="leukemia,mnist")
    ap.add_argument("--penalties", default="l1,l1inf,l2", help="leukemia penalties to run")
    ap.add_argument("--no-anchor", action="store_true")
    ap.add_argument("--paper-iter", type=int, default=0,
                    help="also run the paper's algorithm with stopping='gap' up to this many iterations")
    a = ap.parse_args(argv)
    cases = []
    if "leukemia" in a.problems:
        Phi, y = leukemia(a.mirror)
        for pen, g, alphas in (("l1", None, (1e3, 1e4)), ("l1inf", 5, (1e4,)), ("l2", None, (1e8,))):
            if pen in a.penalties.split(","):
                cases += [("leukemia", Phi, y, pen, g, al) for al in alphas]
    if "mnist" in a.problems:
        Phi, y = mnist_like()
        cases += [("mnist-like L=100", Phi, y, "l1inf", 81, al) for al in (0.1, 1.0)]
    print("| problem | method | penalty | alpha | ours s | ours gap | paper s | paper gap (iters) | CVXPY s | (ours - CVXPY)/CVXPY |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, Phi, y, pen, g, al in cases:
        for m in a.methods.split(","):
            r = run(name, Phi, y, m, pen, g, al, a.tol, not a.no_anchor, a.paper_iter)
            paper = (f"{r['paper_s']:.2f} | {r['paper_gap']:.1e} ({r['paper_iter']})"
                     if "paper_s" in r else "- | -")
            cvx = (f"{r['cvx_s']:.2f} | {r['cvx_rel_diff']:.1e}" if isinstance(r.get("cvx_rel_diff"), float)
                   else f"{r.get('cvx_s', float('nan')):.2f} | {r.get('cvx_rel_diff', '-')}")
            print(f"| {r['problem']} | {m} | {r['penalty']} | {al:g} | {r['ours_s']:.2f} | "
                  f"{r['ours_gap']:.1e} | {paper} | {cvx} |", flush=True)


if __name__ == "__main__":
    main()
