"""Figure 4's second row: seconds each l2 solver needs to reach the same relative gap, one L."""
import sys

import _job  # workflow/scripts/_job.py: Snakemake puts the script's directory on sys.path

_job.start(snakemake)  # noqa: F821 (injected): the log first, then the threads, before numpy

import numpy as np

from sparsesvm.experiments.accuracy import run_accuracy_job
from sparsesvm.experiments.runner import write_json_atomic

w = snakemake.wildcards  # noqa: F821
s = snakemake.params.settings  # noqa: F821
record = run_accuracy_job(snakemake.input.features, np.load(snakemake.input.subset), s["alpha"],  # noqa: F821
                          eps=s["eps"], max_time=s["max_time"], progress=lambda line: print(line, file=sys.stderr),
                          dataset=w.dataset, experiment=w.experiment, subset=int(w.subset),
                          samples_per_class=int(w.L[:-1]))
write_json_atomic(snakemake.output[0], record)  # noqa: F821
for r in record["rows"]:
    print(f"{r['label']} eps {r['eps']:g}: " + (f"{r['seconds']:.3f} s" if r["reached"] else
          f"not reached in {r['run_seconds']:.1f} s (gap {r['gap']:.2e})"), file=sys.stderr)
