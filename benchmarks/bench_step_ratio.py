"""Balance of the primal-dual steps (step_ratio = sigma / tau) of the paper's Algorithms 1 and 2.

Question: which ``step_ratio`` reaches the paper's stop soonest, and closest to the
optimum (the measurement behind ``sparsesvm.solvers.DEFAULT_STEP_RATIO``)? Answered by
``python benchmarks/bench_step_ratio.py --max-iter 20000``.

For a leukemia-like (:func:`_harness.expression_like`: L = 38, M = 7129, K = 3, groups
of 5) and an MNIST-like problem (:func:`_harness.scattering_like`: L = 100, M = 3969,
K = 10, groups of 81), l1inf, each method at two alphas, every ratio of ``--ratios``
runs to the paper's stop (relative change <= 1e-5, cap ``--max-iter``). Reported per
run: iterations, time, the objective's relative gap to CVXPY's optimum of the same
problem, for hinge-con the constraint violation relative to eta, and (hinge-reg only:
a constrained iterate can look better than optimal) the first iteration within 1e-2
of the optimum. One BLAS thread (:mod:`_harness`).

Usage::

    python benchmarks/bench_step_ratio.py [--ratios 0.01 0.1 1 10 100] [--max-iter 20000]
        [--json out.json]
    python benchmarks/bench_step_ratio.py --ratios 1 --max-iter 50             # quick
"""

import argparse
import json

import _harness as h  # one BLAS thread
import numpy as np

#: alphas of each method, per problem
ALPHAS = {"leukemia": {"hinge-reg": [1.0, 0.1], "hinge-con": [0.05, 0.2]},
          "mnist": {"hinge-reg": [0.1, 0.01], "hinge-con": [0.05, 0.2]}}


def sweep(ratios, max_iter, seed=0):
    """One row per problem, method, alpha and ratio (printed as JSON as it ends)."""
    rng = np.random.default_rng(seed)
    cases = [("leukemia", h.expression_like(rng), 5), ("mnist", h.scattering_like(rng), 81)]
    out = []
    for name, (Phi, y, K), groups in cases:
        op = h.MulticlassOperator(Phi, y, K)
        op.norm()
        pen = h.make_penalty("l1inf", groups, Phi.shape[1], K)
        for method, alpha_list in ALPHAS[name].items():
            for alpha in alpha_list:
                opt, t_cvx = h.timed(h.cvx_optimum, method, Phi, y, K, "l1inf", groups, alpha)
                for r in ratios:
                    row = dict(problem=name, method=method, alpha=alpha, step_ratio=r,
                               **run_to_stop(op, pen, method, alpha, r, max_iter, opt),
                               cvxpy_objective=opt, cvxpy_time_s=t_cvx)
                    print(json.dumps(row), flush=True)
                    out.append(row)
    return out


def run_to_stop(op, pen, method, alpha, ratio, max_iter, opt):
    """Iterations, time, gap to ``opt`` and violation of one run to the 1e-5 stop."""
    res = h.paper_fit(method, op, pen, alpha, tol=1e-5, max_iter=max_iter, step_ratio=ratio,
                      trace=True)
    gaps = (res.trace["objective"] - opt) / abs(opt)
    hit = np.nonzero(np.abs(gaps) <= 1e-2)[0]
    return dict(iters=res.n_iter, converged=res.converged, time_s=res.fit_time,
                rel_gap=(res.objective - opt) / abs(opt),
                violation_rel=res.constraint_violation / (alpha * op.n_samples),
                iters_to_gap_1e2=(int(hit[0]) + 1 if hit.size and method == "hinge-reg"
                                  else None))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ratios", type=float, nargs="+", default=[0.01, 0.1, 1.0, 10.0, 100.0])
    ap.add_argument("--max-iter", type=int, default=20000, help="cap of each run to the 1e-5 stop")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    h.limit_blas(args.threads)
    rows = sweep(args.ratios, args.max_iter)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)


if __name__ == "__main__":
    main()
