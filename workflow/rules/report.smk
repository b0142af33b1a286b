# Products: Table 1 (E1) and Figures 1-4 (E2-E5), wrapped in report() with captions so
# that `snakemake --report report.zip` gives a browsable report; and the target rules.
# An experiment with `cv` adds its CV table to Table 1's inputs (the summary) or Figure 1's
# and 2's (the CV alpha per subset); without `cv` no CV job runs.

rule table1:
    input:
        runs=PLAN.runs_table("e1"),
        cv=PLAN.cv_tables("e1")[2:] if PLAN.cv_folds("e1") else [],
    output:
        csv=report(PLAN.table1[0], caption="../report/table1.rst", category="Table 1 (E1, leukemia)"),
        md=PLAN.table1[1],
        tex=PLAN.table1[2],
    params:
        code=REPORT_CODE,
    log:
        f"{LOGS}/products/table1.log",
    benchmark:
        f"{BENCH}/products/table1.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    script:
        "../scripts/table1.py"


rule figure1:
    input:
        runs=PLAN.runs_table("e2"),
        cv=PLAN.cv_tables("e2")[1:2] if PLAN.cv_folds("e2") else [],
    output:
        png=report(PLAN.figures[1][0], caption="../report/figure1.rst", category="Figure 1 (E2, MNIST)"),
        pdf=PLAN.figures[1][1],
    params:
        code=REPORT_CODE,
        title="E2: MNIST scattering, l1,inf",
    log:
        f"{LOGS}/products/figure1.log",
    benchmark:
        f"{BENCH}/products/figure1.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    script:
        "../scripts/figure_accuracy.py"


rule figure2:
    input:
        runs=PLAN.runs_table("e3"),
        cv=PLAN.cv_tables("e3")[1:2] if PLAN.cv_folds("e3") else [],
    output:
        png=report(PLAN.figures[2][0], caption="../report/figure2.rst", category="Figure 2 (E3, News20)"),
        pdf=PLAN.figures[2][1],
    params:
        code=REPORT_CODE,
        title="E3: 20 Newsgroups TF-IDF, l1,2 across classes",
    log:
        f"{LOGS}/products/figure2.log",
    benchmark:
        f"{BENCH}/products/figure2.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    script:
        "../scripts/figure_accuracy.py"


rule figure3:
    input:
        runs=PLAN.runs_table("e4"),
        traces=PLAN.trace_files("e4"),
    output:
        png=report(PLAN.figures[3][0], caption="../report/figure3.rst", category="Figure 3 (E4, MNIST timing)"),
        pdf=PLAN.figures[3][1],
        traces=PLAN.traces_table("e4"),
    params:
        code=REPORT_CODE,
        title="E4: MNIST, l1,inf, timing",
    log:
        f"{LOGS}/products/figure3.log",
    benchmark:
        f"{BENCH}/products/figure3.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    script:
        "../scripts/figure_timing.py"


rule figure4:
    input:
        runs=PLAN.runs_table("e5"),
        accuracy=PLAN.accuracy_files("e5"),
    output:
        png=report(PLAN.figures[4][0], caption="../report/figure4.rst", category="Figure 4 (E5, MNIST l2 timing)"),
        pdf=PLAN.figures[4][1],
        accuracy=PLAN.accuracy_table("e5"),
    params:
        code=REPORT_CODE,
        title="E5: MNIST, l2 timing",
    log:
        f"{LOGS}/products/figure4.log",
    benchmark:
        f"{BENCH}/products/figure4.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    script:
        "../scripts/figure_l2.py"


# --------------------------------------------------------------------------- targets
# `snakemake --cores N e2` (one experiment), `... figure1` (one product: a rule above),
# `... mnist` (every experiment on one dataset, selected by `run` or not).


rule e1:
    input:
        PLAN.product_files("e1"),


rule e2:
    input:
        PLAN.product_files("e2"),


rule e3:
    input:
        PLAN.product_files("e3"),


rule e4:
    input:
        PLAN.product_files("e4"),


rule e5:
    input:
        PLAN.product_files("e5"),


rule leukemia:
    input:
        [PLAN.product_files(e) for e in PLAN.experiments_of("leukemia")],


rule mnist:
    input:
        [PLAN.product_files(e) for e in PLAN.experiments_of("mnist")],


rule news20:
    input:
        [PLAN.product_files(e) for e in PLAN.experiments_of("news20")],


localrules:
    e1,
    e2,
    e3,
    e4,
    e5,
    leukemia,
    mnist,
    news20,
    all,


# --------------------------------------------------------------------------- the paper against the reproduction
# Table 1 cell by cell and claims C1-C14 with computed verdicts, from the tidy tables of
# the selected experiments (a claim whose experiment is not selected reads "not run"),
# and, for experiments with `cv`, the test error at the alpha chosen by cross-validation.

PAPER_NUMBERS = str(Path(workflow.basedir) / "workflow" / "resources" / "paper.yaml")


rule paper_comparison:
    input:
        runs=[PLAN.runs_table(e) for e in PLAN.selected_experiments()],
        cv=[PLAN.cv_tables(e)[2] for e in PLAN.selected_experiments() if PLAN.cv_folds(e)],
        paper=PAPER_NUMBERS,
    output:
        csv=report(PLAN.comparison[0], caption="../report/paper_comparison.rst", category="Paper comparison"),
        md=report(PLAN.comparison[1], caption="../report/paper_comparison.rst", category="Paper comparison"),
    params:
        code=REPORT_CODE,
        experiments=PLAN.selected_experiments(),
        cv_experiments=[e for e in PLAN.selected_experiments() if PLAN.cv_folds(e)],
    log:
        f"{LOGS}/products/paper_comparison.log",
    benchmark:
        f"{BENCH}/products/paper_comparison.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    script:
        "../scripts/paper_comparison.py"
