"""The workflow's job plan, from the config: pure Python, no Snakemake.

``workflow/rules/common.smk`` reads the config and calls this module; everything
here runs when the DAG is built, before any job, and is unit-tested on plain dict
configs (``tests/experiments/test_plan.py``).

- **Config checks** a JSON schema cannot express (the schema,
  ``workflow/schemas/config.schema.yaml``, checks types, bounds and unknown keys):
  :func:`check_finite` (NaN and infinity, run before the schema), :func:`check_config`
  (cross-field rules) and :func:`check_sizes` (samples per class and group sizes
  against the data). Each raises :class:`ConfigError` naming the key.
- **Labels**: :func:`method_label` (``hinge-reg+accelerated`` in result paths,
  ``hinge-reg [accelerated]`` in tables and figures), :func:`alpha_label`,
  :func:`size_label`.
- **The job plan** (:class:`Plan`): experiments x grids x L x alphas x subsets ->
  the training jobs and their record paths, the trace and cross-validation jobs,
  the subsets, and the product files of each experiment.
- **Code triggers** (:func:`code_hash`): a hash of the package files each kind of job
  runs, by layer (:data:`CODE_LAYERS`), so that editing the solvers reruns training
  only and editing the figures reruns the figures only.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from pathlib import Path

__all__ = [
    "ConfigError",
    "check_finite",
    "check_config",
    "check_sizes",
    "data_limits",
    "method_label",
    "alpha_label",
    "size_label",
    "grid_solver",
    "accelerated_methods",
    "Plan",
    "CODE_LAYERS",
    "code_layer",
    "code_hash",
]

DATASETS = ("leukemia", "mnist", "news20")
#: Which product each experiment feeds.
PRODUCT = {"e1": "table1", "e2": "figure1", "e3": "figure2", "e4": "figure3", "e5": "figure4"}
#: Solvers whose lines and paths carry the bare method name (the paper's iterations
#: and the liblinear peer; the other spellings are those of a missing value in a table).
#: solver names that a curve label leaves out (the paper's, the peers', missing values)
PLAIN_SOLVERS = ("paper", "liblinear", "ocas", "", "none", "nan", "None")


class ConfigError(ValueError):
    """An inconsistent configuration (raised before any job runs)."""


# --------------------------------------------------------------------------- labels


def method_label(method, solver=None, *, path=False):
    """Label of a method's curve: the method, plus its solver unless it is the paper's.

    Parameters
    ----------
    method : str
    solver : str or None
        The solver family (``None`` or a missing value: the paper's).
    path : bool
        ``True``: the result-path segment ``"<method>+<solver>"``; ``False``: the
        table and figure label ``"<method> [<solver>]"``.

    Returns
    -------
    str
        E.g. ``("hinge-reg", "paper") -> "hinge-reg"``,
        ``("hinge-reg", "accelerated") -> "hinge-reg [accelerated]"`` (path:
        ``"hinge-reg+accelerated"``).
    """
    solver = "" if solver is None else str(solver)
    if solver in PLAIN_SOLVERS:
        return str(method)
    return f"{method}+{solver}" if path else f"{method} [{solver}]"


def alpha_label(alpha):
    """Path segment of one alpha: the shortest string that reads back as the same float."""
    return repr(float(alpha))


def size_label(samples_per_class):
    """Path segment of a training-set size: "all" or the paper's "nK" (n samples per class)."""
    return "all" if samples_per_class is None else f"{int(samples_per_class)}K"


def grid_solver(exp, grid):
    """(solver, stopping) of one grid: the grid's own, else the experiment's."""
    solver = grid.get("solver", exp["solver"])
    default = exp["stopping"] if solver == "paper" else "gap"
    return solver, grid.get("stopping", default)


def grid_side_by_side(exp, grid):
    """Whether a grid asks for its alphas side by side: the grid's own ``side_by_side``, else
    the experiment's (default false). :meth:`Plan.grid_jobs` says where it is granted."""
    return grid.get("side_by_side", exp.get("side_by_side", False))


def grid_in_one_job(exp, grid):
    """Whether a grid asks for its alphas in one job per subset, one fit after another: the
    grid's own ``alphas_in_one_job``, else the experiment's (default false). :meth:`Plan.grid_jobs`
    says where."""
    return grid.get("alphas_in_one_job", exp.get("alphas_in_one_job", False))


def _grid_label(exp, grid):
    return method_label(grid["method"], grid_solver(exp, grid)[0], path=True)


def _curve_grid(exp, method_label, penalty):
    """The grid of one curve (``method_label`` as in the paths)."""
    return next(g for g in exp["grids"] if g["penalty"] == penalty and _grid_label(exp, g) == method_label)


# --------------------------------------------------------------------------- config checks


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


def check_config(cfg):
    """Cross-field checks of a schema-valid config; raise ConfigError naming the key."""
    for exp_id, exp in cfg["experiments"].items():
        _check_experiment(f"experiments.{exp_id}", exp)
    _check_downloads(cfg["downloads"])
    mirror = cfg["mirror"]
    if mirror is not None and not Path(mirror).is_dir():
        raise ConfigError(f"mirror: {mirror!r} is not a directory")


def _check_experiment(where, exp):
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
    groups_of, seen = {}, set()
    for i, grid in enumerate(exp["grids"]):
        gwhere = f"{where}.grids[{i}]"
        pen, groups, label = grid["penalty"], grid["groups"], _grid_label(exp, grid)
        if (pen, label) in seen:
            raise ConfigError(f"{gwhere}: penalty {pen!r} x method {label!r} appears twice")
        seen.add((pen, label))
        _check_grid(gwhere, exp, grid)
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
                raise ConfigError(f"{gwhere}.samples_per_class: {extra} not in {where}.samples_per_class {spc}")
    if exp["trace"] is not None:
        _check_trace(where, exp)
    if exp.get("equal_accuracy") is not None:
        _check_equal_accuracy(where, exp)


def accelerated_methods():
    """The methods of the accelerated solver family (from the solver registry), sorted."""
    from ..solvers.registry import solver_family

    return sorted(solver_family("accelerated")["methods"])


def _check_grid(gwhere, exp, grid):
    """One grid's solver, stopping rule and groups against its method and penalty."""
    from ..model.penalties import check_groups

    pen, groups, method = grid["penalty"], grid["groups"], grid["method"]
    solver, stopping = grid_solver(exp, grid)
    if solver == "accelerated" and method not in accelerated_methods():
        raise ConfigError(
            f"{gwhere}.solver: 'accelerated' solves {accelerated_methods()} only, got method {method!r}"
        )
    if solver == "accelerated" and stopping != "gap":
        raise ConfigError(f"{gwhere}.stopping: the accelerated solver stops on the certified gap ('gap')")
    try:
        check_groups(pen, groups, None, method)
    except ValueError as exc:
        raise ConfigError(f"{gwhere}.groups: {exc}") from None
    if method == "liblinear-cs" and pen != "l2":
        raise ConfigError(f"{gwhere}.method: 'liblinear-cs' solves the l2 problem only, got penalty {pen!r}")
    if "precision" in grid:
        from ..solvers.registry import check_precision
        from .runner import core_method

        try:
            check_precision(grid["precision"], *core_method(method, solver))
        except ValueError as exc:
            raise ConfigError(f"{gwhere}.precision: {exc}") from None


def _check_trace(where, exp):
    trace = exp["trace"]
    if exp["samples_per_class"] is None:
        raise ConfigError(f"{where}.trace needs training subsets (samples_per_class)")
    if trace["n_subsets"] > exp["n_subsets"]:
        raise ConfigError(
            f"{where}.trace.n_subsets ({trace['n_subsets']}) exceeds {where}.n_subsets ({exp['n_subsets']})"
        )
    methods = {_grid_label(exp, g) for g in exp["grids"]}
    missing = sorted(set(trace["methods"]) - methods)
    if missing:
        raise ConfigError(f"{where}.trace.methods: {missing} have no grid in {where}.grids")


def _check_equal_accuracy(where, exp):
    acc = exp["equal_accuracy"]
    if exp["samples_per_class"] is None:
        raise ConfigError(f"{where}.equal_accuracy needs training subsets (samples_per_class)")
    if acc["n_subsets"] > exp["n_subsets"]:
        raise ConfigError(f"{where}.equal_accuracy.n_subsets ({acc['n_subsets']}) exceeds "
                          f"{where}.n_subsets ({exp['n_subsets']})")
    if not any(g["penalty"] == "l2" for g in exp["grids"]):
        raise ConfigError(f"{where}.equal_accuracy times the l2 solvers: {where} has no l2 grid")


def _check_downloads(downloads):
    """Each download file lies in its dataset's folder and is named once."""
    seen = {}
    for dataset, entries in downloads.items():
        for key, entry in entries.items():
            where, name = f"downloads.{dataset}.{key}.file", entry["file"]
            # the schema's pattern already refuses "..", hidden and absolute names
            if name.split("/", 1)[0] != dataset:
                raise ConfigError(f"{where}: {name!r} must lie in the folder of its dataset ({dataset}/<name>)")
            if name in seen:
                raise ConfigError(f"{where}: {name!r} is also downloads.{seen[name]}.file")
            seen[name] = f"{dataset}.{key}"


def data_limits(cfg, dataset):
    """What the sizes in the config must fit, as far as known before any job runs.

    Parameters
    ----------
    cfg : dict
        The (schema-valid) config.
    dataset : {"leukemia", "mnist", "news20"}

    Returns
    -------
    dict
        ``min_class``: samples of the smallest training class, ``n_features``: number
        of features, ``source``: where they come from (for the message); a value is
        None where it is not known yet.

    Notes
    -----
    With strict_sizes, the real datasets' class counts (sparsesvm.data.leukemia, mnist, news20) and
    feature counts; otherwise (fixture data) those of the labels and features already
    built under `results`, if any (the jobs check them again when they run).
    MNIST's feature count follows from the scattering settings alone.
    """
    from ..data import features
    from ..data.leukemia import LEUKEMIA_EXPECTED
    from ..data.mnist import MNIST_EXPECTED
    from ..data.news20 import NEWS20_EXPECTED

    results = Path(cfg["results"])
    limits = {"min_class": None, "n_features": None, "source": f"the real {dataset} data"}
    if cfg["strict_sizes"]:
        expected = {"mnist": MNIST_EXPECTED, "news20": NEWS20_EXPECTED,
                    "leukemia": LEUKEMIA_EXPECTED}[dataset]
        limits["min_class"] = min(expected["train_counts"])
        if dataset == "leukemia":
            limits["n_features"] = expected["n_genes"]
    else:
        limits["source"] = f"the {dataset} data under {results}"
        labels = results / dataset / "subsets" / "train_labels.npy"
        if labels.is_file():
            import numpy as np

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
        where = f"experiments.{exp_id}"
        limits = data_limits(cfg, exp["dataset"])
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


# --------------------------------------------------------------------------- the job plan


#: the fields of a grid job (:attr:`Plan.grid_pattern`), in this order
_GRID_FIELDS = ("dataset", "experiment", "method", "penalty", "L", "subset")


def _job_id(job):
    """A training job (a dict of :meth:`Plan.train_jobs`) as a key: its experiment and its fields
    within it (the dataset is the experiment's)."""
    return job["experiment"], job["method"], job["penalty"], job["alpha"], job["L"], job["subset"]


class Plan:
    """The jobs and output paths of a (checked) config.

    Parameters
    ----------
    config : dict
        The config as Snakemake merged it; ``config["results"]`` is the root of
        every output.

    Attributes
    ----------
    results, logs, bench : str
        The output root (no trailing separator), its ``logs/`` and ``benchmarks/``.
    run_pattern, trace_pattern, cv_pattern : str
        Paths of a training record, a trace and a CV record, with ``{dataset}``,
        ``{experiment}``, ``{method}`` (:func:`method_label` with ``path=True``),
        ``{penalty}``, ``{alpha}``, ``{L}``, ``{subset}`` (and ``{fold}``) fields.
    grid_pattern : str
        Path of the records of a grid's alphas fitted in one job, side by side or one after
        another (:meth:`grid_jobs`; a JSON array of records): the fields of ``run_pattern``
        but ``{alpha}``.
    accuracy_pattern : str
        Path of an equal-accuracy record (Figure 4's second row), with ``{dataset}``,
        ``{experiment}``, ``{L}`` and ``{subset}`` fields.
    table1, comparison : list of str
        Table 1 (csv, md, tex) and the paper comparison (csv, md).
    figures : dict
        ``{n: [png, pdf]}`` for Figures 1-4.
    """

    def __init__(self, config):
        self.config = config
        self._owners = None  # see run_owner
        self._grids = None  # see grid_jobs
        self.results = str(Path(config["results"]))
        self.logs = f"{self.results}/logs"
        self.bench = f"{self.results}/benchmarks"
        job = "{experiment}/{method}/{penalty}"
        self.run_pattern = f"{self.results}/{{dataset}}/runs/{job}/alpha~{{alpha}}/L~{{L}}/subset~{{subset}}.json"
        self.grid_pattern = f"{self.results}/{{dataset}}/runs/{job}/grid/L~{{L}}/subset~{{subset}}.json"
        self.trace_pattern = f"{self.results}/{{dataset}}/traces/{job}/L~{{L}}/subset~{{subset}}.json"
        self.accuracy_pattern = f"{self.results}/{{dataset}}/accuracy/{{experiment}}/L~{{L}}/subset~{{subset}}.json"
        self.cv_pattern = (
            f"{self.results}/{{dataset}}/cv/{job}/alpha~{{alpha}}/L~{{L}}/subset~{{subset}}/fold~{{fold}}.json"
        )
        self.table1 = [f"{self.results}/tables/table1.{ext}" for ext in ("csv", "md", "tex")]
        self.comparison = [f"{self.results}/tables/paper_comparison.{ext}" for ext in ("csv", "md")]
        self.figures = {n: [f"{self.results}/figures/figure{n}.{ext}" for ext in ("png", "pdf")]
                        for n in (1, 2, 3, 4)}

    def experiment(self, exp_id):
        """The config of one experiment."""
        return self.config["experiments"][exp_id]

    def grid_sizes(self, exp_id, grid):
        """Samples-per-class values of one grid (None = the whole training split)."""
        exp = self.experiment(exp_id)
        if exp["samples_per_class"] is None:
            return [None]
        return grid.get("samples_per_class", exp["samples_per_class"])

    def train_jobs(self, exp_id):
        """One dict per training job of an experiment (the fields of :attr:`run_pattern`)."""
        exp = self.experiment(exp_id)
        jobs = []
        for grid in exp["grids"]:
            for spc in self.grid_sizes(exp_id, grid):
                n_sub = 1 if spc is None else exp["n_subsets"]
                for alpha in grid["alphas"]:
                    jobs += [dict(dataset=exp["dataset"], experiment=exp_id, method=_grid_label(exp, grid),
                                  penalty=grid["penalty"], alpha=alpha_label(alpha), L=size_label(spc),
                                  subset=subset) for subset in range(n_sub)]
        return jobs

    def _run_owners(self):
        """``{(experiment, method, penalty, alpha, L, subset): experiment that makes its record}``
        for every training job of the config (see :meth:`run_owner`). Built once."""
        if self._owners is None:
            first, settings, owners = {}, {}, {}
            for exp_id in self.config["experiments"]:
                for job in self.train_jobs(exp_id):
                    curve = (exp_id, job["method"], job["penalty"])
                    if curve not in settings:  # one dict layout, hashable values
                        settings[curve] = tuple(self.train_settings(*curve).items())
                    same = (job["dataset"], job["method"], job["penalty"], job["alpha"], job["L"],
                            job["subset"], settings[curve])
                    owners[_job_id(job)] = first.setdefault(same, exp_id)
            self._owners = owners
        return self._owners

    def run_owner(self, job):
        """The experiment whose training job makes the record of ``job`` (a dict of
        :meth:`train_jobs`).

        With ``share_runs`` (the default), the first experiment in the config's order with
        the same dataset, fit settings (:meth:`train_settings`: method, groups, tol,
        max_iter, solver, stopping, precision), penalty, alpha, training size and subset:
        the training subsets and the features do not depend on the experiment, so such jobs
        would compute the same record. In the full config E4 (Figure 3) shares E2's
        (Figure 1) runs of hinge-reg, hinge-con, square, logit and one-vs-all on E2's first
        ten subsets. Without ``share_runs``, the job's own experiment.
        """
        if not self.config.get("share_runs", True):
            return job["experiment"]
        return self._run_owners()[_job_id(job)]

    def run_files(self, exp_id, **only):
        """Records of an experiment's training jobs (optionally only those whose fields match `only`),
        each at the path of the experiment that makes it (:meth:`run_owner`); a job fitted
        with its grid's other alphas in one job (:meth:`grid_jobs`) by the file of that
        grid job (once), which holds the records of all of them."""
        grids = self._grid_groups()
        files = []
        for job in self.train_jobs(exp_id):
            if not all(str(job[k]) == str(v) for k, v in only.items()):
                continue
            made = {**job, "experiment": self.run_owner(job)}
            group = grids["of"].get(_job_id(made))
            files.append(self.grid_pattern.format(**dict(zip(_GRID_FIELDS, group))) if group
                         else self.run_pattern.format(**made))
        return list(dict.fromkeys(files))

    def _grid_groups(self):
        """``{"of": {job id: group}, "alphas": {group: [alpha labels]}, "side_by_side": {group:
        bool}}`` for the training jobs fitted in one job per group (:meth:`grid_jobs`); a group
        is ``(dataset, experiment, method, penalty, L, subset)``. Built once."""
        if self._grids is None:
            from ..solvers.side_by_side import runs_side_by_side

            readers = {}  # the id of a job that makes a record -> the experiments that read it
            for exp_id in self.config["experiments"]:
                for job in self.train_jobs(exp_id):
                    made = _job_id({**job, "experiment": self.run_owner(job)})
                    readers.setdefault(made, set()).add(exp_id)
            alphas, side = {}, {}
            for exp_id, exp in self.config["experiments"].items():
                if not any(grid_side_by_side(exp, g) or grid_in_one_job(exp, g) for g in exp["grids"]):
                    continue
                asks = {}  # per curve: (side by side asked and allowed, alphas in one job asked)
                for job in self.train_jobs(exp_id):
                    curve = (job["method"], job["penalty"])
                    if curve not in asks:
                        grid = _curve_grid(exp, *curve)
                        asks[curve] = (grid_side_by_side(exp, grid)
                                       and runs_side_by_side(grid["method"], *grid_solver(exp, grid)),
                                       grid_in_one_job(exp, grid))
                    beside, together = asks[curve]
                    # side by side: only records that no other experiment reads (it may time
                    # them); in one job, fits in turn: the records that this experiment makes
                    beside = beside and readers[_job_id(job)] == {exp_id}
                    if not (beside or (together and self.run_owner(job) == exp_id)):
                        continue
                    group = tuple(job[k] for k in _GRID_FIELDS)
                    alphas.setdefault(group, []).append(job["alpha"])
                    side[group] = side.get(group, True) and beside
            alphas = {g: a for g, a in alphas.items() if len(a) > 1}  # one alpha: its own job
            of = {_job_id({**dict(zip(_GRID_FIELDS, g)), "alpha": a}): g
                  for g, labels in alphas.items() for a in labels}
            self._grids = {"of": of, "alphas": alphas, "side_by_side": {g: side[g] for g in alphas}}
        return self._grids

    def grid_jobs(self, exp_id=None):
        """The training jobs that fit several alphas of a grid in one job (one dict of the
        fields of :attr:`grid_pattern` each; all experiments' when ``exp_id`` is None): one
        job per method, penalty, L and subset, writing the records of its alphas.

        A grid with ``side_by_side: true`` (its own key, else its experiment's) has its alphas
        fitted side by side, sharing each iteration's products with the features, wherever
        the records are its own and no other experiment reads them (a record shared with
        another experiment, :meth:`run_owner`, may be timed there, as E4 does E2's first ten
        subsets; an experiment that times its own records leaves the key off those grids, as
        E5 does for its l2 grids, which Figure 4 times), the method is one of
        :data:`sparsesvm.solvers.side_by_side.SIDE_BY_SIDE_METHODS` with the paper's solver
        and the relative-change rule, and at least two alphas qualify.

        A grid with ``alphas_in_one_job: true`` (its own key, else its experiment's) has the
        other records that its experiment makes (:meth:`run_owner`) fitted in one job per
        subset too, one after another, each as a job of its own would fit it (its own
        clocks: timed records may be among them); any method and solver.
        :meth:`grid_job_side_by_side` says which of the two a grid job does.
        """
        return [dict(zip(_GRID_FIELDS, g)) for g in self._grid_groups()["alphas"]
                if exp_id is None or g[1] == exp_id]

    def grid_job_side_by_side(self, dataset, experiment, method, penalty, L, subset):
        """Whether one grid job (:meth:`grid_jobs`) fits its alphas side by side (else one
        after another)."""
        return self._grid_groups()["side_by_side"][(dataset, experiment, method, penalty, L, int(subset))]

    def grid_alphas(self, dataset, experiment, method, penalty, L, subset):
        """The alphas (path labels, in the grid's order) that one grid job fits."""
        return list(self._grid_groups()["alphas"][(dataset, experiment, method, penalty, L, int(subset))])

    def grid_files(self, exp_id=None):
        """The files of :meth:`grid_jobs`."""
        return [self.grid_pattern.format(**g) for g in self.grid_jobs(exp_id)]

    def shared_runs(self, exp_id):
        """``{experiment: count}`` of the records of ``exp_id``'s training jobs that another
        experiment's jobs make (:meth:`run_owner`); empty when it makes all of its own."""
        makers = Counter(self.run_owner(job) for job in self.train_jobs(exp_id))
        del makers[exp_id]
        return dict(makers)

    def trace_jobs(self, exp_id):
        """One dict per trace job (the fields of :attr:`trace_pattern`); none without ``trace``."""
        exp = self.experiment(exp_id)
        trace = exp["trace"]
        if trace is None:
            return []
        jobs = []
        for grid in exp["grids"]:
            label = _grid_label(exp, grid)
            if label not in trace["methods"]:
                continue
            for spc in self.grid_sizes(exp_id, grid):
                jobs += [dict(dataset=exp["dataset"], experiment=exp_id, method=label, penalty=grid["penalty"],
                              L=size_label(spc), subset=subset) for subset in range(trace["n_subsets"])]
        return jobs

    def trace_files(self, exp_id):
        return [self.trace_pattern.format(**job) for job in self.trace_jobs(exp_id)]

    def accuracy_jobs(self, exp_id):
        """One dict per equal-accuracy job (the fields of :attr:`accuracy_pattern`): every
        training size of the experiment, ``equal_accuracy.n_subsets`` subsets each."""
        exp = self.experiment(exp_id)
        acc = exp.get("equal_accuracy")
        if acc is None:
            return []
        return [dict(dataset=exp["dataset"], experiment=exp_id, L=size_label(spc), subset=subset)
                for spc in exp["samples_per_class"] for subset in range(acc["n_subsets"])]

    def accuracy_files(self, exp_id):
        return [self.accuracy_pattern.format(**job) for job in self.accuracy_jobs(exp_id)]

    def accuracy_table(self, exp_id):
        """The long table of an experiment's equal-accuracy times (csv), written with its figure."""
        return f"{self.results}/{self.experiment(exp_id)['dataset']}/tables/{exp_id}_accuracy.csv"

    def cv_folds(self, exp_id):
        """Number of cross-validation folds of an experiment (0 without ``cv``)."""
        cv = self.experiment(exp_id).get("cv")
        return 0 if cv is None else int(cv["folds"])

    def cv_files(self, exp_id):
        """CV job records of an experiment (none without ``cv``)."""
        return [self.cv_pattern.format(fold=k, **job)
                for job in self.train_jobs(exp_id) for k in range(self.cv_folds(exp_id))]

    def cv_tables(self, exp_id):
        """The CV tables of an experiment: runs, alphas, summary (csv)."""
        dataset = self.experiment(exp_id)["dataset"]
        names = ("cv_runs", "cv_alpha", "cv_summary")
        return [f"{self.results}/{dataset}/tables/{exp_id}_{name}.csv" for name in names]

    def train_settings(self, exp_id, method_label, penalty):
        """The fit settings of the training jobs of one curve (``method_label`` as in the paths)."""
        exp = self.experiment(exp_id)
        grid = _curve_grid(exp, method_label, penalty)
        solver, stopping = grid_solver(exp, grid)
        return dict(method=grid["method"], groups=grid["groups"], tol=exp["tol"], max_iter=exp["max_iter"],
                    solver=solver, stopping=stopping, precision=grid.get("precision", "double"))

    def subset_sizes(self, dataset):
        """Samples-per-class values of every configured experiment on a dataset, with their subset counts.

        Every experiment of the config counts, selected or not, so that the set of
        subsets (and hence the MNIST training images scattered) does not depend on
        which experiments a run selects.
        """
        sizes = {}
        for exp_id, exp in self.config["experiments"].items():
            if exp["dataset"] != dataset:
                continue
            for grid in exp["grids"]:
                for spc in self.grid_sizes(exp_id, grid):
                    if spc is not None:
                        sizes[spc] = max(sizes.get(spc, 0), exp["n_subsets"])
        return dict(sorted(sizes.items()))

    def subset_file(self, dataset, spc, subset):
        return f"{self.results}/{dataset}/subsets/L~{size_label(spc)}/subset~{subset}.npy"

    def all_subset_files(self, dataset):
        return [self.subset_file(dataset, spc, i) for spc, n in self.subset_sizes(dataset).items() for i in range(n)]

    def features_dir(self, dataset):
        return f"{self.results}/{dataset}/features"

    def downloads_of(self, dataset):
        """``{key: path}`` of a dataset's downloaded files."""
        return {key: f"{self.results}/downloads/{entry['file']}"
                for key, entry in self.config["downloads"][dataset].items()}

    def experiments_of(self, dataset):
        return [e for e, exp in self.config["experiments"].items() if exp["dataset"] == dataset]

    def selected_experiments(self):
        """The experiments `rule all` builds: those of ``run`` on the selected ``datasets``."""
        return [e for e in self.config["run"] if self.experiment(e)["dataset"] in self.config["datasets"]]

    def runs_table(self, exp_id):
        return self.experiment_tables(exp_id)[0]

    def experiment_tables(self, exp_id):
        """The tidy tables of an experiment: runs (parquet, csv) and best alpha (csv)."""
        dataset = self.experiment(exp_id)["dataset"]
        return [f"{self.results}/{dataset}/tables/{exp_id}_{name}"
                for name in ("runs.parquet", "runs.csv", "best_alpha.csv")]

    def traces_table(self, exp_id):
        """The long table of an experiment's traces (csv), written with its figure."""
        return f"{self.results}/{self.experiment(exp_id)['dataset']}/tables/{exp_id}_traces.csv"

    def product_files(self, exp_id):
        """Every output of an experiment: its table or figure, its tables, and its job records.

        The job records (and traces) are listed as targets too: Snakemake does not rebuild a
        deleted intermediate file when the files made from it are up to date, so a deleted
        record is rebuilt (and its experiment's table and figure after it) only as a target.
        """
        product = PRODUCT[exp_id]
        files = self.table1 if product == "table1" else self.figures[int(product[-1])]
        return (files + self.experiment_tables(exp_id) + self.trace_files(exp_id) + self.accuracy_files(exp_id)
                + self.run_files(exp_id))


# --------------------------------------------------------------------------- code triggers
#
# Snakemake's `code` rerun trigger sees a rule's script, not the package it imports.
# Every job that calls the package gets a `params` hash of the package files it runs.

#: The layer of each package file: that of its longest matching package-relative
#: prefix ("" = the package root: core, estimators, model/, solvers/, ...).
CODE_LAYERS = {
    "": "train",
    "data/": "data",  # downloads' parsers, features, subsets
    "experiments/": "report",  # aggregation, tables, figures, comparison, publishing
    "experiments/__init__.py": "train",
    "experiments/runner.py": "train",  # the training job itself
    "experiments/accuracy.py": "accuracy",  # the equal-accuracy jobs (Figure 4's second row)
    "experiments/cv.py": "cv",  # folds and validation errors: CV training and the CV tables
    "experiments/lock.py": "workflow",  # run by the workflow itself, by no job
    "experiments/plan.py": "workflow",
}

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def code_layer(relpath):
    """The layer (a value of :data:`CODE_LAYERS`) of a package-relative file path."""
    prefix = max((p for p in CODE_LAYERS if relpath.startswith(p)), key=len)
    return CODE_LAYERS[prefix]


def code_hash(*layers, package_dir=PACKAGE_DIR):
    """Hash of the package's ``.py`` files in the given layers (16 hex digits).

    Parameters
    ----------
    *layers : str
        Values of :data:`CODE_LAYERS` (e.g. ``"train", "cv"`` for the CV jobs).
    package_dir : path
        The ``sparsesvm`` package directory.

    Returns
    -------
    str
        SHA-256 over each file's package-relative path and contents, in path order.
    """
    package_dir = Path(package_dir)
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).as_posix()
        if "__pycache__" in path.parts or code_layer(rel) not in layers:
            continue
        digest.update(rel.encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
