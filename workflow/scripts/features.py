"""Features of one dataset: leukemia phi(u) = u, MNIST scattering (kymatio), News20 TF-IDF."""
import _job

_job.start(snakemake)  # noqa: F821 (snakemake is injected): the log, then the job's threads

import os
import sys

import numpy as np

from sparsesvm.data import features
from sparsesvm.data.download import check_downloads
from sparsesvm.data.leukemia import load_leukemia
from sparsesvm.data.mnist import load_mnist
from sparsesvm.data.news20 import load_news20

dataset = snakemake.wildcards.dataset  # noqa: F821
inp = snakemake.input  # noqa: F821
opts = snakemake.params.options  # noqa: F821
check = {} if snakemake.params.strict else {"expected": None}  # noqa: F821 (fixture data: any size)
out = snakemake.output[0]  # noqa: F821
sources = {key: os.path.relpath(path, os.path.dirname(out)) for key, path in inp.items()
           if key != "subsets"}
# the downloads as they were checked when fetched (a file edited since is refused, named)
check_downloads({key: inp[key] for key in sources}, snakemake.config["downloads"][dataset])  # noqa: F821

if dataset == "leukemia":
    ds = load_leukemia(inp.train, inp.test, inp.samples, **check)
    X_train, X_test, fmeta = features.identity(ds.X_train, ds.X_test, standardize=opts["standardize"])
    meta = {"feature_map": fmeta, "classes": list(ds.class_names)}
    features.save_features(out, X_train, ds.y_train, X_test, ds.y_test, {**meta, "sources": sources})
elif dataset == "news20":
    ds = load_news20(inp.tarball, **check)
    X_train, X_test, vocabulary = features.tfidf(ds.docs_train, ds.docs_test, max_features=opts["max_features"])
    meta = {
        "feature_map": f"TF-IDF, the {len(vocabulary)} most frequent terms of the training split "
        "(built from the raw bydate documents: the paper used a preprocessed copy with 26214 terms)",
        "classes": list(ds.class_names),
    }
    features.save_features(out, X_train, ds.y_train, X_test, ds.y_test, {**meta, "sources": sources})
elif dataset == "mnist":
    ds = load_mnist(inp.train_images, inp.train_labels, inp.test_images, inp.test_labels, **check)
    # Only the training images used by some subset are scattered (plus the whole test split).
    rows = np.unique(np.concatenate([np.load(p) for p in inp.subsets])) if inp.subsets else np.arange(0)
    print(f"scattering {rows.size} training images (union of {len(inp.subsets)} subsets) "
          f"and {len(ds.y_test)} test images", file=sys.stderr)
    J, L, bs = opts["J"], opts["angles"], opts["batch_size"]
    X_train = features.scattering(ds.X_train[rows], J=J, L=L, batch_size=bs)
    X_test = features.scattering(ds.X_test, J=J, L=L, batch_size=bs)
    meta = {
        "feature_map": f"kymatio Scattering2D(J={J}, L={L}), order 2, position-major "
        "(the paper's oversampled ScatNet gives 81 maps of 14x14, M = 15876; kymatio gives 7x7, M = 3969)",
        "layout": features.scattering_layout(J, L, tuple(ds.X_train.shape[1:])),
        "classes": [str(c) for c in range(10)],
    }
    features.save_features(out, X_train, ds.y_train[rows], X_test, ds.y_test,
                           {**meta, "sources": sources}, train_rows=rows)
else:
    raise ValueError(f"unknown dataset {dataset!r}")
print(f"wrote {out}", file=sys.stderr)
