"""Column generation vs restarted PDHG for l12 (hinge-reg), by group size and problem size.

Question: for which group sizes and master sizes should ``inner="auto"`` take column
generation for l12 (the rule of ``sparsesvm.solvers.accelerated.hinge.L12_CG_MAX_GROUP``
and ``L12_CG_MAX_ROWS``)? Answered by ``python benchmarks/bench_l12_engines.py --cap 20``.

On synthetic News20-like sparse problems (:func:`_harness.sparse_text_like`: M = 5000,
0.5 % random terms plus 30 class-specific terms per class, rows of unit norm) of
:data:`CASES` (K classes, samples per class, groups: ``"features"``, i.e. the K
weights of one feature, or within-class blocks of 5), hinge-reg at alpha = 0.1
(lambda = 10), each engine runs to a certified relative gap of 1e-4 or ``--cap``
seconds; reported: the time its certified gap first met 1e-3, its stop at 1e-4,
its final gap and its iterations (PDHG) or rounds (column generation). One BLAS
thread (:mod:`_harness`).

Usage::

    python benchmarks/bench_l12_engines.py [--cap 30] [--quick] [--json out.json]
"""

import argparse
import json

import _harness as h  # one BLAS thread
import numpy as np

#: (K, samples per class, groups) of the synthetic problems
CASES = [(5, 20, "features"), (5, 20, 5), (10, 10, "features"), (20, 10, "features"),
         (20, 10, 5)]


def run_cases(cases, cap):
    """One row per case and engine (``"cg"``, ``"pdhg"``), printed as JSON as it ends."""
    rows = []
    for K, per, groups in cases:
        Phi, y = h.sparse_text_like(K, per)
        for inner in ("cg", "pdhg"):
            r = h.accelerated.hinge_reg(Phi, y, K, "l12", groups, lam=10.0, tol=1e-4, trace=True,
                                        max_time=cap, inner=inner)
            gaps = np.asarray(r.trace["rel_gap"])
            t3 = np.flatnonzero(gaps <= 1e-3)
            row = dict(K=K, L=len(y), M=Phi.shape[1], groups=groups,
                       group_size=K if groups == "features" else groups, inner=inner,
                       t_cert_1e3=float(r.trace["time"][t3[0]]) if len(t3) else None,
                       t_cert_1e4=r.time if r.converged else None, final_gap=r.rel_gap,
                       iterations=r.n_iter, cap=cap)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def print_table(rows):
    print("\n| K, L, groups (size) | engine | certified 1e-3 at s | certified 1e-4 at s | "
          "final gap | iterations / rounds |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['K']}, {r['L']}, {r['groups']} ({r['group_size']}) | {r['inner']} | "
              f"{h.fmt(r['t_cert_1e3'])} | {h.fmt(r['t_cert_1e4'])} | {r['final_gap']:.1e} | "
              f"{r['iterations']} (cap {r['cap']:g}s) |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cap", type=float, default=30.0, help="seconds per engine and case")
    ap.add_argument("--quick", action="store_true", help="the first case only")
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    rows = run_cases(CASES[:1] if args.quick else CASES, args.cap)
    print_table(rows)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)


if __name__ == "__main__":
    main()
