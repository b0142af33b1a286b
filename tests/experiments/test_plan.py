"""Tests of sparsesvm.experiments.plan: the workflow's job plan, config checks, labels and
code triggers, on plain dict configs (no Snakemake; tests/workflow/test_workflow.py runs the rules).

* the training, trace and CV jobs and their paths follow the grids of the config;
* subsets are shared by the experiments of a dataset, and so are training jobs with the same
  settings (``share_runs``); each experiment's products;
* every cross-field config check refuses its case naming the key;
* one label function: ``+solver`` in paths, ``[solver]`` in tables;
* the code hashes: each package file in one layer; an edit changes its layer's hash only.
"""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from sparsesvm.experiments import aggregate, plan
from sparsesvm.experiments.plan import ConfigError, Plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workflow_helpers import FULL, TEST, load_config  # noqa: E402

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


@pytest.fixture
def cfg(tmp_path):
    """config/test.yaml merged over config/config.yaml (as Snakemake merges them), results in tmp_path."""
    return {**load_config(FULL, TEST), "results": str(tmp_path / "results")}


def _apart(cfg):
    """``cfg`` with every experiment's alphas in jobs of their own but where side by side
    (``alphas_in_one_job`` off: config.yaml turns it on everywhere)."""
    cfg = copy.deepcopy(cfg)
    for exp in cfg["experiments"].values():
        exp["alphas_in_one_job"] = False
    return cfg


def expected_train_jobs(exp):
    n = 0
    for grid in exp["grids"]:
        sizes = [None] if exp["samples_per_class"] is None else grid.get("samples_per_class", exp["samples_per_class"])
        n += len(grid["alphas"]) * sum(1 if s is None else exp["n_subsets"] for s in sizes)
    return n


# --------------------------------------------------------------------------- labels


def test_method_label_path_and_table():
    assert plan.method_label("hinge-reg", "paper") == "hinge-reg"
    assert plan.method_label("hinge-reg", "paper", path=True) == "hinge-reg"
    assert plan.method_label("hinge-con", "accelerated") == "hinge-con [accelerated]"
    assert plan.method_label("hinge-con", "accelerated", path=True) == "hinge-con+accelerated"
    assert plan.method_label("liblinear-cs", "liblinear") == "liblinear-cs"
    assert plan.method_label("ova", None) == "ova"
    assert aggregate.method_label is plan.method_label  # the tables use the same function


def test_alpha_and_size_labels():
    assert plan.alpha_label(1.0e-2) == "0.01" and plan.alpha_label(3) == "3.0"
    assert float(plan.alpha_label(0.1 + 0.2)) == 0.1 + 0.2
    assert plan.size_label(None) == "all" and plan.size_label(25) == "25K"


# --------------------------------------------------------------------------- the job plan


def test_train_jobs_follow_the_grids(cfg):
    cfg = _apart(cfg)  # the paths of jobs of their own (test_alphas_in_one_job: the key on)
    p = Plan(cfg)
    for exp_id, exp in cfg["experiments"].items():
        files = p.run_files(exp_id)
        # a grid job's file stands for its alphas' records (test_alphas_side_by_side_...)
        batched = sum(len(p.grid_alphas(**g)) - 1 for g in p.grid_jobs(exp_id))
        assert len(files) == len(set(files)) == expected_train_jobs(exp) - batched, exp_id
    results = cfg["results"]
    assert f"{results}/leukemia/runs/e1/hinge-reg/l1/alpha~10.0/L~all/subset~0.json" in p.run_files("e1")
    e4 = p.run_files("e4", method="hinge-con+accelerated")
    assert e4 == [f"{results}/mnist/runs/e4/hinge-con+accelerated/l1inf/alpha~{a}/L~2K/subset~0.json"
                  for a in ("0.01", "0.1")]
    # a grid's own samples_per_class restricts its sizes (E5's l1,inf at 3K only)
    assert {Path(f).parent.name for f in p.run_files("e5", penalty="l1inf")} == {"L~3K"}


def test_runs_shared_with_an_earlier_experiment(cfg):
    cfg = _apart(cfg)  # the paths of jobs of their own (test_alphas_in_one_job: the key on)
    # test.yaml's E4 has E2's hinge-reg alphas 0.01 and 1 and hinge-con alpha 0.1 at L = 2K on
    # subset 0, with E2's settings: those three run once, at E2's paths
    p, results = Plan(cfg), cfg["results"]
    e2_path = f"{results}/mnist/runs/e2/{{}}/l1inf/alpha~{{}}/L~2K/subset~0.json"
    shared = {e2_path.format("hinge-reg", "0.01"), e2_path.format("hinge-reg", "1.0"),
              e2_path.format("hinge-con", "0.1")}
    e4 = p.run_files("e4")
    assert len(e4) == len(set(e4)) == expected_train_jobs(cfg["experiments"]["e4"])
    assert {f for f in e4 if "/runs/e2/" in f} == shared and shared <= set(p.run_files("e2"))
    assert p.shared_runs("e4") == {"e2": 3} and p.shared_runs("e2") == {}
    assert p.run_files("e4", method="hinge-con") == [
        f"{results}/mnist/runs/e4/hinge-con/l1inf/alpha~0.01/L~2K/subset~0.json",
        e2_path.format("hinge-con", "0.1")]
    # CV folds and traces stay the experiment's own
    assert all("/e4/" in f for f in p.trace_files("e4"))
    assert all("/cv/e2/" in f for f in p.cv_files("e2"))
    # any difference in the fit settings, or share_runs off: no sharing
    edited = copy.deepcopy(cfg)
    edited["experiments"]["e4"]["tol"] = 1.0e-4
    assert Plan(edited).shared_runs("e4") == {}
    edited = copy.deepcopy(cfg)
    _grid(edited, "e4", 0)["groups"] = 9  # e4's hinge-reg only
    assert Plan(edited).shared_runs("e4") == {"e2": 1}
    assert Plan({**cfg, "share_runs": False}).shared_runs("e4") == {}
    assert all("/runs/e4/" in f for f in Plan({**cfg, "share_runs": False}).run_files("e4"))


def test_alphas_side_by_side_where_no_other_experiment_reads_the_records(cfg):
    cfg = _apart(cfg)  # the paths of jobs of their own (test_alphas_in_one_job: the key on)
    # test.yaml's E2 (side_by_side): hinge-reg has two alphas at L = 2K and 3K on subsets 0
    # and 1; E4 reads the two at 2K on subset 0 (shared runs, which E4 times): those stay
    # jobs of their own, the three other (L, subset) pairs are grid jobs. The other E2 grids
    # have one alpha each (nothing to share).
    p, results = Plan(cfg), cfg["results"]
    assert cfg["experiments"]["e2"]["side_by_side"] is True
    grids = p.grid_jobs()
    assert grids == p.grid_jobs("e2") and p.grid_jobs("e4") == []
    assert {(g["method"], g["L"], g["subset"]) for g in grids} == {
        ("hinge-reg", "2K", 1), ("hinge-reg", "3K", 0), ("hinge-reg", "3K", 1)}
    assert p.grid_alphas("mnist", "e2", "hinge-reg", "l1inf", "3K", "1") == ["0.01", "1.0"]
    grid_file = f"{results}/mnist/runs/e2/hinge-reg/l1inf/grid/L~3K/subset~1.json"
    assert grid_file in p.grid_files("e2")
    files = p.run_files("e2", method="hinge-reg")
    assert files == [f"{results}/mnist/runs/e2/hinge-reg/l1inf/alpha~0.01/L~2K/subset~0.json",
                     f"{results}/mnist/runs/e2/hinge-reg/l1inf/grid/L~2K/subset~1.json",
                     f"{results}/mnist/runs/e2/hinge-reg/l1inf/alpha~1.0/L~2K/subset~0.json",
                     f"{results}/mnist/runs/e2/hinge-reg/l1inf/grid/L~3K/subset~0.json", grid_file]
    # E4 reads E2's shared records at their own paths, as without side_by_side
    off = copy.deepcopy(cfg)
    off["experiments"]["e2"]["side_by_side"] = False
    assert p.run_files("e4") == Plan(off).run_files("e4") and Plan(off).grid_jobs() == []
    # without shared runs every (L, subset) of E2's hinge-reg is a grid job
    assert len(Plan({**cfg, "share_runs": False}).grid_jobs()) == 4
    # not for the accelerated solver, one-vs-all or the certified gap rule
    edited = copy.deepcopy(cfg)
    _grid(edited, "e2", 0)["solver"] = "accelerated"
    _grid(edited, "e2", 0)["stopping"] = "gap"
    assert Plan(edited).grid_jobs() == []
    edited = copy.deepcopy(cfg)
    edited["experiments"]["e2"]["stopping"] = "gap"
    assert Plan(edited).grid_jobs() == []
    edited = copy.deepcopy(cfg)
    _grid(edited, "e2", 4)["alphas"] = [0.1, 1.0]  # ova
    assert {g["method"] for g in Plan(edited).grid_jobs()} == {"hinge-reg"}
    _grid(edited, "e2", 3)["alphas"] = [0.1, 1.0]  # logit: not read by E4 at these alphas
    assert {g["method"] for g in Plan(edited).grid_jobs()} == {"hinge-reg", "logit"}


def test_side_by_side_per_grid_overrides_the_experiment(cfg):
    cfg = _apart(cfg)  # the paths of jobs of their own (test_alphas_in_one_job: the key on)
    # a grid's own side_by_side wins over its experiment's, both ways
    edited = copy.deepcopy(cfg)
    _grid(edited, "e2", 0)["side_by_side"] = False  # hinge-reg: E2's only grid with two alphas
    assert Plan(edited).grid_jobs() == []
    edited = copy.deepcopy(cfg)
    edited["experiments"]["e2"]["side_by_side"] = False
    _grid(edited, "e2", 0)["side_by_side"] = True
    assert Plan(edited).grid_jobs() == Plan(cfg).grid_jobs()
    # E5 (no side_by_side of its own): only its flagged grid, and only where two alphas are its own
    edited = copy.deepcopy(cfg)
    e5 = edited["experiments"]["e5"]
    assert "side_by_side" not in e5 and Plan(edited).grid_jobs("e5") == []
    l1inf = next(i for i, g in enumerate(e5["grids"]) if g["penalty"] == "l1inf" and g["method"] == "hinge-reg")
    _grid(edited, "e5", l1inf).update(side_by_side=True, alphas=[0.1, 1.0])
    jobs = Plan(edited).grid_jobs("e5")
    n_subsets, sizes = e5["n_subsets"], e5["grids"][l1inf]["samples_per_class"]
    assert len(jobs) == n_subsets * len(sizes) and {(g["method"], g["penalty"]) for g in jobs} == {
        ("hinge-reg", "l1inf")}
    assert Plan(edited).grid_alphas("mnist", "e5", "hinge-reg", "l1inf", jobs[0]["L"], "0") == ["0.1", "1.0"]
    # the schema takes the key on a grid, a boolean only
    jsonschema = pytest.importorskip("jsonschema")  # a dependency of Snakemake, not of the package
    schema = yaml.safe_load(SCHEMA.read_text())
    jsonschema.validate(edited, schema)
    _grid(edited, "e5", l1inf)["side_by_side"] = "yes"
    with pytest.raises(jsonschema.ValidationError, match="'yes' is not of type 'boolean'"):
        jsonschema.validate(edited, schema)


def test_alphas_in_one_job(cfg):
    # config.yaml's alphas_in_one_job (merged under test.yaml): the records an experiment makes,
    # two alphas or more of one method, penalty, L and subset, in one job, one fit after another,
    # where they are not side by side; any method and solver, the whole split (E1) included
    p, results = Plan(cfg), cfg["results"]
    assert all(exp["alphas_in_one_job"] is True for exp in cfg["experiments"].values())
    apart = Plan(_apart(cfg))
    side = {tuple(g.values()) for g in apart.grid_jobs()}
    assert side and all(p.grid_job_side_by_side(**g) for g in apart.grid_jobs())
    turn = [g for g in p.grid_jobs() if tuple(g.values()) not in side]
    assert not any(p.grid_job_side_by_side(**g) for g in turn)
    assert {tuple(g.values()) for g in p.grid_jobs()} == side | {tuple(g.values()) for g in turn}
    # E2's hinge-reg at 2K on subset 0, which E4 reads (and times): in turn, at E2's path, and
    # E4 reads that file; E4's own accelerated hinge-con and E1's curves likewise in one job
    shared = f"{results}/mnist/runs/e2/hinge-reg/l1inf/grid/L~2K/subset~0.json"
    assert ("mnist", "e2", "hinge-reg", "l1inf", "2K", 0) in {tuple(g.values()) for g in turn}
    assert p.grid_alphas("mnist", "e2", "hinge-reg", "l1inf", "2K", "0") == ["0.01", "1.0"]
    assert shared in p.run_files("e4") and shared in p.run_files("e2")
    assert not any("/runs/e2/hinge-reg/l1inf/alpha~" in f for f in p.run_files("e4"))
    assert p.run_files("e4", method="hinge-con+accelerated") == [
        f"{results}/mnist/runs/e4/hinge-con+accelerated/l1inf/grid/L~2K/subset~0.json"]
    e1 = p.grid_jobs("e1")  # test.yaml's E1: the l1 grids have two alphas, the others one
    assert {g["L"] for g in e1} == {"all"} and len(e1) == sum(
        len(g["alphas"]) > 1 for g in cfg["experiments"]["e1"]["grids"]) == 5
    assert p.grid_alphas("leukemia", "e1", "hinge-reg", "l1", "all", "0") == ["0.1", "10.0"]
    # every record of an experiment once: in a file of its own or in one grid job's
    for exp_id, exp in cfg["experiments"].items():
        files = p.run_files(exp_id)
        own = [f for f in files if f"/runs/{exp_id}/" in f]
        held = {tuple(g.values()): len(p.grid_alphas(**g)) for g in p.grid_jobs(exp_id)}
        n_own = sum(held[tuple(g.values())] for g in p.grid_jobs(exp_id)) + sum(
            "/grid/" not in f for f in own)
        assert len(files) == len(set(files)) and len(own) == len(set(own)), exp_id
        assert n_own == expected_train_jobs(exp) - sum(p.shared_runs(exp_id).values()), exp_id
    # a grid's own key wins over its experiment's, both ways
    edited = copy.deepcopy(cfg)
    _grid(edited, "e1", 5)["alphas_in_one_job"] = False
    assert len(Plan(edited).grid_jobs("e1")) == len(e1) - 1
    edited = _apart(cfg)
    _grid(edited, "e1", 5)["alphas_in_one_job"] = True
    assert Plan(edited).grid_jobs("e1") == [g for g in e1 if g["method"] == "hinge-reg"
                                            and g["penalty"] == "l1"]
    # the schema takes the key on an experiment and on a grid, a boolean only
    jsonschema = pytest.importorskip("jsonschema")
    schema = yaml.safe_load(SCHEMA.read_text())
    jsonschema.validate(edited, schema)
    edited["experiments"]["e3"]["alphas_in_one_job"] = 1
    with pytest.raises(jsonschema.ValidationError, match="1 is not of type 'boolean'"):
        jsonschema.validate(edited, schema)


def test_trace_and_cv_jobs(cfg):
    p = Plan(cfg)
    e4 = cfg["experiments"]["e4"]
    traces = p.trace_files("e4")
    assert len(traces) == len(e4["trace"]["methods"]) * len(e4["samples_per_class"]) * e4["trace"]["n_subsets"]
    assert f"{cfg['results']}/mnist/traces/e4/hinge-reg+accelerated/l1inf/L~2K/subset~0.json" in traces
    assert p.trace_files("e2") == []
    assert len(p.cv_files("e1")) == 2 * len(p.train_jobs("e1"))
    # one CV job per training job, fold and alpha (a grid job's alphas too)
    assert len(p.cv_files("e2")) == 2 * len(p.train_jobs("e2")) and p.cv_folds("e2") == 2
    assert p.cv_files("e3") == [] and p.cv_folds("e3") == 0
    assert p.cv_files("e1")[0].endswith("/subset~0/fold~0.json")


def test_subsets_shared_by_the_experiments_of_a_dataset(cfg):
    p = Plan(cfg)
    # E2: sizes 2, 3 with 2 subsets; E4: 2 with 1; E5: 2, 3 with 1 -> the union, most subsets
    assert p.subset_sizes("mnist") == {2: 2, 3: 2}
    assert p.subset_sizes("leukemia") == {}
    assert len(p.all_subset_files("mnist")) == 4
    # every experiment counts, selected or not
    cfg["run"] = ["e1"]
    assert Plan(cfg).subset_sizes("mnist") == {2: 2, 3: 2}
    assert Plan(cfg).selected_experiments() == ["e1"]
    cfg["run"], cfg["datasets"] = ["e1", "e2"], ["mnist"]
    assert Plan(cfg).selected_experiments() == ["e2"]


def test_product_files_and_settings(cfg):
    p = Plan(cfg)
    e1 = p.product_files("e1")
    assert e1[:3] == p.table1 and p.runs_table("e1") in e1 and set(p.run_files("e1")) <= set(e1)
    e4 = p.product_files("e4")
    assert e4[:2] == p.figures[3] and set(p.trace_files("e4")) <= set(e4)
    assert p.traces_table("e4") == f"{cfg['results']}/mnist/tables/e4_traces.csv"
    assert p.train_settings("e4", "hinge-reg+accelerated", "l1inf") == dict(
        method="hinge-reg", groups=81, tol=1.0e-3, max_iter=200, solver="accelerated", stopping="gap",
        precision="double")
    assert p.train_settings("e1", "ova", "l12")["stopping"] == "rel_change"
    _grid(cfg, "e2", 0).update(precision="single")  # hinge-reg
    assert Plan(cfg).train_settings("e2", "hinge-reg", "l1inf")["precision"] == "single"
    assert p.downloads_of("news20") == {"tarball": f"{cfg['results']}/downloads/news20/20news-bydate.tar.gz"}


def test_results_root_is_normalised(cfg):
    cfg["results"] = cfg["results"] + "/"
    assert not Plan(cfg).results.endswith("/")


# --------------------------------------------------------------------------- config checks


def test_shipped_configs_pass(cfg):
    plan.check_finite(cfg)
    plan.check_config(cfg)
    plan.check_sizes(cfg)


def test_non_finite_numbers_named():
    with pytest.raises(ConfigError, match=r"^experiments\.e1\.grids\[0\]\.alphas\[1\]: inf is not a finite"):
        plan.check_finite({"experiments": {"e1": {"grids": [{"alphas": [1.0, float("inf")]}]}}})
    with pytest.raises(ConfigError, match=r"^tol: nan"):
        plan.check_finite({"tol": float("nan")})


def _grid(cfg, exp_id, i=0):
    return cfg["experiments"][exp_id]["grids"][i]


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: _grid(c, "e3").update(method="ova"),
         r"experiments\.e3\.grids\[0\]\.groups: method 'ova' cannot use across-class groups"),
        (lambda c: _grid(c, "e5", 2).update(penalty="l1"),
         r"experiments\.e5\.grids\[2\]\.method: 'liblinear-cs' solves the l2 problem only"),
        (lambda c: _grid(c, "e1").update(groups=5),
         r"experiments\.e1\.grids\[0\]\.groups: penalty 'l2' takes groups=None"),
        (lambda c: _grid(c, "e1", 10).update(groups=None),
         r"experiments\.e1\.grids\[10\]\.groups: penalty 'l12' needs groups"),
        (lambda c: _grid(c, "e1", 11).update(groups=4),
         r"experiments\.e1\.grids\[11\]\.groups: penalty 'l12' is used with groups 5 and 4"),
        (lambda c: _grid(c, "e1", 1).update(method="hinge-reg"),
         r"experiments\.e1\.grids\[1\]: penalty 'l2' x method 'hinge-reg' appears twice"),
        (lambda c: _grid(c, "e4", 2).update(solver="accelerated"),
         r"experiments\.e4\.grids\[2\]\.solver: 'accelerated' solves \[.*'hinge-reg'.*\] only, got method 'hinge-lin'"),
        (lambda c: _grid(c, "e4", 6).update(stopping="rel_change"),
         r"experiments\.e4\.grids\[6\]\.stopping: the accelerated solver stops on the certified gap"),
        (lambda c: _grid(c, "e2", 4).update(precision="single"),
         r"experiments\.e2\.grids\[4\]\.precision: precision='single' is not available for method 'ova' "
         r"with solver 'paper': .* offers precision='single' for \(.*'hinge-reg'.*\)"),
        (lambda c: _grid(c, "e4", 6).update(precision="single"),
         r"experiments\.e4\.grids\[6\]\.precision: precision='single' is not available for method "
         r"'hinge-reg' with solver 'accelerated': it computes in float64 only"),
        (lambda c: _grid(c, "e5", 3).update(samples_per_class=[4]),
         r"experiments\.e5\.grids\[3\]\.samples_per_class: \[4\] not in experiments\.e5\.samples_per_class"),
        (lambda c: c["experiments"]["e1"].update(n_subsets=2),
         r"experiments\.e1\.n_subsets must be 1 when experiments\.e1\.samples_per_class is null"),
        (lambda c: c["experiments"]["e1"].update(samples_per_class=[2]),
         r"experiments\.e1\.samples_per_class: leukemia is trained on its whole training split"),
        (lambda c: c["experiments"]["e5"].update(samples_per_class=None),
         r"experiments\.e5\.samples_per_class: mnist needs training subset sizes"),
        (lambda c: c["experiments"]["e4"]["trace"].update(n_subsets=2),
         r"experiments\.e4\.trace\.n_subsets \(2\) exceeds experiments\.e4\.n_subsets \(1\)"),
        (lambda c: c["experiments"]["e4"]["trace"].update(methods=["ova+accelerated"]),
         r"experiments\.e4\.trace\.methods: \['ova\+accelerated'\] have no grid"),
        (lambda c: c["downloads"]["leukemia"]["train"].update(file="mnist/x.tsv"),
         r"downloads\.leukemia\.train\.file: 'mnist/x\.tsv' must lie in the folder of its dataset"),
        (lambda c: c["downloads"]["leukemia"]["train"].update(file="leukemia/data_set_ALL_AML_independent.tsv"),
         r"downloads\.leukemia\.test\.file: .* is also downloads\.leukemia\.train\.file"),
        (lambda c: c.update(mirror="/nonexistent/mirror"), r"mirror: '/nonexistent/mirror' is not a directory"),
    ],
    ids=["ova-features", "peer-l1", "l2-groups", "l12-no-groups", "two-groupings", "twice", "accelerated-method",
         "accelerated-stopping", "single-ova", "single-accelerated", "grid-size",
         "whole-split-subsets", "leukemia-sizes", "mnist-no-sizes",
         "trace-subsets", "trace-method", "download-folder", "download-twice", "mirror"],
)
def test_config_checks_name_the_key(cfg, edit, message):
    edit(cfg)
    with pytest.raises(ConfigError, match=message):
        plan.check_config(cfg)


def test_sizes_against_the_real_data(cfg):
    strict = copy.deepcopy(cfg)
    strict["strict_sizes"] = True
    strict["experiments"]["e3"]["samples_per_class"] = [400]
    with pytest.raises(ConfigError, match="experiments.e3.samples_per_class: 400 samples per class requested, "
                                          "but the smallest training class of the real news20 data has 377"):
        plan.check_sizes(strict)
    _grid(cfg, "e2").update(groups=4000)  # 81 scattering channels x 7 x 7 = 3969 features
    with pytest.raises(ConfigError, match=r"experiments\.e2\.grids\[0\]\.groups: block size 4000 exceeds the 3969"):
        plan.check_sizes(cfg)


# --------------------------------------------------------------------------- code triggers


def test_every_package_file_has_one_layer():
    layers = {plan.code_layer(p.relative_to(plan.PACKAGE_DIR).as_posix()) for p in plan.PACKAGE_DIR.rglob("*.py")}
    assert layers == {"train", "data", "report", "cv", "workflow", "accuracy"}
    assert plan.code_layer("core.py") == plan.code_layer("solvers/paper.py") == plan.code_layer("model/operator.py")
    assert plan.code_layer("experiments/runner.py") == "train"
    assert plan.code_layer("experiments/accuracy.py") == "accuracy"
    assert plan.code_layer("data/features.py") == "data"
    assert plan.code_layer("experiments/figures.py") == "report"
    assert plan.code_layer("experiments/plan.py") == "workflow"


def test_code_hash_changes_with_its_layer_only(tmp_path):
    pkg = tmp_path / "sparsesvm"
    shutil.copytree(plan.PACKAGE_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    layers = ("data", "train", "report", "cv", "workflow", "accuracy")
    before = {layer: plan.code_hash(layer, package_dir=pkg) for layer in layers}
    assert before == {layer: plan.code_hash(layer) for layer in layers}  # the same files, the same hashes
    assert len(set(before.values())) == len(layers)
    for rel, layer in [("solvers/paper.py", "train"), ("experiments/figures.py", "report"),
                       ("experiments/cv.py", "cv"), ("data/subsets.py", "data"), ("experiments/lock.py", "workflow"),
                       ("experiments/accuracy.py", "accuracy")]:
        path = pkg / rel
        path.write_text(path.read_text() + "\n# edited\n")
        after = {other: plan.code_hash(other, package_dir=pkg) for other in layers}
        assert {other for other in layers if after[other] != before[other]} == {layer}, rel
        before = after
    assert plan.code_hash("train", "cv", package_dir=pkg) not in (before["train"], before["cv"])
