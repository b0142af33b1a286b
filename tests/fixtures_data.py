"""Tiny files in the real formats of the three datasets (for tests and workflow fixtures).

:func:`write_tiny_mirror` writes a directory laid out exactly like the offline mirror
(``/work/shared/data``)::

    mnist/train-images-idx3-ubyte.gz   mnist/train-labels-idx1-ubyte.gz
    mnist/t10k-images-idx3-ubyte.gz    mnist/t10k-labels-idx1-ubyte.gz
    news20/20news-bydate.tar.gz
    leukemia/data_set_ALL_AML_train.tsv  leukemia/data_set_ALL_AML_independent.tsv
    leukemia/table_ALL_AML_samples.tsv

with a few samples per class, and returns the checksums and the expected counts (to pass
as ``expected=`` to the loaders). Everything is deterministic (fixed seed, gzip/tar
timestamps fixed), so the checksums do not change between runs.

The lower-level writers (:func:`write_idx_images`, :func:`write_expression_tsv`, ...)
also produce deliberately broken files for the parsers' error tests.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import numpy as np

NEWS20_GROUPS = (
    "alt.atheism", "comp.graphics", "comp.os.ms-windows.misc", "comp.sys.ibm.pc.hardware",
    "comp.sys.mac.hardware", "comp.windows.x", "misc.forsale", "rec.autos",
    "rec.motorcycles", "rec.sport.baseball", "rec.sport.hockey", "sci.crypt",
    "sci.electronics", "sci.med", "sci.space", "soc.religion.christian",
    "talk.politics.guns", "talk.politics.mideast", "talk.politics.misc", "talk.religion.misc",
)

MNIST_FILES = {
    "train_images": "mnist/train-images-idx3-ubyte.gz",
    "train_labels": "mnist/train-labels-idx1-ubyte.gz",
    "test_images": "mnist/t10k-images-idx3-ubyte.gz",
    "test_labels": "mnist/t10k-labels-idx1-ubyte.gz",
}
NEWS20_FILE = "news20/20news-bydate.tar.gz"
LEUKEMIA_FILES = {
    "train": "leukemia/data_set_ALL_AML_train.tsv",
    "test": "leukemia/data_set_ALL_AML_independent.tsv",
    "samples": "leukemia/table_ALL_AML_samples.tsv",
}


# --------------------------------------------------------------------------------------
# low-level writers
# --------------------------------------------------------------------------------------


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip (mtime 0, no file name)."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
        gz.write(data)
    return buf.getvalue()


def idx_images_bytes(images, magic=2051) -> bytes:
    """IDX3 bytes of uint8 images (n, rows, cols)."""
    images = np.asarray(images, dtype=np.uint8)
    n, r, c = images.shape
    header = b"".join(int(v).to_bytes(4, "big") for v in (magic, n, r, c))
    return header + images.tobytes()


def idx_labels_bytes(labels, magic=2049) -> bytes:
    """IDX1 bytes of uint8 labels (n,)."""
    labels = np.asarray(labels, dtype=np.uint8)
    return int(magic).to_bytes(4, "big") + int(labels.size).to_bytes(4, "big") + labels.tobytes()


def write_bytes(path, data: bytes, gz=None) -> Path:
    """Write bytes, gzip-compressed when ``gz`` (default: path ends with .gz)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz is None:
        gz = path.name.endswith(".gz")
    path.write_bytes(gzip_bytes(data) if gz else data)
    return path


def write_idx_images(path, images, magic=2051, gz=None) -> Path:
    return write_bytes(path, idx_images_bytes(images, magic), gz)


def write_idx_labels(path, labels, magic=2049, gz=None) -> Path:
    return write_bytes(path, idx_labels_bytes(labels, magic), gz)


def tiny_digits(labels, rng, size=28):
    """uint8 images (n, size, size): class k draws a bright bar whose position and
    orientation depend on k, plus noise -- linearly separable enough for tiny fits."""
    labels = np.asarray(labels)
    n = labels.size
    imgs = rng.integers(0, 40, size=(n, size, size)).astype(np.int64)
    for i, k in enumerate(labels):
        k = int(k)
        pos = 3 + 2 * (k % 5) + int(rng.integers(0, 2))
        if k < 5:
            imgs[i, pos:pos + 3, 4:size - 4] += 200
        else:
            imgs[i, 4:size - 4, pos:pos + 3] += 200
    return np.clip(imgs, 0, 255).astype(np.uint8)


def write_expression_tsv(path, values, sample_numbers, accessions=None, descriptions=None,
                         trailing_tab=False, header=None) -> Path:
    """Golub-style expression table: ``Gene Description``, ``Gene Accession Number``, then
    per sample (value column named by its number, ``call`` column).

    values : (n_genes, n_samples) numbers, column j for sample ``sample_numbers[j]``.
    """
    values = np.asarray(values)
    n_genes, n_samples = values.shape
    accessions = accessions or [f"TINY{g:04d}_at" for g in range(n_genes)]
    descriptions = descriptions or [
        (f'"probe {g}, tiny"' if g % 3 == 0 else f"probe {g} (tiny)") for g in range(n_genes)
    ]
    if header is None:
        header = ["Gene Description", "Gene Accession Number"]
        for s in sample_numbers:
            header += [str(s), "call"]
    end = "\t" if trailing_tab else ""
    lines = ["\t".join(header) + end]
    for g in range(n_genes):
        fields = [descriptions[g], accessions[g]]
        for j in range(n_samples):
            v = values[g, j]
            fields += [str(int(v)) if float(v).is_integer() else repr(float(v)), "P" if v > 0 else "A"]
        lines.append("\t".join(fields) + end)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n\n", encoding="latin-1")
    return path


def write_samples_table(path, rows) -> Path:
    """Sample table; rows: (number, set, kind ("ALL"/"AML"), cell ("B-cell"/"T-cell"/"NA"))."""
    lines = ["\t".join(["Samples", "Set", "ALL.AML", "T.B.cell", "BM.PB", "FAB", "Gender", "Source"])]
    for num, split, kind, cell in rows:
        lines.append("\t".join([str(num), split, kind, cell, "BM", "NA" if kind == "ALL" else "M1", "NA", "TINY"]))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="latin-1")
    return path


def write_news_tarball(path, splits) -> Path:
    """20news-bydate-like tarball.

    splits : {"20news-bydate-train": {group: [doc, ...]}, "20news-bydate-test": {...}};
    documents are stored as ``<split>/<group>/<id>`` (ids increasing from 10000),
    encoded latin-1; timestamps fixed.
    """
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        doc_id = 10000
        for split, groups in splits.items():
            for name in [split] + [f"{split}/{g}" for g in groups]:
                info = tarfile.TarInfo(name)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 725846400
                tf.addfile(info)
            for group, docs in groups.items():
                for doc in docs:
                    data = doc.encode("latin-1")
                    info = tarfile.TarInfo(f"{split}/{group}/{doc_id}")
                    info.size, info.mode, info.mtime = len(data), 0o644, 725846400
                    tf.addfile(info, io.BytesIO(data))
                    doc_id += 1
    return write_bytes(path, buf.getvalue(), gz=True)


def tiny_news_docs(n_docs, group, rng):
    """Documents of one group: a few group-specific words among common ones."""
    common = ["the", "and", "message", "subject", "from", "organization", "lines", "reply",
              "question", "people", "think", "know", "good", "time", "work"]
    letters = "".join(ch for ch in group if ch.isalpha())
    own = [w for w in group.replace("-", ".").split(".") if w] + [f"{letters}{i}" for i in range(4)]
    docs = []
    for _ in range(n_docs):
        words = list(rng.choice(common, size=25)) + list(rng.choice(own, size=8))
        rng.shuffle(words)
        docs.append(f"From: someone@{group}.example\nSubject: {own[0]} caf\xe9\n\n" + " ".join(words) + "\n")
    return docs


# --------------------------------------------------------------------------------------
# the whole tiny mirror
# --------------------------------------------------------------------------------------


def _digests(path):
    data = Path(path).read_bytes()
    out = {"sha256": hashlib.sha256(data).hexdigest(), "md5": hashlib.md5(data).hexdigest()}
    if data[:2] == b"\x1f\x8b":
        raw = gzip.decompress(data)
        out["sha256_decompressed"] = hashlib.sha256(raw).hexdigest()
        out["md5_decompressed"] = hashlib.md5(raw).hexdigest()
    return out


def write_tiny_mirror(directory, *, mnist_train_per_class=6, mnist_test_per_class=2,
                      news_groups=NEWS20_GROUPS, news_train_per_class=6, news_test_per_class=2,
                      leukemia_genes=20, leukemia_train_counts=(5, 3, 3),
                      leukemia_test_counts=(3, 1, 2), seed=0):
    """Write a tiny dataset mirror laid out exactly like ``/work/shared/data``.

    Parameters
    ----------
    directory : str or Path
        Created if needed; the files go to ``mnist/``, ``news20/``, ``leukemia/``.
    mnist_train_per_class, mnist_test_per_class : int
        Images per digit (10 digits) in each split.
    news_groups : sequence of str
        Newsgroup names (default: the 20 real ones).
    news_train_per_class, news_test_per_class : int
        Documents per group in each split.
    leukemia_genes : int
        Probes per sample.
    leukemia_train_counts, leukemia_test_counts : tuple of 3 int
        Samples of ALL B-cell / ALL T-cell / AML per split.
    seed : int

    Returns
    -------
    dict
        ``root`` (str), ``files`` (relative names), ``checksums`` ({relative name: {"sha256",
        "md5", and for gzip files "sha256_decompressed", "md5_decompressed"}}), ``sources``
        (a :data:`sparsesvm.data.sources.SOURCES`-like table with ``file://`` URLs and the
        sha256 of each file), ``expected`` ({"mnist": {...}, "news20": {...},
        "leukemia": {...}} to pass as ``expected=`` to the loaders), ``labels`` (the
        generated label vectors, for checks).
    """
    root = Path(directory)
    rng = np.random.default_rng(seed)
    labels = {}

    # MNIST
    y_tr = np.repeat(np.arange(10), mnist_train_per_class)
    y_te = np.repeat(np.arange(10), mnist_test_per_class)
    y_tr = y_tr[rng.permutation(y_tr.size)]
    y_te = y_te[rng.permutation(y_te.size)]
    write_idx_images(root / MNIST_FILES["train_images"], tiny_digits(y_tr, rng))
    write_idx_labels(root / MNIST_FILES["train_labels"], y_tr)
    write_idx_images(root / MNIST_FILES["test_images"], tiny_digits(y_te, rng))
    write_idx_labels(root / MNIST_FILES["test_labels"], y_te)
    labels["mnist"] = {"train": y_tr, "test": y_te}

    # 20 Newsgroups
    groups = list(news_groups)
    splits = {
        "20news-bydate-train": {g: tiny_news_docs(news_train_per_class, g, rng) for g in groups},
        "20news-bydate-test": {g: tiny_news_docs(news_test_per_class, g, rng) for g in groups},
    }
    write_news_tarball(root / NEWS20_FILE, splits)

    # Leukemia: train samples 1..n_tr, test samples after, test columns shuffled (as the real file)
    kinds = [("ALL", "B-cell"), ("ALL", "T-cell"), ("AML", "NA")]
    n_tr, n_te = sum(leukemia_train_counts), sum(leukemia_test_counts)
    cls_tr = np.repeat(np.arange(3), leukemia_train_counts)[rng.permutation(n_tr)]
    cls_te = np.repeat(np.arange(3), leukemia_test_counts)[rng.permutation(n_te)]
    nums_tr = list(range(1, n_tr + 1))
    nums_te = list(range(n_tr + 1, n_tr + n_te + 1))
    centres = rng.integers(-500, 3000, size=(3, leukemia_genes))

    def expression(cls):
        return (centres[cls].T + rng.integers(-100, 100, size=(leukemia_genes, cls.size)))

    vals_tr, vals_te = expression(cls_tr), expression(cls_te)
    perm = rng.permutation(n_te)  # column order of the independent file
    write_expression_tsv(root / LEUKEMIA_FILES["train"], vals_tr, nums_tr, trailing_tab=True)
    write_expression_tsv(root / LEUKEMIA_FILES["test"], vals_te[:, perm], [nums_te[i] for i in perm])
    table = [(n, "train", *kinds[c]) for n, c in zip(nums_tr, cls_tr)]
    table += [(n, "independent", *kinds[c]) for n, c in zip(nums_te, cls_te)]
    write_samples_table(root / LEUKEMIA_FILES["samples"], table)
    labels["leukemia"] = {"train": cls_tr.astype(np.int64), "test": cls_te.astype(np.int64),
                          "X_train": vals_tr.T.astype(np.float64), "X_test": vals_te.T.astype(np.float64)}

    files = list(MNIST_FILES.values()) + [NEWS20_FILE] + list(LEUKEMIA_FILES.values())
    checksums = {f: _digests(root / f) for f in files}
    sources = {
        f: {"urls": [(root / f).resolve().as_uri()], "algorithm": "sha256",
            "checksum": checksums[f]["sha256"], "decompressed": False}
        for f in files
    }
    expected = {
        "mnist": {"n_train": int(y_tr.size), "n_test": int(y_te.size)},
        "news20": {"n_train": len(groups) * news_train_per_class,
                   "n_test": len(groups) * news_test_per_class, "n_classes": len(groups)},
        "leukemia": {"n_genes": int(leukemia_genes), "train_counts": tuple(leukemia_train_counts),
                     "test_counts": tuple(leukemia_test_counts)},
    }
    return {"root": str(root), "files": files, "checksums": checksums, "sources": sources,
            "expected": expected, "labels": labels}

