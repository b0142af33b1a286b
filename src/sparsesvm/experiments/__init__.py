"""Experiments of the paper as plain Python: the job plan, one job, aggregation, Table 1, Figures 1-4.

Submodules (imported lazily, so that a training job does not pay for pandas
or matplotlib):

- :mod:`~sparsesvm.experiments.plan`: the workflow's job plan from the config
  (``Plan``: jobs, paths, products), the config checks, the labels
  (``method_label``) and the code triggers (``code_hash``);
- :mod:`~sparsesvm.experiments.runner`: ``run_job`` (fit on a subset, evaluate
  on the test split, return a JSON-serialisable record), ``write_json_atomic``;
- :mod:`~sparsesvm.experiments.cv`: the folds and validation errors of alpha by
  cross-validation;
- :mod:`~sparsesvm.experiments.aggregate`: ``collect`` (records -> tidy table),
  ``collect_traces``, ``best_alpha`` (fewest mean test errors: the paper's
  trial-and-error choice);
- :mod:`~sparsesvm.experiments.tables`: ``table1``, ``write_table1``;
- :mod:`~sparsesvm.experiments.figures`: ``accuracy_sparsity_figure`` (Figures
  1, 2), ``timing_figure`` (Figure 3), ``l2_timing_figure`` (Figure 4);
- :mod:`~sparsesvm.experiments.compare`: the paper against the reproduction
  (Table 1 cell by cell, claims with verdicts);
- :mod:`~sparsesvm.experiments.publish`: a record run's outputs into ``docs/results``;
- :mod:`~sparsesvm.experiments.lock`: the lock of a results directory.

This package knows nothing of Snakemake; the workflow's rules and scripts wrap it.
"""

import importlib

__all__ = ["plan", "runner", "cv", "aggregate", "tables", "figures", "compare", "publish", "lock"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
