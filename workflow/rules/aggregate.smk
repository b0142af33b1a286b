# Aggregation: every job of an experiment -> one tidy table (one row per job, all
# parameters as columns) and the best alpha per curve ("best alpha by test error",
# the paper's trial-and-error choice). Local rule: it only reads small JSON files.

localrules:
    aggregate,


rule aggregate:
    input:
        lambda wildcards: PLAN.run_files(wildcards.experiment),
    output:
        parquet=f"{RESULTS}/{{dataset}}/tables/{{experiment}}_runs.parquet",
        csv=f"{RESULTS}/{{dataset}}/tables/{{experiment}}_runs.csv",
        best=f"{RESULTS}/{{dataset}}/tables/{{experiment}}_best_alpha.csv",
    params:
        code=REPORT_CODE,
    log:
        f"{LOGS}/{{dataset}}/tables/{{experiment}}_aggregate.log",
    benchmark:
        f"{BENCH}/{{dataset}}/tables/{{experiment}}_aggregate.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
        experiment="e[1-5]",
    script:
        "../scripts/aggregate.py"
