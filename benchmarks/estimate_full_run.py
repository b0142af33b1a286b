"""CPU-hours of a config's training jobs, from a stratified sample run as the workflow runs them.

Question: how many CPU-hours does a config's reproduction cost, and how does a code change
move it on the same jobs? Answered by the command under Usage below.

Issue 11, item 1. Steps:

1. **The job list from Snakemake itself.** The workflow is loaded through
   Snakemake's Python API and its DAG built with ``forceall`` (every job, as
   on a fresh results directory); the ``train`` and ``train_grid`` jobs (a grid's
   alphas side by side, ``side_by_side`` in the config) are taken from it with
   their wildcards, their evaluated ``params.settings`` (method, groups, tol,
   max_iter, solver, stopping: the config's own caps), inputs, outputs, log
   and threads. Nothing of the grid is re-implemented here. The list is saved
   (``--jobs-json``) so that a second run (other source tree) uses the same
   jobs without rebuilding the DAG.
2. **A stratified sample.** Strata: dataset x experiment x training size x
   method (the path segment, e.g. ``hinge-reg+accelerated``; ``hinge-reg[grid]``
   for the grid jobs; the penalties of a stratum are pooled: E2-E4 have one per
   method, E1 and E5's largest size several); from each, ``--per-stratum`` jobs drawn without replacement
   (seeded), so every stratum is measured with several alphas and subsets.
3. **The inputs.** The sampled jobs' inputs (features, subset files) are made
   by Snakemake (``snakemake <inputs> --cores N``) in ``--results``; not timed
   here (feature extraction is outside the training jobs' count).
4. **Each sampled job as the workflow runs it:** a fresh Python process
   executes the tree's own ``workflow/scripts/train.py`` (``train_grid.py``) with a ``snakemake``
   object carrying that job's wildcards, params, input, log, threads (what
   Snakemake's script preamble injects; its imports, ``snakemake.io`` and
   ``snakemake.script``, are done first as in a real job), BLAS at one
   thread, output written to a scratch directory. The parent measures the
   child's **CPU time** (user + system, ``os.wait4``; robust to a shared
   machine, unlike wall time) and its wall time, and reads the record
   (``fit_time_s``, ``n_iter``, test errors, non-zeros, objective: to check
   that results are unchanged between two source trees).
5. **Extrapolation.** ``total = sum_h N_h * mean_h`` (N_h jobs in stratum h,
   mean_h its sampled mean CPU seconds); a 90 % interval by bootstrap,
   resampling the sampled jobs within each stratum (2000 replicates); the same
   per experiment and per method. A stratum sampled once contributes no
   spread (said in the output: ``strata_sampled_once``).

Usage::

    python benchmarks/estimate_full_run.py --configfile config/config.yaml \\
        --results /tmp/full --mirror ../shared/data --per-stratum 2 --seed 0 \\
        --jobs-json /tmp/full/jobs.json --src before=/tmp/old after=. --workers 2 \\
        --out /tmp/full/est.jsonl

``--pair-grids``: each measured grid job (``train_grid``, a grid's alphas side by side) is
run again, beside the single ``train`` jobs of its alphas on the same subset with the same
tree (``<out>.pairs.jsonl``: the two in the same stretch of time); the summary compares
the two on the same subsets, per grid stratum and extrapolated (``grid_pairs``: CPU-hours
as single jobs and as grid jobs, the records' test errors, non-zeros, iterations and
objectives), and gives the total the job list would cost with single jobs instead.

``--src NAME=DIR ...``: the source trees whose ``src/`` and
``workflow/scripts/train.py`` run each sampled job, back to back (e.g. a
``git archive`` of an older commit and this tree: before and after a change
on the same jobs, whose records are compared: test errors, non-zeros,
objective). Each measured job is appended to ``--out`` (JSON lines) as soon
as it ends, so a run can be stopped and resumed (measured jobs are skipped)
or summarised early (``--summarize``; the sample is run in rounds, one job of
every stratum first). The summary goes to ``<out>.summary.json``. ``--list``
prints the strata and stops. Two job lists may share ``--out`` (each stratum
draws the same jobs in both, and each summary counts only its own strata): for
example ``--configfile`` a file holding ``share_runs: false`` (the workflow
merges it over ``config/config.yaml``), then ``config/config.yaml`` itself,
whose sample is a subset of the first's. ``--experiments e3``: one experiment's jobs of the
list alone (the same draws as in the whole list), e.g. to measure a change that touches
only that experiment's jobs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zlib
from collections import defaultdict
from pathlib import Path

import _harness as h  # one BLAS thread
import numpy as np

ROOT = h.ROOT

# The child: Snakemake's script-preamble imports, then the job's own script with the job's
# `snakemake` object (the attributes train.py reads), as `snakemake ... script:` runs it.
CHILD = r"""
import json, sys
job = json.loads(sys.argv[1])
import snakemake.io, snakemake.script  # what the preamble imports to unpickle the object

class _NS(list):
    def __init__(self, items, named):
        super().__init__(items)
        self.__dict__.update(named)

snakemake = type("Snakemake", (), {})()
snakemake.input = _NS(list(job["input"].values()), job["input"])
snakemake.output = _NS(job["output"], {})
snakemake.log = _NS(job["log"], {})
snakemake.params = _NS([job["params"]["settings"]], job["params"])
snakemake.wildcards = _NS(list(job["wildcards"].values()), job["wildcards"])
snakemake.threads = job["threads"]
script = job["script"]
sys.argv = [script]
sys.path.insert(0, script.rsplit("/", 1)[0])  # as Snakemake does: the script's helpers (_job.py)
code = compile(open(script).read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script, "snakemake": snakemake})
"""


def list_jobs(configfile, config, snakefile):
    """Every ``train`` job of the config's DAG, from Snakemake's API (forceall)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    with SnakemakeApi(OutputSettings(quiet=None)) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                          config_settings=ConfigSettings(configfiles=[Path(configfile)],
                                                         config=config),
                          snakefile=Path(snakefile), workdir=Path(snakefile).parent)
        dag_api = wf.dag(DAGSettings(forceall=True))
        workflow = dag_api.workflow_api._workflow
        workflow.dag_settings = dag_api.dag_settings
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True,
                              nolock=True)
        workflow._build_dag()
        jobs = []
        for job in workflow.dag.jobs:
            if job.rule.name not in SCRIPTS:
                continue
            jobs.append({
                "rule": job.rule.name,
                "wildcards": dict(job.wildcards.items()),
                "params": {k: v for k, v in job.params.items()},
                "input": {k: str(v) for k, v in job.input.items()},
                "output": [str(p) for p in job.output],
                "log": [str(p) for p in job.log],
                "threads": int(job.threads),
            })
    jobs.sort(key=lambda j: j["output"][0])
    return jobs


#: the training rules and their scripts (a job list written before ``train_grid`` existed
#: holds ``train`` jobs only, without a ``rule`` field)
SCRIPTS = {"train": "train.py", "train_grid": "train_grid.py"}


def load_jobs(jobs_json, configfile, config):
    """The job list: read from ``jobs_json`` if it exists, else from Snakemake's DAG
    (:func:`list_jobs`) and written there (when given)."""
    if jobs_json and Path(jobs_json).exists():
        return json.loads(Path(jobs_json).read_text())
    t0 = time.perf_counter()
    jobs = list_jobs(configfile, config, ROOT / "Snakefile")
    print(f"DAG: {len(jobs)} training jobs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if jobs_json:
        Path(jobs_json).parent.mkdir(parents=True, exist_ok=True)
        Path(jobs_json).write_text(json.dumps(jobs))
    return jobs


def make_inputs(jobs, configfile, config, cores):
    """Make the inputs of ``jobs`` that do not exist yet (features, subset files) with
    Snakemake, not timed (feature extraction is outside the training jobs' count)."""
    missing = sorted({p for j in jobs for p in j["input"].values() if not Path(p).exists()})
    if not missing:
        return
    # Snakemake of this interpreter (a virtual environment need not be activated)
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", configfile,
           "--config", *(f"{k}={v}" for k, v in config.items()), "--snakefile",
           str(ROOT / "Snakefile"), "--directory", str(ROOT), *missing]
    print("making inputs:", " ".join(cmd[2:10]), f"... ({len(missing)} targets)", file=sys.stderr)
    subprocess.run(cmd, check=True)


def grid_key(wildcards):
    """A grid job's wildcards, or a single job's without its alpha: the key that a grid job and
    the single jobs of its alphas share."""
    return json.dumps({k: v for k, v in wildcards.items() if k != "alpha"}, sort_keys=True)


def stratum(job):
    """dataset, experiment, training size, method (the path segment; ``<method>[grid]`` for a
    grid job whose alphas run side by side, ``<method>[in-turn]`` for one whose alphas run one
    after another); penalties pooled."""
    w = job["wildcards"]
    grid = ""
    if job.get("rule", "train") == "train_grid":
        grid = "[grid]" if job.get("params", {}).get("side_by_side", True) else "[in-turn]"
    return (w["dataset"], w["experiment"], w["L"], w["method"] + grid)


def select_experiments(jobs, experiments):
    """The jobs of the given experiments (all jobs if none given). Each stratum draws from
    its own generator (:func:`draw`), so a selection draws the jobs the whole list draws in
    those experiments: one experiment measured alone, the rest of the sample left as it is.

    Raises
    ------
    ValueError
        An experiment that has no job in the list (a typo, or one the config does not run).
    """
    if not experiments:
        return jobs
    have = {j["wildcards"]["experiment"] for j in jobs}
    missing = sorted(set(experiments) - have)
    if missing:
        raise ValueError(f"no jobs of experiment(s) {missing} in the job list; it has {sorted(have)}")
    return [j for j in jobs if j["wildcards"]["experiment"] in experiments]


def draw(jobs, per_stratum, seed):
    """``per_stratum`` jobs of each stratum (all of a smaller one), seeded, in run order.

    The order is by rounds: one job of every stratum (strata in random order),
    then a second of every stratum, and so on, so that a run stopped early
    still covers every stratum once it has passed the first round. Each stratum
    draws from its own generator (the seed and the stratum's name), so that two
    job lists which differ by whole strata (``share_runs`` on and off) draw the
    same jobs from the strata they have in common.
    """
    rng = np.random.default_rng(seed)
    groups = defaultdict(list)
    for j in jobs:
        groups[stratum(j)].append(j)
    picks = {}
    for key in sorted(groups):
        members = groups[key]
        own = np.random.default_rng([seed, zlib.crc32("/".join(key).encode())])
        picks[key] = [members[i] for i in
                      own.choice(len(members), size=min(per_stratum, len(members)), replace=False)]
    sample = []
    for r in range(per_stratum):
        keys = [k for k in sorted(picks) if len(picks[k]) > r]
        sample.extend(picks[keys[i]][r] for i in rng.permutation(len(keys)))
    return groups, sample


def run_one(job, src, scratch):
    """Run one job in a fresh process; CPU and wall seconds and the record."""
    job = json.loads(json.dumps(job))
    name = "_".join(f"{k}-{v}" for k, v in job["wildcards"].items())
    out = Path(scratch) / f"{name}.json"
    job["output"] = [str(out)]
    job["log"] = [str(Path(scratch) / f"{name}.log")]
    job["script"] = str(Path(src) / "workflow" / "scripts" / SCRIPTS[job.get("rule", "train")])
    proc = h.run_fresh(CHILD, json.dumps(job), env=h.child_env(Path(src) / "src"), check=False)
    if proc.returncode != 0 or not out.exists():
        log = Path(job["log"][0])
        raise RuntimeError(f"job {name} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
                           f"\n{log.read_text()[-2000:] if log.exists() else ''}")
    rec = json.loads(out.read_text())
    keep = ("fit_time_s", "fit_wall_time_s", "n_iter", "converged", "test_errors", "nnz",
            "objective", "constraint_violation")
    if isinstance(rec, list):  # a grid job: its alphas' records, and their totals to compare
        return {"cpu_s": proc.cpu_s, "wall_s": proc.wall_s,
                "fit_time_s": max(r["fit_time_s"] for r in rec),
                "fit_wall_time_s": rec[0]["fit_wall_time_s"],
                "n_iter": sum(r["n_iter"] for r in rec),
                "converged": all(r["converged"] for r in rec),
                "test_errors": sum(r["test_errors"] for r in rec), "nnz": sum(r["nnz"] for r in rec),
                "objective": sum(r["objective"] for r in rec),
                "constraint_violation": max(r["constraint_violation"] for r in rec),
                "records": [{"alpha": r["alpha"], **{k: r.get(k) for k in keep}} for r in rec]}
    return {"cpu_s": proc.cpu_s, "wall_s": proc.wall_s,
            **{k: rec.get(k) for k in keep}}


def extrapolate(groups, results, n_boot=2000, seed=0):
    """Totals (CPU-hours) with 90 % bootstrap intervals, overall, per experiment, per method.

    Only strata with a measured job count (``strata_missing`` lists the others:
    the totals then cover fewer jobs, said in ``jobs``).
    """
    rng = np.random.default_rng(seed)
    by_key = defaultdict(list)
    for r in results:
        by_key[tuple(r["stratum"])].append(r["cpu_s"])
    strata = sorted(by_key)
    N = np.array([len(groups[k]) for k in strata], dtype=float)
    boots = np.empty((n_boot, len(strata)))
    means = np.empty(len(strata))
    for i, k in enumerate(strata):
        c = np.asarray(by_key[k])
        means[i] = c.mean()
        boots[:, i] = rng.choice(c, size=(n_boot, c.size), replace=True).mean(axis=1)
    contrib, boot_contrib = N * means / 3600.0, boots * N / 3600.0

    def summary(mask):
        tot = boot_contrib[:, mask].sum(axis=1)
        return {"cpu_hours": float(contrib[mask].sum()),
                "ci90": [float(np.percentile(tot, 5)), float(np.percentile(tot, 95))],
                "jobs": int(N[mask].sum()),
                "sampled": int(sum(len(by_key[k]) for k, m in zip(strata, mask, strict=True) if m))}

    out = {"total": summary(np.ones(len(strata), bool)), "by_experiment": {}, "by_method": {}}
    for label, idx in (("by_experiment", 1), ("by_method", 3)):
        for v in sorted({k[idx] for k in strata}):
            out[label][v] = summary(np.array([k[idx] == v for k in strata]))
    out["strata"] = [{"stratum": list(k), "jobs": int(n), "sampled": len(by_key[k]),
                      "mean_cpu_s": float(m)} for k, n, m in zip(strata, N, means, strict=True)]
    out["strata_sampled_once"] = int(sum(len(by_key[k]) == 1 for k in strata))
    out["strata_missing"] = [list(k) for k in sorted(groups) if k not in by_key]
    out["jobs_missing"] = int(sum(len(groups[k]) for k in groups if k not in by_key))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configfile", default=str(ROOT / "config" / "config.yaml"))
    ap.add_argument("--results", required=True, help="results directory of the inputs")
    h.add_data_argument(ap, "--mirror")
    ap.add_argument("--per-stratum", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs-json", help="job list: read if it exists, else written")
    ap.add_argument("--src", nargs="+", default=[f"this={ROOT}"],
                    help="NAME=DIR source trees that run each sampled job, back to back "
                         "(e.g. before=/tmp/old after=.)")
    ap.add_argument("--workers", type=int, default=1, help="jobs run at the same time")
    ap.add_argument("--summarize", action="store_true",
                    help="only extrapolate from the --out JSONL written so far")
    ap.add_argument("--cores", type=int, default=1, help="cores for making the inputs")
    ap.add_argument("--list", action="store_true", help="print the strata and stop")
    ap.add_argument("--experiments", nargs="+", default=None, metavar="EXP",
                    help="only these experiments' jobs (e.g. e3): the same draws as in the "
                         "whole job list, extrapolated over their jobs alone")
    ap.add_argument("--pair-grids", action="store_true",
                    help="also run each measured grid job's alphas as single jobs (same tree): "
                         "the grid jobs' paired cost, in <out>.pairs.jsonl and the summary")
    ap.add_argument("--out", required=True,
                    help="JSON lines, one per measured job and tree (appended; read by "
                         "--summarize), and <out>.summary.json")
    args = ap.parse_args(argv)

    config = {"results": str(Path(args.results).resolve()),
              "mirror": str(Path(args.mirror).resolve())}
    jobs = load_jobs(args.jobs_json, args.configfile, config)
    try:
        jobs = select_experiments(jobs, args.experiments)
    except ValueError as err:
        ap.error(str(err))
    groups, sample = draw(jobs, args.per_stratum, args.seed)
    print(f"{len(jobs)} jobs, {len(groups)} strata, {len(sample)} sampled", file=sys.stderr)
    if args.list:
        for k in sorted(groups):
            print(k, len(groups[k]))
        return 0

    trees = dict(t.split("=", 1) for t in args.src)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)  # before any job: the workers append to it
    if not args.summarize:
        make_inputs(sample, args.configfile, config, args.cores)
        run_sample(sample, trees, out, args.workers)
        if args.pair_grids:
            run_grid_pairs(jobs, out, trees, args.workers)
    summarize(groups, out, trees, args, len(jobs), len(sample))
    return 0


def grid_singles(job):
    """The single ``train`` jobs that a grid job's records stand for: its wildcards with each
    of its alphas, its settings and inputs (the outputs are set by :func:`run_one`)."""
    return [{**job, "rule": "train", "wildcards": {**job["wildcards"], "alpha": alpha},
             "params": {k: v for k, v in job["params"].items() if k != "alphas"}}
            for alpha in job["params"]["alphas"]]


def run_grid_pairs(jobs, out, trees, workers):
    """``--pair-grids``: each measured grid job again, then its alphas as single jobs (same
    trees, subset and settings), by :func:`run_sample` into ``<out>.pairs.jsonl``: the two in
    the same stretch of time (this machine's speed drifts by tens of percent within an hour)."""
    grids = {json.dumps(j["wildcards"], sort_keys=True): j for j in jobs if j.get("rule") == "train_grid"}
    measured = {json.dumps(r["wildcards"], sort_keys=True) for r in map(json.loads, out.read_text().splitlines())}
    pairs = [job for key in sorted(measured & set(grids)) for job in [grids[key], *grid_singles(grids[key])]]
    print(f"{len(pairs)} jobs: the measured grid jobs and their single jobs", file=sys.stderr)
    run_sample(pairs, trees, out.with_name(out.name + ".pairs.jsonl"), workers)


def grid_pair_summary(groups, out, name):
    """Grid jobs against their single jobs (``--pair-grids``): per grid stratum the two CPU
    times of the measured grid job, extrapolated over the stratum's jobs, and the records."""
    pairs = out.with_name(out.name + ".pairs.jsonl")
    if not pairs.exists():
        return None
    singles, again = defaultdict(dict), {}
    for r in map(json.loads, pairs.read_text().splitlines()):
        if r["tree"] != name:
            continue
        if "alpha" not in r["wildcards"]:  # the grid job, measured again beside its single jobs
            again[grid_key(r["wildcards"])] = r
            continue
        singles[grid_key(r["wildcards"])][r["wildcards"]["alpha"]] = r
    rows, same, n_rec, iters, obj = [], 0, 0, defaultdict(int), 0.0
    for r in map(json.loads, out.read_text().splitlines()):
        key = grid_key(r["wildcards"])
        if r["tree"] != name or "records" not in r or tuple(r["stratum"]) not in groups:
            continue
        r = again.get(key, r)
        mine = singles.get(key, {})
        if len(mine) < len(r["records"]):
            continue  # not all of its single jobs measured
        cpu = sum(s["cpu_s"] for s in mine.values())
        for rec in r["records"]:
            s = mine[repr(float(rec["alpha"]))]
            n_rec += 1
            same += s["test_errors"] == rec["test_errors"] and s["nnz"] == rec["nnz"]
            iters[s["n_iter"] - rec["n_iter"]] += 1
            obj = max(obj, abs(s["objective"] - rec["objective"]) / max(abs(s["objective"]), 1e-300))
        n = len(groups[tuple(r["stratum"])])
        rows.append({"stratum": r["stratum"], "subset": r["wildcards"]["subset"], "alphas": len(mine),
                     "singles_cpu_s": cpu, "grid_cpu_s": r["cpu_s"], "ratio": r["cpu_s"] / cpu,
                     "jobs": n, "saving_cpu_hours": n * (cpu - r["cpu_s"]) / 3600})
    if not rows:
        return None
    single_h = sum(r["jobs"] * r["singles_cpu_s"] for r in rows) / 3600
    grid_h = sum(r["jobs"] * r["grid_cpu_s"] for r in rows) / 3600
    return {"strata": rows, "singles_cpu_hours": single_h, "grid_cpu_hours": grid_h,
            "ratio": grid_h / single_h, "saving_cpu_hours": single_h - grid_h,
            "records": n_rec, "same_test_errors_and_nnz": same,
            "n_iter_difference_counts": {str(k): v for k, v in sorted(iters.items())},
            "max_objective_rel_diff": obj}


def run_sample(sample, trees, out, workers):
    """Run every sampled job with every tree (back to back), appending JSON lines to ``out``."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    lock = threading.Lock()
    done = set()
    if out.exists():  # resume: skip what is measured
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["tree"], json.dumps(r["wildcards"], sort_keys=True)))

    def one(i, job):
        key = json.dumps(job["wildcards"], sort_keys=True)
        for name, src in trees.items():
            if (name, key) in done:
                continue
            with tempfile.TemporaryDirectory(prefix="estimate-full-run-") as scratch:
                r = run_one(job, src, scratch)
            r.update(tree=name, order=i, stratum=list(stratum(job)), wildcards=job["wildcards"])
            with lock:
                with open(out, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
                print(f"[{i + 1}/{len(sample)} {name}] {' '.join(r['stratum'])} "
                      f"alpha={job['wildcards'].get('alpha', 'grid')} "
                      f"subset={job['wildcards']['subset']}: "
                      f"cpu {r['cpu_s']:.2f} s, wall {r['wall_s']:.2f} s, "
                      f"fit {r['fit_time_s']:.3f} s, "
                      f"{r['n_iter']} it", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for f in [pool.submit(one, i, job) for i, job in enumerate(sample)]:
            f.result()


def summarize(groups, out, trees, args, n_jobs, n_sampled):
    """Extrapolate per tree from the measured jobs; compare the records between trees."""
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    # only the strata of this job list and the trees of this run: an --out shared with another
    # job list (e.g. the same config with share_runs off, whose extra strata this one lacks)
    # counts its common strata, one written with more trees (--src base=... new=..., then
    # --src new=... --pair-grids) the trees named here
    rows = [r for r in rows if tuple(r["stratum"]) in groups and r["tree"] in trees]
    report = {"configfile": args.configfile, "per_stratum": args.per_stratum, "seed": args.seed,
              "n_jobs": n_jobs, "n_sampled": n_sampled, "trees": trees, "estimate": {}}
    # jobs measured with every tree: the comparison is on the same jobs
    keys = defaultdict(dict)
    for r in rows:
        keys[json.dumps(r["wildcards"], sort_keys=True)][r["tree"]] = r
    paired = {k: v for k, v in keys.items() if len(v) == len(trees)}
    report["n_measured"] = len(paired)
    for name in trees:
        est = extrapolate(groups, [v[name] for v in paired.values()])
        report["estimate"][name] = est
        t = est["total"]
        print(f"{name}: {t['cpu_hours']:.2f} CPU-hours (90% interval {t['ci90'][0]:.2f}-"
              f"{t['ci90'][1]:.2f}) over {t['jobs']} jobs ({est['jobs_missing']} in "
              f"{len(est['strata_missing'])} unmeasured strata), from {t['sampled']} measured",
              file=sys.stderr)
        for label in ("by_experiment", "by_method"):
            for k, v in est[label].items():
                print(f"  {k:28s} {v['cpu_hours']:7.2f} h  "
                      f"[{v['ci90'][0]:.2f}, {v['ci90'][1]:.2f}]  "
                      f"{v['jobs']} jobs, {v['sampled']} measured", file=sys.stderr)
    if len(trees) > 1:
        names = list(trees)
        a, b = names[0], names[-1]
        diffs = []
        for v in paired.values():
            ra, rb = v[a], v[b]
            obj = abs(ra["objective"] - rb["objective"]) / max(abs(ra["objective"]), 1e-300)
            diffs.append({"wildcards": ra["wildcards"],
                          "test_errors": [ra["test_errors"], rb["test_errors"]],
                          "nnz": [ra["nnz"], rb["nnz"]], "n_iter": [ra["n_iter"], rb["n_iter"]],
                          "objective_rel_diff": obj, "cpu_s": [ra["cpu_s"], rb["cpu_s"]]})
        same = [d for d in diffs
                if d["test_errors"][0] == d["test_errors"][1] and d["nnz"][0] == d["nnz"][1]]
        # the paired CPU ratio over the jobs measured with both trees (bootstrap over jobs)
        ca = np.array([d["cpu_s"][0] for d in diffs])
        cb = np.array([d["cpu_s"][1] for d in diffs])
        if ca.size:
            rng = np.random.default_rng(args.seed)
            idx = rng.integers(0, ca.size, size=(2000, ca.size))
            boot = cb[idx].sum(axis=1) / ca[idx].sum(axis=1)
            report["paired_cpu_ratio"] = {
                "ratio": float(cb.sum() / ca.sum()),
                "ci90": [float(np.percentile(boot, 5)), float(np.percentile(boot, 95))],
                "cpu_s": [float(ca.sum()), float(cb.sum())],
                "mean_saving_s": float((ca - cb).mean()), "jobs": int(ca.size)}
            pr = report["paired_cpu_ratio"]
            print(f"CPU {b}/{a} on the same {ca.size} jobs: {pr['ratio']:.3f} (90% interval "
                  f"{pr['ci90'][0]:.3f}-{pr['ci90'][1]:.3f}); "
                  f"mean saving {pr['mean_saving_s']:.2f} s "
                  f"per job", file=sys.stderr)
        report["comparison"] = {
            "trees": [a, b], "jobs": len(diffs), "same_test_errors_and_nnz": len(same),
            "max_objective_rel_diff": max((d["objective_rel_diff"] for d in diffs), default=None),
            "differing": [d for d in diffs if d not in same or d["objective_rel_diff"] > 1e-6]}
        c = report["comparison"]
        print(f"{a} vs {b}: {c['same_test_errors_and_nnz']}/{c['jobs']} jobs with the same test "
              f"errors and non-zeros; largest relative objective difference "
              f"{c['max_objective_rel_diff']}", file=sys.stderr)
    for name in trees:
        pairs = grid_pair_summary(groups, out, name)
        if pairs is None:
            continue
        report.setdefault("grid_pairs", {})[name] = pairs
        total = report["estimate"][name]["total"]["cpu_hours"]
        print(f"{name}: the measured grid jobs against their single jobs: {pairs['ratio']:.3f} of the "
              f"CPU over the grid strata ({pairs['singles_cpu_hours']:.2f} -> "
              f"{pairs['grid_cpu_hours']:.2f} CPU-hours, {pairs['saving_cpu_hours']:.2f} saved: "
              f"{total + pairs['saving_cpu_hours']:.2f} CPU-hours as single jobs); "
              f"{pairs['same_test_errors_and_nnz']}/{pairs['records']} records with the same test "
              f"errors and non-zeros, iteration differences {pairs['n_iter_difference_counts']}, "
              f"objectives at most {pairs['max_objective_rel_diff']:.2g} apart", file=sys.stderr)
        for row in pairs["strata"]:
            print(f"  {' '.join(row['stratum']):32s} subset {row['subset']:>2}: {row['singles_cpu_s']:7.1f} -> "
                  f"{row['grid_cpu_s']:7.1f} s ({row['ratio']:.3f}), x{row['jobs']}", file=sys.stderr)
    h.write_results(out.with_name(out.name + ".summary.json"), report, args)


if __name__ == "__main__":
    sys.exit(main())
