"""Running the workflow from tests: the config files, Snakemake on a temporary directory,
the job counts of its output (shared by the workflow, publishing, plan and fault tests)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparsesvm.experiments.publish import merged_config

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "Snakefile"
FULL = REPO / "config" / "config.yaml"
QUICK = REPO / "config" / "quick.yaml"
TEST = REPO / "config" / "test.yaml"
TESTS = Path(__file__).resolve().parent

PENALTIES = ["l2", "l1", "l12", "l1inf"]
E1_METHODS = ["hinge-reg", "hinge-con", "square", "logit", "ova"]


def snakemake_exe():
    exe = Path(sys.executable).with_name("snakemake")
    if exe.exists():
        return str(exe)
    found = shutil.which("snakemake")
    if found is None:
        pytest.skip("snakemake is not installed (pip install -e .[workflow])")
    return found


def smk(workdir, *args, targets=(), configfiles=(), config=None, check=True, timeout=900):
    """Run snakemake on the repository's Snakefile with `workdir` as working directory.

    Targets go first: options such as --quiet and --config take several values."""
    cmd = [snakemake_exe(), *targets, "--snakefile", str(SNAKEFILE), "--directory", str(workdir)]
    if configfiles:  # one option with every file: a second --configfile would replace the first
        cmd += ["--configfile", *map(str, configfiles)]
    if config:
        cmd += ["--config"] + [f"{k}={v}" for k, v in config.items()]
    cmd += list(args)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    out = proc.stdout + proc.stderr
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}): {' '.join(cmd)}\n{out[-6000:]}")
    return proc.returncode, out


def load_config(*paths):
    """The merged config as Snakemake builds it (key-by-key dict merge, lists replaced)."""
    return merged_config(paths)


def _experiment_jobs(exp):
    """Every training job of one experiment (config dict), as what makes its record: dataset,
    method, solver, stopping rule, groups, tol, max_iter, precision, penalty, alpha, samples
    per class and subset (computed from the config, independently of the workflow)."""
    for grid in exp["grids"]:
        solver = grid.get("solver", exp["solver"])
        stopping = grid.get("stopping", exp["stopping"] if solver == "paper" else "gap")
        fit = (exp["dataset"], grid["method"], solver, stopping, str(grid["groups"]), exp["tol"],
               exp["max_iter"], grid.get("precision", "double"), grid["penalty"])
        sizes = [None] if exp["samples_per_class"] is None else grid.get("samples_per_class",
                                                                           exp["samples_per_class"])
        for n in sizes:
            for alpha in grid["alphas"]:
                for subset in range(1 if n is None else exp["n_subsets"]):
                    yield fit + (float(alpha), n, subset)


def expected_train_jobs(cfg):
    """Training jobs per experiment, computed from the config (independently of the workflow)."""
    return {exp_id: sum(1 for _ in _experiment_jobs(exp)) for exp_id, exp in cfg["experiments"].items()}


def shared_train_jobs(cfg):
    """``{experiment: jobs whose record an earlier experiment's job makes}`` (``share_runs``, on
    by default): the same fields of :func:`_experiment_jobs`."""
    if not cfg.get("share_runs", True):
        return {exp_id: 0 for exp_id in cfg["experiments"]}
    seen, counts = set(), {}
    for exp_id, exp in cfg["experiments"].items():
        mine = set(_experiment_jobs(exp))
        counts[exp_id] = len(mine & seen)
        seen |= mine
    return counts


def expected_run_jobs(cfg):
    """Training jobs that each experiment runs itself: its own minus those shared with an earlier one."""
    shared = shared_train_jobs(cfg)
    return {exp_id: n - shared[exp_id] for exp_id, n in expected_train_jobs(cfg).items()}


#: the methods fitted side by side (sparsesvm.solvers.side_by_side.SIDE_BY_SIDE_METHODS)
SIDE_BY_SIDE = ("hinge-reg", "hinge-con", "hinge-lin", "square", "logit")


def expected_grid_jobs(cfg):
    """``{experiment: {(method, solver, penalty, samples per class, subset): number of alphas}}``:
    the grid jobs (computed from the config, independently of the workflow). A grid with
    ``side_by_side`` (its own key, else its experiment's) fits side by side its jobs of a
    method of :data:`SIDE_BY_SIDE` with the paper's solver and the relative-change rule whose
    records no other experiment reads (with ``share_runs``, the jobs another experiment has
    with the same fields); a grid with ``alphas_in_one_job`` (likewise) puts in one job
    per subset the other jobs whose records its experiment makes (no earlier experiment has
    them); a job of one alpha stays a job of its own."""
    share = cfg.get("share_runs", True)
    jobs = {exp_id: set(_experiment_jobs(exp)) for exp_id, exp in cfg["experiments"].items()}
    out, earlier = {}, set()
    for exp_id, exp in cfg["experiments"].items():
        others = set().union(*(j for e, j in jobs.items() if e != exp_id)) if share else set()
        counts = {}
        for grid in exp["grids"]:
            beside = grid.get("side_by_side", exp.get("side_by_side", False))
            together = grid.get("alphas_in_one_job", exp.get("alphas_in_one_job", False))
            for job in set(_experiment_jobs({**exp, "grids": [grid]})):
                _, method, solver, stopping = job[:4]
                fits_beside = (beside and method in SIDE_BY_SIDE and solver == "paper"
                               and stopping == "rel_change" and job not in others)
                if fits_beside or (together and not (share and job in earlier)):
                    key = (method, solver, job[8], job[10], job[11])
                    counts[key] = counts.get(key, 0) + 1
        earlier |= jobs[exp_id]
        out[exp_id] = {k: n for k, n in counts.items() if n > 1}
    return out


def expected_files(cfg):
    """Record files per experiment: its own training jobs (:func:`expected_run_jobs`), a grid
    job's alphas in one file (:func:`expected_grid_jobs`)."""
    grids = expected_grid_jobs(cfg)
    return {exp_id: n - sum(grids[exp_id].values()) + len(grids[exp_id])
            for exp_id, n in expected_run_jobs(cfg).items()}


def job_stats(output):
    """Parse the 'Job stats' table of a snakemake run or dry run into {rule: count}."""
    m = re.search(r"Job stats:\n(.*?)\n\s*total\s+(\d+)", output, re.S)
    if m is None:
        return {}
    stats = {}
    for line in m.group(1).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            stats[parts[0]] = int(parts[1])
    return stats


def train_wildcards(output):
    """Wildcards of every `rule train` job listed by a (non-quiet) dry run."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", output):
        if re.match(r"(?:local)?rule train:", block):
            m = re.search(r"wildcards: (.*)", block)
            jobs.append(dict(kv.split("=", 1) for kv in m.group(1).split(", ")))
    return jobs


# --------------------------------------------------------------------------- config checks


def iter_records(paths):
    """``(path, record)`` for each training record in ``paths``: a file of its own holds one, a
    grid job's an array of them (each file read once)."""
    import json

    for path in dict.fromkeys(str(p) for p in paths):
        held = json.loads(Path(path).read_text())
        for rec in held if isinstance(held, list) else [held]:
            yield path, rec


def read_records(paths, rows=None):
    """The training records in ``paths`` (:func:`iter_records`); ``rows``: only those whose
    ``(path, alpha)`` is in it (a tidy table's ``result_path`` and ``alpha``: a grid job's file
    may hold alphas another experiment reads)."""
    return [rec for path, rec in iter_records(paths) if rows is None or (path, rec["alpha"]) in rows]
