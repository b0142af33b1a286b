"""What a published reproduction ships: the record config, the paper comparison rule on the
fixture config, the publish step, config/README.md, CITATION.cff, LICENSE, the workflow
catalog file, and README links that resolve.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomllib
import yaml

import sparsesvm
from sparsesvm.experiments.plan import Plan

REPO = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from workflow_helpers import (  # noqa: E402
    FULL,
    TEST,
    expected_grid_jobs,
    expected_run_jobs,
    expected_train_jobs,
    job_stats,
    load_config,
    read_records,
    smk,
    train_wildcards,
)

RECORD = REPO / "config" / "record.yaml"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
PAPER = REPO / "workflow" / "resources" / "paper.yaml"


# --------------------------------------------------------------------------- record config


def test_record_config_is_the_full_config_with_fewer_subsets():
    full, record = load_config(FULL), load_config(FULL, RECORD)
    assert record["results"] != full["results"]
    minimum = {"e1": 1, "e2": 3, "e3": 2, "e4": 3, "e5": 2}
    for exp_id, exp in full["experiments"].items():
        rec = record["experiments"][exp_id]
        assert rec["n_subsets"] >= minimum[exp_id], exp_id
        assert rec["n_subsets"] <= exp["n_subsets"], exp_id
        # everything else (sizes, grids, tolerances, caps, solvers, traces) is the full config's
        assert {k: v for k, v in rec.items() if k != "n_subsets"} == \
               {k: v for k, v in exp.items() if k != "n_subsets"}, exp_id
    for key in set(full) - {"results", "experiments"}:
        assert record[key] == full[key], key


@pytest.mark.slow
def test_record_dag_counts_training_jobs(tmp_path):
    """`snakemake -n` with config/record.yaml validates it (schema, cross-checks) and plans
    one training job per grid point, size and subset, plus the paper comparison."""
    cfg = load_config(FULL, RECORD)
    _, out = smk(tmp_path, "-n", configfiles=[RECORD])
    got = {}
    for job in train_wildcards(out):
        got[job["experiment"]] = got.get(job["experiment"], 0) + 1
    # E4's runs that E2 has are E2's jobs; E4 reads all of E2's three subsets, so E2 fits none
    # side by side here; E5's l1inf grids (side_by_side) are one grid job per method and subset,
    # and every other record is in a grid job of alphas one after another (alphas_in_one_job)
    grids = expected_grid_jobs(cfg)
    assert got == {} and all(n == sum(grids[e].values()) for e, n in expected_run_jobs(cfg).items())
    assert {e: len(g) for e, g in grids.items()} == {"e1": 20, "e2": 45, "e3": 24, "e4": 27, "e5": 40}
    plan = Plan(cfg)
    assert sorted((g["method"], g["subset"]) for g in plan.grid_jobs() if plan.grid_job_side_by_side(**g)) == [
        ("hinge-con", 0), ("hinge-con", 1), ("hinge-reg", 0), ("hinge-reg", 1)]
    stats = job_stats(out)
    assert stats["train_grid"] == 156 and "train" not in stats
    assert stats["paper_comparison"] == 1 and stats["aggregate"] == 5
    assert f"{cfg['results']}/tables/paper_comparison.md" in out


# --------------------------------------------------------------------------- documentation files


def _schema_keys(node, found):
    if isinstance(node, dict):
        for key, sub in node.get("properties", {}).items():
            found.add(key)
            _schema_keys(sub, found)
        for key in ("$defs", "items", "oneOf", "anyOf"):
            sub = node.get(key)
            if isinstance(sub, dict):
                for v in (sub.values() if key == "$defs" else [sub]):
                    _schema_keys(v, found)
            elif isinstance(sub, list):
                for v in sub:
                    _schema_keys(v, found)
    return found


def test_config_readme_documents_every_schema_key():
    keys = _schema_keys(yaml.safe_load(SCHEMA.read_text()), set())
    assert {"mirror", "grids", "alphas", "reference_tol", "max_features", "decompressed"} <= keys
    text = (REPO / "config" / "README.md").read_text()
    documented = set(re.findall(r"`(?:[\w.]+\.)?(\w+)`", text))
    missing = sorted(keys - documented)
    assert not missing, f"config/README.md does not describe: {missing}"


def _links(markdown):
    """Relative link targets of a Markdown text: [text](path) and ![alt](path), no URLs or anchors."""
    targets = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", markdown)
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_readme_links_resolve():
    """Every relative link of README.md (docs/results/ included, once published) is a file here."""
    links = _links((REPO / "README.md").read_text())
    assert "config/README.md" in links and "LICENSE" in links and "CITATION.cff" in links
    missing = [t for t in links if not (REPO / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
    for t in links:
        if t.startswith("docs/results/") and t.endswith(".png"):
            assert (REPO / t).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", t
    assert _links("[a](x.md) ![b](docs/results/e2/figure1.png) [c](https://x.org/y) [d](#anchor)") == \
        ["x.md", "docs/results/e2/figure1.png"]


def test_citation_and_license_match_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["license"] == project["license"] == "BSD-3-Clause"
    assert cff["version"] == project["version"]
    paper = yaml.safe_load(PAPER.read_text())
    pref = cff["preferred-citation"]
    assert pref["type"] == "article" and pref["title"] in paper["source"]
    assert [a["family-names"] for a in pref["authors"]] == ["Chierchia", "Pustelnik", "Pesquet", "Pesquet-Popescu"]
    for key in ("cff-version", "message", "title", "authors"):  # required by CFF 1.2
        assert cff.get(key), key
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in text  # clause 3


def test_workflow_catalog_file():
    cat = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())
    usage = cat["usage"]
    assert usage["report"] is True
    assert usage["software-stack-deployment"]["conda"] is True
    assert (REPO / "envs" / "sparsesvm.yaml").is_file()
    assert "config/record.yaml" in usage["mandatory-flags"]["desc"]


# --------------------------------------------------------------------------- the rule and the publish step


@pytest.mark.slow
def test_comparison_rule_on_fixture_config(tiny_run):
    results = tiny_run["results"]
    csv = pd.read_csv(results / "tables" / "paper_comparison.csv", keep_default_na=False)
    md = (results / "tables" / "paper_comparison.md").read_text()
    paper = yaml.safe_load(PAPER.read_text())
    # every Table 1 cell of the paper, for each method of its column, with the reproduction's value
    t1 = csv[csv["section"] == "table1"]
    for reg, cells in paper["table1"]["cells"].items():
        for col, cell in cells.items():
            for method in paper["table1"]["columns"][col]:
                rows = t1[t1["item"].str.startswith(f"{reg} / {col} / {method}")]
                # errors, non-zeros, and the errors at the CV alpha (config/test.yaml's E1 has `cv`)
                assert len(rows) == 3, (reg, col, method)
                err = rows[rows["quantity"].str.startswith("test errors")].iloc[0]
                assert err["paper"] == str(cell["errors"])
                assert re.fullmatch(r"\d+(\.\d)?", err["reproduction"]), err["reproduction"]
    # Table 1 of the run and the comparison agree cell by cell
    table = pd.read_csv(results / "tables" / "table1.csv", index_col=0)
    for row in t1[t1["quantity"].str.startswith("test errors")].itertuples():
        reg, _, method = row.item.split(" / ")
        assert table.loc[reg, method].split("/")[0] == row.reproduction, row.item
    # every claim with a verdict; the fixture config runs every experiment: none "not run" but C3,
    # which needs E2 with regularisers other than l1,inf (the paper's figures show l1,inf only)
    claims = csv[csv["section"] == "claim"].set_index("item")
    assert list(claims.index) == list(paper["claims"])
    assert claims.loc["C3", "verdict"] == "not run" and "l1inf only" in claims.loc["C3", "reproduction"]
    assert set(claims.drop(index="C3")["verdict"]) <= {"agrees", "disagrees", "inconclusive"}, claims["verdict"]
    for cid in paper["claims"]:
        assert f"| {cid} |" in md
    # a claim's verdict line is in the rule's log
    log = (results / "logs" / "products" / "paper_comparison.log").read_text()
    assert all(f"{cid}: " in log for cid in paper["claims"])


@pytest.mark.slow
def test_comparison_reads_only_selected_experiments(tiny_run):
    """With run=[e1] the claims of the other experiments read "not run" (the tables exist)."""
    root, conf = tiny_run["root"], tiny_run["conf"]
    _, out = smk(root, "--cores", "1", targets=["paper_comparison"], configfiles=[TEST],
                 config={**conf, "run": "[e1]"})
    csv = pd.read_csv(tiny_run["results"] / "tables" / "paper_comparison.csv", keep_default_na=False)
    verdicts = dict(zip(csv.loc[csv["section"] == "claim", "item"], csv.loc[csv["section"] == "claim", "verdict"]))
    assert all(verdicts[c] == "not run" for c in ("C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10", "C11", "C12",
                                                  "C13"))
    assert verdicts["C1"] != "not run" and verdicts["C2"] != "not run"
    # restore the full comparison for the other tests of the run (this session's, tests/conftest.py)
    smk(root, "--cores", "1", targets=["paper_comparison"], configfiles=[TEST], config=conf)


@pytest.mark.slow
def test_publish_step(tiny_run, tmp_path):
    from sparsesvm.experiments import publish

    results = tiny_run["results"]
    dest = tmp_path / "docs" / "results"
    out = publish.publish(results, ["e1", "e4"], [FULL, TEST], dest, command="snakemake ...", repo=REPO,
                          max_bytes=publish.MAX_BYTES)
    for name in ("table1.csv", "table1.md", "table1.tex", "e1_runs.csv", "e1_best_alpha.csv", "e1_cv_summary.csv",
                 "provenance.json"):
        assert (dest / "e1" / name).is_file(), name
    assert (dest / "e1" / "table1.csv").read_bytes() == (results / "tables" / "table1.csv").read_bytes()
    assert (dest / "e4" / "figure3.png").read_bytes() == (results / "figures" / "figure3.png").read_bytes()
    assert (dest / "e4" / "e4_traces.csv").is_file()
    assert (dest / "paper_comparison.md").read_text() == (results / "tables" / "paper_comparison.md").read_text()
    prov = json.loads((dest / "e4" / "provenance.json").read_text())
    assert prov == json.loads(json.dumps(out["e4"]))
    assert re.fullmatch(r"[0-9a-f]{40}", prov["commit"])
    # every record of this run was made by this tree's package
    assert prov["records_source_hashes"] == {sparsesvm.source_hash(): prov["n_jobs_in_table"]}
    assert prov["settings"] == load_config(FULL, TEST)["experiments"]["e4"]
    # three of E4's records are E2's jobs' (shared runs), counted in E2's times
    assert prov["records_run_by"] == {"e4": prov["n_jobs_in_table"] - 3, "e2": 3}
    assert prov["command"] == "snakemake ..." and prov["versions"]["numpy"]
    # times: the sums of the experiment's benchmark files, recomputed here
    bench = results / "benchmarks"
    files = [*(bench / "mnist" / "runs" / "e4").rglob("*.tsv"), *(bench / "mnist" / "traces" / "e4").rglob("*.tsv"),
             bench / "mnist" / "tables" / "e4_aggregate.tsv", bench / "products" / "figure3.tsv"]
    walls = [float(pd.read_csv(p, sep="\t")["s"].iloc[-1]) for p in files]
    assert prov["time"]["n_jobs"] == len(files) == len(expected_jobs := [p for p in files if p.is_file()])
    assert prov["time"]["jobs_wall_s"] == pytest.approx(sum(walls), abs=0.02)
    assert prov["time"]["span_wall_s"] >= max(walls) - 0.01
    assert prov["time"]["preparation"]["n_jobs"] >= 1 and expected_jobs
    # the README block: Table 1 and the figure inline, one sentence each, times, every link resolves
    readme = tmp_path / "README.md"
    readme.write_text("intro\n" + publish.BEGIN + "\nold\n" + publish.END + "\noutro\n")
    text = publish.update_readme(readme, dest)
    assert text.startswith("intro\n") and text.endswith("outro\n") and "\nold\n" not in text
    assert (dest / "e1" / "table1.md").read_text().strip() in text
    assert "![Figure 3](docs/results/e4/figure3.png)" in text
    assert publish.DESCRIPTIONS["e1"] in text and publish.DESCRIPTIONS["e4"] in text
    assert publish.DESCRIPTIONS["e2"] not in text  # not published
    hours = f"{prov['time']['span_wall_s'] / 3600:.2f} h"
    assert re.search(rf"\| e4 \| 1 \| {len(files)} \| {re.escape(hours)} \|", text), text
    assert all((tmp_path / t).is_file() for t in _links(text))
    assert "docs/results/paper_comparison.md" in _links(text)
    with pytest.raises(ValueError, match="expected one block"):
        publish.update_readme(tmp_path / "README.md.bad" if (tmp_path / "README.md.bad").write_text("x") else None,
                              dest)
    # a size limit leaves files out and says so
    small = publish.publish(results, ["e1"], [FULL, TEST], tmp_path / "small", max_bytes=10)
    assert small["e1"]["files"] == [] and {d["file"] for d in small["e1"]["left_out"]} >= {"table1.csv"}
    with pytest.raises(FileNotFoundError, match="not built yet"):
        publish.publish(tmp_path / "nothing", ["e2"], [FULL, TEST], tmp_path / "x")


def test_provenance_code_state_ignores_the_published_folder(tiny_run, tmp_path):
    """``worktree_modified`` says whether the code differs from its commit: republishing
    rewrites the (tracked) published folder, which must not count; a changed tracked
    file elsewhere must."""
    import subprocess

    from sparsesvm.experiments import publish

    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    dest = repo / "docs" / "results"
    results = tiny_run["results"]
    publish.publish(results, ["e1"], [FULL, TEST], dest, repo=repo)
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    again = publish.publish(results, ["e1"], [FULL, TEST], dest, repo=repo)
    assert again["e1"]["worktree_modified"] is False
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                          text=True).stdout.strip()          # the published files did change
    (repo / "code.py").write_text("x = 2\n")
    assert publish.publish(results, ["e1"], [FULL, TEST], dest, repo=repo)["e1"]["worktree_modified"] is True


# --------------------------------------------------------------------------- alpha by cross-validation


def test_cv_jobs_in_the_dag(tmp_path):
    """Dry run of config/test.yaml: one CV job per grid point, subset and fold of each experiment with `cv`."""
    cfg = load_config(FULL, TEST)
    _, out = smk(tmp_path, "-n", "--quiet", "rules", configfiles=[TEST])
    stats = job_stats(out)
    train = expected_train_jobs(cfg)
    want = sum(train[e] * exp["cv"]["folds"] for e, exp in cfg["experiments"].items() if exp.get("cv"))
    assert want > 0 and stats["train_cv"] == want
    assert stats["aggregate_cv"] == sum(1 for exp in cfg["experiments"].values() if exp.get("cv"))
    grids = expected_grid_jobs(cfg)  # E2's alphas side by side: one grid job for several records
    assert stats["train"] == sum(expected_run_jobs(cfg).values()) - sum(sum(g.values()) for g in grids.values())
    assert stats["train_grid"] == sum(len(g) for g in grids.values()) > 0


@pytest.mark.slow
def test_cv_alpha_on_fixture_config(tiny_run):
    """The CV alpha of each E1 cell, recomputed from the CV records, and its test error in the comparison."""
    results = tiny_run["results"]
    cfg = load_config(FULL, TEST)
    folds = cfg["experiments"]["e1"]["cv"]["folds"]
    recs = [json.loads(p.read_text()) for p in sorted(results.glob("leukemia/cv/e1/**/*.json"))]
    assert len(recs) == expected_train_jobs(cfg)["e1"] * folds
    runs = read_records(sorted(results.glob("leukemia/runs/e1/**/*.json")))
    n_train = runs[0]["L"]
    table = pd.read_csv(results / "leukemia" / "tables" / "e1_cv_alpha.csv")
    csv = pd.read_csv(results / "tables" / "paper_comparison.csv", keep_default_na=False)
    cv_rows = csv[(csv["section"] == "table1") & csv["quantity"].str.contains("cross-validation")]
    table1_md = (results / "tables" / "table1.md").read_text()
    assert len(cv_rows) == 20
    for (method, penalty), _ in pd.DataFrame(runs).groupby(["method", "penalty"]):
        mine = [r for r in recs if r["method"] == method and r["penalty"] == penalty]
        by_alpha = {}
        for r in mine:
            assert r["L"] == n_train and r["L_fit"] + r["n_val"] == n_train
            by_alpha.setdefault(r["alpha"], []).append(r)
        assert all(sorted(r["fold"] for r in v) == list(range(folds)) for v in by_alpha.values())
        # every held-out sample once per alpha
        assert all(sum(r["n_val"] for r in v) == n_train for v in by_alpha.values())
        score = {a: (sum(r["val_errors"] for r in v), np.mean([r["nnz"] for r in v]), -a) for a, v in by_alpha.items()}
        want = min(score, key=score.get)
        got = table[(table["method"] == method) & (table["penalty"] == penalty)]["cv_alpha"].item()
        assert got == want, (method, penalty)
        test_at = next(r["test_errors"] for r in runs
                       if r["method"] == method and r["penalty"] == penalty and r["alpha"] == want)
        row = cv_rows[cv_rows["item"].str.startswith(f"{penalty} / ") & cv_rows["item"].str.contains(f"/ {method}")]
        assert len(row) == 1 and row["reproduction"].item() == str(test_at), (method, penalty)
        assert f"{penalty}/{method}: {test_at} (alpha " in table1_md, (method, penalty)
    assert "## Alpha by cross-validation" in (results / "tables" / "paper_comparison.md").read_text()


def test_publish_counts_equal_accuracy_jobs_and_table(tmp_path):
    """Equal-accuracy and cross-validation jobs count in an experiment's time; the accuracy table is published."""
    from sparsesvm.experiments import publish

    bench = tmp_path / "benchmarks" / "mnist"
    tsv = "s\th:m:s\tmax_rss\tcpu_time\n{s}\t0:00:01\t10\t{c}\n"
    jobs = {bench / "runs" / "e5" / "a.tsv": (2.0, 1.5),
            bench / "accuracy" / "e5" / "L~5K" / "subset~0.tsv": (30.0, 29.0),
            bench / "cv" / "e5" / "a" / "fold~0.tsv": (4.0, 3.0), bench / "tables" / "e5_aggregate_cv.tsv": (1.0, 1.0),
            bench / "tables" / "e5_aggregate.tsv": (1.0, 0.5),
            tmp_path / "benchmarks" / "products" / "figure4.tsv": (3.0, 2.0)}
    for p, (s, c) in jobs.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(tsv.format(s=s, c=c))
    t = publish.job_times(tmp_path, "e5", "mnist")
    assert t["n_jobs"] == 6 and t["jobs_wall_s"] == 41.0 and t["jobs_cpu_s"] == 37.0
    tables = tmp_path / "mnist" / "tables"
    tables.mkdir(parents=True)
    assert "e5_accuracy.csv" not in publish.experiment_files(tmp_path, "e5", "mnist")
    (tables / "e5_accuracy.csv").write_text("label,eps\n")
    assert publish.experiment_files(tmp_path, "e5", "mnist")["e5_accuracy.csv"] == tables / "e5_accuracy.csv"
