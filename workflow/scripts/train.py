"""One training job: fit on one subset, evaluate on the whole test split, write the record."""
import sys

import _job  # workflow/scripts/_job.py: Snakemake puts the script's directory on sys.path

_job.start(snakemake)  # noqa: F821 (injected): the log first, then the threads, before numpy

import numpy as np

from sparsesvm.experiments.runner import run_job, write_json_atomic

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
    **_job.fit_options(snakemake),  # noqa: F821
)
write_json_atomic(snakemake.output[0], record)  # noqa: F821
print(
    f"{w.method} {w.penalty} alpha={w.alpha} L={record['L']} subset={w.subset}: "
    f"{record['test_errors']}/{record['n_test']} test errors, nnz={record['nnz']}, "
    f"{record['n_iter']} iterations, fit {record['fit_time_s']:.3f} s, converged={record['converged']}",
    file=sys.stderr,
)
