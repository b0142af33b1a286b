"""One grid job: a grid's alphas fitted on one subset, side by side or one after another; one record per alpha."""
import sys
from pathlib import Path

import _job  # workflow/scripts/_job.py: Snakemake puts the script's directory on sys.path

_job.start(snakemake)  # noqa: F821 (injected): the log first, then the threads, before numpy

import numpy as np

from sparsesvm.experiments.runner import run_grid_job, write_json_atomic

w = snakemake.wildcards  # noqa: F821
partial = f"{snakemake.output[0]}.partial"  # noqa: F821
s = snakemake.params.settings  # noqa: F821
records = run_grid_job(
    snakemake.input.features,  # noqa: F821
    np.load(snakemake.input.subset) if w.L != "all" else None,  # noqa: F821
    s["method"],
    w.penalty,
    s["groups"],
    [float(a) for a in snakemake.params.alphas],  # noqa: F821 (path labels: repr(alpha))
    s["tol"],
    s["max_iter"],
    side_by_side=snakemake.params.side_by_side,  # noqa: F821
    # alphas in turn: the records done so far, for a rerun after an interruption
    resume=None if snakemake.params.side_by_side else partial,  # noqa: F821
    **_job.fit_options(snakemake),  # noqa: F821
)
write_json_atomic(snakemake.output[0], records)  # noqa: F821
Path(partial).unlink(missing_ok=True)
for r in records:
    print(f"{w.method} {w.penalty} alpha={r['alpha']!r} L={r['L']} subset={w.subset}: "
          f"{r['test_errors']}/{r['n_test']} test errors, nnz={r['nnz']}, {r['n_iter']} iterations, "
          f"fit {r['fit_time_s']:.3f} s{' (the side-by-side loop when it stopped)' if 'side_by_side' in r else ''}, "
          f"converged={r['converged']}",
          file=sys.stderr)
