# Training: one job per dataset x experiment x method x penalty x alpha x L x subset (or,
# with side_by_side or alphas_in_one_job, one per grid, L and subset: rule train_grid).
# Each job fits on one training subset, evaluates on the whole test split and writes
# one JSON record (spec section 5). threads: 1 and BLAS pinned to one thread, so that
# the fit times of concurrent jobs are comparable. A job that an earlier experiment has
# with the same data and settings runs once, at that experiment's path (config
# share_runs, PLAN.run_owner): E4's aggregate reads E2's records of the methods they share.


rule train:
    input:
        unpack(train_input),
    output:
        PLAN.run_pattern,
    params:
        settings=train_settings,
        code=TRAIN_CODE,
    log:
        f"{LOGS}/{{dataset}}/runs/{{experiment}}/{{method}}/{{penalty}}/alpha~{{alpha}}/L~{{L}}/subset~{{subset}}.log",
    benchmark:
        f"{BENCH}/{{dataset}}/runs/{{experiment}}/{{method}}/{{penalty}}/alpha~{{alpha}}/L~{{L}}/subset~{{subset}}.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
        experiment="e[1-5]",
        alpha=r"[0-9][0-9.e+-]*",
        L=r"all|\d+K",
        subset=r"\d+",
    threads: 1
    resources:
        # constants, not functions of the wildcards: evaluating callables costs DAG-building
        # time on ~10^4 jobs. The largest jobs (E5, 5000 MNIST images) need ~1 GB.
        mem_mb=4000,
        runtime=240,
    script:
        "../scripts/train.py"


rule train_grid:
    # The alphas of one method, penalty, L and subset in one job (PLAN.grid_jobs). A grid with
    # side_by_side, its own or its experiment's (E2 and E5's l1inf grids in the full config):
    # fitted side by side, sharing each iteration's products with the features (only records
    # that no other experiment reads, so E4's timed runs are not). A grid with
    # alphas_in_one_job (every experiment of the full config): the other records its
    # experiment makes, fitted one after another, each with its own clocks, in one process.
    # One JSON array of records.
    input:
        unpack(train_input),
    output:
        PLAN.grid_pattern,
    params:
        settings=train_settings,
        alphas=grid_alphas,
        side_by_side=grid_job_side_by_side,
        code=TRAIN_CODE,
    log:
        f"{LOGS}/{{dataset}}/runs/{{experiment}}/{{method}}/{{penalty}}/grid/L~{{L}}/subset~{{subset}}.log",
    benchmark:
        f"{BENCH}/{{dataset}}/runs/{{experiment}}/{{method}}/{{penalty}}/grid/L~{{L}}/subset~{{subset}}.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
        experiment="e[1-5]",
        L=r"all|\d+K",
        subset=r"\d+",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../scripts/train_grid.py"


rule trace:
    # Figure 3: relative distance to the final solution X_inf at the method's best alpha
    # (fewest mean test errors over the experiment's subsets at this L). The fit is run
    # twice: once at trace.reference_tol to get X_inf, once with the trace on.
    input:
        unpack(trace_input),
    output:
        PLAN.trace_pattern,
    params:
        settings=train_settings,
        reference_tol=lambda wildcards: PLAN.experiment(wildcards.experiment)["trace"]["reference_tol"],
        code=TRAIN_CODE,
    log:
        f"{LOGS}/{{dataset}}/traces/{{experiment}}/{{method}}/{{penalty}}/L~{{L}}/subset~{{subset}}.log",
    benchmark:
        f"{BENCH}/{{dataset}}/traces/{{experiment}}/{{method}}/{{penalty}}/L~{{L}}/subset~{{subset}}.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
        experiment="e[1-5]",
        L=r"all|\d+K",
        subset=r"\d+",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../scripts/trace.py"


rule equal_accuracy:
    # Figure 4's second row: at one alpha, the seconds each l2 solver needs to reach the
    # relative gaps of equal_accuracy.eps (sparsesvm.experiments.accuracy), one job per L.
    input:
        unpack(train_input),
    output:
        PLAN.accuracy_pattern,
    params:
        settings=lambda wildcards: PLAN.experiment(wildcards.experiment)["equal_accuracy"],
        code=ACCURACY_CODE,
    log:
        f"{LOGS}/{{dataset}}/accuracy/{{experiment}}/L~{{L}}/subset~{{subset}}.log",
    benchmark:
        f"{BENCH}/{{dataset}}/accuracy/{{experiment}}/L~{{L}}/subset~{{subset}}.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
        experiment="e[1-5]",
        L=r"\d+K",
        subset=r"\d+",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../scripts/equal_accuracy.py"
