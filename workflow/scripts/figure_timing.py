"""Figure 3 (E4): fit time vs alpha; distance to the final solution vs time at the best alpha."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import matplotlib

matplotlib.use("Agg")
import pandas as pd

from sparsesvm.experiments import aggregate, figures

df = pd.read_parquet(snakemake.input.runs)  # noqa: F821
traces = aggregate.collect_traces(snakemake.input.traces)  # noqa: F821
traces.to_csv(snakemake.output.traces, index=False)  # noqa: F821
figures.timing_figure(df, traces, snakemake.output.png, snakemake.output.pdf,  # noqa: F821
                      title=snakemake.params.title)  # noqa: F821
