"""Column generation, PDHG, or both in turns: the engine for l1 and l1,inf (issue 16).

Question: for l1 and l1,inf, ``solver="accelerated"`` has two engines, column
generation (``inner="cg"``) and working-set PDHG (``inner="pdhg"``), and no rule on the
problem's size tells which one certifies a problem first (:mod:`bench_family`: both kinds
of winner have M / L from 0.05 to 8). How far apart are they on real and on dense noisy
problems, and what does the portfolio (``inner="portfolio"``, the default for l1 and
l1,inf: the two engines in turns of doubling length, column generation alone for its first
half second) cost against the faster of the two? Answered by::

    python benchmarks/bench_engines.py [--data MIRROR] [--cap 60] [--json engines.json]
    python benchmarks/bench_engines.py --large [--cap 300]   # E5's L = 5000, l1,inf/81

The problems (:func:`cases`; hinge-reg at ``lam``, hinge-con at ``eta``; tol 1e-4):

* ``mnist-<L>``: MNIST scattering features (M = 3969, K = 10) of L class-balanced seeded
  training images (:func:`_harness.mnist_scattering`, from the mirror), l1,inf with the 81
  channels of one position: L = 100 hinge-reg lam = 1 (E4's alpha), L = 500 hinge-con
  eta = 0.1 L (E5's size); with ``--large`` L = 5000, hinge-reg lam = 1 (E5's largest);
* ``digits``: scikit-learn's ``load_digits``, standardised, the 70 % stratified training
  split of ``random_state=0`` (L = 1257, M = 64, K = 10, constant pixels hence all-zero
  columns): l1 hinge-reg lam = 1, l1,inf with blocks of 8 hinge-con eta = 0.05 L;
* ``dense-LxMxK``: :func:`bench_family.dense_noisy` (Gaussian features, sparse ground
  truth, 15 % flipped labels) with :func:`bench_family.parameter`'s rule: (300, 2000, 5)
  l1 hinge-reg@2 and l1,inf/10 hinge-con; (1000, 500, 10) l1 and l1,inf/10 hinge-reg@5.

Each engine runs with ``max_time=--cap`` (``--engines`` picks them); a row gives each
engine's wall time and certified gap, and for the portfolio its time over the faster
engine's (when that one certified the tolerance), the engine its result came from, the
wall seconds each engine got and its seconds on the portfolio's work clock (what its turns
are measured in). One BLAS thread (:mod:`_harness`); the compiled kernels loaded before the
first run.
"""

import argparse
import json

import _harness as h  # one BLAS thread
import bench_family as bf

ENGINES = ("cg", "pdhg", "portfolio")
TOL = 1e-4


def digits():
    """Standardised ``load_digits``, the 70 % stratified training split of ``random_state=0``."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = datasets.load_digits(return_X_y=True)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return StandardScaler().fit(Xtr).transform(Xtr), ytr, 10


def cases(mirror, large=False):
    """``[(name, Phi, y, K, penalty, groups, method, {"lam" | "eta": value}), ...]``."""
    out = []
    n_max = 5000 if large else 500
    Xm, ym, _, _, _ = h.mnist_scattering(mirror, n_max)
    sizes = [(5000, "hinge-reg", 1.0)] if large else [(100, "hinge-reg", 1.0), (500, "hinge-con", 0.1)]
    for L, method, value in sizes:
        par = {"lam": value} if method == "hinge-reg" else {"eta": value * L}
        out.append((f"mnist-{L}", Xm[:L], ym[:L], 10, "l1inf", 81, method, par))
    if large:
        return out
    Xd, yd, K = digits()
    out.append(("digits", Xd, yd, K, "l1", None, "hinge-reg", {"lam": 1.0}))
    out.append(("digits", Xd, yd, K, "l1inf", 8, "hinge-con", {"eta": 0.05 * len(yd)}))
    for spec, combos in (((300, 2000, 5), (("l1", "hinge-reg", 2.0), ("l1inf", "hinge-con", 0.5))),
                         ((1000, 500, 10), (("l1", "hinge-reg", 5.0), ("l1inf", "hinge-reg", 5.0)))):
        L, M, K = spec
        Phi, y, K = bf.make_problem(dict(kind="dense", L=L, M=M, K=K))
        for penalty, method, factor in combos:
            groups = None if penalty == "l1" else 10
            par, _ = bf.parameter(method, factor, Phi, y, K, penalty, groups)
            out.append((f"dense-{L}x{M}x{K}", Phi, y, K, penalty, groups, method, par))
    return out


def run_case(case, engines, cap):
    """One row: every engine of ``engines`` on ``case`` at tol 1e-4, capped at ``cap`` s."""
    name, Phi, y, K, penalty, groups, method, par = case
    solve = h.accelerated.hinge_reg if method == "hinge-reg" else h.accelerated.hinge_con
    row = dict(problem=name, L=len(y), M=Phi.shape[1], K=K, penalty=penalty, groups=groups,
               method=method, **{k: float(v) for k, v in par.items()}, tol=TOL, cap=cap)
    for inner in engines:
        r, seconds = h.timed(solve, Phi, y, K, penalty, groups, tol=TOL, max_time=cap,
                             inner=inner, **par)
        row[f"{inner}_s"], row[f"{inner}_gap"] = seconds, float(r.rel_gap)
        if inner == "portfolio":
            row["portfolio_engine"] = r.settings["engine"]
            row["portfolio_engine_s"] = {k: round(v, 3) for k, v in r.settings["engine_seconds"].items()}
            row["portfolio_engine_work"] = {k: round(v, 3) for k, v in r.settings["engine_work"].items()}
    solved = [row[f"{e}_s"] for e in ("cg", "pdhg") if e in engines and row[f"{e}_gap"] <= TOL]
    if "portfolio" in engines and solved:
        row["portfolio_over_best"] = row["portfolio_s"] / min(solved)
    return row


def print_table(rows, engines):
    head = " | ".join(f"{e}: s (gap)" for e in engines)
    print(f"\n| problem | penalty | method, parameter | {head} | portfolio / faster engine |")
    print("|---|---|---|" + "---|" * len(engines) + "---|")
    for r in rows:
        par = f"lam {r['lam']:.3g}" if "lam" in r else f"eta {r['eta']:.3g}"
        pen = r["penalty"] + (f"/{r['groups']}" if r["groups"] else "")
        cells = " | ".join(f"{r[e + '_s']:.2f} ({r[e + '_gap']:.1e})" for e in engines)
        ratio = r.get("portfolio_over_best")
        print(f"| {r['problem']} | {pen} | {r['method']}, {par} | {cells} | "
              f"{'-' if ratio is None else f'{ratio:.2f}'} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cap", type=float, default=60.0, help="seconds per engine and problem")
    ap.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    ap.add_argument("--large", action="store_true",
                    help="only MNIST L = 5000, l1,inf/81, hinge-reg lam = 1 (E5's largest)")
    ap.add_argument("--only", nargs="+", default=None,
                    help="keep the problems whose name contains any of these, e.g. digits dense")
    h.add_data_argument(ap)
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    h.load_kernels()  # before the first timed call
    rows = []
    for case in cases(args.data, args.large):
        if args.only and not any(s in case[0] for s in args.only):
            continue
        rows.append(run_case(case, args.engines, args.cap))
        print(json.dumps(rows[-1]), flush=True)
        if args.json:
            h.write_results(args.json, {"rows": rows}, args)
    print_table(rows, args.engines)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)


if __name__ == "__main__":
    main()
