"""Every job of one experiment -> tidy table (Parquet + CSV) and the best alpha per curve."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from sparsesvm.experiments import aggregate

# records of jobs shared with an earlier experiment (PLAN.run_owner) are this experiment's rows
df = aggregate.collect(snakemake.input, experiment=snakemake.wildcards.experiment)  # noqa: F821
df.to_parquet(snakemake.output.parquet, index=False)  # noqa: F821
df.to_csv(snakemake.output.csv, index=False)  # noqa: F821
best = aggregate.best_alpha(df)
best.to_csv(snakemake.output.best, index=False)  # noqa: F821
shared = int((df["run_experiment"] != df["experiment"]).sum())
print(f"{len(df)} jobs ({shared} of them run by another experiment), {len(best)} curves; "
      f"{int(best['at_grid_edge'].sum())} best alphas at a grid edge", file=sys.stderr)
for row in best[best["at_grid_edge"]].itertuples():
    print(f"  best alpha at the edge of its grid: {row.method} {row.penalty} L={row.L} alpha={row.alpha}",
          file=sys.stderr)
