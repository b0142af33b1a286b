"""What the dataset loaders return: :class:`Dataset` (dense, MNIST and leukemia) and
:class:`TextDataset` (documents, 20 Newsgroups)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Dataset", "TextDataset"]


@dataclass
class Dataset:
    """A dense train/test dataset.

    Attributes
    ----------
    X_train : ndarray, shape (n_train, ...)
        MNIST: uint8 (n_train, 28, 28); leukemia: float64 (n_train, n_genes).
    y_train : ndarray of int64, shape (n_train,)
        Class indices into ``class_names``.
    X_test, y_test : as above for the test split.
    class_names : list of str, length n_classes
    feature_names : list of str or None
        Leukemia: the gene accession numbers (length n_genes).
    train_ids, test_ids : list of str or None
        Leukemia: the sample numbers, in the row order of ``X_train`` / ``X_test``.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    class_names: list
    feature_names: list | None = None
    train_ids: list | None = None
    test_ids: list | None = None


@dataclass
class TextDataset:
    """Documents and labels of a text classification dataset.

    Attributes
    ----------
    docs_train : list of str, length n_train
    y_train : ndarray of int64, shape (n_train,)
    docs_test : list of str, length n_test
    y_test : ndarray of int64, shape (n_test,)
    class_names : list of str, length n_classes (sorted; label k is class_names[k])
    train_files, test_files : list of str
        Path of each document inside the archive (``<split>/<group>/<id>``).
    """

    docs_train: list
    y_train: np.ndarray
    docs_test: list
    y_test: np.ndarray
    class_names: list
    train_files: list = field(default_factory=list)
    test_files: list = field(default_factory=list)
