"""Time to a relative objective gap: accelerated solvers vs CVXPY/Clarabel (issue 6).

Anchor problems (the issue): leukemia (L=38, M=7129, K=3, standardised), l1inf
with within-class blocks of 5 genes, hinge-reg at alpha in {0.01, 0.1, 1} and
hinge-con at alpha in {0.01, 0.1}; MNIST, 10 training images per class
(L=100), kymatio scattering (M=3969), l1inf with groups of the 81 channels of
one position, hinge-reg at alpha in {0.1, 1} and hinge-con at alpha = 0.1.
lambda = 1/alpha, eta = alpha * L.

For every problem, in the same run:
* Clarabel through CVXPY with the scores S = Phi X as an explicit variable
  (spec section 6); its solve time (``solver_stats.solve_time``) and wall time;
* the default accelerated solver (column generation, exact LP master) run to
  a certified 1e-9 gap: times at which the *true* gap (against the reference
  optimum) first reaches 1e-4 and 1e-6;
* the certified stopping rule: the same solver with tol = 1e-4, its stopping
  time vs the time its own true gap first met 1e-4;
* (``--ingredients``) PDHG variants, each capped at ``--cap`` seconds:
  plain PDHG, + diagonal preconditioning, + Halpern restarts with primal
  weight, + both, + working sets.

The reference optimum is the smaller of Clarabel's objective and the
accelerated solver's certified primal value (whose certified gap is ~1e-10:
it pins the optimum more tightly than the interior point's 1e-8 tolerances).

Single BLAS thread (set before numpy is imported): the products are small and
threads only contend on the shared 2-core machines.

Usage::

    .venv/bin/python benchmarks/bench_accelerated.py                 # everything
    .venv/bin/python benchmarks/bench_accelerated.py --problems leuk --no-ingredients
    .venv/bin/python benchmarks/bench_accelerated.py --json out.json
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from sparsesvm import accelerated as acc  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

ANCHORS = [
    ("leukemia", "hinge-reg", 0.01), ("leukemia", "hinge-reg", 0.1), ("leukemia", "hinge-reg", 1.0),
    ("leukemia", "hinge-con", 0.01), ("leukemia", "hinge-con", 0.1),
    ("mnist100", "hinge-reg", 0.1), ("mnist100", "hinge-reg", 1.0), ("mnist100", "hinge-con", 0.1),
]
INGREDIENT_PROBLEMS = [("leukemia", "hinge-reg", 0.1), ("leukemia", "hinge-con", 0.1),
                       ("mnist100", "hinge-reg", 0.1)]
INGREDIENTS = {
    "pdhg": dict(inner="pdhg", restart="none", primal_weight=False, precondition="none",
                 working_set=False),
    "pdhg+diag": dict(inner="pdhg", restart="none", primal_weight=False, precondition="diag",
                      working_set=False),
    "pdhg+restart+pw": dict(inner="pdhg", restart="halpern", primal_weight=True,
                            precondition="none", working_set=False),
    "pdhg+restart+pw+diag": dict(inner="pdhg", restart="halpern", primal_weight=True,
                                 precondition="diag", working_set=False),
    "pdhg+restart+pw+ws": dict(inner="pdhg", restart="halpern", primal_weight=True,
                               precondition="none", working_set=True),
}


# ---------------------------------------------------------------------------
def load_leukemia(data):
    """Standardised leukemia training set: Phi (38, 7129), y in {0: ALL-B, 1: ALL-T, 2: AML}."""
    try:
        from sparsesvm import datasets

        ds = datasets.load_leukemia(data / "leukemia" / "data_set_ALL_AML_train.tsv",
                                    data / "leukemia" / "data_set_ALL_AML_independent.tsv",
                                    data / "leukemia" / "table_ALL_AML_samples.tsv")
        X, y = np.asarray(ds.X_train, dtype=float), np.asarray(ds.y_train)
    except Exception:  # the data helper's loader is not there: parse the TSVs here
        import pandas as pd

        tr = pd.read_csv(data / "leukemia" / "data_set_ALL_AML_train.tsv", sep="\t")
        cols = [c for c in tr.columns if str(c).strip().isdigit()]
        X = tr[cols].to_numpy(float).T
        s = pd.read_csv(data / "leukemia" / "table_ALL_AML_samples.tsv", sep="\t").set_index("Samples")
        y = np.array([2 if s.loc[int(c), "ALL.AML"] == "AML" else
                      (0 if s.loc[int(c), "T.B.cell"] == "B-cell" else 1) for c in cols])
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    return (X - X.mean(axis=0)) / sd, y


def load_mnist100(data, per_class=10, seed=0):
    """Scattering features (100, 3969) of 10 training images per class (seeded)."""
    with gzip.open(data / "mnist" / "train-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(data / "mnist" / "train-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    rng = np.random.default_rng(seed)
    idx = np.concatenate([rng.choice(np.flatnonzero(labels == k), per_class, replace=False)
                          for k in range(10)])
    try:
        from sparsesvm import features

        F = features.scattering(images[idx], J=2, L=8, progress=False)
    except Exception:  # position-major kymatio scattering, computed here
        from kymatio.scattering2d.frontend.numpy_frontend import ScatteringNumPy2D

        S = ScatteringNumPy2D(J=2, shape=(28, 28), L=8)(images[idx].astype(np.float32) / 255.0)
        F = S.reshape(len(idx), 81, 49).transpose(0, 2, 1).reshape(len(idx), -1)
    return np.asarray(F, dtype=float), labels[idx]


def clarabel(Phi, y, K, method, alpha, gsize):
    """CVXPY + Clarabel, S = Phi W + 1 b^T explicit, l1inf with within-class blocks."""
    import cvxpy as cp

    L, M = Phi.shape
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
    g = sum(cp.sum(cp.max(cp.abs(cp.reshape(Wp[:, k], (nb, gsize), order="C")), axis=1))
            for k in range(K))
    if method == "hinge-reg":
        prob = cp.Problem(cp.Minimize(g + loss / alpha), cons)
    else:
        prob = cp.Problem(cp.Minimize(g), cons + [loss <= alpha * L])
    t0 = time.perf_counter()
    prob.solve(solver="CLARABEL")
    wall = time.perf_counter() - t0
    return dict(objective=float(prob.value), wall=wall, solve=float(prob.solver_stats.solve_time))


def solve_acc(Phi, y, K, method, alpha, gsize, tol, max_time=None, **opts):
    L = len(y)
    if method == "hinge-reg":
        return acc.hinge_reg(Phi, y, K, "l1inf", gsize, lam=1.0 / alpha, tol=tol, trace=True,
                             max_time=max_time, **opts)
    return acc.hinge_con(Phi, y, K, "l1inf", gsize, eta=alpha * L, tol=tol, trace=True,
                         max_time=max_time, **opts)


def first_time(trace, pref, eps):
    """First trace time at which (objective - pref) / pref <= eps (None if never)."""
    gap = (np.asarray(trace["objective"]) - pref) / pref
    hit = np.flatnonzero(gap <= eps)
    return float(trace["time"][hit[0]]) if len(hit) else None


def fmt(t):
    return "-" if t is None else f"{t:.3g}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("SPARSESVM_MIRROR", DEFAULT_DATA)))
    ap.add_argument("--problems", choices=["all", "leuk", "mnist"], default="all")
    ap.add_argument("--no-ingredients", dest="ingredients", action="store_false")
    ap.add_argument("--cap", type=float, default=15.0, help="seconds per PDHG ingredient run")
    ap.add_argument("--json", type=Path, default=None, help="write all numbers here")
    args = ap.parse_args(argv)

    data = {}
    rows, ing_rows = [], []
    for ds, method, alpha in ANCHORS:
        if args.problems == "leuk" and ds != "leukemia" or args.problems == "mnist" and ds != "mnist100":
            continue
        if ds not in data:
            data[ds] = load_leukemia(args.data) if ds == "leukemia" else load_mnist100(args.data)
        Phi, y = data[ds]
        K = int(y.max()) + 1
        gsize = 5 if ds == "leukemia" else 81
        ref = clarabel(Phi, y, K, method, alpha, gsize)
        full = solve_acc(Phi, y, K, method, alpha, gsize, tol=1e-9)
        pref = min(ref["objective"], full.objective)
        cert = solve_acc(Phi, y, K, method, alpha, gsize, tol=1e-4)
        row = dict(dataset=ds, method=method, alpha=alpha, p_ref=pref,
                   clarabel_solve=ref["solve"], clarabel_wall=ref["wall"],
                   clarabel_rel_err=(ref["objective"] - pref) / pref,
                   t_1e4=first_time(full.trace, pref, 1e-4), t_1e6=first_time(full.trace, pref, 1e-6),
                   t_final=full.time, final_cert_gap=full.rel_gap,
                   cert_stop=cert.time, cert_true_1e4=first_time(cert.trace, pref, 1e-4),
                   cert_true_gap=(cert.objective - pref) / pref, cert_gap=cert.rel_gap,
                   nnz=int((np.abs(full.X[:-1]) > 0).sum()))
        row["speedup_1e4"] = ref["solve"] / row["t_1e4"] if row["t_1e4"] else None
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.ingredients and (ds, method, alpha) in INGREDIENT_PROBLEMS:
            for name, opts in INGREDIENTS.items():
                r = solve_acc(Phi, y, K, method, alpha, gsize, tol=1e-9, max_time=args.cap, **opts)
                ir = dict(dataset=ds, method=method, alpha=alpha, variant=name,
                          **{f"t_{e:g}": first_time(r.trace, pref, e) for e in (1e-2, 1e-3, 1e-4, 1e-6)},
                          final_true_gap=(min(r.trace["objective"]) - pref) / pref,
                          iterations=r.n_iter, cap=args.cap)
                ing_rows.append(ir)
                print(json.dumps(ir), flush=True)
            cg = dict(dataset=ds, method=method, alpha=alpha, variant="column generation (default)",
                      **{f"t_{e:g}": first_time(full.trace, pref, e) for e in (1e-2, 1e-3, 1e-4, 1e-6)},
                      final_true_gap=(full.objective - pref) / pref, iterations=full.n_iter, cap=None)
            ing_rows.append(cg)

    print("\n| problem | Clarabel solve (wall) s | t(1e-4) s | t(1e-6) s | speed-up at 1e-4 | "
          "certified stop (tol 1e-4) s | true 1e-4 reached s | ratio | Clarabel rel. err |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["cert_stop"] / r["cert_true_1e4"] if r["cert_true_1e4"] else None
        print(f"| {r['dataset']} {r['method']} a={r['alpha']:g} | {r['clarabel_solve']:.3g} "
              f"({r['clarabel_wall']:.3g}) | {fmt(r['t_1e4'])} | {fmt(r['t_1e6'])} | "
              f"{fmt(r['speedup_1e4'])}x | {r['cert_stop']:.3g} | {fmt(r['cert_true_1e4'])} | "
              f"{fmt(ratio)} | {r['clarabel_rel_err']:.1e} |")
    if ing_rows:
        print("\n| problem | variant | t(1e-2) | t(1e-3) | t(1e-4) | t(1e-6) | best true gap | iterations |")
        print("|---|---|---|---|---|---|---|---|")
        for r in ing_rows:
            print(f"| {r['dataset']} {r['method']} a={r['alpha']:g} | {r['variant']} | "
                  f"{fmt(r['t_0.01'])} | {fmt(r['t_0.001'])} | {fmt(r['t_0.0001'])} | "
                  f"{fmt(r['t_1e-06'])} | {r['final_true_gap']:.1e} | {r['iterations']} |")
    if args.json:
        args.json.write_text(json.dumps(dict(anchors=rows, ingredients=ing_rows), indent=1))


if __name__ == "__main__":
    main()
