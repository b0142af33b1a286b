"""Alphas side by side against one fit each: the CPU time of E2's alpha grids.

Question: at E2's shapes (MNIST scattering, M = 3969, K = 10, l1,inf/81, L = 30, 50, 100),
what does a grid of alphas cost when its fits share each iteration's products with Phi
(:func:`sparsesvm.solvers.side_by_side.side_by_side`) against one solver run per alpha?
Answered by

    python benchmarks/bench_side_by_side.py --mirror ../shared/data --L 30 50 100 --iters 3000
    python benchmarks/bench_side_by_side.py --mirror ../shared/data --L 100 --tol 1e-5 --methods hinge-reg

With ``--iters N`` every fit runs exactly N iterations (``tol = 0``): the cost of an
iteration, side by side and alone, with the whole grid in the batch throughout. With
``--tol`` every fit runs to the relative-change rule (``max_iter`` 100000, E2's settings),
so fits leave the batch as they stop, as in a workflow job. Features: the scattering
transform of L class-balanced seeded training images read from the mirror (not one of
E2's subsets: the same shapes and kind of data). CPU seconds (``time.process_time``) of
each single run and of the batch, one BLAS thread, after one untimed short fit that loads
the compiled kernels; ``--repeats`` alternates the two and keeps the least of each. The
results of the two agree to rounding: the table reports the largest relative difference
of the weights and the iteration counts.
"""
from __future__ import annotations

import argparse
import time

import _harness as h  # one BLAS thread
import numpy as np

E2_ALPHAS = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 3.0, 10.0]
E2_ALPHAS_CON = E2_ALPHAS[:7]  # config/config.yaml: hinge-con's grid stops at 1


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def measure(op, penalty, method, alphas, tol, max_iter, repeats):
    """One row: the grid's CPU seconds alone and side by side, and how far the results differ."""
    side_by_side = h.package("side_by_side")
    L = op.n_samples
    weights = [next(iter(h.alpha_parameter(method, a, L).values())) for a in alphas]
    h.paper_fit(method, op, penalty, alphas[0], tol=0.0, max_iter=5)  # kernels loaded, products tuned
    alone = batch = np.inf
    singles = together = None
    for _ in range(repeats):
        seconds, runs = _cpu(lambda: [h.paper_fit(method, op, penalty, a, tol=tol, max_iter=max_iter)
                                      for a in alphas])
        alone, singles = min(alone, seconds), runs
        seconds, runs = _cpu(lambda: side_by_side(method, op, penalty, weights, tol=tol,
                                                  max_iter=max_iter))
        batch, together = min(batch, seconds), runs
    dev = max(float(np.abs(b.X - a.X).max() / max(np.abs(a.X).max(), 1e-300))
              for a, b in zip(singles, together))
    iters = sum(r.n_iter for r in singles)
    return {"L": L, "method": method, "alphas": len(alphas),
            "iterations_alone": iters, "iterations_side_by_side": sum(r.n_iter for r in together),
            "n_iter_differ": sum(a.n_iter != b.n_iter for a, b in zip(singles, together)),
            "cpu_alone_s": round(alone, 3), "cpu_side_by_side_s": round(batch, 3),
            "ms_per_fit_iteration_alone": round(1e3 * alone / max(iters, 1), 4),
            "ms_per_fit_iteration_side_by_side": round(1e3 * batch / max(iters, 1), 4),
            "ratio": round(batch / alone, 3), "max_rel_weight_difference": dev}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    h.add_data_argument(p, "--mirror")  # data from the mirror
    p.add_argument("--L", type=int, nargs="+", default=[30, 50, 100], help="training sizes")
    p.add_argument("--methods", nargs="+", default=["hinge-reg", "hinge-con", "logit", "square"],
                   choices=["hinge-reg", "hinge-con", "hinge-lin", "logit", "square"])
    p.add_argument("--iters", type=int, default=None,
                   help="every fit runs exactly this many iterations (tol 0)")
    p.add_argument("--tol", type=float, default=None,
                   help="every fit runs to this relative change (max_iter 100000)")
    p.add_argument("--repeats", type=int, default=1)
    h.add_output_argument(p)
    args = p.parse_args(argv)
    if (args.iters is None) == (args.tol is None):
        p.error("give one of --iters and --tol")
    tol, max_iter = (0.0, args.iters) if args.iters is not None else (args.tol, 100000)
    rows = []
    for L in args.L:
        Phi, y, _, _, _ = h.mnist_scattering(args.mirror, L)
        op = h.MulticlassOperator(Phi, y, 10)
        penalty = h.make_penalty("l1inf", 81, Phi.shape[1], 10)
        for method in args.methods:
            alphas = E2_ALPHAS_CON if method == "hinge-con" else E2_ALPHAS
            row = measure(op, penalty, method, alphas, tol, max_iter, args.repeats)
            rows.append(row)
            print(f"L={L} {method}: {row['alphas']} alphas, {row['iterations_alone']} fit iterations; "
                  f"alone {row['cpu_alone_s']} s ({row['ms_per_fit_iteration_alone']} ms/it), "
                  f"side by side {row['cpu_side_by_side_s']} s "
                  f"({row['ms_per_fit_iteration_side_by_side']} ms/it): ratio {row['ratio']}; "
                  f"weights differ by {row['max_rel_weight_difference']:.1e}, "
                  f"{row['n_iter_differ']} iteration counts differ", flush=True)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)


if __name__ == "__main__":
    main()
