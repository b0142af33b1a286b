"""The cluster profile (profiles/slurm) on a real SLURM: same results as a local run.

Starts a single-node SLURM on localhost (tests/slurm/local_slurm.sh: Debian's
slurm-wlm + munge, installed with apt-get when missing; munged, slurmctld and
slurmd started directly, no systemd), runs a small target of the workflow -- a
dozen training fits on the tiny MNIST fixture, their aggregation and Figure 1 --
once through the profile with snakemake-executor-plugin-slurm and once locally,
and checks that

* the training jobs went to SLURM in groups (a few sbatch jobs, not one per fit)
  and SLURM reports every one of those jobs COMPLETED;
* every training record, the tidy table and the best-alpha table are equal to
  the local run's, timing fields apart; Figure 1 exists in both;
* every daemon the test started is gone afterwards.

Needs root and apt-get (or slurm-wlm + munge already installed) and no foreign
/etc/slurm/slurm.conf; skips with the reason otherwise, or fails instead when
SPARSESVM_REQUIRE_SLURM=1 (CI). 4-5 minutes on 2 cores, plus ~15 s of apt-get.

    pytest -m slurm tests/workflow/test_slurm.py -s     # -s shows the measured times
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SNAKEFILE = ROOT / "Snakefile"
TEST_CONFIG = ROOT / "config" / "test.yaml"
SLURM_DIR = Path(__file__).resolve().parents[1] / "slurm"
LOCAL_SLURM = SLURM_DIR / "local_slurm.sh"
CONF = Path("/etc/slurm/slurm.conf")
CONF_MARKER = "# written by sparsesvm tests/slurm/local_slurm.sh"
TARGET = "figure1"
#: wall-clock bound of one snakemake run; SIGINT makes snakemake cancel its SLURM jobs
RUN_TIMEOUT_S = 1200

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(SLURM_DIR))


def _cannot_run(reason):
    if os.environ.get("SPARSESVM_REQUIRE_SLURM") == "1":
        pytest.fail(f"SLURM test required (SPARSESVM_REQUIRE_SLURM=1) but cannot run: {reason}")
    pytest.skip(reason)


def _snakemake_exe():
    exe = Path(sys.executable).with_name("snakemake")
    return str(exe) if exe.exists() else shutil.which("snakemake")


def _sh(*args, timeout=600):
    return subprocess.run(
        ["bash", str(LOCAL_SLURM), *args], capture_output=True, text=True, timeout=timeout
    )


def _daemon_pids(state):
    pids = {}
    for name in ("munged", "slurmctld", "slurmd"):
        f = state / f"{name}.pid"
        if f.is_file() and f.read_text().strip().isdigit():
            pids[name] = int(f.read_text().strip())
    return pids


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purpose
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A running single-node SLURM on localhost; stopped (and checked stopped) afterwards."""
    if not sys.platform.startswith("linux"):
        _cannot_run("SLURM test needs Linux")
    if os.geteuid() != 0:
        _cannot_run("SLURM test needs root (installs packages, writes /etc/slurm/slurm.conf, starts daemons)")
    have_slurm = all(shutil.which(b) for b in ("slurmctld", "slurmd", "munged", "sbatch"))
    if not have_slurm and not shutil.which("apt-get"):
        _cannot_run("SLURM test needs apt-get to install slurm-wlm and munge (or them installed)")
    if CONF.exists() and CONF_MARKER not in CONF.read_text(errors="replace"):
        _cannot_run(f"{CONF} belongs to another SLURM setup; not touching it")
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        _cannot_run("snakemake-executor-plugin-slurm is not installed (pip install -e .[workflow])")
    if _snakemake_exe() is None:
        _cannot_run("snakemake is not installed (pip install -e .[workflow])")

    t0 = time.monotonic()
    proc = _sh("install", timeout=900)
    install_s = time.monotonic() - t0
    if proc.returncode != 0:
        _cannot_run(f"installing slurm-wlm/munge failed: {(proc.stdout + proc.stderr)[-1500:]}")

    state = tmp_path_factory.mktemp("slurm-state")
    os.environ["SLURM_TEST_STATE"] = str(state)
    t0 = time.monotonic()
    proc = _sh("start", timeout=120)
    start_s = time.monotonic() - t0
    pids = _daemon_pids(state)
    try:
        assert proc.returncode == 0, f"local SLURM did not start:\n{proc.stdout}\n{proc.stderr}"
        yield {"install_s": install_s, "start_s": start_s, "state": state}
    finally:
        t0 = time.monotonic()
        stop = _sh("stop", timeout=120)
        print(f"\n[slurm] install {install_s:.1f} s, start {start_s:.1f} s, stop {time.monotonic() - t0:.1f} s")
        os.environ.pop("SLURM_TEST_STATE", None)
        left = {name: pid for name, pid in pids.items() if _alive(pid)}
        assert stop.returncode == 0, f"stopping SLURM failed:\n{stop.stdout}\n{stop.stderr}"
        assert not left, f"daemons still running after stop: {left}"
        assert not CONF.exists(), f"{CONF} left behind"


def _overlay(cfg):
    """Config overlay for the SLURM target: E2 (Figure 1) with at least 10 training fits."""
    e2 = cfg["experiments"]["e2"]
    # every grid of config/test.yaml's E2 at its smallest training size, on enough
    # subsets for at least 10 fits; without test.yaml's cross-validation and grid jobs
    # (side_by_side, alphas_in_one_job: the target is the training fits, one job each, grouped)
    grids = [{k: v for k, v in grid.items() if k != "samples_per_class"} for grid in e2["grids"]]
    per_subset = sum(len(g["alphas"]) for g in grids)
    n_subsets = max(2, math.ceil(10 / per_subset))
    overlay = {
        "run": ["e2"],
        "datasets": [e2["dataset"]],
        "experiments": {
            "e2": {"samples_per_class": e2["samples_per_class"][:1], "n_subsets": n_subsets, "grids": grids,
                   "cv": None, "side_by_side": False, "alphas_in_one_job": False}
        },
    }
    n_train = sum(len(g["alphas"]) for g in grids) * n_subsets
    return overlay, n_train


def _snakemake_cmd(workdir, results, mirror, overlay_file, *extra):
    # the target first: --config takes every argument up to the next option
    return [
        "timeout", "-s", "INT", "-k", "120", str(RUN_TIMEOUT_S),
        _snakemake_exe(), TARGET,
        "--snakefile", str(SNAKEFILE), "--directory", str(workdir),
        "--configfile", str(TEST_CONFIG), str(overlay_file),
        "--config", f"mirror={mirror}", f"results={results}",
        *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def runs(slurm_cluster, tmp_path_factory):
    """The same target run through the SLURM profile and locally (side by side)."""
    import fixtures_data
    import yaml
    from make_profile import merged_profile, write_test_profile

    root = tmp_path_factory.mktemp("slurm-run")
    mirror = root / "mirror"
    fixtures_data.write_tiny_mirror(mirror)
    overlay, n_train = _overlay(yaml.safe_load(TEST_CONFIG.read_text()))
    assert n_train >= 10
    overlay_file = root / "overlay.yaml"
    overlay_file.write_text(yaml.safe_dump(overlay))
    profile = write_test_profile(root / "profile")

    out = {}
    for name in ("slurm", "local"):
        (root / name).mkdir()
        out[name] = {"workdir": root / name, "results": root / name / "results"}
    slurm_cmd = _snakemake_cmd(
        out["slurm"]["workdir"], out["slurm"]["results"], mirror, overlay_file, "--profile", str(profile)
    )
    local_cmd = _snakemake_cmd(out["local"]["workdir"], out["local"]["results"], mirror, overlay_file, "--cores", "2")
    # the SLURM run mostly waits on status polls: run the local one meanwhile
    t0 = time.monotonic()
    with open(root / "slurm.log", "w") as slurm_log:
        slurm_proc = subprocess.Popen(slurm_cmd, stdout=slurm_log, stderr=subprocess.STDOUT, cwd=root)
        try:
            local = subprocess.run(local_cmd, capture_output=True, text=True, cwd=root, timeout=RUN_TIMEOUT_S + 200)
            local_s = time.monotonic() - t0
            slurm_rc = slurm_proc.wait(timeout=RUN_TIMEOUT_S + 200)
        finally:
            if slurm_proc.poll() is None:
                slurm_proc.send_signal(signal.SIGINT)  # snakemake then cancels its SLURM jobs
                slurm_proc.wait(timeout=200)
    slurm_s = time.monotonic() - t0
    slurm_out = (root / "slurm.log").read_text()
    print(f"\n[slurm] {n_train} training jobs; local run {local_s:.0f} s, SLURM run {slurm_s:.0f} s (side by side)")
    assert local.returncode == 0, f"local run failed:\n{(local.stdout + local.stderr)[-6000:]}"
    if slurm_rc != 0:
        logs = "\n".join(
            f"--- {p}\n{p.read_text()[-3000:]}"
            for p in sorted(out["slurm"]["workdir"].glob(".snakemake/slurm_logs/**/*.log"))
        )
        raise AssertionError(f"SLURM run failed ({slurm_rc}):\n{slurm_out[-6000:]}\n{logs[-8000:]}")
    out["n_train"] = n_train
    out["slurm_log"] = slurm_out
    out["group_components"] = merged_profile()["group-components"]["train"]
    return out


def test_training_jobs_are_grouped_into_few_slurm_jobs(runs):
    log = runs["slurm_log"]
    submitted = dict(re.findall(r"submitted with SLURM jobid (\d+) \(log: ([^)]*)\)", log))
    assert submitted, f"no SLURM submission in the log:\n{log[-3000:]}"
    # the plugin logs to .snakemake/slurm_logs/<group_NAME_RULES | rule_RULE>/[wildcards/]ID.log
    kinds = {jobid: Path(path.split("slurm_logs/", 1)[1]).parts[0] for jobid, path in submitted.items()}
    train_groups = [j for j, kind in kinds.items() if kind.startswith("group_train")]
    single_train = [j for j, kind in kinds.items() if kind == "rule_train"]
    print(f"\n[slurm] {len(submitted)} sbatch submissions: {sorted(kinds.values())}")
    assert not single_train, "training jobs were submitted one by one despite the profile's grouping"
    assert len(train_groups) == math.ceil(runs["n_train"] / runs["group_components"])
    assert len(submitted) < runs["n_train"]
    # the figure ran on SLURM too (aggregation is a local rule, downloads as well)
    assert any(kind == f"rule_{TARGET}" for kind in kinds.values())

    # SLURM itself saw these jobs end well (not a local fallback)
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    squeue = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--name", run_id, "--format=%i|%T"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    states = dict(line.split("|") for line in squeue.stdout.split())
    assert set(states) == set(submitted), (states, submitted)
    assert set(states.values()) == {"COMPLETED"}, states


def _compared(key):
    """Fields that must agree: all but timings and the package's source hash (provenance,
    which changes when someone edits the package while the two runs go on)."""
    return "time" not in str(key) and key != "source_hash"


def _strip_timing(obj):
    if isinstance(obj, dict):
        return {k: _strip_timing(v) for k, v in obj.items() if _compared(k)}
    if isinstance(obj, list):
        return [_strip_timing(v) for v in obj]
    return obj


def _assert_same(a, b, where):
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), (where, a, b)
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b)), (where, a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), (where, sorted(a), sorted(b))
        for k in a:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def test_training_records_equal_local_run(runs):
    slurm_runs = runs["slurm"]["results"]
    local_runs = runs["local"]["results"]
    rel = sorted(p.relative_to(local_runs) for p in local_runs.glob("*/runs/**/*.json"))
    assert len(rel) == runs["n_train"]
    assert rel == sorted(p.relative_to(slurm_runs) for p in slurm_runs.glob("*/runs/**/*.json"))
    for path in rel:
        a = json.loads((slurm_runs / path).read_text())
        b = json.loads((local_runs / path).read_text())
        assert any("time" in k for k in b), f"{path}: expected timing fields in the record"
        _assert_same(_strip_timing(a), _strip_timing(b), str(path))


def _relative_paths(df, results):
    """Paths into a run's results directory (e.g. a column naming each record) made relative."""
    import pandas as pd

    prefix = f"{results}/"
    df = df.copy()
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col]):
            df[col] = df[col].map(lambda v: v.replace(prefix, "<results>/") if isinstance(v, str) else v)
    return df


def test_tables_equal_local_run(runs):
    import pandas as pd

    tables = sorted(p.relative_to(runs["local"]["results"]) for p in runs["local"]["results"].glob("*/tables/*"))
    assert any(p.name.endswith("_runs.parquet") for p in tables), tables
    for rel in tables:
        if rel.suffix not in (".parquet", ".csv"):
            continue
        read = pd.read_parquet if rel.suffix == ".parquet" else pd.read_csv
        a, b = read(runs["slurm"]["results"] / rel), read(runs["local"]["results"] / rel)
        keep = [c for c in b.columns if _compared(c)]
        assert list(a.columns) == list(b.columns), rel
        if rel.name.endswith("_runs.parquet"):
            assert len(b) == runs["n_train"]
        key = [c for c in ("method", "penalty", "alpha", "L", "subset") if c in keep]
        a = _relative_paths(a[keep], runs["slurm"]["results"]).sort_values(key).reset_index(drop=True)
        b = _relative_paths(b[keep], runs["local"]["results"]).sort_values(key).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-9, obj=str(rel))


def test_figure_made_by_both_runs(runs):
    figures = sorted(p.relative_to(runs["local"]["results"]) for p in runs["local"]["results"].glob("figures/*"))
    assert {p.suffix for p in figures} >= {".png", ".pdf"}, figures
    for rel in figures:
        a, b = runs["slurm"]["results"] / rel, runs["local"]["results"] / rel
        assert a.is_file() and a.stat().st_size > 0, rel
        if rel.suffix == ".png":
            # same pixel size: bytes 16-24 of a PNG are its width and height
            assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert a.read_bytes()[16:24] == b.read_bytes()[16:24], rel
        if rel.suffix == ".pdf":
            assert a.read_bytes()[:5] == b"%PDF-", rel
