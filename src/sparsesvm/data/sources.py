"""Where the three datasets come from: public URLs and accepted checksums, the one table.

:data:`DOWNLOADS` has the shape of the workflow config's ``downloads`` key (dataset ->
source key -> entry, validated by ``workflow/schemas/config.schema.yaml``) and is its
default: ``config/config.yaml`` does not repeat it; ``workflow/rules/common.smk`` merges
the config's ``downloads``, if any, over it key by key, as Snakemake merges config files
(``config/test.yaml`` replaces every digest by those of the tiny fixture files).
:data:`SOURCES` is the same entries keyed by their relative file name, the table of
:func:`sparsesvm.data.download.fetch` for library users.

Why a Python module and not a YAML file shipped with the package, or the package reading
``config/config.yaml``: the package is used without the workflow (a wheel has no
``config/``), a Python table needs neither PyYAML nor package-data settings, and it keeps
the comments below on where each digest was verified.

Each entry: ``file`` (relative name under a mirror and under ``<results>/downloads``),
``urls`` (tried in order), ``checksum`` (accepted hex digests, any one matches),
``algorithm``, ``decompressed`` (the digest is of the gunzipped content). All digests
were computed on the offline mirror (``/work/shared/data``):

- MNIST: sha256 of the gunzipped content. The mirror's images are re-compressed, so only
  the decompressed content is identical to the public original; the md5 of that content
  (6bbc9ace898e44ae57da46a324031adb train images, a25bea736e30d166cdddb491f175f624 train
  labels, 2646ac647ad5339dbf082846283269ea test images, 27ae3e4e09519cfbb04c329615203637
  test labels) and the md5 of the original label archives (d53e105ee54ea40749a09fcbcd1e9432
  train, ec29112dd5afa0611ce80d1b7f02629c test) agree with the mirror's README.
- 20 Newsgroups: the public archive (scikit-learn's digest) or the mirror's copy, whose
  line endings are normalised to LF.
- Leukemia: the mirror's files (values identical to Bioconductor golubEsets); the public
  Broad ``.txt`` files could not be checked from here: if yours differ, the download
  stops with a ChecksumError naming both digests.
"""

from __future__ import annotations

__all__ = ["DOWNLOADS", "SOURCES"]

_MNIST_HOSTS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",  # torchvision's mirror
    "https://storage.googleapis.com/cvdf-datasets/mnist/",  # TensorFlow's mirror
    "http://yann.lecun.com/exdb/mnist/",  # the original host (often refuses)
)
_BROAD = "https://www-genome.wi.mit.edu/mpr/"


def _entry(file, urls, checksum, decompressed=False):
    return {"file": file, "urls": list(urls), "checksum": list(checksum), "algorithm": "sha256",
            "decompressed": decompressed}


def _mnist(name, sha256_decompressed):
    return _entry(f"mnist/{name}", [host + name for host in _MNIST_HOSTS], [sha256_decompressed],
                  decompressed=True)


def _leukemia(name, sha256):
    return _entry(f"leukemia/{name}.tsv", [f"{_BROAD}{name}.txt"], [sha256])


#: dataset -> source key -> entry: the default of the workflow config's ``downloads``.
DOWNLOADS: dict[str, dict[str, dict]] = {
    "leukemia": {
        "train": _leukemia("data_set_ALL_AML_train",
                           "9519e1fbedb3bdad48e8d700eb31dded79dce34899e772941716fca398f87b9d"),
        "test": _leukemia("data_set_ALL_AML_independent",
                          "2fd5bf6756658cf7bb42e3072d82028f392788ea38743b33c32185d4ff9f31e7"),
        "samples": _leukemia("table_ALL_AML_samples",
                             "ffa7118fe7f8ac940018cca4e47918c851e8c9ed5791546cb34efa6119d79a8a"),
    },
    "mnist": {
        "train_images": _mnist("train-images-idx3-ubyte.gz",
                               "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
        "train_labels": _mnist("train-labels-idx1-ubyte.gz",
                               "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
        "test_images": _mnist("t10k-images-idx3-ubyte.gz",
                              "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
        "test_labels": _mnist("t10k-labels-idx1-ubyte.gz",
                              "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
    },
    "news20": {
        "tarball": _entry(
            "news20/20news-bydate.tar.gz",
            ["http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz",
             "https://ndownloader.figshare.com/files/5975967"],  # scikit-learn's copy
            ["8f1b2514ca22a5ade8fbb9cfa5727df95fa587f4c87b786e15c759fa66d95610",  # public
             "4577e0c734aa970699b0950b587f12a97630c6a536b692efeca240752af3ae86"],  # mirror (LF)
        ),
    },
}

#: relative file name -> entry (the entries of :data:`DOWNLOADS`).
SOURCES: dict[str, dict] = {
    entry["file"]: entry for entries in DOWNLOADS.values() for entry in entries.values()
}

