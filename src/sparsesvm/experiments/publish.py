"""Publish an experiment's outputs from a results directory into a committed folder.

``python -m sparsesvm.experiments.publish --results results/record --configfile
config/record.yaml --dest docs/results e1 e2`` copies, per experiment, its
product (Table 1 as CSV/Markdown/LaTeX, or the figure as PNG and, when small,
PDF), its tidy table (CSV), its best-alpha table (and E4's traces table when
small) into ``<dest>/<experiment>/``, and writes ``provenance.json`` beside
them: the commit, the configuration files and the experiment's merged
settings, the command, the machine, the wall and CPU time of the experiment's
jobs (from Snakemake's benchmark files) and the package versions. The paper
comparison (``tables/paper_comparison.{md,csv}``) is copied to ``<dest>/``.

Every file is written atomically (temporary file + ``os.replace``). Files
larger than ``max_bytes`` are left out and listed in the provenance, so that
the published folder stays small. Nothing here knows Snakemake: the layout of
the results directory is that of the workflow's rules (see the README).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from .._io import atomic_path, write_text
from .runner import write_json_atomic

__all__ = ["PRODUCTS", "PACKAGES", "experiment_files", "job_times", "machine", "versions",
           "merged_config", "publish_experiment", "publish", "results_section", "update_readme", "main"]

#: Product of each experiment: Table 1 (E1) or the figure number.
PRODUCTS = {"e1": "table1", "e2": 1, "e3": 2, "e4": 3, "e5": 4}
#: Packages whose versions the provenance records.
PACKAGES = ("sparsesvm", "numpy", "scipy", "scikit-learn", "numba", "pandas", "pyarrow", "matplotlib",
            "seaborn", "kymatio", "torch", "snakemake", "cvxpy")
#: Default size limit of one published file (bytes).
MAX_BYTES = 2_000_000


def _copy_atomic(src, dst):
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def merged_config(configfiles):
    """The config as Snakemake builds it from ``configfiles`` in order (dicts merged, lists replaced)."""
    import yaml

    def merge(a, b):
        for k, v in b.items():
            if isinstance(v, dict) and isinstance(a.get(k), dict):
                merge(a[k], v)
            else:
                a[k] = v
        return a

    cfg = {}
    for path in configfiles:
        merge(cfg, yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})
    return cfg


def experiment_files(results, exp_id, dataset):
    """Files of one experiment under ``results``: ``{published name: source path}`` (those that exist)."""
    results = Path(results)
    product = PRODUCTS[exp_id]
    files = {}
    if product == "table1":
        for ext in ("csv", "md", "tex"):
            files[f"table1.{ext}"] = results / "tables" / f"table1.{ext}"
    else:
        for ext in ("png", "pdf"):
            files[f"figure{product}.{ext}"] = results / "figures" / f"figure{product}.{ext}"
    tables = results / dataset / "tables"
    files[f"{exp_id}_runs.csv"] = tables / f"{exp_id}_runs.csv"
    files[f"{exp_id}_best_alpha.csv"] = tables / f"{exp_id}_best_alpha.csv"
    if exp_id == "e4":
        files["e4_traces.csv"] = tables / "e4_traces.csv"
    for name in ("cv_alpha", "cv_summary", "accuracy"):  # with the optional `cv`, `equal_accuracy`
        if (tables / f"{exp_id}_{name}.csv").is_file():
            files[f"{exp_id}_{name}.csv"] = tables / f"{exp_id}_{name}.csv"
    return files


def job_times(results, exp_id, dataset):
    """Wall and CPU time of an experiment's jobs, from Snakemake's benchmark files.

    Counts the training, trace, equal-accuracy and cross-validation jobs of the
    experiment, its aggregations and its product (Table 1 or figure). Data preparation (downloads, features, subsets) is
    shared by the experiments of a dataset and reported apart; training jobs shared with an
    earlier experiment (:meth:`sparsesvm.experiments.plan.Plan.run_owner`) are counted in that
    one's (the provenance's ``records_run_by`` says how many).

    Returns
    -------
    dict
        ``n_jobs``, ``jobs_wall_s`` (sum of the jobs' wall times), ``jobs_cpu_s``
        (sum of their CPU times), ``span_wall_s`` (first job start to last job end,
        from the benchmark files' modification times minus their wall times: the
        experiment's wall time when it ran alone), and the same sums for the
        dataset's preparation under ``preparation``.
    """
    bench = Path(results) / "benchmarks"
    product = PRODUCTS[exp_id]
    name = "table1" if product == "table1" else f"figure{product}"
    # every job kind of the experiment (runs, traces, accuracy, cv, ...) has its folder
    # <dataset>/<kind>/<exp_id>/, and its aggregations <dataset>/tables/<exp_id>_aggregate*.tsv
    paths = [*sorted((bench / dataset).glob(f"*/{exp_id}/**/*.tsv")),
             *sorted((bench / dataset / "tables").glob(f"{exp_id}_aggregate*.tsv")),
             bench / "products" / f"{name}.tsv"]
    prep = [bench / dataset / "features.tsv", bench / dataset / "labels.tsv",
            *sorted((bench / dataset / "subsets").rglob("*.tsv")),
            *sorted((bench / "download" / dataset).rglob("*.tsv"))]

    def summarise(ps):
        ps = [p for p in ps if p.is_file()]
        if not ps:
            return {"n_jobs": 0, "jobs_wall_s": None, "jobs_cpu_s": None, "span_wall_s": None}
        wall = cpu = 0.0
        starts, ends = [], []
        for p in ps:
            row = pd.read_csv(p, sep="\t").iloc[-1]
            s = float(row["s"])
            wall += s
            cpu += float(row["cpu_time"]) if "cpu_time" in row and pd.notna(row["cpu_time"]) else 0.0
            end = p.stat().st_mtime
            starts.append(end - s)
            ends.append(end)
        return {"n_jobs": len(ps), "jobs_wall_s": round(wall, 2), "jobs_cpu_s": round(cpu, 2),
                "span_wall_s": round(max(ends) - min(starts), 2)}

    out = summarise(paths)
    out["preparation"] = summarise(prep)
    return out


def machine():
    """The machine: OS, Python, CPU model and count, memory (what /proc tells, on Linux)."""
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "cpu_count": os.cpu_count(), "cpu_model": platform.processor() or None, "memory_gb": None}
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gb"] = round(int(line.split()[1]) / 2**20, 1)
    return info


def versions(packages=PACKAGES):
    """Installed versions of ``packages`` (None for those not installed)."""
    out = {}
    for name in packages:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _git(repo, *args):
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _code_state(repo, dest):
    """``(commit, status)`` of ``repo``: HEAD and ``git status`` of its tracked files outside
    the published folder ``dest`` (republishing rewrites it, which says nothing about the
    code that produced the results); None where git does not answer."""
    commit = _git(repo, "rev-parse", "HEAD")
    spec = []
    try:
        rel = Path(dest).resolve().relative_to(Path(repo).resolve())
        spec = ["--", ".", f":(exclude){rel.as_posix()}"]
    except ValueError:  # dest outside the repository
        pass
    return commit, _git(repo, "status", "--porcelain", "--untracked-files=no", *spec)


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def publish_experiment(results, exp_id, cfg, configfiles, dest, command=None, repo=".", max_bytes=MAX_BYTES):
    """Copy one experiment's outputs to ``dest/<exp_id>/`` and write its ``provenance.json``.

    Parameters
    ----------
    results : path-like
        The results root of the run (the config's ``results``).
    exp_id : str
        ``"e1"`` ... ``"e5"``.
    cfg : dict
        The merged configuration (:func:`merged_config`).
    configfiles : list of path-like
        The configuration files, in merge order (recorded with their digests).
    dest : path-like
        The published folder (e.g. ``docs/results``).
    command : str, optional
        The command that produced the results (recorded as given).
    repo : path-like
        The repository, for the commit.
    max_bytes : int
        Files larger than this are left out (listed under ``left_out``).

    Returns
    -------
    dict
        The provenance record.

    Raises
    ------
    FileNotFoundError
        If the experiment's product or tidy table is missing from ``results``.
    """
    if exp_id not in PRODUCTS:
        raise ValueError(f"unknown experiment {exp_id!r}; expected one of {sorted(PRODUCTS)}")
    exp = cfg["experiments"][exp_id]
    files = experiment_files(results, exp_id, exp["dataset"])
    required = [n for n in files if n.endswith((".png", "_runs.csv", "table1.csv"))]
    missing = [str(files[n]) for n in required if not files[n].is_file()]
    if missing:
        raise FileNotFoundError(f"{exp_id}: not built yet in {results}: {', '.join(missing)}")
    commit, dirty = _code_state(repo, dest)
    out_dir = Path(dest) / exp_id
    copied, left_out = [], []
    for name, src in files.items():
        if not src.is_file():
            left_out.append({"file": name, "why": "not in the results"})
            continue
        size = src.stat().st_size
        if size > max_bytes:
            left_out.append({"file": name, "why": f"{size} bytes > {max_bytes}"})
            stale = out_dir / name
            if stale.exists():
                stale.unlink()
            continue
        _copy_atomic(src, out_dir / name)
        copied.append(name)
    records = pd.read_csv(files[f"{exp_id}_runs.csv"])
    prov = {
        "experiment": exp_id,
        "dataset": exp["dataset"],
        "published_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "worktree_modified": bool(dirty) if dirty is not None else None,
        "command": command,
        "configfiles": [{"path": str(p), "sha256": _sha256(p)} for p in configfiles],
        "settings": exp,
        "seed": cfg.get("seed"),
        "n_jobs_in_table": int(len(records)),
        "records_versions": sorted({str(v) for v in records.get("sparsesvm_version", pd.Series([], dtype=str))}),
        "records_source_hashes": _count_values(records, "source_hash"),
        # records made by another experiment's jobs (shared runs): their time is in that one's
        "records_run_by": _count_values(records, "run_experiment"),
        "time": job_times(results, exp_id, exp["dataset"]),
        "machine": machine(),
        "versions": versions(),
        "files": copied,
        "left_out": left_out,
    }
    write_json_atomic(out_dir / "provenance.json", prov)
    return prov


def _count_values(records, column):
    """``{value: number of records}`` of one column of the tidy table, most frequent first
    (e.g. the package's source hash: records made by several code states, as a record run
    resumed after a code change, show each state and its share; ``commit`` is only the
    publishing checkout's)."""
    if column not in records:
        return {}
    counts = records[column].astype(str).value_counts()
    return {str(k): int(v) for k, v in counts.items()}


def publish(results, experiments, configfiles, dest, command=None, repo=".", max_bytes=MAX_BYTES):
    """:func:`publish_experiment` for each experiment, then the paper comparison into ``dest``.

    Returns
    -------
    dict
        Experiment id -> provenance record.
    """
    cfg = merged_config(configfiles)
    out = {e: publish_experiment(results, e, cfg, configfiles, dest, command, repo, max_bytes) for e in experiments}
    for ext in ("md", "csv"):
        src = Path(results) / "tables" / f"paper_comparison.{ext}"
        if src.is_file():
            _copy_atomic(src, Path(dest) / f"paper_comparison.{ext}")
    return out


#: One sentence per product: what it shows (not what it finds).
DESCRIPTIONS = {
    "e1": "Table 1 (E1, leukemia): test errors out of 34 and non-zero weights per class for each "
          "regulariser and method, at each cell's best alpha by test error.",
    "e2": "Figure 1 (E2, MNIST scattering, l1,inf): mean test error and % zero weights against alpha for "
          "each method, one panel pair per training size L, with the spread over subsets and the best alpha "
          "circled.",
    "e3": "Figure 2 (E3, 20 Newsgroups TF-IDF, l1,2 across classes): as Figure 1.",
    "e4": "Figure 3 (E4, MNIST, l1,inf): mean fit time against alpha per method and L, and the distance to "
          "the reference solution against time at each method's best alpha.",
    "e5": "Figure 4 (E5, MNIST, l2): mean fit time against alpha per method and L beside the liblinear "
          "Crammer-Singer peer, the weights above 1e-5 of l2 against l1,inf at the largest L, and (last "
          "row) the seconds each l2 solver takes to the same relative gap (1e-3, 1e-4) against L.",
}
BEGIN = "<!-- published-results:begin (written by python -m sparsesvm.experiments.publish) -->"
END = "<!-- published-results:end -->"


def _hours(seconds):
    return "n/a" if seconds is None else f"{seconds / 3600:.2f} h"


def results_section(dest, relative_to):
    """Markdown of the published results in ``dest``: Table 1 inline, the figures inline (PNG)
    with one sentence each, the paper comparison's link, and each experiment's times.

    Parameters
    ----------
    dest : path-like
        The published folder.
    relative_to : path-like
        Directory of the Markdown file that will hold the section (links are relative to it).
    """
    dest = Path(dest)
    rel = Path(os.path.relpath(dest, relative_to)).as_posix()
    provs = {e: Path(dest) / e / "provenance.json" for e in PRODUCTS}
    provs = {e: p for e, p in provs.items() if p.is_file()}
    lines = ["### Published results", ""]
    if not provs:
        lines += [f"Nothing is published in `{rel}/` yet: `make record` runs `config/record.yaml` and "
                  "writes this section.", ""]
        return "\n".join(lines)
    import json

    lines += ["| experiment | subsets | jobs | wall time (span) | sum of job wall times | CPU time | commit |",
              "|---|---|---|---|---|---|---|"]
    for e, p in provs.items():
        prov = json.loads(p.read_text(encoding="utf-8"))
        t = prov["time"]
        lines.append(f"| {e} | {prov['settings']['n_subsets']} | {t['n_jobs']} | {_hours(t['span_wall_s'])} | "
                     f"{_hours(t['jobs_wall_s'])} | {_hours(t['jobs_cpu_s'])} | {str(prov['commit'])[:10]} |")
    lines += ["", f"Provenance (machine, versions, command): `{rel}/<experiment>/provenance.json`.", ""]
    for e in provs:
        product = PRODUCTS[e]
        lines += [DESCRIPTIONS[e], ""]
        if product == "table1":
            md = dest / e / "table1.md"
            if md.is_file():
                lines += [md.read_text(encoding="utf-8").strip(), ""]
        else:
            png = dest / e / f"figure{product}.png"
            if png.is_file():
                lines += [f"![Figure {product}]({rel}/{e}/figure{product}.png)", ""]
    if (dest / "paper_comparison.md").is_file():
        lines += [f"The paper against this run, claim by claim: [{rel}/paper_comparison.md]"
                  f"({rel}/paper_comparison.md).", ""]
    return "\n".join(lines)


def update_readme(readme, dest):
    """Replace the block between ``BEGIN`` and ``END`` of ``readme`` by :func:`results_section`.

    Raises
    ------
    ValueError
        If the README has not exactly one such block.
    """
    readme = Path(readme)
    text = readme.read_text(encoding="utf-8")
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"{readme}: expected one block between {BEGIN!r} and {END!r}")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    new = head + BEGIN + "\n" + results_section(dest, readme.parent) + "\n" + END + tail
    write_text(readme, new)
    return new


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sparsesvm.experiments.publish",
        description="Copy experiments' tables, figures and the paper comparison from a results directory "
                    "into a committed folder, with a provenance file per experiment.")
    parser.add_argument("experiments", nargs="+", choices=sorted(PRODUCTS), help="experiments to publish")
    parser.add_argument("--results", required=True, help="results root of the run (the config's `results`)")
    parser.add_argument("--configfile", action="append", default=None,
                        help="config files in merge order (default: config/config.yaml); repeat the option")
    parser.add_argument("--dest", default="docs/results", help="published folder (default: docs/results)")
    parser.add_argument("--command", default=None, help="the command that produced the results (recorded)")
    parser.add_argument("--max-bytes", type=int, default=MAX_BYTES, help="largest file published (bytes)")
    parser.add_argument("--readme", default="README.md",
                        help="Markdown file whose published-results block is rewritten (default: README.md; "
                             "'' for none)")
    args = parser.parse_args(argv)
    configfiles = ["config/config.yaml"] + [c for c in (args.configfile or []) if c != "config/config.yaml"]
    out = publish(args.results, args.experiments, configfiles, args.dest, args.command, ".", args.max_bytes)
    if args.readme:
        update_readme(args.readme, args.dest)
    for e, prov in out.items():
        t = prov["time"]
        print(f"{e}: {len(prov['files'])} files -> {Path(args.dest) / e}; {t['n_jobs']} jobs, "
              f"span {t['span_wall_s']} s, job wall sum {t['jobs_wall_s']} s, CPU {t['jobs_cpu_s']} s"
              + (f"; left out: {prov['left_out']}" if prov["left_out"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
