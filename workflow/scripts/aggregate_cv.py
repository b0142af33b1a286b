"""CV jobs of one experiment -> tidy table, the CV alpha per curve and subset, and the test
error at the CV alpha beside the best alpha by test error."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import pandas as pd

from sparsesvm.experiments import aggregate, cv

df = aggregate.collect(snakemake.input.cv)  # noqa: F821
df.to_csv(snakemake.output.runs, index=False)  # noqa: F821
alpha = cv.cv_alpha(df)
alpha.to_csv(snakemake.output.alpha, index=False)  # noqa: F821
summary = cv.cv_summary(pd.read_parquet(snakemake.input.runs), alpha)  # noqa: F821
summary.to_csv(snakemake.output.summary, index=False)  # noqa: F821
print(summary.to_string(), file=sys.stderr)
