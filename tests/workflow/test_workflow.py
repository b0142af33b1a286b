"""Tests of the Snakemake workflow (Snakefile, workflow/, config/).

Every run uses ``--directory`` pointing at a temporary directory and a ``results``
root there, so the repository's ``results/`` and ``.snakemake/`` are never touched.

* the full config builds the whole DAG; the training jobs per experiment equal the grid
  sizes computed here from the YAML;
* ``snakemake --lint`` is clean;
* invalid configs stop before any job with a message naming the key;
* config/test.yaml runs end to end on the tiny fixture mirror (tests/fixtures_data.py):
  Table 1 against the records, tidy tables, figures, traces, MNIST features;
  a second run has nothing to do; deleting one result reruns that job and its dependants;
* E1 on the real mirror (../shared/data) on a reduced alpha grid.
"""

from __future__ import annotations

import json
import re

import fixtures_data  # the data helper's tiny-file generators
import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_helpers import (
    E1_METHODS,
    FULL,
    PENALTIES,
    QUICK,
    TEST,
    TESTS,
    expected_files,
    expected_grid_jobs,
    expected_run_jobs,
    expected_train_jobs,
    job_stats,
    load_config,
    read_records,
    smk,
    train_wildcards,
)

from sparsesvm.experiments.plan import Plan


def test_configs_are_merge_safe_and_typed():
    """Configs differ only in lists (replaced on merge); floats are floats (1.0e-3, not 1e-3)."""
    for path in (FULL, QUICK, TEST):
        cfg = yaml.safe_load(path.read_text())
        assert set(cfg["experiments"]) == {"e1", "e2", "e3", "e4", "e5"}, path
        for exp_id, exp in cfg["experiments"].items():
            assert isinstance(exp["tol"], float), (path, exp_id)
            for grid in exp["grids"]:
                assert all(isinstance(a, float) and a > 0 for a in grid["alphas"]), (path, exp_id, grid)


def test_test_config_checksums_match_fixture(tmp_path):
    """config/test.yaml holds the digests of the deterministic tiny mirror."""
    info = fixtures_data.write_tiny_mirror(tmp_path / "mirror")
    cfg = yaml.safe_load(TEST.read_text())
    for files in cfg["downloads"].values():
        for entry in files.values():
            assert entry["algorithm"] == "sha256" and not entry["decompressed"]
            assert entry["checksum"] == [info["checksums"][entry["file"]]["sha256"]], entry["file"]


@pytest.mark.slow
def test_full_dag_counts_training_jobs(tmp_path):
    """`snakemake -n` on config/config.yaml builds the whole DAG; train jobs = grid sizes."""
    cfg = load_config(FULL)
    _, out = smk(tmp_path, "-n", targets=["all"], configfiles=[FULL])
    jobs = train_wildcards(out)
    got = {}
    for job in jobs:
        got[job["experiment"]] = got.get(job["experiment"], 0) + 1
    # each experiment runs its jobs but those an earlier one has (E4: E2's 1290 of its 1980);
    # E2 those that E4 does not read as grid jobs side by side (180, one per method x L x subset
    # 10-24, each for the grid's alphas), E5 its l1inf grids (20: two methods x 10 subsets at
    # L = 500K; its l2 grids, which Figure 4 times, are not); every other record in a grid job
    # of alphas one after another (alphas_in_one_job, every experiment): no single job left
    grids = expected_grid_jobs(cfg)
    assert {e: n - sum(grids[e].values()) for e, n in expected_run_jobs(cfg).items()} == {
        e: got.get(e, 0) for e in cfg["experiments"]} == {e: 0 for e in cfg["experiments"]}
    assert expected_train_jobs(cfg)["e4"] - expected_run_jobs(cfg)["e4"] == 1290
    assert {e: len(g) for e, g in grids.items()} == {"e1": 20, "e2": 375, "e3": 120, "e4": 90, "e5": 200}
    plan = Plan({**cfg, "results": str(tmp_path / "results")})
    beside = [g for g in plan.grid_jobs() if plan.grid_job_side_by_side(**g)]
    assert len(beside) == 200 and {(g["experiment"], g["method"], g["penalty"]) for g in beside} == {
        (e, m, "l1inf") for e in ("e2", "e5") for m in ("hinge-reg", "hinge-con")} | {
        ("e2", m, "l1inf") for m in ("square", "logit")}
    assert {g["subset"] for g in beside if g["experiment"] == "e2"} == set(range(10, 25))
    stats = job_stats(out)
    assert stats.get("train", 0) == len(jobs) == 0 and stats["train_grid"] == 805
    assert stats["download"] == 8
    assert stats["features"] == 3
    assert stats["aggregate"] == 5
    for rule in ("table1", "figure1", "figure2", "figure3", "figure4", "paper_comparison"):
        assert stats[rule] == 1, rule
    # E4 traces: one per traced method x L x trace subset
    e4 = cfg["experiments"]["e4"]
    assert stats["trace"] == len(e4["trace"]["methods"]) * len(e4["samples_per_class"]) * e4["trace"]["n_subsets"]
    # subsets: one file per (dataset, n per class, subset index), shared by experiments
    sizes = {}
    for exp in cfg["experiments"].values():
        if exp["samples_per_class"] is None:
            continue
        for grid in exp["grids"]:
            for n in grid.get("samples_per_class", exp["samples_per_class"]):
                key = (exp["dataset"], n)
                sizes[key] = max(sizes.get(key, 0), exp["n_subsets"])
    assert stats["subset"] == sum(sizes.values())
    # E4 uses the first 10 of E2's 25 subsets: the very same files, and E2's runs where the
    # settings are the same (hinge-reg, in E2's grid jobs of alphas in turn); hinge-lin is E4's own
    assert "mnist/subsets/L~3K/subset~9.npy" in out and "L~3K/subset~10.npy" in out
    assert re.search(r"runs/e2/hinge-reg/l1inf/grid/L~3K/subset~9\.json", out)
    assert not re.search(r"runs/e4/hinge-reg/", out) and re.search(r"runs/e4/hinge-lin/", out)


def test_dataset_selection_and_targets(tmp_path):
    """--config datasets=[...] selects what `all` builds; target rules build one product."""
    _, out = smk(tmp_path, "-n", "--quiet", "rules", configfiles=[FULL], config={"datasets": "[leukemia]"})
    stats = job_stats(out)
    grids = expected_grid_jobs(load_config(FULL))  # every record in a grid job (alphas_in_one_job)
    assert stats["train_grid"] == len(grids["e1"]) and "train" not in stats
    assert "figure1" not in stats and stats["table1"] == 1
    _, out = smk(tmp_path, "-n", "--quiet", "rules", targets=["figure2"], configfiles=[FULL])
    stats = job_stats(out)
    assert stats["train_grid"] == len(grids["e3"])
    assert set(stats) == {"download", "labels", "subset", "features", "train_grid", "aggregate", "figure2"}


def test_lint_is_clean(tmp_path):
    rc, out = smk(tmp_path, "--lint", configfiles=[FULL], check=False)
    assert rc == 0, out[-4000:]
    assert "Congratulations, your workflow is in a good condition!" in out, out[-4000:]


@pytest.mark.parametrize(
    "overlay, key, message",
    [
        ({"mirrror": None}, "mirrror", "Additional properties are not allowed"),
        (
            {"experiments": {"e1": {"grids": [{"penalty": "l2", "groups": None, "method": "hinge-reg",
                                               "alphas": ["1e-3"]}]}}},
            "['alphas'][0]",
            "is not of type 'number'",
        ),
        (
            {"experiments": {"e1": {"grids": [{"penalty": "l2", "groups": None, "method": "hinge-reg",
                                               "alphas": [1.0, -0.1]}]}}},
            "['alphas'][1]",
            "less than or equal to the minimum of 0",
        ),
        (
            {"experiments": {"e2": {"grids": [{"penalty": "l1inf", "groups": 81, "method": "hinge-sq",
                                               "alphas": [1.0]}]}}},
            "['method']",
            "'hinge-sq' is not one of",
        ),
        (
            {"experiments": {"e3": {"tol": "1e-5"}}},
            "['e3']['tol']",
            "is not of type 'number'",
        ),
        (
            {"experiments": {"e3": {"grids": [{"penalty": "l12", "groups": "features", "method": "ova",
                                               "alphas": [1.0]}]}}},
            "experiments.e3.grids[0].groups",
            "cannot use across-class groups",
        ),
        (
            {"experiments": {"e5": {"grids": [{"penalty": "l1", "groups": None, "method": "liblinear-cs",
                                               "alphas": [1.0]}]}}},
            "experiments.e5.grids[0].method",
            "l2 problem only",
        ),
    ],
    ids=["unknown-key", "alpha-string", "alpha-negative", "unknown-method", "tol-string", "ova-features",
         "peer-l1"],
)
def test_invalid_config_stops_before_any_job(tmp_path, overlay, key, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(overlay))
    results = tmp_path / "results"
    rc, out = smk(tmp_path, "--cores", "1", targets=["e1"], configfiles=[TEST, bad],
                  config={"results": results}, check=False)
    assert rc != 0
    assert key in out, out[-3000:]
    assert message in out, out[-3000:]
    assert not results.exists(), "a job ran despite the invalid config"


# --------------------------------------------------------------------------- end to end on fixtures


def _records(results, exp_id):
    """The records an experiment's jobs wrote (a grid job's file holds a list of them)."""
    return read_records(sorted(results.glob(f"*/runs/{exp_id}/**/*.json")))


@pytest.mark.slow
def test_tiny_run_all_rules(tiny_run):
    """Every rule ran: each one's outputs exist (and, for a fresh run, the job counts match)."""
    results, cfg = tiny_run["results"], tiny_run["cfg"]
    downloads = [e["file"] for files in cfg["downloads"].values() for e in files.values()]
    assert all((results / "downloads" / f).stat().st_size > 0 for f in downloads)
    for dataset in ("leukemia", "mnist", "news20"):
        assert (results / dataset / "features" / "meta.json").is_file(), dataset
    for dataset in ("mnist", "news20"):
        assert (results / dataset / "subsets" / "train_labels.npy").is_file(), dataset
    n_runs = sum(1 for _ in results.glob("*/runs/**/*.json"))
    assert n_runs == sum(expected_files(cfg).values()) < sum(expected_run_jobs(cfg).values())
    n_grids = sum(len(g) for g in expected_grid_jobs(cfg).values())
    assert n_grids > 0 and sum(1 for _ in results.glob("*/runs/**/grid/**/*.json")) == n_grids
    assert not any(results.glob("*/runs/**/*.partial"))  # the grid jobs in turn removed their progress files
    assert any(results.glob("mnist/traces/e4/**/*.json"))
    for exp_id, exp in cfg["experiments"].items():
        assert (results / exp["dataset"] / "tables" / f"{exp_id}_runs.parquet").is_file()
    assert (results / "tables" / "table1.csv").is_file()
    assert all((results / "figures" / f"figure{n}.png").is_file() for n in (1, 2, 3, 4))
    if tiny_run["fresh"]:
        stats = tiny_run["stats"]
        for rule in ("download", "labels", "subset", "features", "train", "train_grid", "trace", "aggregate",
                     "train_cv", "aggregate_cv", "table1", "figure1", "figure2", "figure3", "figure4",
                     "paper_comparison", "all"):
            assert stats.get(rule, 0) >= 1, (rule, stats)
        assert stats["train"] == n_runs - n_grids and stats["train_grid"] == n_grids
        assert stats["download"] == len(downloads)


@pytest.mark.slow
def test_tiny_run_tidy_tables(tiny_run):
    results, cfg = tiny_run["results"], tiny_run["cfg"]
    expected, own = expected_train_jobs(cfg), expected_run_jobs(cfg)
    for exp_id, exp in cfg["experiments"].items():
        df = pd.read_parquet(results / exp["dataset"] / "tables" / f"{exp_id}_runs.parquet")
        assert len(df) == expected[exp_id] and len(_records(results, exp_id)) == own[exp_id], exp_id
        # rows of shared runs: this experiment's, made by an earlier one's job (E4: E2's)
        assert set(df["experiment"]) == {exp_id}, exp_id
        made_by = df["run_experiment"].value_counts().to_dict()
        assert made_by.pop(exp_id) == own[exp_id] and sum(made_by.values()) == expected[exp_id] - own[exp_id]
        assert set(made_by) <= {"e2"} and (exp_id == "e4") == bool(made_by), exp_id
        for col in ("dataset", "experiment", "method", "penalty", "groups", "alpha", "L", "subset",
                    "test_errors", "test_error_pct", "nnz", "zero_weights_pct", "fit_time_s", "n_iter",
                    "objective", "converged", "tol"):
            assert col in df.columns, (exp_id, col)
        assert set(df["experiment"]) == {exp_id}
        assert not df.duplicated(["method", "solver", "penalty", "alpha", "L", "subset"]).any()
        assert (df["tol"] == exp["tol"]).all()
        # the alphas of the records are exactly the config's floats
        for grid in exp["grids"]:
            # records name the solver that ran: liblinear for the peer
            solver = "liblinear" if grid["method"] == "liblinear-cs" else grid.get("solver", exp["solver"])
            sel = df[(df["method"] == grid["method"]) & (df["solver"] == solver)
                     & (df["penalty"] == grid["penalty"])]
            assert sorted(set(sel["alpha"])) == sorted(grid["alphas"]), (exp_id, grid["method"])
        csv = pd.read_csv(results / exp["dataset"] / "tables" / f"{exp_id}_runs.csv")
        assert len(csv) == len(df)
        best = pd.read_csv(results / exp["dataset"] / "tables" / f"{exp_id}_best_alpha.csv")
        assert len(best) == len(df.groupby(["method", "solver", "penalty", "L"]))


def _best_from_records(records):
    """Best alpha by test error, recomputed from the raw records: fewest mean test errors,
    ties to the fewer mean non-zeros, then the larger alpha."""
    per_alpha = {}
    for r in records:
        per_alpha.setdefault(r["alpha"], []).append(r)
    rows = []
    for alpha, recs in per_alpha.items():
        rows.append((np.mean([r["test_errors"] for r in recs]), np.mean([r["nnz"] for r in recs]), -alpha, recs))
    rows.sort(key=lambda t: t[:3])
    return rows[0][3]


@pytest.mark.slow
def test_tiny_run_table1_cells(tiny_run):
    results = tiny_run["results"]
    records = _records(results, "e1")
    n_test = records[0]["n_test"]
    table = pd.read_csv(results / "tables" / "table1.csv", index_col=0)
    assert set(table.index) == set(PENALTIES)
    assert set(table.columns) == set(E1_METHODS)
    for pen in PENALTIES:
        for method in E1_METHODS:
            cell = str(table.loc[pen, method])
            best = _best_from_records([r for r in records if r["penalty"] == pen and r["method"] == method])
            assert len(best) == 1
            rec = best[0]
            want = f"{rec['test_errors']}/{n_test} ({'+'.join(str(v) for v in rec['nnz_per_class'])})"
            assert cell == want, (pen, method, cell, want)
    md = (results / "tables" / "table1.md").read_text()
    tex = (results / "tables" / "table1.tex").read_text()
    assert "hinge-reg" in md and "l1inf" in md.replace("\\", "")
    assert "\\begin{tabular}" in tex or "\\begin{table}" in tex


@pytest.mark.slow
def test_tiny_run_figures_and_traces(tiny_run):
    results, cfg = tiny_run["results"], tiny_run["cfg"]
    for n in (1, 2, 3, 4):
        png = results / "figures" / f"figure{n}.png"
        pdf = results / "figures" / f"figure{n}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, png
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000, pdf
    e4 = cfg["experiments"]["e4"]
    traces = sorted(results.glob("mnist/traces/e4/**/*.json"))
    assert len(traces) == len(e4["trace"]["methods"]) * len(e4["samples_per_class"]) * e4["trace"]["n_subsets"]
    e4_runs = pd.read_csv(results / "mnist" / "tables" / "e4_runs.csv")
    runs = read_records(e4_runs["result_path"],  # E4's records, E2's shared ones included
                        set(zip(e4_runs["result_path"], e4_runs["alpha"], strict=True)))
    assert sum(r["experiment"] == "e2" for r in runs) == 3
    for path in traces:
        rec = json.loads(path.read_text())
        tr = rec["trace"]
        assert len(tr["time"]) == len(tr["rel_dist"]) >= 1
        assert all(np.isfinite(tr["rel_dist"])) and np.all(np.diff(tr["time"]) >= 0)
        # the trace is at the method's best alpha, recomputed from the E4 records
        same = [r for r in runs
                if (r["method"], r["solver"], r["L"]) == (rec["method"], rec["solver"], rec["L"])]
        assert rec["alpha"] == _best_from_records(same)[0]["alpha"], path
        assert rec["reference_tol"] == e4["trace"]["reference_tol"]
    table = pd.read_csv(results / "mnist" / "tables" / "e4_traces.csv")
    # a curve is a method, "+<solver>" for a solver other than the paper's (path segment)
    labels = {m if s == "paper" else f"{m}+{s}" for m, s in zip(table["method"], table["solver"])}
    assert labels == set(e4["trace"]["methods"])


@pytest.mark.slow
def test_tiny_run_figure1_marks_the_cv_alphas(tiny_run):
    """E2 has `cv` in config/test.yaml: its CV jobs ran (folds x training jobs) and Figure 1 is the figure
    drawn with the CV alpha table (byte for byte), which differs from the one drawn without it; E3 has no
    `cv`, so no CV job of it ran."""
    import matplotlib

    matplotlib.use("Agg")
    from sparsesvm.experiments import figures

    results, cfg = tiny_run["results"], tiny_run["cfg"]
    folds = cfg["experiments"]["e2"]["cv"]["folds"]
    assert len(list(results.glob("mnist/cv/e2/**/*.json"))) == folds * expected_train_jobs(cfg)["e2"]
    assert "cv" not in cfg["experiments"]["e3"] and not (results / "news20" / "cv").exists()
    tables = results / "mnist" / "tables"
    runs = pd.read_parquet(tables / "e2_runs.parquet")
    cv_alpha = pd.read_csv(tables / "e2_cv_alpha.csv", dtype={"groups": str})
    assert len(cv_alpha) == len(runs.groupby(["method", "solver", "penalty", "L", "subset"]))
    fig = figures.make_accuracy_sparsity_figure(runs, cv_alpha=cv_alpha)
    assert all(any(a.get_gid() == f"cv:{m}" for a in fig.axes[0].collections) for m in set(runs["method"]))
    title = "E2: MNIST scattering, l1,inf"  # rule figure1's params.title
    drawn = {}
    for name, table in (("with", cv_alpha), ("without", None)):
        png, _ = figures.accuracy_sparsity_figure(runs, tiny_run["root"] / f"f1_{name}_cv.png",
                                                  tiny_run["root"] / f"f1_{name}_cv.pdf", title=title,
                                                  cv_alpha=table)
        drawn[name] = png.read_bytes()
    made = (results / "figures" / "figure1.png").read_bytes()
    assert made == drawn["with"] != drawn["without"]


@pytest.mark.slow
def test_tiny_run_mnist_features_only_used_images(tiny_run):
    """MNIST: the test split and only the training images of some subset are scattered."""
    results = tiny_run["results"]
    union = np.unique(np.concatenate([np.load(p) for p in results.glob("mnist/subsets/L~*/subset~*.npy")]))
    meta = json.loads((results / "mnist" / "features" / "meta.json").read_text())
    rows = np.load(results / "mnist" / "features" / "rows_train.npy")
    assert np.array_equal(rows, union)
    assert meta["shapes"]["train"] == [union.size, 3969]
    assert union.size < 60  # the fixture has 60 training images; the subsets use fewer
    # class-balanced subsets, nested across sizes and shared across experiments
    labels = np.load(results / "mnist" / "subsets" / "train_labels.npy")
    small = np.load(results / "mnist" / "subsets" / "L~2K" / "subset~0.npy")
    large = np.load(results / "mnist" / "subsets" / "L~3K" / "subset~0.npy")
    assert np.all(np.bincount(labels[small], minlength=10) == 2)
    assert set(small) <= set(large)


@pytest.mark.slow
def test_tiny_run_report(tiny_run):
    """`snakemake --report` packs Table 1 and the four figures with their captions."""
    import zipfile

    root, results = tiny_run["root"], tiny_run["results"]
    report = root / "report.zip"
    smk(root, "--report", str(report), configfiles=[TEST],
        config={"mirror": tiny_run["mirror"], "results": results})
    names = zipfile.ZipFile(report).namelist()
    for n in (1, 2, 3, 4):
        assert any(name.endswith(f"figure{n}.png") for name in names), names
    assert any(name.endswith("table1.csv") for name in names), names
    assert any(name.endswith("paper_comparison.md") for name in names), names


@pytest.mark.slow
def test_tiny_run_second_run_and_partial_rerun(tiny_run):
    root, mirror, results = tiny_run["root"], tiny_run["mirror"], tiny_run["results"]
    conf = {"mirror": mirror, "results": results}
    _, out = smk(root, "-n", configfiles=[TEST], config=conf)
    assert "Nothing to be done" in out, out[-3000:]

    # one E2 result: that job, E2's table and Figure 1 only
    victim = sorted(results.glob("mnist/runs/e2/logit/**/*.json"))[0]
    victim.unlink()
    _, out = smk(root, "-n", "--quiet", "rules", configfiles=[TEST], config=conf)
    assert job_stats(out) == {"train": 1, "aggregate": 1, "aggregate_cv": 1, "figure1": 1, "paper_comparison": 1,
                              "all": 1}, out[-3000:]

    # one E4 result: also the trace of that method and L (its best alpha may move)
    victim4 = sorted(results.glob("mnist/runs/e4/hinge-con/**/*.json"))[0]
    victim4.unlink()
    _, out = smk(root, "-n", "--quiet", "rules", configfiles=[TEST], config=conf)
    assert job_stats(out) == {"train": 2, "aggregate": 2, "aggregate_cv": 1, "trace": 1, "figure1": 1,
                              "figure3": 1, "paper_comparison": 1, "all": 1}

    # the records that E4 shares with E2 (hinge-reg, alphas 0.01 and 1, L = 2K, subset 0: one
    # grid job of alphas in turn, alphas_in_one_job): that one job, and the hinge-reg trace of
    # E4 at that L besides
    shared = results / "mnist" / "runs" / "e2" / "hinge-reg" / "l1inf" / "grid" / "L~2K" / "subset~0.json"
    assert [r["alpha"] for r in read_records([shared])] == [0.01, 1.0]
    shared.unlink()
    _, out = smk(root, "-n", "--quiet", "rules", configfiles=[TEST], config=conf)
    assert job_stats(out) == {"train": 2, "train_grid": 1, "aggregate": 2, "aggregate_cv": 1, "trace": 2,
                              "figure1": 1, "figure3": 1, "paper_comparison": 1, "all": 1}, out[-3000:]

    # rerun for real; the other records are untouched
    others = {p: p.stat().st_mtime_ns for p in results.glob("*/runs/**/*.json")}
    _, out = smk(root, "--cores", "2", configfiles=[TEST], config=conf, timeout=3600)
    assert victim.exists() and victim4.exists() and shared.exists()
    assert all(p.stat().st_mtime_ns == t for p, t in others.items())
    _, out = smk(root, "-n", configfiles=[TEST], config=conf)
    assert "Nothing to be done" in out


# --------------------------------------------------------------------------- real data


@pytest.mark.slow
@pytest.mark.mirror
def test_e1_on_real_mirror(tmp_path, mirror_dir):
    """E1 on the real leukemia data (reduced alpha grid): Table 1 is complete and plausible."""
    overlay = tmp_path / "e1.yaml"
    full = yaml.safe_load(FULL.read_text())
    reduced = yaml.safe_load((TESTS / "workflow_fixtures" / "e1_reduced.yaml").read_text())
    cfg = {"experiments": {"e1": reduced}, "run": ["e1"], "datasets": ["leukemia"]}
    overlay.write_text(yaml.safe_dump(cfg))
    results = tmp_path / "results"
    smk(tmp_path, "--cores", "2", targets=["e1"], configfiles=[FULL, overlay],
        config={"mirror": mirror_dir, "results": results})
    table = pd.read_csv(results / "tables" / "table1.csv", index_col=0)
    methods = ["hinge-reg [accelerated]", "hinge-con [accelerated]", "square", "logit", "ova"]
    assert set(table.index) == set(PENALTIES) and list(table.columns) == methods
    n_genes = 7129
    for pen in PENALTIES:
        for method in methods:
            cell = str(table.loc[pen, method])
            m = re.fullmatch(r"(\d+)/34 \((\d+)\+(\d+)\+(\d+)\)", cell)
            assert m, (pen, method, cell)
            errors, nnz = int(m.group(1)), [int(g) for g in m.groups()[1:]]
            assert 0 <= errors <= 34
            if pen == "l2":
                assert min(nnz) > 0.9 * n_genes, (pen, method, cell)  # dense
            else:
                assert max(nnz) < 0.5 * n_genes, (pen, method, cell)  # sparse
    assert full["experiments"]["e1"]["dataset"] == "leukemia"
