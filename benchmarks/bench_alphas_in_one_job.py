"""What a grid job of alphas one after another saves against one job per alpha (issue 11, item 6).

Question: ``alphas_in_one_job`` (README, "Alphas in one job") runs the alphas of one method,
penalty, L and subset in one process, one fit after another, each fit as a job of its own
would run it; how much CPU does the full run save by it, and are the records the same?
Answered by the command under Usage below.

A grid job of k alphas in turn does the k fits of the k single jobs; what it saves is each
extra process: the interpreter, the imports (Snakemake's script preamble, numpy, the
package), the compiled kernels' loading, the features' reading and the exit, k - 1 times.
So each stratum of ``estimate_full_run.py`` (dataset x experiment x L x method) whose jobs
are grid jobs in turn (``<method>[in-turn]``) is measured on one of its grid jobs (drawn
with the same seeded draw as ``estimate_full_run.py``) cut to ``--alphas`` of its alphas
(drawn, seeded): that grid job and its single jobs, each a fresh process as the workflow
runs it (``estimate_full_run.run_one``: BLAS at one thread, CPU time of the child), back to
back in the same stretch of time. The saving of one extra alpha is ``(CPU of the singles -
CPU of the grid job) / (alphas - 1)``; over the full run, each stratum's saving per extra
alpha times its grid jobs' extra alphas (``sum(len(alphas) - 1)``), summed; the same with
the CPU beside the solver loops (job CPU minus the records' ``fit_time_s``), which leaves out
the fits' own run-to-run spread (several percent on a long fit, more than the saving). The records
(test errors, non-zeros, iterations, objective) of the two are compared.

The total CPU of the full run, against which the saving is a fraction, is
``estimate_full_run.py``'s (run on the job list of one job per alpha: ``--configfile`` a
file that sets ``alphas_in_one_job: false`` for every experiment, merged over
``config/config.yaml``).

Usage::

    python benchmarks/bench_alphas_in_one_job.py --configfile config/config.yaml \\
        --results /tmp/full --mirror ../shared/data --jobs-json /tmp/full/jobs.json \\
        --alphas 2 --seed 0 --src . --workers 2 --out /tmp/full/in_one_job.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from collections import defaultdict
from pathlib import Path

import estimate_full_run as e
import numpy as np

KEYS = ("test_errors", "nnz", "n_iter", "objective")


def in_turn(job):
    """Whether ``job`` is a grid job of alphas one after another."""
    return job.get("rule") == "train_grid" and not job["params"].get("side_by_side", True)


def cut(job, n_alphas, seed):
    """``job`` with ``n_alphas`` of its alphas (seeded by the job's wildcards), in grid order."""
    alphas = job["params"]["alphas"]
    key = json.dumps(job["wildcards"], sort_keys=True).encode()
    rng = np.random.default_rng([seed, zlib.crc32(key)])
    keep = sorted(rng.choice(len(alphas), size=min(n_alphas, len(alphas)), replace=False))
    return {**job, "params": {**job["params"], "alphas": [alphas[i] for i in keep]}}


def summarize(jobs, rows):
    """Per stratum: the measured pair, the saving per extra alpha and over the full run."""
    by_stratum = defaultdict(list)
    for j in jobs:
        if in_turn(j):
            by_stratum[e.stratum(j)].append(j)
    grids, singles_of = {}, defaultdict(list)  # a grid job and its single jobs share a key
    for r in rows:
        if "alpha" in r["wildcards"]:
            singles_of[e.grid_key(r["wildcards"])].append(r)
        else:
            grids[tuple(r["stratum"])] = r
    out, total, total_beside = [], 0.0, 0.0
    for key in sorted(by_stratum):
        grid = grids.get(key)
        singles = [] if grid is None else singles_of[e.grid_key(grid["wildcards"])]
        k = len(singles)
        if grid is None or k != len(grid["records"]):
            continue  # not measured, or not all of its single jobs
        single_cpu = sum(s["cpu_s"] for s in singles)
        per_alpha = (single_cpu - grid["cpu_s"]) / (k - 1)
        extra = sum(len(j["params"]["alphas"]) - 1 for j in by_stratum[key])
        pairs = list(zip(grid["records"], sorted(singles, key=lambda s: float(s["wildcards"]["alpha"])),
                         strict=True))
        same = {name: all(g[name] == s[name] for g, s in pairs) for name in KEYS}
        objective_diff = max(abs(g["objective"] - s["objective"]) / max(abs(s["objective"]), 1e-300)
                             for g, s in pairs)
        fit_single = sum(s["fit_time_s"] for s in singles)
        fit_grid = sum(r["fit_time_s"] for r in grid["records"])
        # the same without the fits' own run-to-run spread: CPU beside the solver loops
        beside = ((single_cpu - fit_single) - (grid["cpu_s"] - fit_grid)) / (k - 1)
        out.append({"stratum": list(key), "alphas": k, "singles_cpu_s": single_cpu,
                    "grid_cpu_s": grid["cpu_s"], "saving_per_extra_alpha_s": per_alpha,
                    "singles_fit_time_s": fit_single, "grid_fit_time_s": fit_grid,
                    "saving_beside_the_fits_per_extra_alpha_s": beside,
                    "grid_jobs": len(by_stratum[key]), "extra_alphas": extra,
                    "saving_cpu_hours": per_alpha * extra / 3600, "same": same,
                    "objective_rel_diff": objective_diff})
        total += per_alpha * extra / 3600
        total_beside += beside * extra / 3600
    measured = {tuple(r["stratum"]) for r in out}
    return {"strata": out, "saving_cpu_hours": total, "saving_beside_the_fits_cpu_hours": total_beside,
            "strata_unmeasured": [list(k) for k in sorted(by_stratum) if k not in measured]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configfile", default=str(e.ROOT / "config" / "config.yaml"))
    ap.add_argument("--results", required=True, help="results directory of the inputs")
    e.h.add_data_argument(ap, "--mirror")
    ap.add_argument("--jobs-json", help="job list: read if it exists, else written")
    ap.add_argument("--alphas", type=int, default=2, help="alphas of each measured grid job (>= 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--src", default=str(e.ROOT), help="the source tree that runs the jobs")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--cores", type=int, default=1, help="cores for making the inputs")
    ap.add_argument("--summarize", action="store_true", help="only summarize --out")
    ap.add_argument("--out", required=True, help="JSON lines (appended; resumable), and <out>.summary.json")
    args = ap.parse_args(argv)
    if args.alphas < 2:
        ap.error("--alphas must be at least 2 (the saving is per extra alpha)")

    config = {"results": str(Path(args.results).resolve()), "mirror": str(Path(args.mirror).resolve())}
    jobs = e.load_jobs(args.jobs_json, args.configfile, config)
    _, picked = e.draw([j for j in jobs if in_turn(j)], 1, args.seed)
    pairs = []
    for job in picked:
        grid = cut(job, args.alphas, args.seed)
        pairs += [grid, *e.grid_singles(grid)]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"{len(jobs)} jobs; {len(picked)} strata of grid jobs in turn; {len(pairs)} jobs to run",
          file=sys.stderr)
    if not args.summarize:
        e.make_inputs(pairs, args.configfile, config, args.cores)
        e.run_sample(pairs, {"src": args.src}, out, args.workers)
    report = summarize(jobs, [json.loads(line) for line in out.read_text().splitlines()])
    Path(f"{out}.summary.json").write_text(json.dumps(report, indent=1))
    for s in report["strata"]:
        print(f"{' '.join(s['stratum']):45s} {s['alphas']} alphas: singles {s['singles_cpu_s']:7.2f} s, "
              f"grid {s['grid_cpu_s']:7.2f} s, {s['saving_per_extra_alpha_s']:+.3f} s per extra alpha "
              f"x {s['extra_alphas']} = {s['saving_cpu_hours']:.4f} h; same {s['same']}, objectives "
              f"{s['objective_rel_diff']:.1e} apart", file=sys.stderr)
    print(f"saving over the full run: {report['saving_cpu_hours']:.3f} CPU-hours (beside the solver loops: "
          f"{report['saving_beside_the_fits_cpu_hours']:.3f}) "
          f"({len(report['strata'])} strata measured, {len(report['strata_unmeasured'])} not)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
