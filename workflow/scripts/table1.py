"""Table 1 (E1): test errors "e/34" and non-zero weights per class "a+b+c" at the best alpha."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import pandas as pd

from sparsesvm.experiments import tables

df = pd.read_parquet(snakemake.input.runs)  # noqa: F821
cv = pd.read_csv(snakemake.input.cv[0], dtype={"cv_alphas": str}) if snakemake.input.cv else None  # noqa: F821
wide = tables.write_table1(df, snakemake.output.csv, snakemake.output.md, snakemake.output.tex,  # noqa: F821
                           cv_summary=cv)
print(wide.to_string(), file=sys.stderr)
