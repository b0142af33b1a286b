"""One cross-validation job: fit on all folds of a training subset but one, count the errors
on the held-out fold, write the record (with the test errors of that fit, unused)."""
import sys

import _job  # workflow/scripts/_job.py: Snakemake puts the script's directory on sys.path

_job.start(snakemake)  # noqa: F821 (injected): the log first, then the threads, before numpy

import numpy as np

from sparsesvm.data import features
from sparsesvm.experiments import cv
from sparsesvm.experiments.runner import run_job, write_json_atomic

w = snakemake.wildcards  # noqa: F821
s = snakemake.params.settings  # noqa: F821
fdir = snakemake.input.features  # noqa: F821
subset = np.load(snakemake.input.subset) if w.L != "all" else None  # noqa: F821
_, y = features.load_features(fdir, "train", indices=subset)
idx = np.arange(y.shape[0]) if subset is None else np.asarray(subset)
fold = cv.stratified_folds(y, snakemake.params.folds, [snakemake.params.seed, int(w.subset)])  # noqa: F821
k = int(w.fold)
record, coef_full = run_job(fdir, idx[fold != k], s["method"], w.penalty, s["groups"], float(w.alpha),
                            s["tol"], s["max_iter"], solver=s["solver"], stopping=s["stopping"],
                            precision=s["precision"], dataset=w.dataset, experiment=w.experiment, subset=int(w.subset))
X_val, y_val = features.load_features(fdir, "train", indices=idx[fold == k])
record["val_errors"] = cv.validation_errors(coef_full, X_val, y_val, np.unique(y[fold != k]))
record["n_val"] = int(y_val.shape[0])
record["L_fit"] = record["L"]
record["L"] = int(idx.shape[0])  # the curve's training size (the subset's), as in the training records
record["fold"] = k
record["n_folds"] = int(snakemake.params.folds)  # noqa: F821
write_json_atomic(snakemake.output[0], record)  # noqa: F821
print(f"{w.method} {w.penalty} alpha={w.alpha} L={w.L} subset={w.subset} fold={k}: "
      f"{record['val_errors']}/{record['n_val']} validation errors", file=sys.stderr)
