"""Column generation vs restarted PDHG for l12, by group size and problem size.

Question: for which group sizes and master sizes should ``inner="auto"`` take column
generation for l12 (the rule of ``sparsesvm.solvers.accelerated.hinge``:
``L12_CG_MAX_GROUP`` / ``L12_CG_MAX_ROWS``, and ``L12_CG_MAX_GROUP_WIDE`` /
``L12_CG_GROUPS_PER_ROW``)? Answered by ``python benchmarks/bench_l12_engines.py --cap 20``
(synthetic) and ``python benchmarks/bench_l12_engines.py --real --cap 60`` (real data).

Synthetic (default): News20-like sparse problems (:func:`_harness.sparse_text_like`:
M = 5000, 0.5 % random terms plus 30 class-specific terms per class, rows of unit norm)
of :data:`CASES` (K classes, samples per class, groups: ``"features"``, i.e. the K
weights of one feature, or within-class blocks of 5), hinge-reg at alpha = 0.1
(lambda = 10), each engine run to a certified relative gap of 1e-4 or ``--cap``
seconds; reported: the time its certified gap first met 1e-3, its stop at 1e-4,
its final gap and its iterations (PDHG) or rounds (column generation).

``--real``: the datasets of the mirror (``--data``), within-class blocks of 5, 9 and 10:
E1's raw leukemia (L = 38, M = 7129, K = 3; tol 1e-5, E1's) at hinge-reg alpha = 3e3, 3e4
and hinge-con alpha = 0.03, 0.1; MNIST scattering features (:func:`_harness.mnist_scattering`,
M = 3969, K = 10) of 30 and 100 class-balanced training images (E2's smallest and largest
L; tol 1e-4) at hinge-reg alpha = 0.3, 3 and hinge-con alpha = 0.03. Each row: the engine
``"auto"`` takes, and each engine's wall time and certified gap at its stop.

One BLAS thread (:mod:`_harness`).

Usage::

    python benchmarks/bench_l12_engines.py [--cap 30] [--quick] [--json out.json]
    python benchmarks/bench_l12_engines.py --real [--data MIRROR] [--cap 60] [--json out.json]
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


def real_cases(mirror):
    """``(name, Phi, y, K, method, alpha, tol)`` of the ``--real`` problems (module docstring)."""
    X, y, _, _ = h.leukemia(mirror)
    cases = [("leukemia", X, y, 3, m, a, 1e-5)
             for m, a in (("hinge-reg", 3e3), ("hinge-reg", 3e4), ("hinge-con", 0.03), ("hinge-con", 0.1))]
    for n in (30, 100):
        Xm, ym, _, _, _ = h.mnist_scattering(mirror, n)
        cases += [(f"mnist-{n}", Xm, ym, 10, m, a, 1e-4)
                  for m, a in (("hinge-reg", 0.3), ("hinge-reg", 3.0), ("hinge-con", 0.03))]
    return cases


def run_real(mirror, cap, blocks=(5, 9, 10)):
    """One row per real problem, block size and parameter: both engines, and auto's choice."""
    rows = []
    for name, Phi, y, K, method, alpha, tol in real_cases(mirror):
        L = len(y)
        solve, par = ((h.accelerated.hinge_reg, dict(lam=1.0 / alpha)) if method == "hinge-reg"
                      else (h.accelerated.hinge_con, dict(eta=alpha * L)))
        for b in blocks:
            row = dict(problem=name, L=L, M=Phi.shape[1], K=K, groups=b,
                       n_groups=-(-Phi.shape[1] // b) * K, hinge_rows=L * (K - 1), method=method,
                       alpha=alpha, tol=tol, cap=cap,
                       auto=h.accelerated._choose_inner("auto", h.package("make_penalty")(
                           "l12", b, Phi.shape[1], K), L, Phi.shape[1], K))
            for inner in ("cg", "pdhg"):
                r, seconds = h.timed(solve, Phi, y, K, "l12", b, tol=tol, max_time=cap, inner=inner, **par)
                row[f"{inner}_s"], row[f"{inner}_gap"] = seconds, float(r.rel_gap)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def print_real_table(rows):
    print("\n| problem | blocks | groups / hinge rows | method, alpha | auto | cg: s (gap) | pdhg: s (gap) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['problem']} | {r['groups']} | {r['n_groups'] / r['hinge_rows']:.1f} | {r['method']}, "
              f"{r['alpha']:g} | {r['auto']} | {r['cg_s']:.2f} ({r['cg_gap']:.1e}) | "
              f"{r['pdhg_s']:.2f} ({r['pdhg_gap']:.1e}) |")


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
    ap.add_argument("--real", action="store_true", help="real leukemia and MNIST (module docstring)")
    h.add_data_argument(ap)
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    if args.real:
        rows = run_real(args.data, args.cap)
        print_real_table(rows)
    else:
        rows = run_cases(CASES[:1] if args.quick else CASES, args.cap)
        print_table(rows)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)


if __name__ == "__main__":
    main()
