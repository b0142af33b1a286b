"""Hostile inputs and faults: nothing wrong gets in, nothing is lost, every failure says why.

* config values refused before any job, naming the key: NaN and infinity, sizes beyond
  what the data holds (samples per class, group sizes), download names outside their
  dataset's folder;
* downloads checked by every job that reads them (a file edited after its download is
  refused, naming it), stale ``.part`` files removed by the next download;
* every output readable by the group (0666 & ~umask, as a plain ``open`` gives);
* a lock on the results directory itself: a second run from another working directory
  is refused with the holder and the way out; a stale lock (dead process) is taken over;
* the reason of a failed job on the console (``--show-failed-logs`` in the default
  profile); ``make reproduce ARGS=...``;
* a training job killed (SIGKILL) mid-run: the rerun recomputes exactly that job and the
  results equal those of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
import fixtures_data  # noqa: E402
from workflow_helpers import REPO, TEST, iter_records, job_stats, load_config, smk, snakemake_exe  # noqa: E402

from sparsesvm._io import atomic_path, save_npy, write_json  # noqa: E402
from sparsesvm.data.download import ChecksumError, check_downloads, download  # noqa: E402
from sparsesvm.data.mnist import MNIST_EXPECTED, read_mnist_labels  # noqa: E402
from sparsesvm.data.news20 import NEWS20_EXPECTED, load_news20  # noqa: E402


def _overlay(tmp_path, overlay, name="bad.yaml"):
    """config/test.yaml with `overlay` merged in key by key, as one file.

    (A second --configfile option replaces the first: argparse keeps the last.)"""
    part = tmp_path / f"overlay-{name}"
    part.write_text(yaml.safe_dump(overlay))
    path = tmp_path / name
    path.write_text(yaml.safe_dump(load_config(TEST, part)))
    return path


def _refused(tmp_path, overlay, *args, config=None, targets=("e1",)):
    """Run snakemake on config/test.yaml + overlay; it must fail before any job. Returns the console."""
    results = tmp_path / "results"
    conf = {"results": results, **(config or {})}
    rc, out = smk(tmp_path, "--cores", "1", *args, targets=targets,
                  configfiles=[_overlay(tmp_path, overlay)], config=conf, check=False)
    assert rc != 0, out[-3000:]
    assert not (results / "downloads").exists(), "a job ran despite the invalid config"
    return out


# --------------------------------------------------------------------------- config values


@pytest.mark.parametrize(
    "overlay, key",
    [
        ({"experiments": {"e1": {"grids": [{"penalty": "l2", "groups": None, "method": "hinge-reg",
                                            "alphas": [float("nan")]}]}}},
         "experiments.e1.grids[0].alphas[0]"),
        ({"experiments": {"e1": {"grids": [{"penalty": "l2", "groups": None, "method": "hinge-reg",
                                            "alphas": [1.0, float("inf")]}]}}},
         "experiments.e1.grids[0].alphas[1]"),
        ({"experiments": {"e3": {"tol": float("nan")}}}, "experiments.e3.tol"),
        ({"experiments": {"e4": {"trace": {"n_subsets": 1, "reference_tol": float("-inf"),
                                           "methods": ["hinge-reg"]}}}},
         "experiments.e4.trace.reference_tol"),
    ],
    ids=["alpha-nan", "alpha-inf", "tol-nan", "reference-tol-minus-inf"],
)
def test_non_finite_numbers_refused_naming_the_key(tmp_path, overlay, key):
    out = _refused(tmp_path, overlay)
    assert f"{key}: " in out and "is not a finite number" in out, out[-3000:]
    assert "MissingInputException" not in out


@pytest.mark.parametrize(
    "overlay, message",
    [
        # the real MNIST's smallest class (digit 5) has 5421 training images
        ({"strict_sizes": True, "experiments": {"e2": {"samples_per_class": [3, 6000]}}},
         "experiments.e2.samples_per_class: 6000 samples per class requested, but the smallest "
         "training class of the real mnist data has 5421"),
        # the real News20's smallest group (talk.religion.misc) has 377 training documents
        ({"strict_sizes": True, "experiments": {"e3": {"samples_per_class": [400]}}},
         "experiments.e3.samples_per_class: 400 samples per class requested, but the smallest "
         "training class of the real news20 data has 377"),
        # 7129 genes
        ({"strict_sizes": True, "experiments": {"e1": {"grids": [
            {"penalty": "l12", "groups": 8000, "method": "square", "alphas": [1.0]}]}}},
         "experiments.e1.grids[0].groups: block size 8000 exceeds the 7129 features of the real leukemia data"),
        # kymatio Scattering2D(J=2, L=8) on 28 x 28 images: 81 channels x 7 x 7 positions
        ({"experiments": {"e2": {"grids": [
            {"penalty": "l1inf", "groups": 4000, "method": "square", "alphas": [1.0]}]}}},
         "experiments.e2.grids[0].groups: block size 4000 exceeds the 3969 features"),
    ],
    ids=["mnist-per-class", "news20-per-class", "leukemia-groups", "mnist-groups"],
)
def test_sizes_beyond_the_data_refused_before_any_job(tmp_path, overlay, message):
    out = _refused(tmp_path, overlay)
    assert message in out, out[-3000:]


def test_sizes_checked_against_built_fixture_labels(tmp_path):
    """Fixture data (strict_sizes: false): once the labels exist, a size beyond them is
    refused at DAG-build time too (before, only the subset job failed)."""
    labels = tmp_path / "results" / "mnist" / "subsets" / "train_labels.npy"
    labels.parent.mkdir(parents=True)
    np.save(labels, np.repeat(np.arange(10), 6))  # 6 images per digit, as the fixture mirror
    rc, out = smk(tmp_path, "--cores", "1", targets=["e2"],
                  configfiles=[_overlay(tmp_path, {"experiments": {"e2": {"samples_per_class": [2, 100]}}})],
                  config={"results": tmp_path / "results"}, check=False)
    assert rc != 0
    assert ("experiments.e2.samples_per_class: 100 samples per class requested, but the smallest training "
            f"class of the mnist data under {tmp_path / 'results'} has 6") in out, out[-3000:]


@pytest.mark.parametrize(
    "name, message",
    [
        ("../passwd", "does not match"),
        ("leukemia/../../outside.tsv", "does not match"),
        ("leukemia/..", "does not match"),
        ("/etc/passwd", "does not match"),
        ("leukemia/.hidden.tsv", "does not match"),
        ("mnist/data_set_ALL_AML_train.tsv", "must lie in the folder of its dataset (leukemia/<name>)"),
        ("leukemia/data_set_ALL_AML_independent.tsv", "is also downloads.leukemia."),
    ],
    ids=["dotdot", "dotdot-inside", "dotdot-last", "absolute", "hidden", "other-dataset", "twice"],
)
def test_download_names_confined_to_their_dataset_folder(tmp_path, name, message):
    cfg = yaml.safe_load(TEST.read_text())
    entry = dict(cfg["downloads"]["leukemia"]["train"], file=name)
    out = _refused(tmp_path, {"downloads": {"leukemia": {"train": entry}}})
    assert "file" in out and message in out, out[-3000:]


@pytest.mark.mirror
def test_known_class_counts_are_the_real_data(mirror_dir):
    """The class counts checked at DAG-build time are those of the mirror's files."""
    y = read_mnist_labels(mirror_dir / "mnist" / "train-labels-idx1-ubyte.gz")
    assert tuple(np.bincount(y)) == MNIST_EXPECTED["train_counts"]
    news = load_news20(mirror_dir / "news20" / "20news-bydate.tar.gz")
    assert tuple(np.bincount(news.y_train)) == NEWS20_EXPECTED["train_counts"]


# --------------------------------------------------------------------------- file modes


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_outputs_get_the_mode_of_a_plain_open(tmp_path, umask):
    """Job records, features, subsets: 0o666 & ~umask like every other
    output (0644 with umask 022), not mkstemp's owner-only 0600."""
    from sparsesvm.data import features, subsets
    from sparsesvm.experiments import runner

    old = os.umask(umask)
    try:
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
        files = [runner.write_json_atomic(tmp_path / "runs" / "job.json", {"a": 1})]
        subsets.save_subsets(tmp_path / "subsets.npz", np.zeros((1, 2), dtype=np.int64))
        files.append(tmp_path / "subsets.npz")
        features.save_features(tmp_path / "features", np.zeros((2, 3)), [0, 1], np.zeros((1, 3)), [1])
        files += sorted((tmp_path / "features").iterdir())
        with atomic_path(tmp_path / "deep" / "x.npy", ".npy") as tmp:
            np.save(tmp, np.arange(3))
        files.append(tmp_path / "deep" / "x.npy")
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    assert plain.stat().st_mode & 0o777 == expected
    for f in files:
        assert f.stat().st_mode & 0o777 == expected, (f, oct(f.stat().st_mode & 0o777))
    assert np.array_equal(np.load(tmp_path / "deep" / "x.npy"), np.arange(3))
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()], "a temporary file was left behind"


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="killed"):
        with atomic_path(target) as tmp:
            Path(tmp).write_text("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_io_writers_replace_whole_files_or_nothing(tmp_path):
    """write_json / save_npy: the complete new content, or the old file when writing fails."""
    path = write_json(tmp_path / "a" / "r.json", {"x": 1.5, "y": [1, 2]}, indent=1)
    assert path.read_text() == '{\n "x": 1.5,\n "y": [\n  1,\n  2\n ]\n}\n'
    with pytest.raises(ValueError, match="Out of range float"):
        write_json(path, {"x": float("nan")}, allow_nan=False)
    arr = save_npy(tmp_path / "a" / "x.npy", np.arange(4))
    with pytest.raises(ValueError, match="pickle"):
        save_npy(arr, np.array([{}, None], dtype=object))  # no pickled objects
    assert json.loads(path.read_text()) == {"x": 1.5, "y": [1, 2]}
    assert np.array_equal(np.load(arr), np.arange(4))
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["r.json", "x.npy"]


# --------------------------------------------------------------------------- downloads


LEUKEMIA_DOWNLOADS = list(fixtures_data.LEUKEMIA_FILES.values())


def _e1_config(tmp_path, grids=None, name="e1.yaml"):
    """config/test.yaml reduced to leukemia and a few E1 training jobs, as one file."""
    grids = grids or [
        {"penalty": "l2", "groups": None, "method": "square", "alphas": [1.0]},
        {"penalty": "l1", "groups": None, "method": "hinge-reg", "alphas": [0.1, 10.0]},
    ]
    return _overlay(tmp_path, {"run": ["e1"], "datasets": ["leukemia"], "experiments": {"e1": {"grids": grids}}},
                    name=name)


@pytest.fixture(scope="module")
def tiny_mirror(tmp_path_factory):
    mirror = tmp_path_factory.mktemp("mirror")
    fixtures_data.write_tiny_mirror(mirror)
    return mirror


def test_download_changed_after_fetch_is_refused_on_read_and_on_the_console(tmp_path, tiny_mirror):
    """A download edited after it was fetched (and checked) is refused by the features job,
    naming the file, both digests and the way out; the reason is on the console."""
    results = tmp_path / "results"
    conf = {"mirror": tiny_mirror, "results": results}
    cfg = _e1_config(tmp_path)
    smk(tmp_path, "--cores", "1", targets=[f"results/downloads/{f}" for f in LEUKEMIA_DOWNLOADS],
        configfiles=[cfg], config={**conf, "results": "results"})
    victim = results / "downloads" / "leukemia" / "data_set_ALL_AML_train.tsv"
    lines = victim.read_text().splitlines(keepends=True)
    fields = lines[1].split("\t")
    fields[2] = str(float(fields[2]) + 1000.0)  # one expression value, still a valid table
    lines[1] = "\t".join(fields)
    victim.write_text("".join(lines))
    rc, out = smk(tmp_path, "--cores", "1", targets=["e1"], configfiles=[cfg],
                  config={**conf, "results": "results"}, check=False)
    assert rc != 0
    # the reason, on the console (not only in results/logs/leukemia/features.log)
    assert "checksum mismatch for results/downloads/leukemia/data_set_ALL_AML_train.tsv" in out, out[-4000:]
    assert "changed since its download: delete it and run again" in out
    assert not (results / "leukemia" / "features").exists()
    # the way out works: delete it, run again
    victim.unlink()
    smk(tmp_path, "--cores", "1", targets=["e1"], configfiles=[cfg], config={**conf, "results": "results"})
    assert (results / "tables" / "table1.csv").is_file()


def test_check_downloads_refuses_truncated_and_names_the_file(tmp_path, tiny_mirror):
    cfg = yaml.safe_load(TEST.read_text())["downloads"]["mnist"]
    path = tmp_path / "train-images-idx3-ubyte.gz"
    data = (tiny_mirror / "mnist" / "train-images-idx3-ubyte.gz").read_bytes()
    path.write_bytes(data)
    check_downloads({"train_images": path}, cfg)  # intact: accepted
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ChecksumError, match=f"{path}.*truncated gzip stream; changed since its download"):
        check_downloads({"train_images": path}, cfg)


def test_stale_part_file_removed_by_the_next_download(tmp_path, tiny_mirror):
    """A download killed before its cleanup leaves .<name>.<random>.part: the next download removes it."""
    name = "leukemia/data_set_ALL_AML_train.tsv"
    entry = yaml.safe_load(TEST.read_text())["downloads"]["leukemia"]["train"]
    dest = tmp_path / "downloads" / name
    dest.parent.mkdir(parents=True)
    stale = dest.parent / f".{dest.name}.k2j4x9ab.part"
    stale.write_bytes(b"half a file")
    other = dest.parent / ".data_set_ALL_AML_independent.tsv.abcdefgh.part"  # another file's: left alone
    other.write_bytes(b"x")
    download(entry["urls"], dest, entry["checksum"], mirror=tiny_mirror, name=name)
    assert dest.read_bytes() == (tiny_mirror / name).read_bytes()
    assert not stale.exists()
    assert other.exists()
    # also when the file is already there and intact (the download returns early)
    stale.write_bytes(b"half a file")
    download(entry["urls"], dest, entry["checksum"], mirror=tiny_mirror, name=name)
    assert not stale.exists()


# --------------------------------------------------------------------------- the results lock


def _holder_process():
    """A live process to stand for another run (killed by the caller)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])


def _write_lock(results, pid, cwd="/elsewhere"):
    from sparsesvm.experiments import lock

    results.mkdir(parents=True, exist_ok=True)
    (results / lock.LOCK_NAME).write_text(json.dumps(
        {"pid": pid, "host": socket.gethostname(), "cwd": cwd, "started": "earlier", "command": "snakemake"}))


def test_results_lock_refuses_a_live_holder_and_takes_over_a_stale_one(tmp_path, capsys):
    from sparsesvm.experiments import lock

    proc = _holder_process()
    try:
        _write_lock(tmp_path, proc.pid)
        with pytest.raises(lock.ResultsLockedError) as err:
            lock.acquire(tmp_path)
        msg = str(err.value)
        assert f"pid {proc.pid} on host {socket.gethostname()}, working directory /elsewhere" in msg
        assert f"delete {tmp_path / lock.LOCK_NAME}" in msg and "--config results=" in msg
        assert not lock.release(tmp_path)  # not ours: left in place
        assert lock.holder(tmp_path)["pid"] == proc.pid
    finally:
        proc.kill()
        proc.wait()
    # the holder is gone (SIGKILL): its lock is stale and taken over
    path = lock.acquire(tmp_path)
    assert "removing the stale lock" in capsys.readouterr().err
    assert lock.holder(tmp_path)["pid"] == os.getpid()
    assert lock.acquire(tmp_path) == path  # re-entrant for the holder
    assert lock.release(tmp_path) and lock.holder(tmp_path) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary file left


def test_lock_on_another_host_is_never_taken_over(tmp_path):
    from sparsesvm.experiments import lock

    (tmp_path / lock.LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "node-that-is-not-here", "cwd": "/x"}))
    with pytest.raises(lock.ResultsLockedError, match="on host node-that-is-not-here"):
        lock.acquire(tmp_path)


def test_second_run_from_another_working_directory_is_refused(tmp_path, tiny_mirror):
    """Two runs on one results directory from different working directories: the second
    is refused before any job, naming the first (Snakemake's own lock is per working directory)."""
    results = tmp_path / "results"
    cfg = _e1_config(tmp_path)
    proc = _holder_process()
    try:
        _write_lock(results, proc.pid, cwd="/first/run")
        second = tmp_path / "second"
        second.mkdir()
        rc, out = smk(second, "--cores", "1", targets=["e1"], configfiles=[cfg],
                      config={"mirror": tiny_mirror, "results": results}, check=False)
        assert rc != 0
        assert f"results directory {results} is in use by another run (pid {proc.pid}" in out, out[-3000:]
        assert "working directory /first/run" in out
        assert not (results / "downloads").exists(), "a job ran despite the lock"
    finally:
        proc.kill()
        proc.wait()
    # the first run was killed: the next run takes the stale lock over, runs, and releases it
    smk(second, "--cores", "1", targets=["e1"], configfiles=[cfg], config={"mirror": tiny_mirror, "results": results})
    assert (results / "tables" / "table1.csv").is_file()
    assert not (results / ".sparsesvm.lock").exists()


# --------------------------------------------------------------------------- the console


def test_make_reproduce_passes_extra_options(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    proc = subprocess.run(["make", "-n", "-C", str(REPO), "reproduce", 'ARGS=--dry-run table1',
                           f"VENV={tmp_path / 'venv'}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "snakemake --dry-run table1 --cores all --configfile config/config.yaml" in proc.stdout, proc.stdout


def test_default_profile_resumes_and_shows_failed_logs():
    """Every run (local or SLURM) reads profiles/default: interrupted jobs are redone and a
    failed job's log is printed on the console."""
    profile = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    assert profile == {"rerun-incomplete": True, "show-failed-logs": True}


# --------------------------------------------------------------------------- numerically extreme inputs


def _brute_norm(Phi, y, K, bias):
    """||T|| from the definition: (T X)_{l,k} = (X^T psi_l)_k - (X^T psi_l)_{y_l}, psi_l = [phi_l, bias];
    the matrix of T column by column, then its largest singular value."""
    L, M = Phi.shape
    Psi = np.hstack([Phi, np.full((L, 1), bias)])
    mat = np.zeros((L * K, (M + 1) * K))
    for j in range(M + 1):
        for c in range(K):
            X = np.zeros((M + 1, K))
            X[j, c] = 1.0
            S = Psi @ X
            mat[:, j * K + c] = (S - S[np.arange(L), y][:, None]).ravel()
    return np.linalg.norm(mat, 2)


def test_exact_norm_of_huge_features_is_scaled_not_a_linalg_error():
    """Phi Phi^T overflows beyond ~1e154: the exact norm is computed on Phi / 2**k.
    ||T[c Phi, 1]|| = c ||T[Phi, 1/c]|| (T is linear in psi_l), checked by brute force."""
    from sparsesvm.model.operator import MulticlassOperator

    rng = np.random.default_rng(3)
    Phi, y, K = rng.standard_normal((9, 4)), np.arange(9) % 3, 3
    c = 2.0 ** 600  # 4e180: Phi Phi^T is inf
    got = MulticlassOperator(Phi * c, y, K).exact_norm()
    assert np.isfinite(got)
    assert got == pytest.approx(c * _brute_norm(Phi, y, K, 1.0 / c), rel=1e-10)
    # and the usual (unscaled) path still equals the brute force
    assert MulticlassOperator(Phi, y, K).exact_norm() == pytest.approx(_brute_norm(Phi, y, K, 1.0), rel=1e-10)


@pytest.mark.parametrize("scale, n", [(1e200, 30), (1e160, 30), (1e160, 400), (1e300, 400)],
                         ids=["1e200", "1e160", "1e160-power-iteration", "1e300-power-iteration"])
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con", "square", "ova"])
def test_huge_but_finite_features_get_a_value_error_saying_what_to_do(scale, n, method):
    from sparsesvm import SparseSVC

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((n, 5)), np.arange(n) % 3
    too_large = "too large for float64.*Rescale X, e.g. divide it by"
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=too_large):
        SparseSVC(method=method, penalty="l1", alpha=1.0, max_iter=50).fit(X * scale, y)


def test_operator_norm_too_large_for_the_solvers_says_so():
    """Entries below the bound, but so many that ||T|| exceeds it: the operator's check."""
    from sparsesvm.model.operator import MAX_NORM, MulticlassOperator

    X = np.full((40, 400), 0.5 * MAX_NORM)
    y = np.arange(40) % 2
    for method in ("exact", "power"):
        with np.errstate(all="ignore"), pytest.raises(ValueError, match="is too large for float64.*Rescale X"):
            MulticlassOperator(X, y, 2).norm(method=method)


def test_large_but_usable_features_still_fit():
    """1e100: ||T||**2 ~ 1e200 is still finite, the fit runs and predicts as on X itself."""
    from sparsesvm import SparseSVC

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 5)), np.arange(30) % 3
    clf = SparseSVC(method="square", penalty="l2", alpha=1e-200, max_iter=500).fit(X * 1e100, y)
    assert np.all(np.isfinite(clf.coef_))
    assert clf.predict(X * 1e100).shape == (30,)


@pytest.mark.parametrize("owner", ["SparseSVC", "CrammerSingerSVC"])
def test_mixed_label_types_get_a_value_error(owner):
    import sparsesvm

    X = np.random.default_rng(0).standard_normal((6, 3))
    y = np.array(["a", 1, "b", "a", 1, "b"], dtype=object)
    with pytest.raises(ValueError, match=r"cannot be sorted together \(types \['int', 'str'\].*y.astype\(str\)"):
        getattr(sparsesvm, owner)().fit(X, y)


# --------------------------------------------------------------------------- fault injection


TIMING_FIELDS = {"fit_time_s", "fit_wall_time_s", "fit_cpu_time_s"}


def _descendants_running(root_pid, needle):
    """Pids of the processes below `root_pid` whose command line contains every string of `needle`."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            parents[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmd)
    found = []
    for pid, (_, cmd) in parents.items():
        if not all(n in cmd for n in needle):
            continue
        p = pid
        while p in parents and p != root_pid:
            p = parents[p][0]
        if p == root_pid:
            found.append(pid)
    return found


def _snakemake_cmd(workdir, cfg, results, mirror, *args):
    return [snakemake_exe(), "e1", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(cfg), "--config", f"mirror={mirror}", f"results={results}", *args]


def _records(results):
    """``{(file, alpha): record without its clocks}`` of E1's training records (a grid job's file
    holds several: alphas_in_one_job)."""
    return {(Path(path).relative_to(results).as_posix(), rec["alpha"]):
            {k: v for k, v in rec.items() if k not in TIMING_FIELDS}
            for path, rec in iter_records(sorted(results.glob("leukemia/runs/**/*.json")))}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to find the job's process")
def test_training_job_killed_mid_run_is_recomputed_alone_with_identical_results(tmp_path, tiny_mirror):
    """SIGKILL to one training job's process: the run fails naming it; running the same
    command again recomputes exactly that job (and the table made from it), leaves every
    other record untouched, and the results equal those of an uninterrupted run."""
    cfg = _e1_config(tmp_path, grids=[
        {"penalty": "l2", "groups": None, "method": "square", "alphas": [1.0]},
        {"penalty": "l1", "groups": None, "method": "hinge-reg", "alphas": [0.1, 10.0]},
        {"penalty": "l1", "groups": None, "method": "logit", "alphas": [1.0]},
    ])
    env = dict(os.environ, PYTHONWARNINGS="ignore")

    # the reference: one uninterrupted run
    ref = tmp_path / "reference"
    ref.mkdir()
    subprocess.run(_snakemake_cmd(ref, cfg, ref / "results", tiny_mirror, "--cores", "2"),
                   check=True, capture_output=True, env=env, timeout=900)
    expected = _records(ref / "results")
    assert len(expected) == 4

    # the same run, one training job killed with SIGKILL while it runs
    work = tmp_path / "faulty"
    work.mkdir()
    results = work / "results"
    proc = subprocess.Popen(_snakemake_cmd(work, cfg, results, tiny_mirror, "--cores", "1", "--keep-going"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    killed, deadline = [], time.monotonic() + 600
    while not killed and proc.poll() is None and time.monotonic() < deadline:
        for pid in _descendants_running(proc.pid, [".snakemake/scripts/", "train.py"]):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        time.sleep(0.02)
    out, _ = proc.communicate(timeout=900)
    assert killed, "no training job seen running"
    assert proc.returncode != 0, out[-3000:]
    assert "Error in rule train" in out
    got = _records(results)
    missing = sorted(set(expected) - set(got))
    assert len(missing) == 1, (missing, out[-3000:])  # --keep-going: the other jobs finished
    assert not (results / ".sparsesvm.lock").exists(), "the failed run did not release its lock"

    # running the same command again: exactly that job, then what is made from it
    before = {p: p.stat().st_mtime_ns for p in results.glob("leukemia/runs/**/*.json")}
    rerun = subprocess.run(_snakemake_cmd(work, cfg, results, tiny_mirror, "--cores", "1"),
                           capture_output=True, text=True, env=env, timeout=900)
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-3000:]
    stats = job_stats(rerun.stdout + rerun.stderr)
    # E1 of the fixture config has cross-validation: its summary reads the training table too
    assert stats == {"train": 1, "aggregate": 1, "aggregate_cv": 1, "table1": 1, "e1": 1}, stats
    assert all(p.stat().st_mtime_ns == t for p, t in before.items()), "a finished record was rewritten"
    assert _records(results) == expected
    assert (results / "tables" / "table1.csv").read_text() == (ref / "results" / "tables" / "table1.csv").read_text()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to find the job's process")
def test_snakemake_killed_mid_run_then_lock_message_unlock_and_resume(tmp_path, tiny_mirror):
    """SIGKILL to Snakemake and its job (a power cut): the next run's first message is the
    lock and its way out (--unlock), not an IncompleteFilesException; after --unlock the
    same command takes over the stale results lock and redoes the interrupted job."""
    cfg = _e1_config(tmp_path)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    results = tmp_path / "results"
    cmd = _snakemake_cmd(tmp_path, cfg, results, tiny_mirror, "--cores", "1")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline, victims = time.monotonic() + 600, []
    while proc.poll() is None and time.monotonic() < deadline:
        if _descendants_running(proc.pid, [".snakemake/scripts/", "train.py"]):
            # the whole tree below Snakemake, before it is orphaned
            victims = [pid for pid in _descendants_running(proc.pid, [""]) if pid != proc.pid]
            break
        time.sleep(0.02)
    assert victims, "no training job seen running"
    proc.kill()
    proc.wait()
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert (results / ".sparsesvm.lock").exists()  # left behind by the killed run

    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    out = second.stdout + second.stderr
    assert second.returncode != 0
    assert "LockException" in out and "--unlock" in out, out[-3000:]
    assert "IncompleteFilesException" not in out

    subprocess.run(cmd + ["--unlock"], check=True, capture_output=True, env=env, timeout=900)
    third = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    out = third.stdout + third.stderr
    assert third.returncode == 0, out[-3000:]
    assert f"removing the stale lock of a run that ended without releasing it (pid {proc.pid}" in out
    assert (results / "tables" / "table1.csv").is_file()
    assert not (results / ".sparsesvm.lock").exists()
