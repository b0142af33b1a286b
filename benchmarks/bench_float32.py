"""Single-precision products on real E2 / E3 jobs: what ``precision="single"`` changes.

Question: do float32 products with the features (``SparseSVC(precision="single")``,
:class:`sparsesvm.model.operator.MulticlassOperator` with ``dtype=numpy.float32``;
the iterates, the stopping measure and the objective stay float64) change the results
of the workflow's jobs by less than the spread between training subsets? Answered by::

    python benchmarks/bench_float32.py run --experiment e2 --L 30 --rows f32.jsonl
    python benchmarks/bench_float32.py run --experiment e2 --L 100 --rows f32.jsonl
    python benchmarks/bench_float32.py table --rows f32.jsonl

``run`` fits real jobs of the record run's stored features and subsets (``--results``,
default the checkout's ``results/record``): every method of ``--methods`` at its best
alpha of ``docs/results/<exp>/<exp>_best_alpha.csv`` (penalty and groups from there),
every training size of ``--L`` and subset of ``--subsets``, once per precision of
``--precisions``, with the config's ``tol``, ``max_iter`` and ``stopping``
(``config/config.yaml``, the experiment's entry), as a training job fits them
(:func:`sparsesvm.core.fit` on the subset's rows, then the whole test split). One
line of JSON per fit is appended to ``--rows`` (so a sample can be run in pieces);
fits already there are skipped. One BLAS thread (:mod:`_harness`).

``--alphas`` fits other alphas of the grid instead of the best one (e.g. its ends).

``table`` prints, per method, L and alpha, the float64 and float32 means of: test errors,
non-zeros, iterations, the objective at the stop (computed with float64 products for
both), the certified relative gap of the returned point and the fit time per
iteration; the largest change over the subsets (float32 - float64, job by job); and the
spread between subsets, the standard deviation over the subsets of the record's jobs
at that alpha (``docs/results/<exp>/<exp>_runs.csv``). The rule: float32 is adopted for
the workflow's jobs only if every change is below that spread (test errors, non-zeros,
objective; iterations reported beside it).
"""

import argparse
import json
from pathlib import Path

import _harness as h  # one BLAS thread
import numpy as np

#: the experiments' datasets (directory under results/record) and the record's tables
EXPERIMENTS = {"e2": "mnist", "e3": "news20"}
METRICS = ("test_errors", "nnz", "n_iter", "objective")


def config_entry(experiment):
    """``tol``, ``max_iter``, ``stopping`` and ``solver`` of ``experiment`` in config/config.yaml."""
    import yaml

    cfg = yaml.safe_load((h.ROOT / "config" / "config.yaml").read_text())
    exp = cfg["experiments"][experiment] if "experiments" in cfg else cfg[experiment]
    return {k: exp[k] for k in ("tol", "max_iter", "stopping", "solver")}


def best_alphas(experiment, methods, sizes):
    """``{(method, L): row}`` of ``<exp>_best_alpha.csv`` for the asked methods and sizes."""
    import csv

    path = h.ROOT / "docs" / "results" / experiment / f"{experiment}_best_alpha.csv"
    out = {}
    with path.open() as f:
        for r in csv.DictReader(f):
            if r["method"] in methods and int(r["L"]) in sizes:
                out[r["method"], int(r["L"])] = r
    return out


def record_runs(experiment):
    """The record's jobs: ``{(method, alpha, L, subset): row}`` of ``<exp>_runs.csv``."""
    import csv

    path = h.ROOT / "docs" / "results" / experiment / f"{experiment}_runs.csv"
    with path.open() as f:
        return {(r["method"], float(r["alpha"]), int(r["L"]), int(r["subset"])): r
                for r in csv.DictReader(f)}


def groups_value(text):
    return None if text in ("", "None") else (text if text == "features" else int(text))


def fit_job(features, subsets, job, cfg, test):
    """One training job at one precision: its row (results, time, iterations)."""
    core = h.package("core")
    idx = np.load(subsets / f"L~{job['L'] // job['K']}K" / f"subset~{job['subset']}.npy")
    X, y = h.load_features(features, "train", indices=idx)
    params = core.check_params(job["method"], job["penalty"], job["alpha"], float(cfg["tol"]),
                               int(cfg["max_iter"]), h.solvers.DEFAULT_STEP_RATIO, cfg["solver"],
                               cfg["stopping"], False, job["precision"])
    model = core.fit(params, X, y, groups=job["groups"])
    Xte, yte = test
    nnz = int(np.count_nonzero(model.coef))
    return dict(job, dtype=str(X.dtype), test_errors=int(np.count_nonzero(model.predict(Xte) != yte)),
                nnz=nnz, n_iter=model.n_iter, converged=model.converged, objective=model.objective,
                constraint_violation=model.constraint_violation, rel_gap=model.rel_gap,
                fit_time_s=model.fit_time, ms_per_iter=1e3 * model.fit_time / max(model.n_iter, 1))


def run(args):
    dataset = EXPERIMENTS[args.experiment]
    features = args.results / dataset / "features"
    subsets = args.results / dataset / "subsets"
    cfg = config_entry(args.experiment)
    K = len(h.package("load_meta")(features)["classes"])
    best = best_alphas(args.experiment, args.methods, args.L)
    done = set()
    if args.rows.exists():
        for line in args.rows.read_text().splitlines():
            r = json.loads(line)
            done.add((r["experiment"], r["method"], r["L"], r["alpha"], r["subset"], r["precision"]))
    test = h.load_features(features, "test", mmap=False)
    jobs = [(method, L, alpha, b) for (method, L), b in sorted(best.items())
            for alpha in (args.alphas or [float(b["alpha"])])]
    for method, L, alpha, b in jobs:
        for s in args.subsets:
            for precision in args.precisions:
                key = (args.experiment, method, L, alpha, s, precision)
                if key in done:
                    continue
                job = dict(experiment=args.experiment, method=method, penalty=b["penalty"],
                           groups=groups_value(b["groups"]), alpha=alpha, L=L, K=K,
                           subset=s, precision=precision, **cfg)
                row = fit_job(features, subsets, job, cfg, test)
                print(json.dumps(row), flush=True)
                with args.rows.open("a") as f:
                    f.write(json.dumps(row) + "\n")


def summarise(rows, record):
    """One table row per (experiment, method, L): means, largest changes and the spread."""
    by = {}
    for r in rows:
        by.setdefault((r["experiment"], r["method"], r["L"], r["alpha"]), {}).setdefault(
            r["subset"], {})[r["precision"]] = r
    table = []
    for (exp, method, L, alpha), subs in sorted(by.items()):
        pairs = [(p["double"], p["single"]) for p in subs.values() if {"double", "single"} <= set(p)]
        if not pairs:
            continue
        rec = [r for (m, a, ll, _), r in record[exp].items() if m == method and a == alpha and ll == L]
        out = dict(experiment=exp, method=method, L=L, alpha=alpha, n_subsets=len(pairs))
        for m in METRICS:
            d = np.array([a[m] for a, _ in pairs], float)
            s = np.array([b[m] for _, b in pairs], float)
            change = s - d
            out[m] = (float(d.mean()), float(s.mean()))
            out[f"{m}_max_change"] = float(change[np.argmax(np.abs(change))])
            vals = np.array([float(r[m]) for r in rec]) if rec else np.array([])
            out[f"{m}_sd"] = float(vals.std(ddof=1)) if vals.size > 1 else float("nan")
        out["objective_max_rel_change"] = float(max(abs(b["objective"] - a["objective"]) / abs(a["objective"])
                                                    for a, b in pairs))
        out["rel_gap"] = (float(np.mean([a["rel_gap"] for a, _ in pairs])),
                          float(np.mean([b["rel_gap"] for _, b in pairs])))
        out["ms_per_iter"] = (float(np.mean([a["ms_per_iter"] for a, _ in pairs])),
                              float(np.mean([b["ms_per_iter"] for _, b in pairs])))
        # no change at all counts as below (a spread of 0: e.g. every subset at W = 0)
        out["below_spread"] = all(out[f"{m}_max_change"] == 0 or abs(out[f"{m}_max_change"]) < out[f"{m}_sd"]
                                  for m in ("test_errors", "nnz", "objective"))
        table.append(out)
    return table


def markdown(table):
    head = ("| job | test errors 64 / 32 (max change; sd) | non-zeros 64 / 32 (max change; sd) "
            "| iterations 64 / 32 (max change; sd) | objective 64 / 32 (max change; sd) "
            "| certified gap 64 / 32 | ms / iteration 64 / 32 | below spread |")
    lines = [head, "|" + "---|" * 8]
    for t in table:
        cells = [f"{t['experiment'].upper()} {t['method']} L = {t['L']}, alpha {t['alpha']:g} "
                 f"({t['n_subsets']} subsets)"]
        for m in ("test_errors", "nnz", "n_iter"):
            a, b = t[m]
            cells.append(f"{a:.1f} / {b:.1f} ({t[f'{m}_max_change']:+.0f}; {t[f'{m}_sd']:.1f})")
        a, b = t["objective"]
        cells.append(f"{a:.6g} / {b:.6g} ({t['objective_max_change']:+.1e}, relative "
                     f"{t['objective_max_rel_change']:.0e}; {t['objective_sd']:.2g})")
        cells.append(f"{t['rel_gap'][0]:.3f} / {t['rel_gap'][1]:.3f}")
        cells.append(f"{t['ms_per_iter'][0]:.2f} / {t['ms_per_iter'][1]:.2f}")
        cells.append("yes" if t["below_spread"] else "no")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fit the sampled jobs at each precision (appends to --rows)")
    r.add_argument("--experiment", choices=sorted(EXPERIMENTS), default="e2")
    r.add_argument("--results", type=Path, default=h.ROOT / "results" / "record",
                   help="the record run's results (features and subsets)")
    r.add_argument("--methods", nargs="+", default=["hinge-reg", "hinge-con"])
    r.add_argument("--L", type=int, nargs="+", default=[30, 100], help="training sizes (L)")
    r.add_argument("--alphas", type=float, nargs="+", default=None,
                   help="these alphas instead of each method's best one")
    r.add_argument("--subsets", type=int, nargs="+", default=[0, 1, 2])
    r.add_argument("--precisions", nargs="+", default=["double", "single"])
    r.add_argument("--rows", type=Path, required=True, help="JSON lines, one per fit (appended)")
    t = sub.add_parser("table", help="the table of --rows against the record's spread")
    t.add_argument("--rows", type=Path, required=True)
    h.add_output_argument(t)
    args = ap.parse_args(argv)
    h.check_blas(1)
    if args.command == "run":
        run(args)
        return
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    record = {e: record_runs(e) for e in {r["experiment"] for r in rows}}
    table = summarise(rows, record)
    print(markdown(table))
    if args.json:
        h.write_results(args.json, {"table": table, "rows": rows}, args)


if __name__ == "__main__":
    main()
