"""MNIST: the reader of the IDX files (gzip-compressed or not) and the real sizes.

:func:`read_mnist_images`, :func:`read_mnist_labels` read one file each, checking its
magic number, dimensions and length; :func:`load_mnist` reads the four files of the
train and test splits into a :class:`~sparsesvm.data.containers.Dataset`. A file in the
wrong format raises :class:`ValueError` naming the file and what was expected.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from .containers import Dataset
from .download import GZIP_MAGIC, looks_like_html

__all__ = ["MNIST_EXPECTED", "read_mnist_images", "read_mnist_labels", "load_mnist"]

#: Sizes of the real MNIST splits (pass ``expected=None`` to skip for tiny fixtures);
#: ``train_counts``: training images per digit 0..9 (the workflow checks the configured
#: samples per class against the smallest before any job).
MNIST_EXPECTED = {
    "n_train": 60000,
    "n_test": 10000,
    "train_counts": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
}

_IDX_IMAGES_MAGIC = 2051  # 0x00000803: unsigned byte, 3 dimensions
_IDX_LABELS_MAGIC = 2049  # 0x00000801: unsigned byte, 1 dimension


def _read_maybe_gzip(path):
    path = Path(path)
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read()
        except EOFError as exc:
            raise ValueError(f"{path}: truncated gzip stream (the file is incomplete)") from exc
        except (OSError, zlib.error) as exc:
            raise ValueError(f"{path}: corrupt gzip stream ({exc})") from exc
    with open(path, "rb") as fh:
        return fh.read()


def _idx_header(data, path, magic, ndim, what):
    header_len = 4 + 4 * ndim
    got = int.from_bytes(data[:4], "big")
    if len(data) >= 4 and got != magic:
        hint = " (it looks like an HTML page)" if looks_like_html(data[:2048]) else ""
        raise ValueError(
            f"{path}: not an IDX {what} file: magic number {got:#010x}, expected "
            f"{magic:#010x}{hint}"
        )
    if len(data) < header_len:
        raise ValueError(
            f"{path}: not an IDX {what} file: {len(data)} bytes, shorter than the "
            f"{header_len}-byte header"
        )
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return header_len, dims


def read_mnist_images(path, *, expected_n=None, shape=(28, 28)):
    """Read an MNIST IDX image file (gzip-compressed or not).

    Parameters
    ----------
    path : str or Path
    expected_n : int, optional
        Required number of images (60000 / 10000 for the real files).
    shape : tuple of int
        Required image size (rows, cols).

    Returns
    -------
    ndarray of uint8, shape (n, rows, cols)

    Raises
    ------
    ValueError
        Wrong magic number, image size, image count or data length (naming the file).
    """
    data = _read_maybe_gzip(path)
    start, (n, rows, cols) = _idx_header(data, path, _IDX_IMAGES_MAGIC, 3, "images")
    if (rows, cols) != tuple(shape):
        raise ValueError(f"{path}: images of {rows}x{cols} pixels, expected {shape[0]}x{shape[1]}")
    if expected_n is not None and n != expected_n:
        raise ValueError(f"{path}: header says {n} images, expected {expected_n}")
    size = n * rows * cols
    if len(data) - start != size:
        raise ValueError(
            f"{path}: expected {size} bytes of pixels for {n} images of {rows}x{cols}, "
            f"found {len(data) - start}"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=start).reshape(n, rows, cols).copy()


def read_mnist_labels(path, *, expected_n=None, n_classes=10):
    """Read an MNIST IDX label file (gzip-compressed or not).

    Parameters
    ----------
    path : str or Path
    expected_n : int, optional
        Required number of labels.
    n_classes : int
        Labels must lie in ``0 .. n_classes - 1``.

    Returns
    -------
    ndarray of int64, shape (n,)

    Raises
    ------
    ValueError
        Wrong magic number, count, data length or label values (naming the file).
    """
    data = _read_maybe_gzip(path)
    start, (n,) = _idx_header(data, path, _IDX_LABELS_MAGIC, 1, "labels")
    if expected_n is not None and n != expected_n:
        raise ValueError(f"{path}: header says {n} labels, expected {expected_n}")
    if len(data) - start != n:
        raise ValueError(f"{path}: expected {n} bytes of labels, found {len(data) - start}")
    y = np.frombuffer(data, dtype=np.uint8, offset=start).astype(np.int64)
    if n and y.max() >= n_classes:
        raise ValueError(f"{path}: label {int(y.max())} outside 0..{n_classes - 1}")
    return y


def load_mnist(train_images, train_labels, test_images, test_labels, *, expected=MNIST_EXPECTED):
    """Read the four MNIST files.

    Parameters
    ----------
    train_images, train_labels, test_images, test_labels : str or Path
        IDX files (``*-ubyte.gz`` or uncompressed).
    expected : dict or None
        ``{"n_train": 60000, "n_test": 10000}`` (the default) checks the real sizes;
        ``None`` only checks that images and labels agree (tiny fixtures).

    Returns
    -------
    Dataset
        ``X_train`` uint8 (n_train, 28, 28), ``y_train`` int64 (n_train,), same for
        test; ``class_names`` = ["0", ..., "9"].
    """
    n_tr = expected.get("n_train") if expected else None
    n_te = expected.get("n_test") if expected else None
    X_train = read_mnist_images(train_images, expected_n=n_tr)
    y_train = read_mnist_labels(train_labels, expected_n=n_tr)
    X_test = read_mnist_images(test_images, expected_n=n_te)
    y_test = read_mnist_labels(test_labels, expected_n=n_te)
    for X, y, pi, pl in ((X_train, y_train, train_images, train_labels),
                         (X_test, y_test, test_images, test_labels)):
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"{pi} holds {X.shape[0]} images but {pl} holds {y.shape[0]} labels")
    return Dataset(X_train, y_train, X_test, y_test, [str(k) for k in range(10)])
