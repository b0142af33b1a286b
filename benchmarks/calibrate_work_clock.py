"""The prices of the engine portfolio's work clock, fitted to this machine's times.

Question: the engine portfolio of ``solver="accelerated"`` (``inner="portfolio"``) times its
two engines' turns on a work clock (:mod:`sparsesvm.solvers.accelerated.clock`): the work each
engine has done (products with Phi, PDHG iterations, the column generation's rounds and the
simplex and interior-point iterations HiGHS reports for its master LPs), priced in seconds of
a reference machine, so that which engine runs when does not depend on the machine's speed
or load. What are those prices on this machine, and how closely do the counted seconds follow
the wall seconds? Answered by::

    python benchmarks/calibrate_work_clock.py [--data MIRROR] [--cap 30] [--large] [--json out.json]
    python benchmarks/calibrate_work_clock.py --ipm-only   # the interior point's prices alone

Each engine runs alone (``inner="cg"``, ``inner="pdhg"``, tol 1e-4, ``max_time=--cap``) on
:mod:`bench_engines`' problems (``--large``: with MNIST's L = 5000 too, column generation
capped at three times ``--cap``), and every operation is timed: each master LP solve (HiGHS'
simplex and interior-point iteration counts, the model's rows, columns and non-zeros), each
product with Phi (its multiply-adds), each PDHG run (its iterations and the problem's shape)
and each column generation run (rounds, LP and product time). Fitted by least squares
(on relative errors and non-negative for the linear prices):

* a product: ``PRODUCT_CALL_S + PRODUCT_S x multiply-adds`` (over the PDHG runs' products);
* a PDHG iteration besides its products: ``PDHG_ITER_S + PDHG_DUAL_ENTRY_S L K +
  PDHG_PRIMAL_ENTRY_S (M + 1) K (+ PDHG_CON_S for hinge-con)`` (weighted by the square root
  of the iterations);
* a simplex iteration ``exp(c0) nnz^a rows^b cols^c`` (``SIMPLEX_LOG``; the solves of at least
  100 iterations, on the logarithm of the time per iteration), an interior-point iteration
  likewise (``IPM_LOG``, HiGHS' with crossover; the solves of at least 10 iterations);
* an iteration of the dense interior-point method (:mod:`sparsesvm.solvers.accelerated.ipm`):
  ``DENSE_IPM_ITER_S + DENSE_IPM_MADD_S x ipm.iteration_madds(rows, atoms)``;
* a column generation round besides its LP and products: ``ROUND_S + ROUND_ENTRY_S L K``;
* an iteration of the interior point on the whole LP (:mod:`sparsesvm.solvers.accelerated.hinge_ipm`)
  besides its products: ``HINGE_IPM_ITER_S + HINGE_IPM_MADD_S x hinge_ipm.iteration_madds +
  HINGE_IPM_ENTRY_S (L(K-1))^2 + HINGE_IPM_WEIGHT_S M K``, from the runs of ``inner="ipm"``
  (its first :data:`IPM_ITERATIONS` iterations) on :data:`IPM_SHAPES`' dense noisy problems
  (:func:`bench_family.dense_noisy`) with l1, l1,inf with blocks of 10 and across classes.

Prints the fitted prices beside the clock's, and per problem and engine the seconds the clock
counts with its own prices over the wall seconds. One BLAS thread (:mod:`_harness`); the
compiled kernels loaded before the first run.
"""

import argparse
import json
import time

import _harness as h  # one BLAS thread
import bench_engines as be
import bench_family as bf
import numpy as np
from scipy.optimize import nnls

from sparsesvm.model import operator as opm
from sparsesvm.solvers.accelerated import clock as clk
from sparsesvm.solvers.accelerated import colgen, hinge, hinge_ipm
from sparsesvm.solvers.accelerated.ipm import iteration_madds

#: the interior point's problems (L, M, K): dense noisy, with rows L(K-1) from 80 to 1500
IPM_SHAPES = [(40, 300, 3), (100, 500, 3), (150, 1200, 5), (60, 3969, 10), (30, 3969, 10),
              (200, 1000, 5), (100, 2000, 8), (300, 2000, 5), (100, 3969, 10), (38, 7129, 3),
              (400, 500, 4)]
#: ... and its iterations timed on each (a run to a tolerance it does not reach)
IPM_ITERATIONS = 12


class Probe:
    """Times the engines' operations (installed by :meth:`install`, as methods' wrappers)."""

    def __init__(self):
        self.events = []
        self.products = [0, 0.0, 0.0]  # count, multiply-adds, seconds

    def install(self):
        for name in ("_run_warm", "_run_crossover", "_run_cold"):
            self._wrap_lp(name)
        self._wrap_dense()
        for name in ("scores", "T_adjoint"):
            self._wrap_product(name)
        self._wrap_pdhg()
        self._wrap_cg()
        self._wrap_hinge_ipm()

    def _wrap_lp(self, name):
        f, probe = getattr(colgen._Master, name), self

        def timed(master, *a, **k):
            t0 = time.perf_counter()
            out = f(master, *a, **k)
            dt = time.perf_counter() - t0
            info = master.h.getInfo()
            probe.events.append(dict(ev="lp", kind=name, t=dt, simplex=info.simplex_iteration_count,
                               ipm=info.ipm_iteration_count, rows=master.h.getNumRow(),
                               cols=master.h.getNumCol(), nnz=master.h.getNumNz()))
            return out

        setattr(colgen._Master, name, timed)

    def _wrap_dense(self):
        f, solve, probe = colgen._Master._run_dense, colgen.interior_point, self
        last = []

        def solved(*a, **k):
            last.append(solve(*a, **k))
            return last[-1]

        def timed(master):
            t0 = time.perf_counter()
            out = f(master)
            probe.events.append(dict(ev="dense", t=time.perf_counter() - t0,
                                     iterations=last[-1].iterations, rows=master.nrow,
                                     cols=len(master.atom_cols)))
            return out

        colgen.interior_point = solved
        colgen._Master._run_dense = timed

    def _wrap_product(self, name):
        f = getattr(opm.MulticlassOperator, name)
        acc = self.products

        def timed(op, A):
            t0 = time.perf_counter()
            out = f(op, A)
            acc[2] += time.perf_counter() - t0
            acc[0] += 1
            acc[1] += (op.Phi.nnz if op._sparse else op.Phi.size) * op.n_classes
            return out

        setattr(opm.MulticlassOperator, name, timed)

    def _wrap_pdhg(self):
        f, probe, acc = hinge._pdhg, self, self.products

        def timed(prob, *a, **k):
            p0, t0 = list(acc), time.perf_counter()
            out = f(prob, *a, **k)
            probe.events.append(dict(ev="pdhg", t=time.perf_counter() - t0, nit=out[3], L=prob.L,
                               M=prob.M, K=prob.K, con=prob.kind == "con",
                               n_prod=acc[0] - p0[0], madds=acc[1] - p0[1], prod_t=acc[2] - p0[2]))
            return out

        hinge._pdhg = timed

    def _wrap_hinge_ipm(self):
        f, probe, acc = hinge_ipm.InteriorPoint._iterate, self, self.products

        def timed(eng):
            p0, t0 = list(acc), time.perf_counter()
            out = f(eng)
            L, M, K, n_groups, within = eng._shape
            probe.events.append(dict(ev="hinge_ipm", t=time.perf_counter() - t0,
                                     prod_t=acc[2] - p0[2], L=L, M=M, K=K, n_groups=n_groups,
                                     within=within, border=len(eng.lp.bflat)))
            return out

        hinge_ipm.InteriorPoint._iterate = timed

    def _wrap_cg(self):
        f, probe, acc = colgen._ColumnGeneration.advance, self, self.products

        def timed(cg, until):
            p0, n0, r0, t0 = list(acc), len(probe.events), cg.rounds, time.perf_counter()
            f(cg, until)
            lp = sum(e["t"] for e in probe.events[n0:] if e["ev"] == "lp")
            probe.events.append(dict(ev="cg", t=time.perf_counter() - t0, lp_t=lp, rounds=cg.rounds - r0,
                               L=cg.op.n_samples, K=cg.op.n_classes, madds=acc[1] - p0[1],
                               n_prod=acc[0] - p0[0], prod_t=acc[2] - p0[2]))

        colgen._ColumnGeneration.advance = timed


def counted(events, n_products, madds):
    """Seconds a work clock counts, with its prices, for one engine run: its ``events`` and
    its ``n_products`` products of ``madds`` multiply-adds in all."""
    c = clk.WorkClock()
    c.charge(n_products * clk.PRODUCT_CALL_S + madds * clk.PRODUCT_S)
    for e in events:
        if e["ev"] == "lp":
            c.lp(e["simplex"], e["ipm"], e["rows"], e["cols"], e["nnz"])
        elif e["ev"] == "dense":
            c.interior(e["iterations"], e["rows"], e["cols"])
        elif e["ev"] == "pdhg":
            c.charge(e["nit"] * clk.pdhg_iteration_seconds(e["L"], e["M"], e["K"], e["con"]))
        elif e["ev"] == "cg":
            for _ in range(e["rounds"]):
                c.round(e["L"], e["K"])
        elif e["ev"] == "hinge_ipm":
            c.charge(hinge_ipm.iteration_seconds(e["L"], e["M"], e["K"], e["n_groups"],
                                                 e["within"], e["border"]))
    return c.seconds


def _hinge_ipm_row(e):
    """The interior point's price terms of one iteration: 1, madds, entries of S, weights."""
    m = e["L"] * (e["K"] - 1)
    return [1.0, hinge_ipm.iteration_madds(e["L"], e["M"], e["K"], e["n_groups"], e["within"],
                                           e["border"]), float(m * m), float(e["M"] * e["K"])]


def _nnls(A, b, weight=None):
    """Non-negative least squares of ``A x = b`` in relative terms (each row divided by its
    ``b``, times ``weight``: small and large operations count alike), the columns scaled to
    unit norm first (the prices differ by orders of magnitude)."""
    b = np.asarray(b, float)
    keep = b > 0
    w = (np.ones(len(b)) if weight is None else np.asarray(weight, float))[keep] / b[keep]
    A = np.asarray(A, float)[keep] * w[:, None]
    scale = np.maximum(np.linalg.norm(A, axis=0), 1e-300)
    return nnls(A / scale, b[keep] * w)[0] / scale


def fit(runs):
    """The least-squares prices from all runs' events (module docstring)."""
    ev = [e for r in runs for e in r["events"]]
    out = {}
    pd = [e for e in ev if e["ev"] == "pdhg" and e["nit"] > 0]
    if pd:
        A = np.array([[e["n_prod"], e["madds"]] for e in pd], float)
        out["PRODUCT_CALL_S"], out["PRODUCT_S"] = _nnls(A, [e["prod_t"] for e in pd])
        A = np.array([[1.0, e["L"] * e["K"], (e["M"] + 1) * e["K"], float(e["con"])] for e in pd])
        rest = [(e["t"] - e["prod_t"]) / e["nit"] for e in pd]
        (out["PDHG_ITER_S"], out["PDHG_DUAL_ENTRY_S"], out["PDHG_PRIMAL_ENTRY_S"],
         out["PDHG_CON_S"]) = _nnls(A, rest, weight=np.sqrt([e["nit"] for e in pd]))
    for key, kind, count, least in (("SIMPLEX_LOG", ("_run_warm", "_run_cold"), "simplex", 100),
                                    ("IPM_LOG", ("_run_crossover", "_run_ipm"), "ipm", 10)):
        lp = [e for e in ev if e["ev"] == "lp" and e["kind"] in kind and e[count] >= least]
        if len(lp) < 4:
            continue
        A = np.array([[1.0, np.log(e["nnz"]), np.log(e["rows"]), np.log(e["cols"])] for e in lp])
        y = np.log([e["t"] / e[count] for e in lp])
        coef = np.linalg.lstsq(A, y, rcond=None)[0]
        res = y - A @ coef
        out[key] = [round(float(v), 3) for v in coef]
        out[key + "_spread"] = dict(solves=len(lp), sd_factor=float(np.exp(res.std())),
                                    max_factor=float(np.exp(np.abs(res).max())))
    dense = [e for e in ev if e.get("ev") == "dense" and e["iterations"] > 0]
    if len(dense) >= 2:
        A = np.array([[e["iterations"], e["iterations"] * iteration_madds(e["rows"], e["cols"])]
                      for e in dense], float)
        out["DENSE_IPM_ITER_S"], out["DENSE_IPM_MADD_S"] = _nnls(A, [e["t"] for e in dense])
    hi = [e for e in ev if e["ev"] == "hinge_ipm"]
    if len(hi) >= 4:
        (out["HINGE_IPM_ITER_S"], out["HINGE_IPM_MADD_S"], out["HINGE_IPM_ENTRY_S"],
         out["HINGE_IPM_WEIGHT_S"]) = _nnls([_hinge_ipm_row(e) for e in hi],
                                            [e["t"] - e["prod_t"] for e in hi])
    cg = [e for e in ev if e["ev"] == "cg" and e["rounds"] > 0]
    if cg:
        A = np.array([[e["rounds"], e["rounds"] * e["L"] * e["K"]] for e in cg], float)
        rest = [e["t"] - e["lp_t"] - e["prod_t"] for e in cg]
        out["ROUND_S"], out["ROUND_ENTRY_S"] = _nnls(A, rest)
    return {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in out.items()}


def report(run):
    """Print one run's wall seconds and the seconds the clock counts for it (``counted_s``)."""
    run["counted_s"] = counted(run["events"], run["n_products"], run["madds"])
    print(f"{run['problem']:18s} {run['penalty']:6s} {run['method']:10s} {run['inner']:5s} wall "
          f"{run['wall_s']:7.2f} s  counted {run['counted_s']:7.2f} s  "
          f"({run['counted_s'] / run['wall_s']:.2f})", flush=True)


def ipm_runs(probe):
    """The interior point's first :data:`IPM_ITERATIONS` iterations on each of
    :data:`IPM_SHAPES` and penalties, timed (hinge-reg, lam 0.5)."""
    rng = np.random.default_rng(0)
    runs = []
    for L, M, K in IPM_SHAPES:
        Phi, y, K = bf.dense_noisy(rng, L, M, K)
        for penalty, groups in (("l1", None), ("l1inf", 10), ("l1inf", "features")):
            probe.events = []
            p0 = list(probe.products)
            r, seconds = h.timed(h.accelerated.hinge_reg, Phi, y, K, penalty, groups, lam=0.5,
                                 tol=1e-12, max_iter=IPM_ITERATIONS, inner="ipm")
            runs.append(dict(problem=f"dense-{L}x{M}x{K}", penalty=penalty, method="hinge-reg",
                             inner="ipm", wall_s=seconds, rel_gap=float(r.rel_gap),
                             events=probe.events, n_products=probe.products[0] - p0[0],
                             madds=probe.products[1] - p0[1]))
            report(runs[-1])
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cap", type=float, default=30.0, help="seconds per engine and problem")
    ap.add_argument("--large", action="store_true", help="MNIST's L = 5000 as well")
    ap.add_argument("--ipm-only", action="store_true",
                    help="only the interior point's runs on IPM_SHAPES (its HINGE_IPM_* prices)")
    ap.add_argument("--only", nargs="+", default=None,
                    help="keep the problems whose name contains any of these, e.g. digits dense")
    ap.add_argument("--runs", default=None,
                    help="the JSON of an earlier run: report and fit its timed runs again "
                         "(with the clock's current prices) instead of running the engines")
    h.add_data_argument(ap)
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    runs = []
    if args.runs:
        with open(args.runs) as f:
            runs = json.load(f)["runs"]
        for run in runs:
            report(run)
    probe = Probe()
    if not args.runs:
        h.load_kernels()  # before the first timed run
        probe.install()
    cases = [] if args.runs or args.ipm_only else (
        be.cases(args.data) + (be.cases(args.data, large=True) if args.large else []))
    for name, Phi, y, K, penalty, groups, method, par in cases:
        if args.only and not any(s in name for s in args.only):
            continue
        solve = h.accelerated.hinge_reg if method == "hinge-reg" else h.accelerated.hinge_con
        for inner in ("cg", "pdhg"):
            cap = args.cap * (3 if name == "mnist-5000" and inner == "cg" else 1)
            probe.events = []
            p0 = list(probe.products)
            r, seconds = h.timed(solve, Phi, y, K, penalty, groups, tol=be.TOL, max_time=cap,
                                 inner=inner, **par)
            runs.append(dict(problem=name, penalty=penalty, method=method, inner=inner,
                             wall_s=seconds, rel_gap=float(r.rel_gap), events=probe.events,
                             n_products=probe.products[0] - p0[0],
                             madds=probe.products[1] - p0[1]))
            report(runs[-1])
    if not args.runs and not args.only:
        runs += ipm_runs(probe)
    prices = fit(runs)
    if args.ipm_only:
        prices = {k: v for k, v in prices.items() if k.startswith("HINGE_IPM")}
    print("\n| price | clock.py | fitted here |\n|---|---|---|")
    for key, value in prices.items():
        if key.endswith("_spread"):
            continue
        print(f"| {key} | {getattr(clk, key)} | {value if isinstance(value, list) else f'{value:.3g}'} |")
    for key in ("SIMPLEX_LOG", "IPM_LOG"):
        if key + "_spread" in prices:
            print(f"{key}: {json.dumps(prices[key + '_spread'])}")
    if args.json:  # the runs with their timed operations (``fit`` again from them)
        h.write_results(args.json, {"prices": prices, "runs": runs}, args)


if __name__ == "__main__":
    main()
