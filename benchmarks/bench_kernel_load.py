"""What the compiled kernels cost a fresh process: importing numba, loading (or compiling) the
kernels, and a short hinge-reg fit's CPU time against its ``fit_time_`` (``--what dcd``: the
same for the accelerated l2 engine's compiled sweep; ``--what pdhg``: for PDHG's compiled steps).

Question: what do the numba kernels cost a workflow job's fresh process, with a cold and a
warm cache? Answered by ``python benchmarks/bench_kernel_load.py --repeats 3``.

Each measurement runs in a new Python process (:func:`_harness.run_fresh`), as a workflow
job does, with one BLAS thread: first with an empty cache directory (the kernels are
compiled), then ``--repeats`` times with the cache that run filled (the kernels are
loaded). ``--src`` measures another checkout's package (e.g. an older commit) the same
way. JSON lines out, one per process (``--json``: all of them in one file).

    python benchmarks/bench_kernel_load.py --repeats 3
    python benchmarks/bench_kernel_load.py --src /path/to/old/checkout/src --what fit
    python benchmarks/bench_kernel_load.py --repeats 1 --what load          # quick
    python benchmarks/bench_kernel_load.py --repeats 3 --what dcd           # the l2 engine
    python benchmarks/bench_kernel_load.py --repeats 3 --what pdhg          # PDHG's steps
"""
from __future__ import annotations

import argparse
import json
import tempfile

import _harness as h  # one BLAS thread

LOAD = """
import json, resource
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
c0 = cpu(); import numba; c1 = cpu()
from sparsesvm.solvers import _kernels
k = _kernels._load(); c2 = cpu()
# the module's kernels: its functions compiled for their explicit signatures at import (the
# helpers they call are compiled into them)
fns = [f for f in vars(k).values()
       if isinstance(f, numba.core.registry.CPUDispatcher) and f.signatures and not f._can_compile]
print(json.dumps({"import_numba_cpu_s": round(c1 - c0, 3), "load_kernels_cpu_s": round(c2 - c1, 3),
                  "n_kernels": len(fns),
                  "cache_misses": sum(sum(f.stats.cache_misses.values()) for f in fns)}))
"""

#: a short fit in a fresh process: ``@IMPORT@`` (before the clocks), ``@PROBLEM@`` (X, y, K)
#: and ``@FIT@`` (sets ``fit_time`` and ``n_iter``)
FIT_TEMPLATE = """
import json, resource
import numpy as np
@IMPORT@
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
rng = np.random.default_rng(0)
@PROBLEM@
c0 = cpu()
@FIT@
c1 = cpu()
print(json.dumps({"process_cpu_to_first_fit_s": round(c1, 3), "first_fit_cpu_s": round(c1 - c0, 3),
                  "fit_time_s": round(fit_time, 4), "n_iter": int(n_iter)}))
"""


def _fit_code(imports, problem, fit):
    return (FIT_TEMPLATE.replace("@IMPORT@", imports).replace("@PROBLEM@", problem)
            .replace("@FIT@", fit))


FIT = _fit_code("from sparsesvm import SparseSVC", """\
L, M, K = 30, 3969, 10          # E2's smallest training set, scattering features
y = np.arange(L) % K
X = rng.normal(size=(L, M)).astype(np.float32)""", """\
clf = SparseSVC(method="hinge-reg", penalty="l1inf", groups=81, alpha=0.1, max_iter=5).fit(X, y)
fit_time, n_iter = clf.fit_time_, clf.n_iter_""")

DCD = _fit_code("from sparsesvm import SparseSVC", """\
L, M, K = 500, 400, 10          # l2, L > M: the accelerated solver's dual coordinate descent
y = np.arange(L) % K
X = rng.normal(size=(L, M))""", """\
clf = SparseSVC(method="hinge-reg", penalty="l2", alpha=1.0, solver="accelerated", tol=1e-12,
                max_iter=10).fit(X, y)
fit_time, n_iter = clf.fit_time_, clf.n_iter_""")

PDHG = _fit_code("from sparsesvm.solvers.accelerated import hinge", """\
L, M, K = 150, 1200, 5          # bench_family's dense noisy shape: 6005 weights, below the
y = np.arange(L) % K            # paper's kernels' MIN_SIZE (PDHG loads its kernels at any size)
X = rng.normal(size=(L, M))""", """\
r = hinge.hinge_con(X, y, K, "l1inf", 10, eta=0.5 * L, tol=1e-12, max_iter=20, inner="pdhg")
fit_time, n_iter = r.time, r.n_iter""")


def run(code, src, cache):
    """The JSON line printed by ``code`` in a fresh process with the cache folder ``cache``."""
    env = h.child_env(src, XDG_CACHE_HOME=cache)
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("SPARSESVM_CACHE_DIR", None)
    return h.run_fresh(code, env=env, cwd=tempfile.gettempdir()).last_json()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="warm-cache processes per measurement")
    ap.add_argument("--src", default=None, help="a checkout's src/ directory to measure instead")
    ap.add_argument("--what", choices=["load", "fit", "dcd", "pdhg", "both", "all"], default="both",
                    help="load: the kernels; fit: a short hinge-reg l1inf fit; dcd: a short "
                         "accelerated l2 fit (its compiled sweep); pdhg: a short PDHG hinge-con "
                         "fit (its compiled steps); both: load and fit; all: the four")
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    codes = {"load": LOAD, "fit": FIT, "dcd": DCD, "pdhg": PDHG}
    runs = {"both": ["load", "fit"], "all": ["load", "fit", "dcd", "pdhg"]}.get(args.what, [args.what])
    rows = []
    for what in runs:
        with tempfile.TemporaryDirectory() as cache:
            for i in range(1 + args.repeats):
                rec = run(codes[what], args.src, cache)
                rec.update(what=what, cache="cold" if i == 0 else "warm")
                rows.append(rec)
                print(json.dumps(rec), flush=True)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)


if __name__ == "__main__":
    main()
