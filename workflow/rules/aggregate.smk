# Aggregation: every job of an experiment -> one tidy table (one row per job, all
# parameters as columns) and the best alpha per curve ("best alpha by test error",
# the paper's trial-and-error choice). Local rule: it only reads small JSON files.

localrules:
    aggregate,


rule aggregate:
    input:
        lambda wildcards: run_files(wildcards.experiment),
    output:
        parquet=RESULTS + "/{dataset}/tables/{experiment}_runs.parquet",
        csv=RESULTS + "/{dataset}/tables/{experiment}_runs.csv",
        best=RESULTS + "/{dataset}/tables/{experiment}_best_alpha.csv",
    params:
        code=REPORT_CODE,
    log:
        LOGS + "/{dataset}/tables/{experiment}_aggregate.log",
    benchmark:
        BENCH + "/{dataset}/tables/{experiment}_aggregate.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
        experiment="e[1-5]",
    script:
        "../scripts/aggregate.py"


def runs_table(exp_id):
    return f"{RESULTS}/{experiment(exp_id)['dataset']}/tables/{exp_id}_runs.parquet"


def experiment_tables(exp_id):
    dataset = experiment(exp_id)["dataset"]
    return [
        f"{RESULTS}/{dataset}/tables/{exp_id}_{name}"
        for name in ("runs.parquet", "runs.csv", "best_alpha.csv")
    ]
