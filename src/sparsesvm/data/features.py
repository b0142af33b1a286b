"""Feature maps phi for the three experiments, and their storage.

* Leukemia: :func:`identity` -- phi(u) = u (the raw expression values), optionally
  standardised with training statistics (off by default, as in the paper).
* MNIST: :func:`scattering` -- kymatio's 2-D scattering transform (J = 2, L = 8, order
  2: 81 channels of 7 x 7), reordered *position-major* so that the 81 channels of one
  spatial position are contiguous (the groups of the l1,inf penalty);
  :func:`scattering_layout` describes the layout.
* 20 Newsgroups: :func:`tfidf` -- scikit-learn's ``TfidfVectorizer`` with English stop
  words removed and the 26214 most frequent training terms.

:func:`save_features` / :func:`load_features` store a train/test pair so that many
training jobs can read it cheaply (dense ``.npy`` memory-mappable, sparse ``.npz``),
with the labels and a ``meta.json``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import numpy as np

from .._io import atomic_path, save_npy, write_json
from .._sparse import issparse

__all__ = [
    "identity",
    "scattering",
    "scattering_layout",
    "tfidf",
    "save_features",
    "load_features",
    "load_meta",
    "library_versions",
]

# --------------------------------------------------------------------------------------
# Leukemia: identity
# --------------------------------------------------------------------------------------


def identity(X_train, X_test, *, standardize=False):
    """phi(u) = u, optionally standardised with the training mean and standard deviation.

    Parameters
    ----------
    X_train : array-like, shape (n_train, n_features)
    X_test : array-like, shape (n_test, n_features)
    standardize : bool
        Subtract the training mean and divide by the training standard deviation
        (``ddof=0``; features with zero spread are only centred). Off by default: the
        paper uses the raw values.

    Returns
    -------
    X_train, X_test : ndarray of float64, same shapes
    meta : dict
        ``{"feature_map": "identity", "standardize": bool}`` plus, when standardised,
        ``"mean"`` and ``"scale"`` (lists of length n_features).
    """
    X_train = np.array(X_train, dtype=np.float64, copy=True)
    X_test = np.array(X_test, dtype=np.float64, copy=True)
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise ValueError(
            f"identity: expected 2-D train/test matrices with the same number of columns, "
            f"got {X_train.shape} and {X_test.shape}"
        )
    meta = {"feature_map": "identity", "standardize": bool(standardize)}
    if standardize:
        mean = X_train.mean(axis=0)
        scale = X_train.std(axis=0)
        scale[scale == 0] = 1.0
        X_train = (X_train - mean) / scale
        X_test = (X_test - mean) / scale
        meta["mean"] = mean.tolist()
        meta["scale"] = scale.tolist()
    return X_train, X_test, meta


# --------------------------------------------------------------------------------------
# MNIST: scattering
# --------------------------------------------------------------------------------------


def _scattering_class():
    # ``import kymatio.numpy`` (and ``from kymatio import Scattering2D``' numpy entry)
    # fails with SciPy >= 1.15 because the 3-D module imports scipy.special.sph_harm;
    # the 2-D NumPy frontend itself does not need it.
    from kymatio.scattering2d.frontend.numpy_frontend import ScatteringNumPy2D

    return ScatteringNumPy2D


def _n_channels(J, L, max_order=2):
    n = 1 + J * L
    if max_order >= 2:
        n += L * L * J * (J - 1) // 2
    return n


def _check_oversample(J, oversample):
    o = int(oversample)
    if o < 1 or o > 2 ** J or (o & (o - 1)):
        raise ValueError(
            f"scattering: oversample must be a power of 2 between 1 and 2**J = {2 ** J}, "
            f"got {oversample}"
        )
    return o


def scattering_layout(J=2, L=8, shape=(28, 28), oversample=1):
    """Describe the position-major layout of :func:`scattering`'s feature vectors.

    Parameters
    ----------
    J, L : int
        Scale and number of angles of the scattering transform.
    shape : tuple of int
        Image size (rows, cols).
    oversample : int
        Oversampling factor of the maps (see :func:`scattering`); 1 = kymatio's maps.

    Returns
    -------
    dict
        ``order`` ("position-major"), ``n_channels`` C (81 for J=2, L=8), ``n_positions``
        P (49 for 28 x 28 images; 196 with ``oversample=2``), ``spatial_shape`` ([7, 7];
        [14, 14]), ``stride`` (pixels between positions: 2**J / oversample),
        ``group_size`` C, ``n_features`` C * P, ``index`` (a formula: feature ``p * C + c``
        is channel ``c`` at position ``p = row * spatial_shape[1] + col``) and
        ``channels``: one dict per channel in kymatio's order (order 0; order 1 by
        (j1, theta1); order 2 by (j1, theta1, j2, theta2) with j2 > j1), each with
        ``order``, ``j`` and ``theta``.
    """
    J, L = int(J), int(L)
    if J < 1 or L < 1:
        raise ValueError(f"scattering needs J >= 1 and L >= 1, got J={J}, L={L}")
    o = _check_oversample(J, oversample)
    rows, cols = (int(s) for s in shape)
    if rows < 2 ** J or cols < 2 ** J:
        raise ValueError(f"images of {rows}x{cols} are smaller than 2**J = {2 ** J}")
    # kymatio's filter bank order: j in range(J), theta in range(L)
    psi = [(j, t) for j in range(J) for t in range(L)]
    channels = [{"order": 0, "j": [], "theta": []}]
    channels += [{"order": 1, "j": [j], "theta": [t]} for j, t in psi]
    for j1, t1 in psi:
        for j2, t2 in psi:
            if j2 > j1:
                channels.append({"order": 2, "j": [j1, j2], "theta": [t1, t2]})
    C = len(channels)
    assert C == _n_channels(J, L)
    spatial = [-(-rows // 2 ** J) * o, -(-cols // 2 ** J) * o]
    P = spatial[0] * spatial[1]
    return {
        "transform": "kymatio Scattering2D (NumPy frontend), max_order 2"
        + ("" if o == 1 else f", oversampled x{o} by shifted inputs (approximate)"),
        "J": J,
        "L": L,
        "oversample": o,
        "stride": 2 ** J // o,
        "input_shape": [rows, cols],
        "order": "position-major",
        "n_channels": C,
        "n_positions": P,
        "spatial_shape": spatial,
        "group_size": C,
        "n_features": C * P,
        "index": "feature p*n_channels + c = channel c at position p = row*spatial_shape[1] + col",
        "channels": channels,
    }


def _shift_up_left(x, dr, dc):
    """y[:, i, j] = x[:, i + dr, j + dc], zero outside (x: (b, rows, cols))."""
    if dr == 0 and dc == 0:
        return x
    y = np.zeros_like(x)
    y[:, : x.shape[1] - dr, : x.shape[2] - dc] = x[:, dr:, dc:]
    return y


def scattering(images, J=2, L=8, batch_size=256, progress=True, *, out=None, oversample=1):
    """2-D scattering features of images, position-major.

    Uses kymatio's NumPy frontend (``ScatteringNumPy2D``, max_order 2) in batches, with a
    tqdm progress bar on stderr. kymatio returns (n, C, H', W') maps; they are
    transposed to (n, H', W', C) and flattened, so the C channels of each spatial
    position are contiguous (see :func:`scattering_layout`).

    Parameters
    ----------
    images : array-like, shape (n, rows, cols)
        uint8 images are converted to float32 and divided by 255 (pixel values in
        [0, 1]); float images are used as given (as float32).
    J, L : int
        Scattering scale and number of angles (81 channels for J=2, L=8).
    batch_size : int
        Images per kymatio call (memory ~ batch_size * 1.5 MB for 28 x 28, J=2).
    progress : bool
        Show a tqdm progress bar on stderr.
    out : ndarray, optional
        float32 array (n, C * P) to fill (e.g. a ``numpy.lib.format.open_memmap``).
    oversample : int
        1 (default): kymatio's maps, subsampled by 2**J (7 x 7 for MNIST, M = 3969).
        2 (or another power of 2 up to 2**J): an approximate oversampled variant, closer to
        the paper's ScatNet features (14 x 14 maps, M = 15876 for MNIST): the transform
        of the image shifted by (a, b) * 2**J / oversample pixels (zero fill) gives the
        maps' entries at offsets (a, b); exact up to kymatio's border padding. Costs
        ``oversample**2`` times more.

    Returns
    -------
    ndarray of float32, shape (n, C * P)
        (n, 81 * 49) = (n, 3969) for 28 x 28 images with J=2, L=8.
    """
    images = np.asarray(images)
    if images.ndim != 3:
        raise ValueError(f"scattering: expected images of shape (n, rows, cols), got {images.shape}")
    if batch_size < 1:
        raise ValueError(f"scattering: batch_size must be >= 1, got {batch_size}")
    n, rows, cols = images.shape
    layout = scattering_layout(J, L, (rows, cols), oversample)
    C, P = layout["n_channels"], layout["n_positions"]
    o, stride = layout["oversample"], layout["stride"]
    h, w = layout["spatial_shape"][0] // o, layout["spatial_shape"][1] // o
    if out is None:
        out = np.empty((n, C * P), dtype=np.float32)
    elif out.shape != (n, C * P) or out.dtype != np.float32:
        raise ValueError(
            f"scattering: out must be float32 of shape {(n, C * P)}, got {out.dtype} {out.shape}"
        )
    if n == 0:
        return out
    S = _scattering_class()(J=J, shape=(rows, cols), L=L, max_order=2)
    from tqdm.auto import tqdm

    scale = np.float32(1.0 / 255.0) if images.dtype == np.uint8 else None
    with tqdm(total=n, desc=f"scattering J={J} L={L}", unit="img", file=sys.stderr,
              disable=not progress, mininterval=1.0) as bar:
        for start in range(0, n, batch_size):
            stop = min(start + batch_size, n)
            x = np.ascontiguousarray(images[start:stop], dtype=np.float32)
            if scale is not None:
                x *= scale
            maps = np.empty((stop - start, h * o, w * o, C), dtype=np.float32)
            for a in range(o):
                for b in range(o):
                    coeffs = S.scattering(_shift_up_left(x, a * stride, b * stride))
                    if coeffs.shape[1:] != (C, h, w):
                        raise RuntimeError(
                            f"kymatio returned maps of shape {coeffs.shape[1:]}, expected {(C, h, w)}"
                        )
                    maps[:, a::o, b::o, :] = coeffs.transpose(0, 2, 3, 1)
            out[start:stop] = maps.reshape(stop - start, C * P)
            bar.update(stop - start)
    return out


# --------------------------------------------------------------------------------------
# 20 Newsgroups: TF-IDF
# --------------------------------------------------------------------------------------


def tfidf(docs_train, docs_test, max_features=26214):
    """TF-IDF features fitted on the training documents.

    ``TfidfVectorizer(stop_words="english", max_features=max_features)``: the vocabulary
    is the ``max_features`` most frequent terms of the training split (English stop
    words removed); rows are L2-normalised (scikit-learn's default ``norm="l2"``, smooth
    idf, raw term counts).

    Parameters
    ----------
    docs_train : sequence of str, length n_train
    docs_test : sequence of str, length n_test
    max_features : int

    Returns
    -------
    X_train : scipy.sparse.csr_matrix of float64, shape (n_train, n_terms)
    X_test : scipy.sparse.csr_matrix of float64, shape (n_test, n_terms)
    vocabulary : list of str, length n_terms (= max_features unless the training
        documents have fewer distinct terms); column j is term ``vocabulary[j]``.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    if max_features is not None and int(max_features) < 1:
        raise ValueError(f"tfidf: max_features must be >= 1, got {max_features}")
    if len(docs_train) == 0:
        raise ValueError("tfidf: no training documents")
    vec = TfidfVectorizer(stop_words="english", max_features=max_features, dtype=np.float64)
    import scipy.sparse as sp

    X_train = sp.csr_matrix(vec.fit_transform(docs_train), dtype=np.float64)
    X_test = sp.csr_matrix(vec.transform(docs_test), dtype=np.float64)
    for X in (X_train, X_test):
        X.sort_indices()
    return X_train, X_test, [str(t) for t in vec.get_feature_names_out()]


# --------------------------------------------------------------------------------------
# Storage
# --------------------------------------------------------------------------------------


def library_versions():
    """Versions of the libraries that produce features (for the metadata).

    Returns
    -------
    dict of str to str
        python, numpy, scipy, scikit-learn, kymatio (when importable), sparsesvm.
    """
    import platform

    import scipy
    import sklearn

    versions = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }
    try:
        from kymatio.version import version as kv

        versions["kymatio"] = kv
    except Exception:  # pragma: no cover - kymatio is optional for leukemia/news20
        pass
    try:
        from importlib.metadata import version

        versions["sparsesvm"] = version("sparsesvm")
    except Exception:  # pragma: no cover
        pass
    return versions


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _save_matrix(directory, split, X):
    if issparse(X):
        import scipy.sparse as sp

        X = sp.csr_matrix(X)
        with atomic_path(directory / f"X_{split}.npz", ".npz") as tmp:
            sp.save_npz(tmp, X, compressed=False)
        with contextlib.suppress(FileNotFoundError):
            (directory / f"X_{split}.npy").unlink()
        return {"format": "csr", "file": f"X_{split}.npz", "shape": list(X.shape),
                "dtype": str(X.dtype), "nnz": int(X.nnz)}
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"save_features: X_{split} must be 2-D, got shape {X.shape}")
    save_npy(directory / f"X_{split}.npy", np.ascontiguousarray(X))
    with contextlib.suppress(FileNotFoundError):
        (directory / f"X_{split}.npz").unlink()
    return {"format": "dense", "file": f"X_{split}.npy", "shape": list(X.shape), "dtype": str(X.dtype)}


def save_features(directory, X_train, y_train, X_test, y_test, meta=None, *, train_rows=None):
    """Store a train/test feature pair with labels and metadata.

    Files in ``directory``: ``X_train.npy`` / ``X_test.npy`` (dense, memory-mappable) or
    ``X_train.npz`` / ``X_test.npz`` (CSR, uncompressed), ``y_train.npy``, ``y_test.npy``
    (int64), optionally ``rows_train.npy``, and ``meta.json``. Every file is written to a
    temporary name and renamed; ``meta.json`` is written last, so its presence marks a
    complete directory.

    Parameters
    ----------
    directory : str or Path
        Created if needed.
    X_train : ndarray or sparse matrix, shape (n_train_stored, n_features)
    y_train : array-like of int, shape (n_train_stored,)
    X_test : ndarray or sparse matrix, shape (n_test, n_features)
    y_test : array-like of int, shape (n_test,)
    meta : dict, optional
        Anything JSON-serialisable: class names (``"classes"``), feature layout
        (``"layout"``), source checksums (``"sources"``), ... It is completed with
        ``"shapes"``, ``"n_features"``, ``"splits"`` (format, dtype, file per split),
        ``"library_versions"`` and ``"train_rows"`` (see below).
    train_rows : array-like of int, optional
        When only some training images were featurised (MNIST: the union of the
        subsets), the strictly increasing indices into the official training split of
        the stored rows. :func:`load_features` then maps official indices to rows.

    Returns
    -------
    dict
        The metadata written to ``meta.json``.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    y_train = np.asarray(y_train, dtype=np.int64).ravel()
    y_test = np.asarray(y_test, dtype=np.int64).ravel()
    if X_train.shape[0] != y_train.shape[0] or X_test.shape[0] != y_test.shape[0]:
        raise ValueError(
            f"save_features: {X_train.shape[0]} training rows but {y_train.shape[0]} labels, "
            f"{X_test.shape[0]} test rows but {y_test.shape[0]} labels"
        )
    if X_train.shape[1] != X_test.shape[1]:
        raise ValueError(
            f"save_features: train has {X_train.shape[1]} features, test has {X_test.shape[1]}"
        )
    meta = dict(meta or {})
    with contextlib.suppress(FileNotFoundError):
        (directory / "meta.json").unlink()  # incomplete until rewritten
    splits = {
        "train": _save_matrix(directory, "train", X_train),
        "test": _save_matrix(directory, "test", X_test),
    }
    save_npy(directory / "y_train.npy", y_train)
    save_npy(directory / "y_test.npy", y_test)
    if train_rows is not None:
        rows = np.asarray(train_rows, dtype=np.int64).ravel()
        if rows.shape[0] != y_train.shape[0]:
            raise ValueError(
                f"save_features: train_rows has {rows.shape[0]} entries for {y_train.shape[0]} stored rows"
            )
        if rows.size and (np.any(np.diff(rows) <= 0) or rows[0] < 0):
            raise ValueError("save_features: train_rows must be non-negative and strictly increasing")
        save_npy(directory / "rows_train.npy", rows)
        meta["train_rows"] = {"file": "rows_train.npy", "n_stored": int(rows.size)}
    else:
        with contextlib.suppress(FileNotFoundError):
            (directory / "rows_train.npy").unlink()
        meta["train_rows"] = None
    meta["splits"] = splits
    meta["shapes"] = {"train": list(X_train.shape), "test": list(X_test.shape)}
    meta["n_features"] = int(X_train.shape[1])
    meta.setdefault("library_versions", library_versions())
    meta = _jsonable(meta)
    write_json(directory / "meta.json", meta, indent=2, sort_keys=True)
    return meta


def load_meta(directory):
    """Read ``meta.json`` of a feature directory written by :func:`save_features`."""
    path = Path(directory) / "meta.json"
    if not path.is_file():
        raise ValueError(f"{directory}: no meta.json (not a complete feature directory)")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def load_features(directory, split, indices=None, mmap=True):
    """Load one split of a feature directory written by :func:`save_features`.

    Parameters
    ----------
    directory : str or Path
    split : {"train", "test"}
    indices : array-like of int, optional
        Rows to return, as indices into the official split (mapped through
        ``rows_train.npy`` when only some training rows were stored). ``None``: all
        stored rows.
    mmap : bool
        Memory-map dense matrices (read-only) instead of reading them whole.

    Returns
    -------
    X : ndarray (n, n_features) or scipy.sparse.csr_matrix
        Memory-mapped when ``mmap`` and ``indices is None`` (dense); a copy otherwise.
    y : ndarray of int64, shape (n,)
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    directory = Path(directory)
    meta = load_meta(directory)
    info = meta["splits"][split]
    path = directory / info["file"]
    if info["format"] == "csr":
        import scipy.sparse as sp

        X = sp.load_npz(path).tocsr()
    else:
        X = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    y = np.load(directory / f"y_{split}.npy", allow_pickle=False)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"{path}: {X.shape[0]} rows but {y.shape[0]} labels")
    if indices is None:
        return X, y
    idx = np.asarray(indices)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must be a 1-D integer array, got {idx.dtype} {idx.shape}")
    idx = idx.astype(np.int64)
    if split == "train" and meta.get("train_rows"):
        rows = np.load(directory / meta["train_rows"]["file"], allow_pickle=False)
        pos = np.searchsorted(rows, idx)
        pos_c = np.minimum(pos, max(rows.size - 1, 0))
        bad = (pos >= rows.size) | (rows[pos_c] != idx) if rows.size else np.ones(idx.shape, bool)
        if np.any(bad):
            raise ValueError(
                f"{directory}: training rows {idx[bad][:5].tolist()} were not featurised "
                f"(only {rows.size} stored rows)"
            )
        idx = pos
    n = X.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"{directory}: indices out of range for {n} {split} rows")
    Xs = X[idx]
    if not issparse(Xs):
        Xs = np.asarray(Xs)
    return Xs, np.asarray(y[idx])
