# Downloads: one job per source file, checked against the config's checksums.
# Local rules: compute nodes of a cluster may have no internet access.
import re

localrules:
    download,


#: relative file name -> its config entry (config["downloads"][dataset][key])
DOWNLOADS = {
    entry["file"]: entry for files in config["downloads"].values() for entry in files.values()
}


rule download:
    output:
        f"{RESULTS}/downloads/{{file}}",
    params:
        source=lambda wildcards: DOWNLOADS[wildcards.file],
    log:
        f"{LOGS}/download/{{file}}.log",
    benchmark:
        f"{BENCH}/download/{{file}}.tsv"
    conda:
        f"{ENVS}/sparsesvm.yaml"
    wildcard_constraints:
        file="|".join(re.escape(name) for name in sorted(DOWNLOADS)),
    script:
        "../scripts/download.py"
