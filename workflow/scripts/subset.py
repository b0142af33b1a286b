"""One seeded class-balanced training subset: n samples per class (the paper's L = nK)."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import numpy as np

from sparsesvm._io import save_npy
from sparsesvm.data import subsets

w = snakemake.wildcards  # noqa: F821
y = np.load(snakemake.input[0])  # noqa: F821
per_class, index = int(w.n), int(w.subset)
# balanced_subsets' design: subset s does not depend on how many subsets are drawn, so it
# is the same in every experiment and for every n_subsets; and with one seed for every
# size, subset s of a size is contained in subset s of any larger size (nested L's).
try:
    idx = subsets.balanced_subsets(y, per_class, index + 1, seed=snakemake.params.seed)[index]  # noqa: F821
except ValueError as exc:
    raise ValueError(f"{exc}: lower samples_per_class ({per_class}) in the config's {w.dataset} experiments") from exc
save_npy(snakemake.output[0], idx)  # noqa: F821
print(f"{w.dataset} L={per_class}K subset {index}: {idx.size} indices", file=sys.stderr)
