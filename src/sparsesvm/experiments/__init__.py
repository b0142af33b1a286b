"""Experiments of the paper as plain Python: one job, aggregation, Table 1, Figures 1-4.

Submodules (imported lazily, so that a training job does not pay for pandas
or matplotlib):

- :mod:`~sparsesvm.experiments.runner`: ``run_job`` (fit on a subset, evaluate
  on the test split, return a JSON-serialisable record), ``write_json_atomic``;
- :mod:`~sparsesvm.experiments.aggregate`: ``collect`` (records -> tidy table),
  ``collect_traces``, ``best_alpha`` (fewest mean test errors: the paper's
  trial-and-error choice);
- :mod:`~sparsesvm.experiments.tables`: ``table1``, ``write_table1``;
- :mod:`~sparsesvm.experiments.figures`: ``accuracy_sparsity_figure`` (Figures
  1, 2), ``timing_figure`` (Figure 3), ``l2_timing_figure`` (Figure 4).

This package knows nothing of Snakemake; the workflow's scripts wrap it.
"""

import importlib

__all__ = ["runner", "aggregate", "tables", "figures"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
