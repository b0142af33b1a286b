"""A benchmark family for the accelerated exact solver: where does each engine lose to Clarabel?

Question (issue 16, item 0): at a certified 1e-4 relative gap, is ``solver="accelerated"``
(``sparsesvm.solvers.accelerated.hinge``) at least 10x faster than CVXPY + Clarabel on
*every* problem of a family (not a pair of anchors), what is the worst ratio, and where
does each inner engine (column generation ``"cg"``, restarted PDHG ``"pdhg"``) lose (many
support vectors, large L, dense columns)? Answered by
``python benchmarks/bench_family.py --json family.json``.

The family (:data:`FAMILY`, roughly by cost; each with l1, l12 and l1inf, hinge-reg at
two parameters and hinge-con at one):

* ``dense``: Gaussian features N(0, 1), a sparse ground truth (5 active blocks of 10
  consecutive features, N(0, 1) weights), labels ``argmax(Phi W + 0.5 N(0, 1))`` of
  which 15 % are then flipped to a uniformly drawn other class; (L, M, K) in
  (100, 500, 3), (150, 1200, 5), (300, 2000, 5), (1000, 500, 10), (300, 5000, 3),
  (1000, 2000, 10); l12 and l1inf with within-class blocks of 10;
* ``leuk``: leukemia-like (``_harness.expression_like``: L=38, M=7129, K=3), blocks of 5;
* ``mnist``: MNIST-like (``_harness.scattering_like``: M=3969, K=10) at L = 30, 100, 500;
  l1inf with the 81 channels of one position, l12 with blocks of 9;
* ``news``: News20-like sparse CSR (``_harness.tfidf_like``: L=300, M=5000, K=10, 1 %
  non-zeros), blocks of 5.

The parameter (one per problem and method, a fixed rule):

* hinge-reg: ``lam = c * lam0`` for c = 2 and c = 5 (``hinge-reg@2``, ``hinge-reg@5``),
  with ``lam0 = 1 / ||Phi^T G0||_*``, ``G0`` the subgradient of the hinge at W = 0, b = 0
  that spreads each sample's unit weight evenly over its K - 1 wrong classes
  (``G0 = R / (K - 1) - onehot``) and ``||.||_*`` the penalty's dual norm: below about
  lam0 the optimum is W = 0. Measured on the dense problems: c = 2 gives a sparse solution
  with a positive hinge on a third to two thirds of the samples; c = 5 a sparse
  interpolating one (hinge 0, nearly every sample on the margin), the regime of many
  support vectors (the rows record support vectors and non-zeros);
* hinge-con: ``eta = 0.5 * L`` (alpha = 0.5; W = 0 has loss about L: the constraint is
  active).

For each (problem, penalty, method), in the same process:

* Clarabel through CVXPY with the scores S = Phi W + 1 b^T explicit (the form of
  ``bench_accelerated.clarabel``, Clarabel's default tolerances, ``time_limit=--cap``):
  its solve time (``solver_stats.solve_time``), wall time (CVXPY's compilation
  included), status, objective;
* the accelerated solver, ``inner="auto"``, tol = 1e-4, ``max_time=--cap``: wall time of
  the call, certified gap, engine chosen, objective;
* the other engine forced (``"pdhg"`` where auto took ``"cg"``, or where the portfolio of
  l1 and l1,inf returned column generation's point, ``"cg"`` otherwise: where it returned
  PDHG's or the interior point's), tol =
  1e-4, capped at min(--cap, max(5 s, Clarabel's wall time)): beyond that it has lost
  anyway (``--no-forced`` skips it).

The true relative gap of a run is ``(objective - p_ref) / p_ref`` with p_ref the best
(smallest) objective of Clarabel (when optimal) and the accelerated runs. The ratio is
Clarabel's *solve* time over the accelerated call's wall time (the conservative one:
CVXPY's compilation, which is often longer than the solve, is not counted; the ratio
against Clarabel's wall time is recorded too). At the optimum found, the rows record the
support vectors (samples with hinge > 0 or on the margin, ``1 + max_{k != y} s_k - s_y
>= -1e-6``), the non-zero weights and groups, the density of Phi.

Where Clarabel stops at its time limit (status ``user_limit``) and the accelerated run is
certified, the row gets a lower bound on the ratio (``acc_ratio_lower``, shown ``>= x``).
``--clarabel-from FILE``: Clarabel's results (status, times, objective) are read from an
earlier run's JSON for the rows it has (the same problem, penalty, method and parameter;
``clarabel_reused`` in the row), Clarabel is not run again for them: its time does not
depend on this package, and it is the slow part of the family (minutes a row from
L(K-1) = 9000 on). Its point is then not at hand: the rows' structure is that of the
accelerated solver's point.

Single BLAS thread (:mod:`_harness`); the compiled kernels loaded before the first row.
Rows are printed and (``--json``) written as each finishes; ``--budget`` seconds: no new
problem is started after that (what is left is listed as dropped). ``--quick``: two tiny
problems (a check that the script runs).

Usage::

    .venv/bin/python benchmarks/bench_family.py --json family.json
    .venv/bin/python benchmarks/bench_family.py --only dense-100x500 leuk --cap 120
    .venv/bin/python benchmarks/bench_family.py --only l1inf/hinge-con --no-forced
    .venv/bin/python benchmarks/bench_family.py --quick --json /tmp/q.json
    .venv/bin/python benchmarks/bench_family.py --clarabel-from family.json --no-forced
"""

import argparse
import json
import time
from pathlib import Path

import _harness as h  # one BLAS thread
import numpy as np
import scipy.sparse as sp

#: (name, generator keyword arguments, {penalty: block size}); roughly by Clarabel's cost,
#: one problem of each kind early (a budget-cut run still covers the kinds)
FAMILY = [
    ("dense-100x500x3", dict(kind="dense", L=100, M=500, K=3), dict(l12=10, l1inf=10)),
    ("leuk-38x7129x3", dict(kind="leuk"), dict(l12=5, l1inf=5)),
    ("mnist-30", dict(kind="mnist", L=30), dict(l12=9, l1inf=81)),
    ("dense-150x1200x5", dict(kind="dense", L=150, M=1200, K=5), dict(l12=10, l1inf=10)),
    ("news-300x5000x10", dict(kind="news", L=300, M=5000, K=10), dict(l12=5, l1inf=5)),
    ("dense-1000x500x10", dict(kind="dense", L=1000, M=500, K=10), dict(l12=10, l1inf=10)),
    ("mnist-100", dict(kind="mnist", L=100), dict(l12=9, l1inf=81)),
    ("dense-300x2000x5", dict(kind="dense", L=300, M=2000, K=5), dict(l12=10, l1inf=10)),
    ("mnist-500", dict(kind="mnist", L=500), dict(l12=9, l1inf=81)),
    ("dense-300x5000x3", dict(kind="dense", L=300, M=5000, K=3), dict(l12=10, l1inf=10)),
    ("dense-1000x2000x10", dict(kind="dense", L=1000, M=2000, K=10), dict(l12=10, l1inf=10)),
]
#: ``--quick``: two tiny problems, one (penalty, method) each
QUICK = [
    ("dense-40x60x3", dict(kind="dense", L=40, M=60, K=3), dict(l12=10, l1inf=10),
     [("l1inf", "hinge-reg", 2.0)]),
    ("leuk-38x300x3", dict(kind="leuk", M=300), dict(l12=5, l1inf=5), [("l12", "hinge-con", 0.5)]),
]
PENALTIES = ("l1", "l12", "l1inf")
#: (method, rule factor): lam = factor * lam0 for hinge-reg, eta = factor * L for hinge-con
SETTINGS = (("hinge-reg", 2.0), ("hinge-reg", 5.0), ("hinge-con", 0.5))
FLIP = 0.15
TOL = 1e-4


# ---------------------------------------------------------------------------
def dense_noisy(rng, L, M, K, n_active=5, block=10, noise=0.5, flip=FLIP):
    """Gaussian features, sparse block ground truth, argmax labels with ``flip`` flipped."""
    Phi = rng.standard_normal((L, M))
    W = np.zeros((M, K))
    blocks = rng.choice(M // block, size=min(n_active, M // block), replace=False)
    for b in blocks:
        W[b * block:(b + 1) * block] = rng.standard_normal((block, K))
    y = np.argmax(Phi @ W + noise * rng.standard_normal((L, K)), axis=1)
    flipped = rng.random(L) < flip
    y[flipped] = (y[flipped] + rng.integers(1, K, flipped.sum())) % K  # another class
    return Phi, y, K


def make_problem(spec, seed=0):
    """(Phi, y, K) of a :data:`FAMILY` entry's generator arguments."""
    rng = np.random.default_rng(seed)
    spec = dict(spec)
    kind = spec.pop("kind")
    if kind == "dense":
        return dense_noisy(rng, **spec)
    if kind == "leuk":
        return h.expression_like(rng, **spec)
    if kind == "mnist":
        return h.scattering_like(rng, **spec)
    if kind == "news":
        return h.tfidf_like(rng, **spec)
    raise ValueError(kind)


def parameter(method, factor, Phi, y, K, penalty, groups):
    """The rule of the module docstring: ``{"lam": ...}`` or ``{"eta": ...}``, and lam0."""
    L, M = Phi.shape
    onehot = np.zeros((L, K))
    onehot[np.arange(L), y] = 1.0
    G0 = (1.0 - onehot) / (K - 1) - onehot
    V = np.asarray(Phi.T @ G0)
    geo = h.make_penalty(penalty, None if penalty == "l1" else groups, M, K)
    lam0 = 1.0 / geo.dual_norm(V)
    if method == "hinge-reg":
        return {"lam": factor * lam0}, lam0
    return {"eta": factor * L}, lam0


def clarabel(Phi, y, K, method, penalty, gsize, par, cap):
    """CVXPY + Clarabel (defaults, ``time_limit=cap``), S = Phi W + 1 b^T explicit."""
    cp, W, b, cons, loss, g = h.clarabel_form(Phi, y, K, penalty, gsize)
    if method == "hinge-reg":
        prob = cp.Problem(cp.Minimize(g + par * loss), cons)
    else:
        prob = cp.Problem(cp.Minimize(g), cons + [loss <= par])
    t0 = time.perf_counter()
    try:
        prob.solve(solver="CLARABEL", time_limit=float(cap))
        status = prob.status
    except cp.error.SolverError as exc:
        status = f"error: {exc}"[:80]
    wall = time.perf_counter() - t0
    stats = prob.solver_stats
    solve = float(stats.solve_time) if stats is not None and stats.solve_time is not None else None
    ok = status == "optimal"
    X = np.vstack([W.value, b.value[None, :]]) if ok else None
    return dict(objective=float(prob.value) if ok else None, wall=wall, solve=solve,
                status=status, X=X)


def accelerated(Phi, y, K, method, penalty, gsize, par, cap, **opts):
    """The accelerated solver at tol 1e-4, capped; its result and the call's wall time."""
    solve = h.accelerated.hinge_reg if method == "hinge-reg" else h.accelerated.hinge_con
    groups = None if penalty == "l1" else gsize
    key = "lam" if method == "hinge-reg" else "eta"
    return h.timed(solve, Phi, y, K, penalty, groups, **{key: par}, tol=TOL, max_time=cap,
                   **opts)


def structure(Phi, y, K, X, penalty, gsize):
    """Support vectors, non-zero weights and groups of the point X (M + 1, K)."""
    L, M = Phi.shape
    S = np.asarray(Phi @ X[:-1]) + X[-1]
    st = S[np.arange(L), y]
    other = S.copy()
    other[np.arange(L), y] = -np.inf
    margin = 1.0 + other.max(axis=1) - st
    W = X[:-1]
    scale = max(np.abs(W).max(), 1e-300)
    nzw = np.abs(W) > 1e-6 * scale
    if penalty == "l1":
        groups = int(nzw.sum())
    else:
        nb = -(-M // gsize)
        pad = np.zeros((nb * gsize, K), dtype=bool)
        pad[:M] = nzw
        groups = int(pad.reshape(nb, gsize, K).any(axis=1).sum())
    return dict(n_sv=int((margin >= -1e-6).sum()), n_hinge_pos=int((margin > 1e-6).sum()),
                nnz_w=int(nzw.sum()), nnz_groups=groups)


def run_one(args, name, Phi, y, K, penalty, method, factor, gsize, reference=None):
    """One row: Clarabel (or its result in ``reference``, the rows of ``--clarabel-from``),
    the default accelerated solver and the other engine forced."""
    L, M = Phi.shape
    density = Phi.nnz / (L * M) if sp.issparse(Phi) else float(np.mean(Phi != 0))
    param, lam0 = parameter(method, factor, Phi, y, K, penalty, gsize)
    par = next(iter(param.values()))
    cl = reused_clarabel(reference, name, penalty, method, factor, param)
    if cl is None:
        cl = clarabel(Phi, y, K, method, penalty, gsize, par, args.cap)
    auto, auto_wall = accelerated(Phi, y, K, method, penalty, gsize, par, args.cap)
    engine = auto.settings.get("engine", auto.settings["inner"])  # the portfolio's: its result's
    runs = {"auto": (auto, auto_wall, args.cap)}
    if args.forced:
        other = "pdhg" if engine == "cg" else "cg"
        cap_f = min(args.cap, max(5.0, cl["wall"]))
        try:
            runs[other] = (*accelerated(Phi, y, K, method, penalty, gsize, par, cap_f,
                                        inner=other), cap_f)
        except Exception as exc:  # noqa: BLE001 (an engine that cannot take the problem)
            print(f"# {name} {penalty} {method} forced {other}: {exc}", flush=True)
    objs = [r.objective for r, _, _ in runs.values() if np.isfinite(r.objective)]
    if cl["objective"] is not None:
        objs.append(cl["objective"])
    pref = min(objs)
    lower = max(r.dual_objective for r, _, _ in runs.values())
    best_X = cl["X"] if cl["X"] is not None and cl["objective"] <= auto.objective else auto.X
    row = dict(problem=name, L=L, M=M, K=K, hinge_rows=L * (K - 1), density=density,
               sparse=bool(sp.issparse(Phi)), penalty=penalty, groups=gsize, method=method,
               factor=factor, **param, lam0=lam0, p_ref=pref, d_best=lower,
               clarabel_solve=cl["solve"], clarabel_wall=cl["wall"],
               clarabel_status=cl["status"], clarabel_objective=cl["objective"],
               clarabel_reused=bool(cl.get("reused")),
               clarabel_true_gap=(cl["objective"] - pref) / abs(pref)
               if cl["objective"] is not None else None,
               **structure(Phi, y, K, best_X, penalty, gsize))
    for label, (r, wall, cap) in runs.items():
        tag = "acc" if label == "auto" else f"forced_{label}"
        engine_name = r.settings["inner"] + (f" ({r.settings['engine']})" if "engine" in r.settings else "")
        row.update({f"{tag}_engine": engine_name, f"{tag}_wall": wall,
                    f"{tag}_time": r.time, f"{tag}_converged": bool(r.converged),
                    f"{tag}_cert_gap": r.rel_gap, f"{tag}_objective": r.objective,
                    f"{tag}_true_gap": (r.objective - pref) / abs(pref), f"{tag}_iter": r.n_iter,
                    f"{tag}_cap": cap})
        known = r.converged and cl["solve"] is not None
        ok, capped = (known and cl["status"] == s for s in ("optimal", "user_limit"))
        row[f"{tag}_ratio"] = cl["solve"] / wall if ok else None
        row[f"{tag}_ratio_wall"] = cl["wall"] / wall if ok else None
        row[f"{tag}_ratio_lower"] = cl["solve"] / wall if capped else None
    return row


def read_rows(path):
    """The rows of an earlier run's JSON (:func:`_harness.write_results`' form), or of its
    printed JSON lines (a log)."""
    text = Path(path).read_text()
    try:
        return json.loads(text)["rows"]
    except (json.JSONDecodeError, KeyError, TypeError):
        rows = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        if not rows:
            raise ValueError(f"--clarabel-from: no rows in {path}") from None
        return rows


def reused_clarabel(rows, name, penalty, method, factor, param):
    """Clarabel's result for this row from an earlier run's rows (``--clarabel-from``), in
    :func:`clarabel`'s form without the point, or None (not there)."""
    for r in rows or ():
        if (r["problem"], r["penalty"], r["method"], r["factor"]) != (name, penalty, method, factor):
            continue
        key, value = next(iter(param.items()))
        if not np.isclose(r[key], value, rtol=1e-12, atol=0.0):
            raise ValueError(f"--clarabel-from: {name} {penalty} {method}@{factor:g} has "
                             f"{key} = {r[key]!r}, this run {value!r}: another problem")
        return dict(objective=r["clarabel_objective"], wall=r["clarabel_wall"],
                    solve=r["clarabel_solve"], status=r["clarabel_status"], X=None, reused=True)
    return None


def plan(args):
    """[(name, spec, blocks, [(penalty, method, factor), ...]), ...] after --quick / --only."""
    if args.quick:
        return QUICK
    out = []
    for name, spec, blocks in FAMILY:
        combos = [(p, m, f) for p in args.penalties for m, f in SETTINGS
                  if not args.only or any(tok in f"{name}/{p}/{m}@{f:g}" for tok in args.only)]
        if combos:
            out.append((name, spec, blocks, combos))
    return out


def _ratio_text(row, tag):
    """The row's ratio for run ``tag``, ``>= x`` where Clarabel stopped at its time limit."""
    if row.get(f"{tag}_ratio_lower") is not None:
        return f">= {row[f'{tag}_ratio_lower']:.3g}"
    return h.fmt(row[f"{tag}_ratio"])


def print_tables(rows, dropped):
    """The results table, the worst ratio, and the rows below the 10x target by engine."""
    print("\n| problem | penalty | method | Clarabel solve (wall) s | accelerated s | ratio | "
          "engine | certified gap | true gap | forced other engine: s (gap) | SVs / L | "
          "nnz groups |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        forced = [k[len("forced_"):-len("_engine")] for k in r if k.startswith("forced_")
                  and k.endswith("_engine")]
        ftxt = "-"
        if forced:
            f = f"forced_{forced[0]}"
            ftxt = (f"{forced[0]}: {r[f + '_wall']:.3g}{'' if r[f + '_converged'] else ' (cap)'} "
                    f"({r[f + '_cert_gap']:.1e})")
        cs = "-" if r["clarabel_solve"] is None else f"{r['clarabel_solve']:.3g}"
        print(f"| {r['problem']} | {r['penalty']} | {r['method']}@{r['factor']:g} | {cs} "
              f"({r['clarabel_wall']:.3g}) {'' if r['clarabel_status'] == 'optimal' else r['clarabel_status']}"
              f"| {r['acc_wall']:.3g}{'' if r['acc_converged'] else ' (cap)'} | "
              f"{_ratio_text(r, 'acc')} | {r['acc_engine']} | {r['acc_cert_gap']:.1e} | "
              f"{r['acc_true_gap']:.1e} | {ftxt} | {r['n_sv']} / {r['L']} | {r['nnz_groups']} |")
    ratios = [r["acc_ratio"] for r in rows if r["acc_ratio"] is not None]
    lower = [r for r in rows if r.get("acc_ratio_lower") is not None]
    failed = [r for r in rows if r["acc_ratio"] is None and r.get("acc_ratio_lower") is None]
    if ratios:
        worst = min(rows, key=lambda r: np.inf if r["acc_ratio"] is None else r["acc_ratio"])
        print(f"\nworst ratio (Clarabel solve / accelerated): {worst['acc_ratio']:.3g} on "
              f"{worst['problem']} {worst['penalty']} {worst['method']}@{worst['factor']:g} "
              f"({worst['acc_engine']}); median {np.median(ratios):.3g}; "
              f"{sum(x >= 10 for x in ratios)} / {len(ratios)} rows at >= 10x")
    if lower:
        least = min(r["acc_ratio_lower"] for r in lower)
        print(f"{len(lower)} more rows where Clarabel stopped at its time limit: ratio >= "
              f"{least:.3g} on all of them")
    for r in failed:
        print(f"no ratio: {r['problem']} {r['penalty']} {r['method']}@{r['factor']:g} (accelerated converged "
              f"{r['acc_converged']}, Clarabel {r['clarabel_status']})")
    print("\nwhere each engine loses (ratio < 10 for the engine that ran):")
    print("| engine (auto / forced) | problem | penalty | method | L(K-1) | M | density | "
          "SVs | nnz groups | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        for tag in [k[:-len("_engine")] for k in r if k.endswith("_engine")]:
            lower = r.get(f"{tag}_ratio_lower")
            ratio = r[f"{tag}_ratio"] if lower is None else lower
            if ratio is None or ratio < 10:
                how = "auto" if tag == "acc" else "forced"
                print(f"| {r[tag + '_engine']} ({how}) | {r['problem']} | {r['penalty']} | "
                      f"{r['method']}@{r['factor']:g} | {r['hinge_rows']} | {r['M']} | {r['density']:.2g} | "
                      f"{r['n_sv']} | {r['nnz_groups']} | {_ratio_text(r, tag)} |")
    if dropped:
        print(f"\ndropped (budget): {', '.join(dropped)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cap", type=float, default=300.0,
                    help="seconds per solver run (Clarabel's time_limit, the accelerated "
                         "solver's max_time)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds: start no new problem after this (the rest is dropped)")
    ap.add_argument("--only", nargs="+", default=None,
                    help="keep the (problem/penalty/method) whose tag contains any of these, "
                         "e.g. dense-100x500 leuk l1inf/hinge-con")
    ap.add_argument("--penalties", nargs="+", choices=PENALTIES, default=list(PENALTIES))
    ap.add_argument("--no-forced", dest="forced", action="store_false",
                    help="skip the forced other engine")
    ap.add_argument("--quick", action="store_true", help="two tiny problems (a smoke test)")
    ap.add_argument("--clarabel-from", type=Path, default=None,
                    help="an earlier run's JSON: Clarabel's results read from its rows, not "
                         "solved again")
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    reference = read_rows(args.clarabel_from) if args.clarabel_from is not None else None
    h.load_kernels()  # before the first timed call
    t_start = time.perf_counter()
    rows, dropped = [], []
    for name, spec, blocks, combos in plan(args):
        if args.budget is not None and time.perf_counter() - t_start > args.budget:
            dropped.append(name)
            continue
        Phi, y, K = make_problem(spec)
        for penalty, method, factor in combos:
            if args.budget is not None and time.perf_counter() - t_start > args.budget:
                dropped.append(f"{name}/{penalty}/{method}@{factor:g}")
                continue
            row = run_one(args, name, Phi, y, K, penalty, method, factor, blocks.get(penalty, 1),
                          reference)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.json:
                h.write_results(args.json, dict(rows=rows, dropped=dropped), args)
    print_tables(rows, dropped)
    if args.json:
        h.write_results(args.json, dict(rows=rows, dropped=dropped), args)


if __name__ == "__main__":
    main()
