"""Per-job overhead of a training job (issue 5): wall time of a fresh process vs its fit time.

Question: what does a workflow training job cost beyond its fit (interpreter start,
imports, reading the features, writing the record)? Answered by
``python benchmarks/bench_job_overhead.py --repeats 3``.

A Snakemake ``train`` job is one fresh Python process that imports numpy,
threadpoolctl and :mod:`sparsesvm.experiments.runner`, loads one training
subset and the whole test split from the stored features, fits, predicts and
writes one JSON record (``workflow/scripts/train.py``). That script needs the
``snakemake`` object, so this benchmark runs, as a subprocess, the same
statements in the same order (BLAS pinned to one thread, ``np.load`` of the
subset file, ``run_job``, ``write_json_atomic``) and reports, per method,

* ``wall``: seconds from ``subprocess`` launch to exit, seen by the parent;
* ``fit``: the record's ``fit_time_s`` (the solver loop) and ``fit_wall``
  (its ``fit_wall_time_s``: the whole ``fit()``, validation and ``||T||``
  included);
* ``overhead = wall - fit``, the target of issue 5 (< 1 s), split into
  ``start`` (interpreter start to the script's first line), ``import``
  (numpy, threadpoolctl, the runner; ``imp-cpu``: CPU seconds of the process
  up to there), ``job - fit`` (the rest of ``run_job``: reading features,
  validation, ``||T||``, prediction on the test split; ``fitw-fit`` is the
  part inside ``fit()`` but outside the solver loop), ``write`` (the JSON) and
  ``exit`` (interpreter shutdown);
* ``cpu``: user + system CPU seconds of the child (BLAS single-threaded), and
  ``cpu - fit``: on a loaded machine (a shared CI box) the wall times inflate
  but CPU time much less, so with a short fit (``--max-iter 1``) ``cpu - fit``
  is close to the overhead an idle core would see.

The problem is E2's shape: MNIST scattering features (M = 3969 = 81 channels x
49 positions, position-major, float32), K = 10, L = 30 (3 per class), the whole
10000-image test split, l1,inf with groups of 81, stored by
:func:`sparsesvm.data.features.save_features` like the workflow stores them (dense
``.npy``, ``rows_train.npy`` mapping official training indices to stored
rows). The features are synthetic (non-negative, class-structured; the real
ones need kymatio and the MNIST files), so fit times are indicative only; the
overhead does not depend on the values.

``--modes`` compares, interleaved in one run (the machine's load changes
between runs): ``as-is`` (the installed package), ``sklearn`` (the child
imports ``sklearn.base`` first: what the training path imported before issue
5), ``no-freeze`` (the child does not freeze its live objects at exit, as
``workflow/scripts/_job.start`` makes every job do: the interpreter's last garbage
collections then walk them, as before that) and ``src=DIR`` (the package from another
source tree, e.g. the previous commit: ``git archive HEAD src | tar -x -C /tmp/old``, then
``src=/tmp/old/src``). ``--snakemake`` adds the imports of Snakemake's script preamble
(``snakemake.io`` to unpickle the ``snakemake`` object, ``snakemake.logging``,
``snakemake.iocontainers``), a cost of every real job that the project cannot
remove.

Usage::

    .venv/bin/python benchmarks/bench_job_overhead.py [--methods hinge-reg ...]
        [--alpha 0.1] [--tol 1e-5] [--max-iter 100000] [--repeats 3]
        [--modes as-is sklearn src=DIR] [--snakemake] [--features-dir DIR] [--json out.json]
    .venv/bin/python benchmarks/bench_job_overhead.py --methods hinge-reg --repeats 1 \
        --max-iter 5 --n-stored 100                                         # quick
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import _harness as h  # one BLAS thread

METHODS = ("hinge-reg", "hinge-con", "square", "logit", "ova")
N_TEST = 10000
CHANNELS, POSITIONS, K = 81, 49, 10
N_TRAIN_OFFICIAL = 60000

#: What the child runs: workflow/scripts/train.py without the ``snakemake`` object.
CHILD = r"""
import sys, time
t_first = time.time()
import json, os
a = json.loads(sys.argv[1])
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
            "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[var] = "1"
if a["freeze"]:  # as workflow/scripts/_job.start: the live objects frozen at exit
    import atexit, gc
    atexit.register(gc.freeze)
if a["snakemake"]:
    import pickle, snakemake.io
    from snakemake.logging import logger
    from snakemake.iocontainers import Snakemake
if a["sklearn"]:
    import sklearn.base
import numpy as np
from threadpoolctl import threadpool_limits

from sparsesvm.experiments.runner import run_job, write_json_atomic

t_import, cpu_import = time.time(), time.process_time()
threadpool_limits(1)
subset = np.load(a["subset"])
record, _ = run_job(a["features"], subset, a["method"], "l1inf", 81, a["alpha"], a["tol"],
                    a["max_iter"], solver="paper", stopping="rel_change", dataset="mnist",
                    experiment="e2", subset=0, samples_per_class=3)
t_job = time.time()
write_json_atomic(a["out"], record)
t_write = time.time()
print(json.dumps({"t_first": t_first, "t_import": t_import, "cpu_import": cpu_import,
                  "t_job": t_job, "t_write": t_write,
                  "sklearn": "sklearn" in sys.modules, "scipy": "scipy" in sys.modules,
                  "n_modules": len(sys.modules)}))
"""


def make_features(directory, n_stored=3000, seed=0):
    """Write E2-shaped synthetic features and one L = 30 subset; return the subset path.

    Parameters
    ----------
    directory : path-like
        Feature directory (``save_features`` layout) to create.
    n_stored : int
        Training rows stored (the workflow stores the union of the subsets; the
        job reads only its 30 rows through the memory map).
    seed : int

    Returns
    -------
    pathlib.Path
        ``directory / "subset.npy"``: 30 official training indices, 3 per class.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    M = CHANNELS * POSITIONS
    means = (np.abs(rng.standard_normal((K, M))) * (rng.random((K, M)) < 0.3)).astype(np.float32)

    def draw(y):
        X = np.abs(means[y] + rng.standard_normal((y.size, M), dtype=np.float32))
        X *= np.float32(0.05)  # scattering coefficients of [0, 1] images are of this order
        return X

    rows = np.sort(rng.choice(N_TRAIN_OFFICIAL, size=n_stored, replace=False))
    y_train = rng.integers(0, K, size=n_stored)
    y_test = rng.integers(0, K, size=N_TEST)
    h.save_features(
        directory, draw(y_train), y_train, draw(y_test), y_test,
        {"dataset": "mnist-synthetic", "layout": h.scattering_layout(2, 8, (28, 28))},
        train_rows=rows,
    )
    subset = np.concatenate([rows[y_train == k][:3] for k in range(K)])
    path = Path(directory) / "subset.npy"
    np.save(path, np.sort(subset))
    return path


def parse_mode(text):
    """``"as-is"``, ``"sklearn"``, ``"no-freeze"`` or ``"src=DIR"`` -> (label, import_sklearn,
    freeze at exit, extra sys.path)."""
    if text == "as-is":
        return text, False, True, None
    if text == "sklearn":
        return text, True, True, None
    if text == "no-freeze":
        return text, False, False, None
    if text.startswith("src=") and len(text) > 4:
        path = Path(text[4:]).resolve()
        if not (path / "sparsesvm" / "__init__.py").is_file():
            raise ValueError(f"mode {text!r}: {path} holds no sparsesvm package")
        return text, False, True, str(path)
    raise ValueError(f"unknown mode {text!r}: expected 'as-is', 'sklearn', 'no-freeze' or 'src=DIR'")


def run_once(features_dir, subset, method, args, out, mode="as-is"):
    """One fresh process doing a training job; returns the timing row."""
    label, sklearn_first, freeze, src = parse_mode(mode)
    payload = json.dumps({"features": str(features_dir), "subset": str(subset), "method": method,
                          "alpha": args.alpha, "tol": args.tol, "max_iter": args.max_iter,
                          "out": str(out), "sklearn": sklearn_first, "freeze": freeze,
                          "snakemake": args.snakemake})
    proc = h.run_fresh(CHILD, payload, env=h.child_env(src, PYTHONWARNINGS="ignore"), check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"job {method} ({label}) failed:\n{proc.stderr}")
    c = proc.last_json()
    t0, t_end, cpu = proc.started, proc.ended, proc.cpu_s
    with open(out, encoding="utf-8") as fh:
        rec = json.load(fh)
    wall = t_end - t0
    return {
        "method": method,
        "mode": label,
        "wall": wall,
        "fit": rec["fit_time_s"],
        "fit_wall": rec["fit_wall_time_s"],
        "overhead": wall - rec["fit_time_s"],
        "cpu": cpu,
        "cpu_minus_fit": cpu - rec["fit_time_s"],
        "import_cpu": c["cpu_import"],
        "start": c["t_first"] - t0,
        "import": c["t_import"] - c["t_first"],
        "job_minus_fit": (c["t_job"] - c["t_import"]) - rec["fit_wall_time_s"],
        "fit_wall_minus_fit": rec["fit_wall_time_s"] - rec["fit_time_s"],
        "write": c["t_write"] - c["t_job"],
        "exit": t_end - c["t_write"],
        "n_iter": rec["n_iter"],
        "test_errors": rec["test_errors"],
        "converged": rec["converged"],
        "sklearn_imported": c["sklearn"],
        "scipy_imported": c["scipy"],
        "n_modules": c["n_modules"],
    }


COLUMNS = ("wall", "fit", "overhead", "cpu", "cpu_minus_fit", "start", "import", "import_cpu",
           "job_minus_fit", "fit_wall_minus_fit", "write", "exit")
HEADERS = ("wall", "fit", "overhead", "cpu", "cpu-fit", "start", "import", "imp-cpu", "job-fit",
           "fitw-fit", "write", "exit")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=list(METHODS),
                    choices=list(METHODS) + ["hinge-lin"])
    ap.add_argument("--alpha", type=float, default=0.1,
                    help="alpha of every job (E2 grid: 1e-3..10)")
    ap.add_argument("--tol", type=float, default=1e-5, help="E2: 1e-5")
    ap.add_argument("--max-iter", type=int, default=100000, help="E2: 100000")
    ap.add_argument("--repeats", type=int, default=3,
                    help="fresh processes per method and mode (median shown)")
    ap.add_argument("--n-stored", type=int, default=3000,
                    help="training rows stored in the features")
    ap.add_argument("--features-dir", help="reuse (or create) this feature directory")
    ap.add_argument("--modes", nargs="+", default=["as-is"],
                    help="'as-is' (the installed package), 'sklearn' (the child imports "
                         "sklearn.base first: the training path before issue 5), 'no-freeze' "
                         "(no gc.freeze at exit, which workflow/scripts/_job.py does), 'src=DIR' "
                         "(sparsesvm from DIR, e.g. `git archive HEAD src | tar -x -C /tmp/old` "
                         "then src=/tmp/old/src); modes are interleaved, so their ratios come "
                         "from one run")
    ap.add_argument("--snakemake", action="store_true",
                    help="child also does the imports of Snakemake's script preamble")
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    try:
        for mode in args.modes:
            parse_mode(mode)
    except ValueError as exc:
        ap.error(str(exc))
    rows = measure(args)
    print_summary(rows, args)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)
    return rows


def measure(args):
    """Every method x repeat x mode as a fresh process (modes interleaved): the rows."""
    with tempfile.TemporaryDirectory(prefix="bench_job_overhead_") as tmp:
        fdir = Path(args.features_dir) if args.features_dir else Path(tmp) / "features"
        subset = fdir / "subset.npy"
        if not (subset.is_file() and (fdir / "meta.json").is_file()):
            subset, seconds = h.timed(make_features, fdir, n_stored=args.n_stored)
            print(f"features written to {fdir} in {seconds:.1f} s", file=sys.stderr)
        # warm the page cache as a workflow's many jobs do (the first job pays the disk read)
        for mode in args.modes:
            run_once(fdir, subset, args.methods[0], args, Path(tmp) / "warm.json", mode)
        rows = []
        for method in args.methods:
            for r in range(args.repeats):
                for mode in args.modes:
                    out = Path(tmp) / f"{method}-{r}.json"
                    rows.append({**run_once(fdir, subset, method, args, out, mode), "repeat": r})
    return rows


def print_summary(rows, args):
    """The table of medians per method and mode, then the overhead per mode."""
    print(f"# E2-sized job (M=3969, K=10, L=30, n_test={N_TEST}, l1inf/81, alpha={args.alpha}, "
          f"tol={args.tol}, max_iter={args.max_iter})"
          f"{', + snakemake preamble imports' if args.snakemake else ''}; "
          f"median of {args.repeats} fresh processes, seconds")
    width = max(len(m) for m in args.modes)
    print(f"{'method':<10} {'mode':<{width}} " + " ".join(f"{name:>8}" for name in HEADERS)
          + "  n_iter sklearn scipy")
    summary = {}
    yes = {True: "yes", False: "no"}
    for method in args.methods:
        for mode in args.modes:
            mine = [r for r in rows if r["method"] == method and r["mode"] == mode]
            med = {c: statistics.median(r[c] for r in mine) for c in COLUMNS}
            summary.setdefault(mode, []).append((med["overhead"], med["cpu_minus_fit"]))
            print(f"{method:<10} {mode:<{width}} " + " ".join(f"{med[c]:8.3f}" for c in COLUMNS)
                  + f" {mine[0]['n_iter']:7d} {yes[any(r['sklearn_imported'] for r in mine)]:>7}"
                  + f" {yes[any(r['scipy_imported'] for r in mine)]:>5}")
    for mode, values in summary.items():
        wall, cpu = [v[0] for v in values], [v[1] for v in values]
        print(f"# {mode}: overhead = wall - fit: median over methods "
              f"{statistics.median(wall):.3f} s, "
              f"max {max(wall):.3f} s; cpu - fit: median {statistics.median(cpu):.3f} s, "
              f"max {max(cpu):.3f} s")


if __name__ == "__main__":
    main()
