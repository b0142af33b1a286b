# Alpha by cross-validation (an experiment's optional `cv: {folds: k}`): beside the
# paper's best alpha by test error, alpha chosen by stratified k-fold cross-validation
# on each training subset. One ordinary training job per grid point, subset and fold
# (fit on the other folds, errors on the held-out fold), then one table per experiment:
# the CV alpha of each curve and subset and the test error of the training job there.


rule train_cv:
    input:
        unpack(train_input),
    output:
        PLAN.cv_pattern,
    params:
        settings=train_settings,
        folds=lambda wildcards: PLAN.cv_folds(wildcards.experiment),
        seed=config["seed"],
        code=TRAIN_CV_CODE,
    log:
        f"{LOGS}/{{dataset}}/cv/{{experiment}}/{{method}}/{{penalty}}/alpha~{{alpha}}/L~{{L}}/subset~{{subset}}/fold~{{fold}}.log",
    benchmark:
        f"{BENCH}/{{dataset}}/cv/{{experiment}}/{{method}}/{{penalty}}/alpha~{{alpha}}/L~{{L}}/subset~{{subset}}/fold~{{fold}}.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
        experiment="e[1-5]",
        alpha=r"[0-9][0-9.e+-]*",
        L=r"all|\d+K",
        subset=r"\d+",
        fold=r"\d+",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../scripts/train_cv.py"


localrules:
    aggregate_cv,


rule aggregate_cv:
    input:
        cv=lambda wildcards: PLAN.cv_files(wildcards.experiment),
        runs=f"{RESULTS}/{{dataset}}/tables/{{experiment}}_runs.parquet",
    output:
        runs=f"{RESULTS}/{{dataset}}/tables/{{experiment}}_cv_runs.csv",
        alpha=f"{RESULTS}/{{dataset}}/tables/{{experiment}}_cv_alpha.csv",
        summary=f"{RESULTS}/{{dataset}}/tables/{{experiment}}_cv_summary.csv",
    params:
        code=REPORT_CODE,
    log:
        f"{LOGS}/{{dataset}}/tables/{{experiment}}_aggregate_cv.log",
    benchmark:
        f"{BENCH}/{{dataset}}/tables/{{experiment}}_aggregate_cv.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
        experiment="e[1-5]",
    script:
        "../scripts/aggregate_cv.py"
