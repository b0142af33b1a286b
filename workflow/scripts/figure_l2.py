"""Figure 4 (E5): l2 fit time vs alpha per method and L; weights above 1e-5, l2 vs l1inf;
and (with equal_accuracy) the seconds each l2 solver needs to reach the same relative gap."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import matplotlib

matplotlib.use("Agg")
import pandas as pd

from sparsesvm.experiments import aggregate, figures

df = pd.read_parquet(snakemake.input.runs)  # noqa: F821
accuracy = aggregate.collect_accuracy(snakemake.input.accuracy)  # noqa: F821
accuracy.to_csv(snakemake.output.accuracy, index=False)  # noqa: F821
figures.l2_timing_figure(df, snakemake.output.png, snakemake.output.pdf,  # noqa: F821
                         title=snakemake.params.title, accuracy_df=accuracy if len(accuracy) else None)  # noqa: F821
