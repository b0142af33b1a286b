# Reproduction of "A Proximal Approach for Sparse Multiclass SVM" (Chierchia et al.).
#
#   snakemake --cores all                                # full reproduction (config/config.yaml)
#   snakemake --cores 2 --configfile config/quick.yaml   # every experiment in miniature
#   snakemake --cores 2 table1                           # one product; see README.md for the targets
#
# Rules live in workflow/rules/, thin scripts in workflow/scripts/, the config schema
# in workflow/schemas/. All outputs go under config["results"].

from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


configfile: Path(workflow.basedir) / "config" / "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/cv.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        [PLAN.product_files(e) for e in PLAN.selected_experiments()],
        PLAN.comparison,
    default_target: True
