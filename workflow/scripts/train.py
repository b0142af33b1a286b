"""One training job: fit on one subset, evaluate on the whole test split, write the record."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import os

# One BLAS thread per job (threads: 1): set before numpy is imported, and enforced below.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
            "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[var] = str(snakemake.threads)  # noqa: F821

import numpy as np
from threadpoolctl import threadpool_limits

from sparsesvm.experiments.runner import run_job, write_json_atomic

threadpool_limits(snakemake.threads)  # noqa: F821
w = snakemake.wildcards  # noqa: F821
s = snakemake.params.settings  # noqa: F821
subset = np.load(snakemake.input.subset) if w.L != "all" else None  # noqa: F821
record, _ = run_job(
    snakemake.input.features,  # noqa: F821
    subset,
    s["method"],  # the path segment may carry "+<solver>"
    w.penalty,
    s["groups"],
    float(w.alpha),  # the path segment is repr(alpha): it reads back as the config's float
    s["tol"],
    s["max_iter"],
    solver=s["solver"],
    stopping=s["stopping"],
    dataset=w.dataset,
    experiment=w.experiment,
    subset=int(w.subset),
    samples_per_class=None if w.L == "all" else int(w.L[:-1]),
)
write_json_atomic(snakemake.output[0], record)  # noqa: F821
print(
    f"{w.method} {w.penalty} alpha={w.alpha} L={record['L']} subset={w.subset}: "
    f"{record['test_errors']}/{record['n_test']} test errors, nnz={record['nnz']}, "
    f"{record['n_iter']} iterations, fit {record['fit_time_s']:.3f} s, converged={record['converged']}",
    file=sys.stderr,
)
