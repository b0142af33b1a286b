"""Labels of the official training split (the input of the seeded subsets)."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

import numpy as np

from sparsesvm._io import save_npy
from sparsesvm.data.download import check_downloads
from sparsesvm.data.mnist import MNIST_EXPECTED, read_mnist_labels
from sparsesvm.data.news20 import load_news20

dataset = snakemake.wildcards.dataset  # noqa: F821
strict = snakemake.params.strict  # noqa: F821 (false for fixture data: any size)
# the download as it was checked when fetched (a file edited since is refused, named)
check_downloads(dict(snakemake.input.items()), snakemake.config["downloads"][dataset])  # noqa: F821
if dataset == "mnist":
    n = MNIST_EXPECTED["n_train"] if strict else None
    y = read_mnist_labels(snakemake.input[0], expected_n=n)  # noqa: F821
elif dataset == "news20":
    check = {} if strict else {"expected": None}
    y = load_news20(snakemake.input[0], **check).y_train  # noqa: F821
else:
    raise ValueError(f"no training subsets for dataset {dataset!r}")
y = np.asarray(y, dtype=np.int64)
save_npy(snakemake.output[0], y)  # noqa: F821
print(f"{dataset}: {y.size} training labels, class sizes {np.bincount(y).tolist()}", file=sys.stderr)
