# Data preparation: training labels, seeded class-balanced subsets, features.
#
# MNIST is scattered for the test split and for the training images used by some
# subset only (the union over every configured experiment, selected or not);
# News20 TF-IDF and leukemia use their whole splits.


rule labels:
    input:
        unpack(
            lambda wildcards: {
                "mnist": {"train_labels": PLAN.downloads_of("mnist")["train_labels"]},
                "news20": {"tarball": PLAN.downloads_of("news20")["tarball"]},
            }[wildcards.dataset]
        ),
    output:
        f"{RESULTS}/{{dataset}}/subsets/train_labels.npy",
    params:
        code=DATA_CODE,
        strict=config["strict_sizes"],
    log:
        f"{LOGS}/{{dataset}}/labels.log",
    benchmark:
        f"{BENCH}/{{dataset}}/labels.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="mnist|news20",
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/labels.py"


rule subset:
    input:
        f"{RESULTS}/{{dataset}}/subsets/train_labels.npy",
    output:
        f"{RESULTS}/{{dataset}}/subsets/L~{{n}}K/subset~{{subset}}.npy",
    params:
        code=DATA_CODE,
        seed=config["seed"],
    log:
        f"{LOGS}/{{dataset}}/subsets/L~{{n}}K/subset~{{subset}}.log",
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="mnist|news20",
        n=r"\d+",
        subset=r"\d+",
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../scripts/subset.py"


rule features:
    input:
        unpack(features_input),
    output:
        directory(f"{RESULTS}/{{dataset}}/features"),
    params:
        code=DATA_CODE,
        options=lambda wildcards: config["features"][wildcards.dataset],
        strict=config["strict_sizes"],
    log:
        f"{LOGS}/{{dataset}}/features.log",
    benchmark:
        f"{BENCH}/{{dataset}}/features.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        dataset="|".join(DATASETS),
    threads: lambda wildcards: config["features"]["mnist"]["threads"] if wildcards.dataset == "mnist" else 1
    resources:
        mem_mb=lambda wildcards: {"mnist": 16000, "news20": 4000, "leukemia": 2000}[wildcards.dataset],
        runtime=lambda wildcards: {"mnist": 240, "news20": 30, "leukemia": 10}[wildcards.dataset],
    script:
        "../scripts/features.py"
