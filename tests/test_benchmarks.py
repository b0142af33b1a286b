"""The benchmarks' shared harness (benchmarks/_harness.py) and the scripts' command lines.

The benchmarks are not run here (minutes each); what is checked is what every script
relies on: the harness's problems, timing, fresh processes and output, and that every
script imports and parses its options.
"""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


@pytest.fixture(scope="module")
def harness():
    """``_harness`` imported from benchmarks/, the BLAS limits of this process restored after."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=None):
        sys.path.insert(0, str(BENCHMARKS))
        try:
            yield importlib.import_module("_harness")
        finally:
            sys.path.remove(str(BENCHMARKS))


def _script(name):
    """The benchmark script ``name`` imported as a module from benchmarks/."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def _estimator():
    return _script("estimate_full_run")


def test_every_script_imports_and_parses_its_options():
    code = ("import importlib, sys\n"
            f"sys.path.insert(0, {str(BENCHMARKS)!r})\n"
            "for name in sys.argv[1:]:\n"
            "    try:\n"
            "        importlib.import_module(name).main(['--help'])\n"
            "    except SystemExit as e:\n"
            "        assert e.code == 0, (name, e.code)\n"
            "    else:\n"
            "        raise AssertionError(name + ': --help did not exit')\n")
    proc = subprocess.run([sys.executable, "-c", code, *SCRIPTS], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("usage:") == len(SCRIPTS) >= 10


def test_every_package_name_of_the_harness_resolves(harness):
    for name in harness.PACKAGE:
        assert getattr(harness, name) is not None, name
    with pytest.raises(AttributeError, match="no_such_name"):
        harness.no_such_name  # noqa: B018


def test_blas_is_limited_and_checked(harness):
    pools = harness.limit_blas(1)
    assert all(p["num_threads"] == 1 for p in pools if p["user_api"] == "blas")
    if any(p["user_api"] == "blas" for p in pools):
        with pytest.raises(RuntimeError, match="expected 3"):
            harness.check_blas(3)


def test_alpha_parameter_maps_alpha_as_the_spec_says(harness):
    assert harness.alpha_parameter("hinge-reg", 0.25, 40) == {"lam": 4.0}
    assert harness.alpha_parameter("square", 0.25, 40) == {"lam": 4.0}
    assert harness.alpha_parameter("hinge-con", 0.25, 40) == {"eta": 10.0}
    assert harness.alpha_parameter("hinge-lin", 0.25, 40) == {"eta": 10.0}


def test_paper_fit_is_the_solver_at_the_mapped_parameter(harness):
    Phi, y, K = harness.scattering_like(np.random.default_rng(0), L=20, K=4, channels=3,
                                        positions=5)
    op = harness.MulticlassOperator(Phi, y, K)
    pen = harness.make_penalty("l1inf", 3, Phi.shape[1], K)
    ours = harness.paper_fit("hinge-con", op, pen, 0.3, max_iter=30)
    direct = harness.solvers.hinge_con(op, pen, 0.3 * 20, max_iter=30)
    assert ours.objective == direct.objective and np.array_equal(ours.X, direct.X)


def test_synthetic_problems_have_the_asked_shapes(harness):
    rng = np.random.default_rng(1)
    Phi, y, K = harness.scattering_like(rng, L=20, K=5)
    assert Phi.shape == (20, 3969) and K == 5 and set(y) == set(range(5))
    np.testing.assert_allclose(np.linalg.norm(Phi, axis=1), 1.0)
    Phi, y, K = harness.tfidf_like(rng, L=40, M=600, K=4)
    assert sp.isspmatrix_csr(Phi) and Phi.shape == (40, 600) and Phi.min() >= 0
    np.testing.assert_allclose(sp.linalg.norm(Phi, axis=1), 1.0)
    Phi, y, K = harness.expression_like(rng, L=38, M=50)
    assert Phi.shape == (38, 50) and np.bincount(y).tolist() == [19, 8, 11]
    Phi, y = harness.sparse_text_like(3, 4, M=200)
    assert Phi.shape == (12, 200) and np.bincount(y).tolist() == [4, 4, 4]
    Phi, y = harness.gamma_scattering_like(L=20, K=10)
    assert Phi.shape == (20, 3969) and Phi.min() >= 0


def test_repeat_timing_and_timed(harness):
    calls = []
    t = harness.repeat_timing(lambda: calls.append(1), repeats=7)
    assert len(calls) == len(t.times) == 7 and t.min <= t.median
    out, seconds = harness.timed(sum, [1, 2, 3])
    assert out == 6 and seconds >= 0


def test_run_fresh_measures_the_child_alone(harness, tmp_path):
    busy = ("import sys, json\nx = sum(i * i for i in range(3_000_000))\n"
            "print(json.dumps(sys.argv[1:]))")
    child = harness.run_fresh(busy, "a", "b", cwd=tmp_path)
    assert child.last_json() == ["a", "b"] and child.returncode == 0
    assert 0 < child.cpu_s and child.started < child.ended
    with pytest.raises(RuntimeError, match="status 3"):
        harness.run_fresh("import sys; sys.stderr.write('boom'); sys.exit(3)")
    assert harness.run_fresh("raise SystemExit(2)", check=False).returncode == 2
    env = harness.child_env("/some/src", EXTRA="1")
    assert env["PYTHONPATH"].split(":")[0] == "/some/src" and env["EXTRA"] == "1"
    assert env["OPENBLAS_NUM_THREADS"] == "1"


def test_write_results_json_carries_the_environment(harness, tmp_path):
    import argparse

    path = tmp_path / "out.json"
    harness.write_results(path, {"rows": [{"a": 1}]}, argparse.Namespace(data=tmp_path, n=2))
    record = json.loads(path.read_text())
    assert record["rows"] == [{"a": 1}] and record["args"] == {"data": str(tmp_path), "n": 2}
    env = record["environment"]
    assert env["versions"]["numpy"] == np.__version__ and env["machine"]["cores"] >= 1
    assert len(env["commit"]) in (0, 40) and isinstance(env["blas"], list)
    assert not list(tmp_path.glob("*.tmp"))


def test_write_results_csv_one_file_per_table(harness, tmp_path):
    harness.write_results(tmp_path / "one.csv", {"rows": [{"a": 1, "b": [1, 2]}, {"a": 2}]})
    assert (tmp_path / "one.csv").read_text().splitlines() == ["a,b", '1,"[1, 2]"', "2,"]
    harness.write_results(tmp_path / "two.csv", {"x": [{"a": 1}], "y": [{"b": 2}], "n": 3})
    assert (tmp_path / "two.x.csv").read_text().splitlines() == ["a", "1"]
    assert (tmp_path / "two.y.csv").read_text().splitlines() == ["b", "2"]


@pytest.mark.mirror
def test_leukemia_from_the_mirror(harness, mirror_dir):
    X_train, y_train, X_test, y_test = harness.leukemia(mirror_dir)
    assert X_train.shape == (38, 7129) and X_test.shape == (34, 7129)
    assert np.bincount(y_train).tolist() == [19, 8, 11]
    Z, _, _, _ = harness.leukemia(mirror_dir, standardize=True)
    sd = X_train.std(axis=0)
    sd[sd == 0] = 1.0
    np.testing.assert_array_equal(Z, (X_train - X_train.mean(axis=0)) / sd)


def test_stored_features_as_float64(harness, tmp_path):
    rng = np.random.default_rng(2)
    dense = rng.random((6, 4)).astype(np.float32)
    harness.save_features(tmp_path / "dense", dense, np.arange(6) % 3, dense[:2], np.arange(2))
    X, y = harness.stored_features(tmp_path / "dense", "train")
    assert X.dtype == np.float64 and X.flags["C_CONTIGUOUS"] and np.array_equal(X, dense)
    assert y.tolist() == [0, 1, 2, 0, 1, 2]
    csr = sp.random(5, 7, density=0.3, format="csr", random_state=0, dtype=np.float32)
    harness.save_features(tmp_path / "csr", csr, np.arange(5) % 2, csr[:2], np.arange(2))
    X, _ = harness.stored_features(tmp_path / "csr", "test")
    assert sp.issparse(X) and X.dtype == np.float64 and (X != csr[:2]).nnz == 0


@pytest.mark.mirror
def test_mnist_scattering_is_balanced_nested_and_the_workflows_features(harness, mirror_dir):
    # bench_l2.py and bench_smooth.py --problems mnist-real: class-balanced and nested
    # (the first n images of one order, for every n), through the workflow's transform
    Xtr, ytr, Xte, yte, seconds = harness.mnist_scattering(mirror_dir, 20, n_test=3)
    assert Xtr.shape == (20, 81 * 49) and Xte.shape == (3, 81 * 49) and seconds > 0
    assert np.bincount(ytr).tolist() == [2] * 10
    small, ys, empty, ye, _ = harness.mnist_scattering(mirror_dir, 10)
    assert empty.shape == (0, 81 * 49) and ye.size == 0
    assert np.array_equal(ys, ytr[:10]) and np.allclose(small, Xtr[:10])
    _, _, te, _ = harness.mnist_images(mirror_dir)
    np.testing.assert_allclose(Xte, harness.scattering(te[:3]))


def test_bench_smooth_options_set_the_solver_constants():
    # bench_smooth.py --terms-*, --logit-fista: each option sets its constant of the solver
    code = ("import sys\n"
            f"sys.path.insert(0, {str(BENCHMARKS)!r})\n"
            "import bench_smooth\n"
            "from sparsesvm.solvers.accelerated import smooth, smooth_qp\n"
            "bench_smooth.main(['--problems', 'none', '--terms-from', '0', '--terms-margin',\n"
            "                   '0.25', '--terms-kkt', 'qdldl', '--terms-max-scores', '77',\n"
            "                   '--terms-max-gap', 'inf', '--logit-fista', '0'])\n"
            "print(repr((smooth_qp.TERMS_MIN_SCORES, smooth_qp.TERMS_MARGIN, smooth_qp.TERMS_KKT,\n"
            "            smooth_qp.TERMS_MAX_SCORES, smooth.TERMS_MAX_GAP, smooth.LOGIT_FISTA)))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "(0.0, 0.25, 'qdldl', 77, inf, 0)"


@pytest.mark.mirror
def test_news20_tfidf_is_a_balanced_subset_of_the_workflows_features(harness, mirror_dir):
    # bench_smooth.py --problems news20: TF-IDF rows (unit l2 norms) of per_class documents
    # of each of the 20 groups, with the workflow's vocabulary size
    X, y = harness.news20_tfidf(mirror_dir, 3)
    assert sp.isspmatrix_csr(X) and X.shape == (60, 26214) and X.dtype == np.float64
    assert np.bincount(y).tolist() == [3] * 20
    np.testing.assert_allclose(np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel()), 1.0)


def test_bench_family_quick_writes_the_rows(tmp_path):
    # bench_family.py --quick: two tiny problems, Clarabel vs the accelerated solver (auto
    # and the other engine forced), one JSON row each with the fields of the report
    out = tmp_path / "family.json"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_family.py"), "--quick",
                           "--cap", "30", "--json", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(out.read_text())
    rows = record["rows"]
    assert [(r["problem"], r["penalty"], r["method"]) for r in rows] == [
        ("dense-40x60x3", "l1inf", "hinge-reg"), ("leuk-38x300x3", "l12", "hinge-con")]
    # l1,inf: the portfolio, whose interior point (predicted cheap: in PDHG's place, after
    # PORTFOLIO_IPM_FIRST_SHARE of its prediction of column generation) certifies the tiny
    # problem first, column generation forced; l1,2: cg, PDHG forced
    for r, engine, forced in zip(rows, ("portfolio (ipm)", "cg"), ("cg", "pdhg")):
        assert r["clarabel_status"] == "optimal" and r["clarabel_solve"] > 0
        assert r["acc_engine"] == engine and r["acc_converged"] and r["acc_cert_gap"] <= 1e-4
        assert 0 <= r["acc_true_gap"] <= r["acc_cert_gap"] + 1e-6
        assert r["acc_ratio"] > 0 and r[f"forced_{forced}_engine"] == forced
        assert 0 < r["n_sv"] <= r["L"] and r["nnz_groups"] > 0
    assert record["dropped"] == [] and record["args"]["quick"] is True
    assert "worst ratio" in proc.stdout
    # --clarabel-from: Clarabel's results of that run, not solved again (its status, times and
    # objective the same to the bit), the accelerated solver run again
    again = tmp_path / "again.json"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_family.py"), "--quick",
                           "--cap", "30", "--no-forced", "--clarabel-from", str(out),
                           "--json", str(again)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows2 = json.loads(again.read_text())["rows"]
    assert len(rows2) == len(rows)
    for r, r2 in zip(rows, rows2):
        assert r2["clarabel_reused"] and not r["clarabel_reused"]
        for key in ("clarabel_solve", "clarabel_wall", "clarabel_status", "clarabel_objective"):
            assert r2[key] == r[key]
        assert r2["acc_converged"] and r2["acc_ratio"] == r["clarabel_solve"] / r2["acc_wall"]
    # a row of another problem under the same name is refused
    bad = dict(json.loads(out.read_text()))
    bad["rows"][0]["lam"] *= 2
    out.write_text(json.dumps(bad))
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_family.py"), "--quick",
                           "--no-forced", "--clarabel-from", str(out)], capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "another problem" in proc.stderr


def test_bench_products_times_both_orientations_and_the_sparse_products(tmp_path):
    pytest.importorskip("numba")
    out = tmp_path / "products.json"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_products.py"), "--shapes",
                           "60x1000x10", "--repeats", "1", "--min-ms", "1", "--densities", "0.1",
                           "0.5", "--csr-shapes", "80x3000x5", "--row-densities", "1", "0.1",
                           "--json", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(out.read_text())
    (row,) = record["rows"]
    assert (row["L"], row["M"], row["K"]) == (60, 1000, 10) and row["forward_ms"] > 0
    (sparse,) = record["sparse_rows"]
    assert set(sparse["sparse_ms"]) == {"0.1", "0.5"} and sparse["dense_ms"] > 0
    assert sparse["actual_density"]["0.1"] < sparse["actual_density"]["0.5"]
    assert sparse["max_rel_difference"] < 1e-12 and sparse["tuned_max_density"] >= 0
    assert "sparse at 0.1" in proc.stdout
    (csr,) = record["csr_rows"]  # sparse Phi: scipy's products against the compiled ones
    assert (csr["L"], csr["M"], csr["K"]) == (80, 3000, 5) and csr["bitwise"]
    assert set(csr["forward_ms"]) == {"1.0", "0.1"} and min(csr["adjoint_ms"]) > 0
    assert set(csr["chosen"]) == {"forward", "adjoint"}


def test_bench_iteration_times_the_steady_iterations_against_the_fastest_products(tmp_path):
    # a tiny synthetic MNIST-shaped run: --skip times iterations 5..15 (a run of 15 minus a
    # run of 5), at the point where the proximal step has its support; the floor is the
    # products in their faster orientation
    out = tmp_path / "iter.json"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_iteration.py"), "--problems",
                           "mnist", "--L", "20", "--iters", "10", "--skip", "5", "--max-iter", "3",
                           "--repeats", "1", "--paths", "numpy", "--methods", "hinge-reg",
                           "hinge-lin", "ova", "--alpha-reg", "1", "--json", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [row["method"] for row in rows] == ["hinge-reg", "hinge-lin", "ova"]  # every method
    for row in rows:
        assert row["skip"] == 5 and row["L"] == 20 and row["path"] == "numpy"
        assert row["iter_ms"] > 0 and row["floor_ms"] > 0 and row["ratio"] > 0
        assert 0 <= row["timed_zero_weights_pct"] <= 100 and row["stop_iters"] == 3


def test_bench_iteration_product_floor_takes_the_faster_orientation(monkeypatch):
    bench = _script("bench_iteration")
    rng = np.random.default_rng(0)
    Phi = np.abs(rng.standard_normal((20, 300)))
    seen = []

    class Timing:  # repeat_timing's result; a fixed median per call, to see which are summed
        def __init__(self, median):
            self.median = median

    def fake(fn, repeats, clock):
        fn()
        seen.append(fn)
        return Timing([5.0, 2.0, 3.0, 7.0][len(seen) - 1])

    monkeypatch.setattr(bench.h, "repeat_timing", fake)
    assert bench.product_floor(Phi, 4) == 2.0 + 3.0  # the faster of each product's two
    seen.clear()
    assert bench.product_floor(sp.csr_matrix(Phi), 4) == 5.0 + 2.0  # CSR: one of each


def test_estimate_draws_the_same_jobs_from_the_strata_two_job_lists_share():
    est = _estimator()

    def jobs(experiments):
        return [{"wildcards": {"dataset": "mnist", "experiment": e, "L": L, "method": m, "alpha": str(a),
                               "subset": str(s)}}
                for e in experiments for L in ("3K", "5K") for m in ("hinge-reg", "logit")
                for a in range(9) for s in range(10)]

    def names(sample):
        return sorted("/".join(j["wildcards"].values()) for j in sample)

    groups, sample = est.draw(jobs(["e2", "e4", "e5"]), 3, seed=0)
    assert len(groups) == 12 and len(sample) == 36
    _, without_e4 = est.draw(jobs(["e2", "e5"]), 3, seed=0)  # whole strata less (shared runs)
    assert names(without_e4) == [n for n in names(sample) if "/e4/" not in n]
    _, other_seed = est.draw(jobs(["e2", "e5"]), 3, seed=1)
    assert names(other_seed) != names(without_e4)


def test_estimate_selects_experiments_with_the_whole_lists_draws():
    est = _estimator()
    jobs = [{"wildcards": {"dataset": d, "experiment": e, "L": "5K", "method": m, "alpha": str(a),
                           "subset": str(s)}}
            for d, e in (("mnist", "e2"), ("news20", "e3")) for m in ("hinge-reg", "square")
            for a in range(5) for s in range(6)]
    _, whole = est.draw(jobs, 2, seed=0)
    only = est.select_experiments(jobs, ["e3"])
    assert {j["wildcards"]["experiment"] for j in only} == {"e3"} and len(only) == len(jobs) // 2
    groups, sample = est.draw(only, 2, seed=0)
    assert len(groups) == 2
    assert (sorted(json.dumps(j, sort_keys=True) for j in sample)
            == sorted(json.dumps(j, sort_keys=True) for j in whole if j["wildcards"]["experiment"] == "e3"))
    assert est.select_experiments(jobs, None) is jobs
    with pytest.raises(ValueError, match=r"\['e5'\].*'e2', 'e3'"):
        est.select_experiments(jobs, ["e3", "e5"])


def test_estimate_counts_grid_jobs_in_strata_of_their_own():
    est = _estimator()
    single = [{"wildcards": {"dataset": "mnist", "experiment": "e2", "L": "3K", "method": "logit",
                             "alpha": str(a), "subset": str(s)}} for a in range(9) for s in range(10)]
    grid = [{"rule": "train_grid", "wildcards": {"dataset": "mnist", "experiment": "e2", "L": "3K",
                                                 "method": "logit", "subset": str(s)}}
            for s in range(10, 25)]
    groups, sample = est.draw(single + grid, 2, seed=0)
    assert {k: len(v) for k, v in groups.items()} == {("mnist", "e2", "3K", "logit"): 90,
                                                      ("mnist", "e2", "3K", "logit[grid]"): 15}
    # the single jobs' stratum draws what it draws without the grid jobs
    _, alone = est.draw(single, 2, seed=0)
    assert [j for j in sample if "rule" not in j] == [j for j in alone]
    assert est.SCRIPTS[grid[0]["rule"]] == "train_grid.py"
    assert all((BENCHMARKS.parent / "workflow" / "scripts" / s).is_file() for s in est.SCRIPTS.values())
    # --pair-grids: a grid job's single jobs, one per alpha, its settings and inputs
    job = {**grid[0], "params": {"settings": {"method": "logit"}, "alphas": ["0.01", "1.0"], "code": "c"},
           "input": {"features": "f", "subset": "s"}}
    singles = est.grid_singles(job)
    assert [s["wildcards"]["alpha"] for s in singles] == ["0.01", "1.0"]
    assert all(s["rule"] == "train" and "alphas" not in s["params"] and s["input"] == job["input"]
               and est.stratum(s) == ("mnist", "e2", "3K", "logit") for s in singles)


def test_estimate_summarizes_only_the_trees_it_is_given(tmp_path):
    # an --out written by two trees (--src base=... new=...), summarised for one of them (as a
    # later --src new=... --pair-grids run does): that tree's jobs, not an empty estimate
    import argparse

    est = _estimator()
    jobs = [{"wildcards": {"dataset": "mnist", "experiment": "e2", "L": "3K", "method": "logit",
                           "alpha": str(a), "subset": "0"}} for a in range(4)]
    groups, sample = est.draw(jobs, 2, seed=0)
    out = tmp_path / "est.jsonl"
    rec = {"fit_time_s": 1.0, "n_iter": 10, "test_errors": 5, "nnz": 7, "objective": 1.0}
    with open(out, "w") as fh:
        for job in sample:
            for tree, cpu in (("base", 10.0), ("new", 8.0)):
                fh.write(json.dumps({**rec, "cpu_s": cpu, "tree": tree, "stratum": list(est.stratum(job)),
                                     "wildcards": job["wildcards"]}) + "\n")
    args = argparse.Namespace(configfile="c.yaml", per_stratum=2, seed=0)
    est.summarize(groups, out, {"new": "/new"}, args, len(jobs), len(sample))
    report = json.loads(out.with_name(out.name + ".summary.json").read_text())
    assert report["n_measured"] == 2
    assert report["estimate"]["new"]["total"]["cpu_hours"] == pytest.approx(4 * 8.0 / 3600)
    assert "base" not in report["estimate"]


def test_alphas_in_one_job_pairs_a_cut_grid_job_with_its_singles():
    # bench_alphas_in_one_job: one grid job in turn per stratum, cut to k of its alphas (in the
    # grid's order), its singles; the saving per extra alpha, extrapolated over the stratum's
    # grid jobs' extra alphas; the records compared
    est, bench = _estimator(), _script("bench_alphas_in_one_job")
    w = {"dataset": "mnist", "experiment": "e5", "L": "500K", "method": "liblinear-cs"}
    alphas = ["0.001", "0.01", "0.1", "1.0", "10.0"]
    turn = [{"rule": "train_grid", "wildcards": {**w, "subset": str(s)}, "input": {"features": "f"},
             "params": {"settings": {}, "alphas": alphas[:4 if s else 5], "side_by_side": False}}
            for s in range(3)]
    beside = {**turn[0], "params": {**turn[0]["params"], "side_by_side": True}}
    assert [bench.in_turn(j) for j in (*turn, beside)] == [True, True, True, False]
    assert est.stratum(turn[0])[3] == "liblinear-cs[in-turn]" and est.stratum(beside)[3] == "liblinear-cs[grid]"
    cut = bench.cut(turn[0], 3, seed=0)
    kept = cut["params"]["alphas"]
    assert len(kept) == 3 and kept == [a for a in alphas if a in kept] and cut["wildcards"] == turn[0]["wildcards"]
    assert bench.cut(turn[0], 3, seed=0) == cut and turn[0]["params"]["alphas"] == alphas
    rec = {"test_errors": 5, "nnz": 7, "n_iter": 10, "objective": 1.5}
    stratum = list(est.stratum(turn[0]))
    # as run_sample writes them: each job with its own stratum (a single's is its method's)
    rows = [{"stratum": stratum, "cpu_s": 10.0, "wildcards": cut["wildcards"],
             "records": [{"alpha": float(a), **rec, "fit_time_s": 1.0} for a in kept]}]
    rows += [{"stratum": list(est.stratum(s)), "cpu_s": 4.0, "wildcards": s["wildcards"], **rec,
              "fit_time_s": 1.5, "n_iter": 10 + (a == kept[-1])}
             for a, s in zip(kept, est.grid_singles(cut), strict=True)]
    assert rows[1]["stratum"][3] == "liblinear-cs"
    report = bench.summarize([*turn, beside], rows)
    (row,) = report["strata"]
    assert row["saving_per_extra_alpha_s"] == pytest.approx((12.0 - 10.0) / 2)
    assert (row["grid_fit_time_s"], row["singles_fit_time_s"]) == (3.0, 4.5)
    assert row["saving_beside_the_fits_per_extra_alpha_s"] == pytest.approx(((12.0 - 4.5) - (10.0 - 3.0)) / 2)
    assert report["saving_beside_the_fits_cpu_hours"] == pytest.approx(0.25 * 10 / 3600)
    assert row["extra_alphas"] == 4 + 3 + 3 and row["grid_jobs"] == 3
    assert report["saving_cpu_hours"] == pytest.approx(1.0 * 10 / 3600)
    assert row["same"] == {"test_errors": True, "nnz": True, "n_iter": False, "objective": True}
    assert row["objective_rel_diff"] == 0.0
    assert report["strata_unmeasured"] == []


def test_calibrate_work_clock_fits_known_prices_and_counts_as_the_clock():
    # calibrate_work_clock: least squares recover the prices events were timed with, and the
    # seconds it reports as counted are the clock's prices applied to the work counted
    cal = _script("calibrate_work_clock")
    rng = np.random.default_rng(0)
    simplex, ipm = (-18.0, 0.8, -0.3, 0.4), (-15.0, 1.4, -0.6, -0.1)
    events = []
    for _ in range(40):
        rows, cols, nnz = (int(v) for v in rng.integers([200, 200, 5000], [5000, 7000, 900000]))
        for kind, count, coef in (("_run_warm", "simplex", simplex), ("_run_ipm", "ipm", ipm)):
            n = int(rng.integers(100, 4000) if count == "simplex" else rng.integers(10, 40))
            t = n * np.exp(coef[0] + coef[1] * np.log(nnz) + coef[2] * np.log(rows)
                           + coef[3] * np.log(cols))
            events.append(dict(ev="lp", kind=kind, t=t, simplex=n * (count == "simplex"),
                               ipm=n * (count == "ipm"), rows=rows, cols=cols, nnz=nnz))
    for _ in range(12):
        rows, atoms, n = int(rng.integers(100, 1200)), int(rng.integers(50, 3000)), int(rng.integers(10, 40))
        t = n * (2e-3 + 7e-11 * (rows * rows * atoms / 2 + rows ** 3 / 6))
        events.append(dict(ev="dense", t=t, iterations=n, rows=rows, cols=atoms))
    for _ in range(12):
        L, M, K, con = int(rng.integers(50, 5000)), int(rng.integers(50, 4000)), 10, bool(rng.integers(2))
        nit = int(rng.integers(64, 5000))
        n_prod = 2 * nit + int(rng.integers(0, 200))
        madds = n_prod * L * M * K * rng.uniform(0.5, 1.0)
        prod_t = 2e-5 * n_prod + 3e-10 * madds
        rest = nit * (1e-4 + 4e-8 * L * K + 1e-8 * (M + 1) * K + 3e-4 * con)
        events.append(dict(ev="pdhg", t=prod_t + rest, nit=nit, L=L, M=M, K=K, con=con,
                           n_prod=n_prod, madds=madds, prod_t=prod_t))
        rounds = int(rng.integers(3, 60))
        events.append(dict(ev="cg", t=1.0 + rounds * (3e-3 + 2e-6 * L * K), lp_t=1.0, prod_t=0.0,
                           rounds=rounds, L=L, K=K, madds=0.0, n_prod=0))
    hinge_ipm = cal.hinge_ipm
    for _ in range(16):
        L, M, K = int(rng.integers(20, 400)), int(rng.integers(100, 8000)), int(rng.integers(3, 11))
        n_groups, within, border = int(rng.integers(0, 3000)), bool(rng.integers(2)), int(rng.integers(0, 500))
        m = L * (K - 1)
        rest = (2e-3 + 6e-11 * hinge_ipm.iteration_madds(L, M, K, n_groups, within, border)
                + 2e-8 * m * m + 4e-7 * M * K)
        events.append(dict(ev="hinge_ipm", t=rest + 0.01, prod_t=0.01, L=L, M=M, K=K,
                           n_groups=n_groups, within=within, border=border))
    prices = cal.fit([{"events": events}])
    assert prices["SIMPLEX_LOG"] == pytest.approx(list(simplex), abs=2e-3)
    assert prices["IPM_LOG"] == pytest.approx(list(ipm), abs=2e-3)
    assert prices["SIMPLEX_LOG_spread"]["max_factor"] == pytest.approx(1.0, abs=1e-3)
    for key, value in (("PRODUCT_CALL_S", 2e-5), ("PRODUCT_S", 3e-10), ("PDHG_ITER_S", 1e-4),
                       ("PDHG_DUAL_ENTRY_S", 4e-8), ("PDHG_PRIMAL_ENTRY_S", 1e-8),
                       ("PDHG_CON_S", 3e-4), ("ROUND_S", 3e-3), ("ROUND_ENTRY_S", 2e-6),
                       ("DENSE_IPM_ITER_S", 2e-3), ("DENSE_IPM_MADD_S", 7e-11),
                       ("HINGE_IPM_ITER_S", 2e-3), ("HINGE_IPM_MADD_S", 6e-11),
                       ("HINGE_IPM_ENTRY_S", 2e-8), ("HINGE_IPM_WEIGHT_S", 4e-7)):
        assert prices[key] == pytest.approx(value, rel=1e-6), key
    # counted: the clock's prices applied to the counts, in closed form
    c = cal.clk
    pd = [e for e in events if e["ev"] == "pdhg"]
    n_prod, madds = sum(e["n_prod"] for e in pd), sum(e["madds"] for e in pd)

    def law(coef, e):
        return np.exp(coef[0] + coef[1] * np.log(e["nnz"]) + coef[2] * np.log(e["rows"])
                      + coef[3] * np.log(e["cols"]))

    expect = n_prod * c.PRODUCT_CALL_S + madds * c.PRODUCT_S + sum(
        e["simplex"] * law(c.SIMPLEX_LOG, e) + e["ipm"] * law(c.IPM_LOG, e)
        for e in events if e["ev"] == "lp") + sum(
        e["nit"] * (c.PDHG_ITER_S + c.PDHG_DUAL_ENTRY_S * e["L"] * e["K"]
                    + c.PDHG_PRIMAL_ENTRY_S * (e["M"] + 1) * e["K"] + c.PDHG_CON_S * e["con"])
        for e in pd) + sum(e["rounds"] * (c.ROUND_S + c.ROUND_ENTRY_S * e["L"] * e["K"])
                           for e in events if e["ev"] == "cg") + sum(
        e["iterations"] * (c.DENSE_IPM_ITER_S + c.DENSE_IPM_MADD_S
                           * (e["rows"] ** 2 * e["cols"] / 2 + e["rows"] ** 3 / 6))
        for e in events if e["ev"] == "dense") + sum(
        c.HINGE_IPM_ITER_S + c.HINGE_IPM_ENTRY_S * (e["L"] * (e["K"] - 1)) ** 2
        + c.HINGE_IPM_WEIGHT_S * e["M"] * e["K"] + c.HINGE_IPM_MADD_S * (
            e["K"] * e["L"] ** 2 * e["M"] / 2 + (e["L"] ** 2 if e["within"] else (e["K"] * e["L"]) ** 2)
            * e["n_groups"] / 2 + (e["L"] * (e["K"] - 1)) ** 3 / 6
            + (e["L"] * (e["K"] - 1)) ** 2 * (e["L"] + e["K"] + e["border"]) / 2
            + e["L"] * (e["K"] - 1) * (e["L"] + e["K"] + e["border"]) ** 2 / 2
            + (e["L"] + e["K"] + e["border"]) ** 3 / 6)
        for e in events if e["ev"] == "hinge_ipm")
    assert cal.counted(events, n_prod, madds) == pytest.approx(expect, rel=1e-9)
