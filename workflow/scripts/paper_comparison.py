"""The paper against the reproduction: Table 1 cell by cell and claims C1-C14 with verdicts."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import pandas as pd

from sparsesvm.experiments import compare

tables = {e: pd.read_parquet(p) for e, p in zip(snakemake.params.experiments, snakemake.input.runs)}  # noqa: F821
cv = {e: pd.read_csv(p, dtype={"cv_alphas": str}) for e, p in zip(snakemake.params.cv_experiments, snakemake.input.cv)}  # noqa: F821
long = compare.write_comparison(tables, snakemake.input.paper,  # noqa: F821
                                snakemake.output.csv, snakemake.output.md, cv=cv)  # noqa: F821
claims = long[long["section"] == "claim"]
for row in claims.itertuples():
    print(f"{row.item}: {row.verdict}", file=sys.stderr)
