"""Convergence trace at the best alpha (Figure 3): relative distance to the final solution vs time.

The best alpha of this method and L is the one with the fewest mean test errors over the
experiment's subsets (the paper's trial-and-error choice). X_inf is the solution at
trace.reference_tol; the fit is then rerun with the trace on and X_inf as reference.
"""
import sys

import _job  # workflow/scripts/_job.py: Snakemake puts the script's directory on sys.path

_job.start(snakemake)  # noqa: F821 (injected): the log first, then the threads, before numpy

import numpy as np

from sparsesvm.experiments import aggregate
from sparsesvm.experiments.runner import run_job, write_json_atomic

w = snakemake.wildcards  # noqa: F821
s = snakemake.params.settings  # noqa: F821
best = aggregate.best_alpha(aggregate.collect(snakemake.input.runs, experiment=w.experiment))  # noqa: F821
if len(best) != 1:
    raise ValueError(f"expected one curve for {w.method}/{w.penalty}/L~{w.L}, got {len(best)}")
alpha = float(best["alpha"].iloc[0])
print(f"{w.method} {w.penalty} L~{w.L}: best alpha by test error = {alpha!r}", file=sys.stderr)

subset = np.load(snakemake.input.subset) if w.L != "all" else None  # noqa: F821
common = dict(solver=s["solver"], stopping=s["stopping"], precision=s["precision"], dataset=w.dataset,
              experiment=w.experiment, subset=int(w.subset), samples_per_class=None if w.L == "all" else int(w.L[:-1]))
reference, coef_inf = run_job(snakemake.input.features, subset, s["method"], w.penalty, s["groups"], alpha,  # noqa: F821
                              snakemake.params.reference_tol, s["max_iter"], **common)  # noqa: F821
record, _ = run_job(snakemake.input.features, subset, s["method"], w.penalty, s["groups"], alpha,  # noqa: F821
                    s["tol"], s["max_iter"], trace=True, reference_coef=coef_inf,
                    best_alpha_rule=aggregate.BEST_ALPHA_RULE,
                    reference_tol=snakemake.params.reference_tol,  # noqa: F821
                    reference_n_iter=reference["n_iter"], reference_converged=reference["converged"],
                    **common)
write_json_atomic(snakemake.output[0], record)  # noqa: F821
print(f"trace: {len(record['trace']['iteration'])} points, final rel_dist "
      f"{record['trace'].get('rel_dist', [None])[-1]}", file=sys.stderr)
