"""The start of every job script that computes (features, training): its log, then its threads.

Snakemake puts this directory on the job's ``sys.path``, so the job scripts
(``features.py``, ``train.py``, ``train_cv.py``, ``trace.py``) begin with::

    import _job

    _job.start(snakemake)

This module imports nothing heavy at import time: the thread variables must be
in the environment before numpy (and its BLAS) is first imported.
"""
import atexit
import gc
import os
import sys

#: Variables read by the BLAS / OpenMP pools when they load.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def start(snakemake):
    """Send stderr to the job's log, then pin the job to its ``threads``.

    Parameters
    ----------
    snakemake : snakemake.script.Snakemake
        The object Snakemake injects into the script; ``log[0]`` and ``threads`` are read.

    Notes
    -----
    The log is opened first (line-buffered), so that an error in what follows is
    in it. One BLAS thread per job (``threads: 1``): the variables are set before
    numpy is imported, and ``threadpool_limits`` enforces the count on the pools
    loaded with numpy.

    At exit the objects alive are frozen (``gc.freeze``) before the interpreter's last
    garbage collections, which would otherwise walk all of them for nothing: the process
    ends, and the job's outputs are written and closed by then. With the compiled kernels
    loaded (numba's typing and lowering registries: about 190,000 objects) that walk cost
    0.1 s of CPU per job (README, "The jobs' exit").
    """
    atexit.register(gc.freeze)
    sys.stderr = open(snakemake.log[0], "w", buffering=1)
    for var in THREAD_VARS:
        os.environ[var] = str(snakemake.threads)

    import numpy  # noqa: F401  (loads the BLAS under the variables above)
    from threadpoolctl import threadpool_limits

    threadpool_limits(snakemake.threads)


def fit_options(snakemake):
    """The keyword arguments of a training job's fit (``runner.run_job``, ``run_grid_job``) that
    come from its settings and wildcards: solver, stopping rule, precision, and the record's
    dataset, experiment, subset and samples per class."""
    w, s = snakemake.wildcards, snakemake.params.settings
    return dict(solver=s["solver"], stopping=s["stopping"], precision=s["precision"], dataset=w.dataset,
                experiment=w.experiment, subset=int(w.subset),
                samples_per_class=None if w.L == "all" else int(w.L[:-1]))
