"""Figures 1 (E2) and 2 (E3): test error (%) and zero weights (%) vs alpha, one panel pair per L;
with the experiment's CV alpha table (when it has `cv`), triangles at the alphas chosen by cross-validation."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import matplotlib

matplotlib.use("Agg")
import pandas as pd

from sparsesvm.experiments import figures

df = pd.read_parquet(snakemake.input.runs)  # noqa: F821
cv = pd.read_csv(snakemake.input.cv[0], dtype={"groups": str}) if snakemake.input.cv else None  # noqa: F821
figures.accuracy_sparsity_figure(df, snakemake.output.png, snakemake.output.pdf,  # noqa: F821
                                 title=snakemake.params.title, cv_alpha=cv)  # noqa: F821
