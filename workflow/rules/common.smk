# The config, checked, and the job plan: sparsesvm.experiments.plan (pure Python,
# unit-tested in tests/experiments/test_plan.py) computes the jobs, paths, config checks and code
# triggers; this file keeps what needs Snakemake (the schema check, the rules' input
# functions, the results lock). Everything here runs when the DAG is built.

import copy

from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

try:
    from sparsesvm.experiments import plan
except ImportError as exc:
    raise WorkflowError(f"the sparsesvm package is not importable ({exc}): install it (pip install -e .[workflow])")


# The source files: the package's table (sparsesvm.data.sources), with the config's
# `downloads` (if any) merged over it.
from sparsesvm.data.sources import DOWNLOADS

_downloads = copy.deepcopy(DOWNLOADS)
update_config(_downloads, config.get("downloads", {}))
config["downloads"] = _downloads

# NaN and infinity first: the schema cannot refuse them (NaN passes every bound).
plan.check_finite(config)
validate(config, "../schemas/config.schema.yaml", set_default=False)
plan.check_config(config)

PLAN = plan.Plan(config)
RESULTS, LOGS, BENCH = PLAN.results, PLAN.logs, PLAN.bench
ENVS = "../../envs"  # conda: paths are relative to the file holding the rule
DATASETS = plan.DATASETS

#: package-code triggers (Snakemake's `code` trigger sees a rule's script only)
DATA_CODE = plan.code_hash("data")
TRAIN_CODE = plan.code_hash("train")
REPORT_CODE = plan.code_hash("report", "cv")
TRAIN_CV_CODE = plan.code_hash("train", "cv")
ACCURACY_CODE = plan.code_hash("train", "accuracy")

# sizes against the data (as far as known before any download)
plan.check_sizes(config)


# --------------------------------------------------------------------------- rules' input functions


def features_input(wildcards):
    files = PLAN.downloads_of(wildcards.dataset)
    if wildcards.dataset == "mnist":
        files["subsets"] = PLAN.all_subset_files("mnist")
    return files


def train_input(wildcards):
    files = {"features": PLAN.features_dir(wildcards.dataset)}
    if wildcards.L != "all":
        files["subset"] = PLAN.subset_file(wildcards.dataset, int(wildcards.L[:-1]), wildcards.subset)
    return files


def train_settings(wildcards):
    return PLAN.train_settings(wildcards.experiment, wildcards.method, wildcards.penalty)


def grid_alphas(wildcards):
    return PLAN.grid_alphas(wildcards.dataset, wildcards.experiment, wildcards.method, wildcards.penalty,
                            wildcards.L, wildcards.subset)


def grid_job_side_by_side(wildcards):
    return PLAN.grid_job_side_by_side(wildcards.dataset, wildcards.experiment, wildcards.method,
                                      wildcards.penalty, wildcards.L, wildcards.subset)


def trace_input(wildcards):
    """The trace job's training data and every run of its method, penalty and L
    (from which it takes the best alpha)."""
    files = train_input(wildcards)
    files["runs"] = PLAN.run_files(wildcards.experiment, method=wildcards.method, penalty=wildcards.penalty,
                                   L=wildcards.L)
    return files


# --------------------------------------------------------------------------- the results lock
#
# Snakemake locks the working directory only: a second run from another working
# directory on the same results directory would run the same jobs. The first run to
# start jobs locks <results>/.sparsesvm.lock (pid, host, working directory); the other
# is refused, naming it and the way out. A lock left by a killed run (its pid gone) is
# taken over. onstart runs only when jobs are about to run (not for dry runs, --lint,
# "Nothing to be done"), and only in the main Snakemake process (not in cluster jobs).


def _results_lock(action):
    from sparsesvm.experiments import lock

    if not workflow.is_main_process:
        return
    if action == "acquire":
        try:
            lock.acquire(RESULTS)
        except lock.ResultsLockedError as exc:
            raise WorkflowError(str(exc)) from None
    else:
        lock.release(RESULTS)


onstart:
    _results_lock("acquire")


onsuccess:
    _results_lock("release")


onerror:
    _results_lock("release")
