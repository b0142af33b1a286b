# Configuration checks and the job table, in one place apart from the rules.
#
# The schema (workflow/schemas/config.schema.yaml) checks types and forbids unknown
# keys; check_config() below adds the checks that a JSON schema cannot express.
# Everything here runs when the DAG is built, before any job.

import copy
import hashlib
import importlib.util
import json
import math
from pathlib import Path

from snakemake.utils import update_config, validate

from sparsesvm.data.sources import DOWNLOADS


class ConfigError(ValueError):
    """An inconsistent configuration (raised before any job runs)."""


def check_finite(value, where="config"):
    """Refuse NaN and infinity anywhere in the config, naming the key.

    JSON Schema cannot: NaN compares false with every bound, so `exclusiveMinimum: 0`
    lets it through (it would reach a job, or a path segment such as alpha~nan).
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: {value!r} is not a finite number (NaN and infinity are refused)")
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, key if where == "config" else f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_finite(item, f"{where}[{i}]")


# the source files: the package's table, with the config's `downloads` (if any) merged over it
_downloads = copy.deepcopy(DOWNLOADS)
update_config(_downloads, config.get("downloads", {}))
config["downloads"] = _downloads
check_finite(config)
validate(config, "../schemas/config.schema.yaml", set_default=False)


RESULTS = str(Path(config["results"]))  # normalised: no trailing separator
LOGS = f"{RESULTS}/logs"
BENCH = f"{RESULTS}/benchmarks"
ENVS = "../../envs"  # conda: paths are relative to the file holding the rule

DATASETS = ("leukemia", "mnist", "news20")
#: Which output each experiment feeds.
PRODUCT = {
    "e1": "table1",
    "e2": "figure1",
    "e3": "figure2",
    "e4": "figure3",
    "e5": "figure4",
}
#: Groups each penalty accepts (penalties.make_penalty raises for the others).
GROUPED_PENALTIES = ("l12", "l1inf")


def alpha_label(alpha):
    """Path segment of one alpha: the shortest string that reads back as the same float."""
    return repr(float(alpha))


def size_label(samples_per_class):
    """Path segment of a training-set size: "all" or the paper's "nK" (n samples per class)."""
    return "all" if samples_per_class is None else f"{int(samples_per_class)}K"


ACCELERATED_METHODS = ("hinge-reg", "hinge-con", "square", "logit", "ova")


def grid_solver(exp, grid):
    """(solver, stopping) of one grid: the grid's own, else the experiment's."""
    solver = grid.get("solver", exp["solver"])
    default = exp["stopping"] if solver == "paper" else "gap"
    return solver, grid.get("stopping", default)


def method_label(exp, grid):
    """The method path segment: the method, plus "+<solver>" for a non-paper solver."""
    solver, _ = grid_solver(exp, grid)
    return grid["method"] if solver == "paper" else f"{grid['method']}+{solver}"


def check_config(cfg):
    """Cross-field checks of a schema-valid config; raise ConfigError naming the key."""
    for exp_id, exp in cfg["experiments"].items():
        where = f"experiments.{exp_id}"
        spc = exp["samples_per_class"]
        if spc is None and exp["n_subsets"] != 1:
            raise ConfigError(
                f"{where}.n_subsets must be 1 when {where}.samples_per_class is null "
                f"(the whole training split), got {exp['n_subsets']}"
            )
        if spc is not None and exp["dataset"] == "leukemia":
            raise ConfigError(
                f"{where}.samples_per_class: leukemia is trained on its whole training split "
                "(38 samples), set it to null"
            )
        if spc is None and exp["dataset"] != "leukemia":
            raise ConfigError(f"{where}.samples_per_class: {exp['dataset']} needs training subset sizes")
        groups_of = {}
        seen = set()
        for i, grid in enumerate(exp["grids"]):
            gwhere = f"{where}.grids[{i}]"
            pen, groups, method = grid["penalty"], grid["groups"], grid["method"]
            label = method_label(exp, grid)
            if (pen, label) in seen:
                raise ConfigError(f"{gwhere}: penalty {pen!r} x method {label!r} appears twice")
            seen.add((pen, label))
            solver, stopping = grid_solver(exp, grid)
            if solver == "accelerated" and method not in ACCELERATED_METHODS:
                raise ConfigError(
                    f"{gwhere}.solver: 'accelerated' solves {list(ACCELERATED_METHODS)} only, got method {method!r}"
                )
            if solver == "accelerated" and stopping != "gap":
                raise ConfigError(f"{gwhere}.stopping: the accelerated solver stops on the certified gap ('gap')")
            if pen in GROUPED_PENALTIES and groups is None:
                raise ConfigError(f"{gwhere}.groups: penalty {pen!r} needs groups (a block size or 'features')")
            if pen not in GROUPED_PENALTIES and groups is not None:
                raise ConfigError(f"{gwhere}.groups: penalty {pen!r} takes no groups (null), got {groups!r}")
            if method == "ova" and groups == "features":
                raise ConfigError(f"{gwhere}.groups: one-vs-all ('ova') cannot use across-class groups ('features')")
            if method == "liblinear-cs" and pen != "l2":
                raise ConfigError(f"{gwhere}.method: 'liblinear-cs' solves the l2 problem only, got penalty {pen!r}")
            if groups_of.setdefault(pen, groups) != groups:
                raise ConfigError(
                    f"{gwhere}.groups: penalty {pen!r} is used with groups {groups_of[pen]!r} and {groups!r} "
                    f"in {where}; one experiment uses one grouping per penalty (the result paths name the penalty only)"
                )
            if "samples_per_class" in grid:
                if spc is None:
                    raise ConfigError(f"{gwhere}.samples_per_class: {where} trains on the whole split")
                extra = sorted(set(grid["samples_per_class"]) - set(spc))
                if extra:
                    raise ConfigError(
                        f"{gwhere}.samples_per_class: {extra} not in {where}.samples_per_class {spc}"
                    )
        trace = exp["trace"]
        if trace is not None:
            if spc is None:
                raise ConfigError(f"{where}.trace needs training subsets (samples_per_class)")
            if trace["n_subsets"] > exp["n_subsets"]:
                raise ConfigError(
                    f"{where}.trace.n_subsets ({trace['n_subsets']}) exceeds {where}.n_subsets ({exp['n_subsets']})"
                )
            methods = {method_label(exp, g) for g in exp["grids"]}
            missing = sorted(set(trace["methods"]) - methods)
            if missing:
                raise ConfigError(f"{where}.trace.methods: {missing} have no grid in {where}.grids")
    seen_files = {}
    for dataset, entries in cfg["downloads"].items():
        for key, entry in entries.items():
            where, name = f"downloads.{dataset}.{key}.file", entry["file"]
            # the schema's pattern already refuses "..", hidden and absolute names
            if name.split("/", 1)[0] != dataset:
                raise ConfigError(f"{where}: {name!r} must lie in the folder of its dataset ({dataset}/<name>)")
            if name in seen_files:
                raise ConfigError(f"{where}: {name!r} is also downloads.{seen_files[name]}.file")
            seen_files[name] = f"{dataset}.{key}"
    mirror = cfg["mirror"]
    if mirror is not None and not Path(mirror).is_dir():
        raise ConfigError(f"mirror: {mirror!r} is not a directory")


check_config(config)


# --------------------------------------------------------------------------- the job table


def experiment(exp_id):
    return config["experiments"][exp_id]


def grid_sizes(exp_id, grid):
    """Samples-per-class values of one grid (None = the whole training split)."""
    exp = experiment(exp_id)
    if exp["samples_per_class"] is None:
        return [None]
    return grid.get("samples_per_class", exp["samples_per_class"])


def train_jobs(exp_id):
    """One dict per training job of an experiment (the grid of the config)."""
    exp = experiment(exp_id)
    jobs = []
    for grid in exp["grids"]:
        for spc in grid_sizes(exp_id, grid):
            n_sub = 1 if spc is None else exp["n_subsets"]
            for alpha in grid["alphas"]:
                for subset in range(n_sub):
                    jobs.append(
                        dict(
                            dataset=exp["dataset"],
                            experiment=exp_id,
                            method=method_label(exp, grid),
                            penalty=grid["penalty"],
                            alpha=alpha_label(alpha),
                            L=size_label(spc),
                            subset=subset,
                        )
                    )
    return jobs


RUN_PATTERN = (
    f"{RESULTS}/{{dataset}}/runs/{{experiment}}/{{method}}/{{penalty}}/alpha~{{alpha}}/L~{{L}}/subset~{{subset}}.json"
)
TRACE_PATTERN = f"{RESULTS}/{{dataset}}/traces/{{experiment}}/{{method}}/{{penalty}}/L~{{L}}/subset~{{subset}}.json"


def run_files(exp_id, **only):
    """Result files of an experiment's training jobs (optionally only those matching `only`)."""
    return [
        RUN_PATTERN.format(**job)
        for job in train_jobs(exp_id)
        if all(str(job[k]) == str(v) for k, v in only.items())
    ]


def trace_jobs(exp_id):
    exp = experiment(exp_id)
    trace = exp["trace"]
    if trace is None:
        return []
    jobs = []
    for grid in exp["grids"]:
        label = method_label(exp, grid)
        if label not in trace["methods"]:
            continue
        for spc in grid_sizes(exp_id, grid):
            for subset in range(trace["n_subsets"]):
                jobs.append(
                    dict(
                        dataset=exp["dataset"],
                        experiment=exp_id,
                        method=label,
                        penalty=grid["penalty"],
                        L=size_label(spc),
                        subset=subset,
                    )
                )
    return jobs


def trace_files(exp_id):
    return [TRACE_PATTERN.format(**job) for job in trace_jobs(exp_id)]


def groups_of(exp_id, penalty):
    for grid in experiment(exp_id)["grids"]:
        if grid["penalty"] == penalty:
            return grid["groups"]
    raise ConfigError(f"experiments.{exp_id} has no grid with penalty {penalty!r}")


def subset_sizes(dataset):
    """Samples-per-class values of every configured experiment on a dataset, with their subset counts.

    Every experiment of the config counts, selected or not, so that the set of
    subsets (and hence the MNIST training images scattered) does not depend on
    which experiments a run selects.
    """
    sizes = {}
    for exp_id, exp in config["experiments"].items():
        if exp["dataset"] != dataset:
            continue
        for grid in exp["grids"]:
            for spc in grid_sizes(exp_id, grid):
                if spc is not None:
                    sizes[spc] = max(sizes.get(spc, 0), exp["n_subsets"])
    return dict(sorted(sizes.items()))


def subset_file(dataset, spc, subset):
    return f"{RESULTS}/{dataset}/subsets/L~{size_label(spc)}/subset~{subset}.npy"


def all_subset_files(dataset):
    return [subset_file(dataset, spc, i) for spc, n in subset_sizes(dataset).items() for i in range(n)]


def features_dir(dataset):
    return f"{RESULTS}/{dataset}/features"


def download_file(dataset, key):
    return f"{RESULTS}/downloads/{config['downloads'][dataset][key]['file']}"


def downloads_of(dataset):
    return {key: download_file(dataset, key) for key in config["downloads"][dataset]}


def experiments_of(dataset):
    return [e for e, exp in config["experiments"].items() if exp["dataset"] == dataset]


def selected_experiments():
    return [e for e in config["run"] if experiment(e)["dataset"] in config["datasets"]]


# --------------------------------------------------------------------------- rule inputs and products


def features_input(wildcards):
    files = downloads_of(wildcards.dataset)
    if wildcards.dataset == "mnist":
        files["subsets"] = all_subset_files("mnist")
    return files


def train_input(wildcards):
    files = {"features": features_dir(wildcards.dataset)}
    if wildcards.L != "all":
        files["subset"] = subset_file(wildcards.dataset, int(wildcards.L[:-1]), wildcards.subset)
    return files


def train_settings(wildcards):
    exp = experiment(wildcards.experiment)
    grid = next(
        g
        for g in exp["grids"]
        if g["penalty"] == wildcards.penalty and method_label(exp, g) == wildcards.method
    )
    solver, stopping = grid_solver(exp, grid)
    return dict(
        method=grid["method"],
        groups=groups_of(wildcards.experiment, wildcards.penalty),
        tol=exp["tol"],
        max_iter=exp["max_iter"],
        solver=solver,
        stopping=stopping,
    )


def trace_input(wildcards):
    """The trace job's training data and every E4 run of its method, penalty and L
    (from which it takes the best alpha)."""
    files = train_input(wildcards)
    files["runs"] = run_files(
        wildcards.experiment, method=wildcards.method, penalty=wildcards.penalty, L=wildcards.L
    )
    return files


def runs_table(exp_id):
    return f"{RESULTS}/{experiment(exp_id)['dataset']}/tables/{exp_id}_runs.parquet"


def experiment_tables(exp_id):
    dataset = experiment(exp_id)["dataset"]
    return [
        f"{RESULTS}/{dataset}/tables/{exp_id}_{name}"
        for name in ("runs.parquet", "runs.csv", "best_alpha.csv")
    ]


TABLE1 = [f"{RESULTS}/tables/table1.{ext}" for ext in ("csv", "md", "tex")]
FIGURES = {
    n: [f"{RESULTS}/figures/figure{n}.{ext}" for ext in ("png", "pdf")] for n in (1, 2, 3, 4)
}


def product_files(exp_id):
    """Every output of an experiment: its table or figure, its tables, and its job records.

    The job records (and traces) are listed as targets too: Snakemake does not rebuild a
    deleted intermediate file when the files made from it are up to date, so a deleted
    record is rebuilt (and its experiment's table and figure after it) only as a target.
    """
    product = PRODUCT[exp_id]
    files = TABLE1 if product == "table1" else FIGURES[int(product[-1])]
    return files + experiment_tables(exp_id) + trace_files(exp_id) + run_files(exp_id)


# --------------------------------------------------------------------------- code triggers
#
# Snakemake's `code` rerun trigger sees a rule's script, not the package it imports.
# Every job that calls the package gets a `params` hash of the package files it
# depends on, so that editing the solver reruns training only, editing the figure
# code reruns the figures only, and neither reruns downloads or features.

_SPEC = importlib.util.find_spec("sparsesvm")
if _SPEC is None or not _SPEC.submodule_search_locations:
    raise ConfigError("the sparsesvm package is not importable: install it (pip install -e .[workflow])")
PACKAGE_DIR = Path(list(_SPEC.submodule_search_locations)[0])

_DATA_MODULES = tuple(sorted(p.relative_to(PACKAGE_DIR).as_posix() for p in (PACKAGE_DIR / "data").glob("*.py")))
_REPORT_MODULES = ("experiments/aggregate.py", "experiments/tables.py", "experiments/figures.py",
                   "experiments/compare.py", "experiments/publish.py", "experiments/cv.py")
#: used by the workflow itself, by no job (editing them reruns nothing)
_WORKFLOW_MODULES = ("experiments/lock.py",)


def _hash_files(paths):
    digest = hashlib.sha256()
    for path in sorted(paths):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        digest.update(rel.encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()[:16]


_ALL_MODULES = [p for p in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in p.parts]
#: data preparation: downloads' parsers, features, subsets
DATA_CODE = _hash_files([PACKAGE_DIR / m for m in _DATA_MODULES])
#: training: every module except the data preparation and the tables/figures code
TRAIN_CODE = _hash_files(
    [
        p
        for p in _ALL_MODULES
        if p.relative_to(PACKAGE_DIR).as_posix() not in _DATA_MODULES + _REPORT_MODULES + _WORKFLOW_MODULES
    ]
)
#: aggregation, tables and figures
REPORT_CODE = _hash_files([PACKAGE_DIR / m for m in _REPORT_MODULES])


# --------------------------------------------------------------------------- sizes against the data
#
# Checked when the DAG is built (before any download), naming the key and the limit,
# instead of in the first job that meets them.


def data_limits(cfg, dataset):
    """What the sizes in the config must fit, as far as known before any job runs.

    Returns
    -------
    dict
        ``min_class``: samples of the smallest training class, ``n_features``: number
        of features, ``source``: where they come from (for the message); a value is
        None where it is not known yet.

    With strict_sizes, the real datasets' class counts (sparsesvm.data.mnist, news20, leukemia) and
    feature counts; otherwise (fixture data) those of the labels and features already
    built under `results`, if any (the jobs check them again when they run).
    MNIST's feature count follows from the scattering settings alone.
    """
    import numpy as np

    from sparsesvm.data import features
    from sparsesvm.data.leukemia import LEUKEMIA_EXPECTED
    from sparsesvm.data.mnist import MNIST_EXPECTED
    from sparsesvm.data.news20 import NEWS20_EXPECTED

    results = Path(cfg["results"])
    limits = {"min_class": None, "n_features": None, "source": f"the real {dataset} data"}
    if cfg["strict_sizes"]:
        expected = {"mnist": MNIST_EXPECTED, "news20": NEWS20_EXPECTED, "leukemia": LEUKEMIA_EXPECTED}[dataset]
        limits["min_class"] = min(expected["train_counts"])
        if dataset == "leukemia":
            limits["n_features"] = expected["n_genes"]
    else:
        limits["source"] = f"the {dataset} data under {results}"
        labels = results / dataset / "subsets" / "train_labels.npy"
        if labels.is_file():
            limits["min_class"] = int(np.bincount(np.load(labels)).min())
        meta = results / dataset / "features" / "meta.json"
        if meta.is_file():
            limits["n_features"] = int(json.loads(meta.read_text())["n_features"])
    if dataset == "mnist":
        opts = cfg["features"]["mnist"]
        limits["n_features"] = features.scattering_layout(opts["J"], opts["angles"], (28, 28))["n_features"]
    elif dataset == "news20" and limits["n_features"] is None:
        limits["n_features"] = cfg["features"]["news20"]["max_features"]  # at most
    return limits


def check_sizes(cfg):
    """Samples per class and group sizes against the data (see data_limits); ConfigError naming the key."""
    for exp_id, exp in cfg["experiments"].items():
        where, dataset = f"experiments.{exp_id}", exp["dataset"]
        limits = data_limits(cfg, dataset)
        spc = exp["samples_per_class"]
        if spc is not None and limits["min_class"] is not None and max(spc) > limits["min_class"]:
            raise ConfigError(
                f"{where}.samples_per_class: {max(spc)} samples per class requested, but the smallest "
                f"training class of {limits['source']} has {limits['min_class']}"
            )
        for i, grid in enumerate(exp["grids"]):
            groups, n_features = grid["groups"], limits["n_features"]
            if isinstance(groups, int) and n_features is not None and groups > n_features:
                raise ConfigError(
                    f"{where}.grids[{i}].groups: block size {groups} exceeds the {n_features} features "
                    f"of {limits['source']}"
                )


check_sizes(config)


# --------------------------------------------------------------------------- the results lock
#
# Snakemake locks the working directory only: a second run from another working
# directory on the same results directory would run the same jobs. The first run to
# start jobs locks <results>/.sparsesvm.lock (pid, host, working directory); the other
# is refused, naming it and the way out. A lock left by a killed run (its pid gone) is
# taken over. onstart runs only when jobs are about to run (not for dry runs, --lint,
# "Nothing to be done"), and only in the main Snakemake process (not in cluster jobs).


def _results_lock(action):
    from snakemake.exceptions import WorkflowError

    from sparsesvm.experiments import lock

    if not workflow.is_main_process:
        return
    if action == "acquire":
        try:
            lock.acquire(RESULTS)
        except lock.ResultsLockedError as exc:
            raise WorkflowError(str(exc)) from None
    else:
        lock.release(RESULTS)


onstart:
    _results_lock("acquire")


onsuccess:
    _results_lock("release")


onerror:
    _results_lock("release")
