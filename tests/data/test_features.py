"""Feature maps (identity, scattering, TF-IDF) and their storage."""

import json
import re
from pathlib import Path

import fixtures_data as fd
import numpy as np
import pytest
import scipy.sparse as sp

from sparsesvm.data import features
from sparsesvm.data.mnist import read_mnist_images
from sparsesvm.data.news20 import load_news20

# Tests on the real offline mirror take the ``mirror_dir`` fixture (tests/conftest.py):
# skipped, with the reason, when the mirror is absent.


# ------------------------------------------------------------------------------- identity


def test_identity_returns_raw_values_by_default():
    rng = np.random.default_rng(0)
    A, B = rng.integers(-500, 5000, (6, 4)), rng.integers(-500, 5000, (3, 4))
    Xtr, Xte, meta = features.identity(A, B)
    np.testing.assert_array_equal(Xtr, A)
    np.testing.assert_array_equal(Xte, B)
    assert Xtr.dtype == np.float64 and meta == {"feature_map": "identity", "standardize": False}
    Xtr[0, 0] = 1e9
    assert A[0, 0] != 1e9  # a copy


def test_identity_standardises_with_training_statistics_only():
    rng = np.random.default_rng(1)
    A = rng.normal(3.0, 2.0, (8, 5))
    A[:, 2] = 7.0  # constant feature
    B = rng.normal(0.0, 1.0, (4, 5))
    Xtr, Xte, meta = features.identity(A, B, standardize=True)
    keep = [0, 1, 3, 4]
    mean, sd = A[:, keep].mean(axis=0), A[:, keep].std(axis=0)
    np.testing.assert_allclose(Xtr[:, keep], (A[:, keep] - mean) / sd)
    np.testing.assert_allclose(Xte[:, keep], (B[:, keep] - mean) / sd)
    np.testing.assert_allclose(Xtr[:, 2], 0.0)
    np.testing.assert_allclose(Xte[:, 2], B[:, 2] - 7.0)
    assert meta["standardize"] and len(meta["mean"]) == 5
    with pytest.raises(ValueError, match="same number of columns"):
        features.identity(A, B[:, :3])


# ----------------------------------------------------------------------------- scattering


def test_scattering_layout_matches_kymatio_paths():
    from kymatio.scattering2d.frontend.numpy_frontend import ScatteringNumPy2D

    lay = features.scattering_layout(2, 8, (28, 28))
    assert (lay["n_channels"], lay["n_positions"], lay["n_features"]) == (81, 49, 3969)
    assert lay["spatial_shape"] == [7, 7] and lay["group_size"] == 81
    assert lay["order"] == "position-major"
    paths = ScatteringNumPy2D(J=2, shape=(28, 28), L=8, out_type="list").scattering(
        np.zeros((1, 28, 28), np.float32))
    assert len(paths) == 81
    for c, p in zip(lay["channels"], paths):
        assert tuple(c["j"]) == tuple(p["j"]) and tuple(c["theta"]) == tuple(p["theta"])
        assert c["order"] == len(p["j"])
    json.dumps(lay)  # storable in meta.json
    with pytest.raises(ValueError, match="smaller than 2\\*\\*J"):
        features.scattering_layout(J=3, shape=(6, 28))


def test_scattering_is_position_major_reordering_of_kymatio(capsys):
    from kymatio.scattering2d.frontend.numpy_frontend import ScatteringNumPy2D

    rng = np.random.default_rng(2)
    imgs = rng.integers(0, 256, (5, 28, 28)).astype(np.uint8)
    S = features.scattering(imgs, batch_size=2, progress=True)
    err = capsys.readouterr().err
    assert "scattering" in err and "5/5" in err  # tqdm bar on stderr
    assert S.shape == (5, 3969) and S.dtype == np.float32
    K = ScatteringNumPy2D(J=2, shape=(28, 28), L=8).scattering(imgs.astype(np.float32) / 255)
    for i, c, r, q in [(0, 0, 0, 0), (1, 80, 6, 6), (2, 17, 3, 5), (4, 40, 5, 1)]:
        p = r * 7 + q
        np.testing.assert_allclose(S[i, p * 81 + c], K[i, c, r, q], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(S.reshape(5, 7, 7, 81), K.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-7)


def test_scattering_batches_scaling_and_out():
    rng = np.random.default_rng(3)
    imgs = rng.integers(0, 256, (7, 28, 28)).astype(np.uint8)
    a = features.scattering(imgs, batch_size=256, progress=False)
    b = features.scattering(imgs, batch_size=3, progress=False)
    np.testing.assert_array_equal(a, b)
    c = features.scattering(imgs.astype(np.float64) / 255.0, progress=False)
    np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    out = np.zeros((7, 3969), np.float32)
    assert features.scattering(imgs, progress=False, out=out) is out
    np.testing.assert_array_equal(out, a)
    with pytest.raises(ValueError, match="float32 of shape"):
        features.scattering(imgs, progress=False, out=np.zeros((7, 10), np.float32))
    with pytest.raises(ValueError, match=r"\(n, rows, cols\)"):
        features.scattering(imgs[0], progress=False)


def test_scattering_constant_image_and_position_of_a_blob():
    # a constant image: the low-pass channel is the constant everywhere, wavelet channels ~ 0
    S = features.scattering(np.full((1, 28, 28), 255, np.uint8), progress=False).reshape(49, 81)
    np.testing.assert_allclose(S[:, 0], 1.0, atol=1e-3)
    assert np.abs(S[:, 1:]).max() < 1e-3
    # a blob at pixel (row 6, col 22) peaks in channel 0 near position (6/4, 22/4)
    x = np.zeros((1, 28, 28), np.uint8)
    x[0, 5:8, 21:24] = 255
    S = features.scattering(x, progress=False).reshape(7, 7, 81)
    r, q = np.unravel_index(np.argmax(S[:, :, 0]), (7, 7))
    assert r in (1, 2) and q in (5, 6)


@pytest.mark.mirror
def test_scattering_real_images_group_channels_per_position(mirror_dir):
    from scipy.ndimage import gaussian_filter

    imgs = read_mnist_images(mirror_dir / fd.MNIST_FILES["test_images"])[:6]
    S = features.scattering(imgs, progress=False)
    assert S.shape == (6, 81 * 49) and S.dtype == np.float32 and np.isfinite(S).all()
    G = S.reshape(6, 49, 81)  # one group of 81 contiguous channels per position
    for i in range(6):
        low = G[i, :, 0].reshape(7, 7)  # order-0 channel at each position
        ref = gaussian_filter(imgs[i] / 255.0, sigma=0.8 * 4, mode="constant")[::4, ::4]
        same = np.corrcoef(low.ravel(), ref.ravel())[0, 1]
        swapped = np.corrcoef(low.ravel(), ref.T.ravel())[0, 1]
        assert same > 0.8 and same > swapped
        # energy: where the digit has ink, the position's group is larger
        ink = ref.ravel() > ref.mean()
        norms = np.linalg.norm(G[i], axis=1)
        assert norms[ink].mean() > 2 * norms[~ink].mean()


# --------------------------------------------------------------------------------- tf-idf

_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def _reference_tfidf(docs_train, docs_test, max_features):
    """Straightforward TF-IDF (smooth idf, raw counts, l2 rows) written from the definition."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    tok = [[t for t in _TOKEN.findall(d.lower()) if t not in ENGLISH_STOP_WORDS] for d in docs_train]
    total = {}
    for words in tok:
        for t in words:
            total[t] = total.get(t, 0) + 1
    order = sorted(total, key=lambda t: (-total[t], t))
    if max_features < len(order):
        # scikit-learn breaks ties at the cut arbitrarily: the test data must avoid them
        assert total[order[max_features - 1]] > total[order[max_features]], "tie at the cut"
    ranked = order[:max_features]
    vocab = sorted(ranked)
    col = {t: j for j, t in enumerate(vocab)}

    def counts(docs):
        C = np.zeros((len(docs), len(vocab)))
        for i, d in enumerate(docs):
            for t in _TOKEN.findall(d.lower()):
                if t in col:
                    C[i, col[t]] += 1
        return C

    Ctr, Cte = counts(docs_train), counts(docs_test)
    n = len(docs_train)
    idf = np.log((1 + n) / (1 + (Ctr > 0).sum(axis=0))) + 1
    out = []
    for C in (Ctr, Cte):
        T = C * idf
        nrm = np.linalg.norm(T, axis=1, keepdims=True)
        out.append(np.divide(T, nrm, out=np.zeros_like(T), where=nrm > 0))
    return out[0], out[1], vocab


def test_tfidf_matches_definition_and_fits_on_train_only():
    docs_train = [
        "Apples and oranges are fruit; apples are red.",
        "The orange car drove past the red barn.",
        "Fruit salad with apples, pears and grapes.",
        "Cars and trucks on the motorway at night.",
    ]
    docs_test = ["Red apples and a blue truck", "zebra unicorn", ""]
    for m in (3, 100):
        Xtr, Xte, vocab = features.tfidf(docs_train, docs_test, max_features=m)
        Rtr, Rte, rvocab = _reference_tfidf(docs_train, docs_test, m)
        assert vocab == rvocab
        assert sp.isspmatrix_csr(Xtr) and sp.isspmatrix_csr(Xte) and Xtr.dtype == np.float64
        np.testing.assert_allclose(Xtr.toarray(), Rtr, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(Xte.toarray(), Rte, rtol=1e-12, atol=1e-12)
    assert "the" not in vocab and "and" not in vocab and "zebra" not in vocab
    assert Xte[1].nnz == 0
    # the training features do not depend on the test documents
    Xtr2, _, _ = features.tfidf(docs_train, ["apples " * 50], max_features=100)
    assert (Xtr2 != Xtr).nnz == 0
    with pytest.raises(ValueError, match="no training documents"):
        features.tfidf([], docs_test)


@pytest.mark.mirror
@pytest.mark.slow
def test_news20_real_mirror_and_tfidf(mirror_dir):
    ds = load_news20(mirror_dir / fd.NEWS20_FILE)  # checks 11314 / 7532 / 20 by default
    assert len(ds.docs_train) == 11314 and len(ds.docs_test) == 7532
    assert ds.class_names == sorted(fd.NEWS20_GROUPS)
    assert np.bincount(ds.y_train).min() >= 377 and np.bincount(ds.y_test).size == 20
    Xtr, Xte, vocab = features.tfidf(ds.docs_train, ds.docs_test)
    assert Xtr.shape == (11314, 26214) and Xte.shape == (7532, 26214) and len(vocab) == 26214
    assert sp.isspmatrix_csr(Xtr) and Xtr.dtype == np.float64
    norms = np.sqrt(np.asarray(Xtr.multiply(Xtr).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms[norms > 0], 1.0, rtol=1e-10)
    assert (norms > 0).mean() > 0.99
    assert "the" not in set(vocab) and "god" in set(vocab)


# -------------------------------------------------------------------------------- storage


def _no_temp_files(directory):
    return [p.name for p in Path(directory).iterdir() if p.name.startswith(".")] == []


def test_save_load_dense_roundtrip_with_mmap(tmp_path):
    rng = np.random.default_rng(4)
    Xtr, Xte = rng.normal(size=(10, 6)).astype(np.float32), rng.normal(size=(4, 6)).astype(np.float32)
    ytr, yte = rng.integers(0, 3, 10), rng.integers(0, 3, 4)
    meta = features.save_features(tmp_path / "f", Xtr, ytr, Xte, yte,
                                  {"classes": ["a", "b", "c"], "layout": {"group_size": 3},
                                   "sources": {"x": "00"}})
    assert _no_temp_files(tmp_path / "f")
    on_disk = json.loads((tmp_path / "f" / "meta.json").read_text())
    assert on_disk == meta
    assert on_disk["shapes"] == {"train": [10, 6], "test": [4, 6]}
    assert on_disk["classes"] == ["a", "b", "c"] and on_disk["splits"]["train"]["format"] == "dense"
    assert {"numpy", "scipy", "scikit-learn"} <= set(on_disk["library_versions"])
    X, y = features.load_features(tmp_path / "f", "train")
    assert isinstance(X, np.memmap) and X.dtype == np.float32 and y.dtype == np.int64
    np.testing.assert_array_equal(X, Xtr)
    np.testing.assert_array_equal(y, ytr)
    X, y = features.load_features(tmp_path / "f", "test", indices=[3, 0], mmap=False)
    assert not isinstance(X, np.memmap)
    np.testing.assert_array_equal(X, Xte[[3, 0]])
    np.testing.assert_array_equal(y, yte[[3, 0]])


def test_save_load_sparse_and_train_rows(tmp_path):
    rng = np.random.default_rng(5)
    Xtr = sp.random(5, 8, density=0.3, format="csr", random_state=1)
    Xte = sp.random(3, 8, density=0.3, format="csr", random_state=2)
    rows = np.array([2, 7, 8, 20, 31])  # official indices of the stored training rows
    features.save_features(tmp_path, Xtr, np.arange(5), Xte, [0, 1, 2], train_rows=rows)
    X, y = features.load_features(tmp_path, "train", indices=np.array([20, 2]))
    assert sp.isspmatrix_csr(X)
    np.testing.assert_array_equal(X.toarray(), Xtr[[3, 0]].toarray())
    np.testing.assert_array_equal(y, [3, 0])
    with pytest.raises(ValueError, match=r"training rows \[3\] were not featurised"):
        features.load_features(tmp_path, "train", indices=[2, 3])
    X, _ = features.load_features(tmp_path, "test")
    np.testing.assert_array_equal(X.toarray(), Xte.toarray())
    # rewriting as dense replaces the sparse files
    features.save_features(tmp_path, Xtr.toarray(), np.arange(5), Xte.toarray(), [0, 1, 2])
    assert not (tmp_path / "X_train.npz").exists() and not (tmp_path / "rows_train.npy").exists()
    _ = rng


def test_storage_errors(tmp_path):
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="3 training rows but 2 labels"):
        features.save_features(tmp_path, X, [0, 1], X, [0, 1, 2])
    with pytest.raises(ValueError, match="train has 2 features, test has 4"):
        features.save_features(tmp_path, X, [0, 1, 2], np.zeros((3, 4)), [0, 1, 2])
    with pytest.raises(ValueError, match="strictly increasing"):
        features.save_features(tmp_path, X, [0, 1, 2], X, [0, 1, 2], train_rows=[3, 1, 2])
    with pytest.raises(ValueError, match="no meta.json"):
        features.load_features(tmp_path / "nothing", "train")
    features.save_features(tmp_path, X, [0, 1, 2], X, [0, 1, 2])
    with pytest.raises(ValueError, match="split must be"):
        features.load_features(tmp_path, "valid")
    with pytest.raises(ValueError, match="out of range"):
        features.load_features(tmp_path, "test", indices=[5])
    with pytest.raises(ValueError, match="1-D integer"):
        features.load_features(tmp_path, "test", indices=[0.5])


def test_oversampled_scattering_interleaves_shifted_transforms():
    rng = np.random.default_rng(6)
    imgs = np.zeros((3, 28, 28), np.uint8)
    imgs[:, 4:24, 4:24] = rng.integers(0, 256, (3, 20, 20))  # MNIST-like empty border
    base = features.scattering(imgs, progress=False).reshape(3, 7, 7, 81)
    over = features.scattering(imgs, progress=False, oversample=2)
    lay = features.scattering_layout(oversample=2)
    assert over.shape == (3, 81 * 196) == (3, lay["n_features"])
    assert lay["spatial_shape"] == [14, 14] and lay["stride"] == 2
    big = over.reshape(3, 14, 14, 81)
    np.testing.assert_array_equal(big[:, ::2, ::2], base)  # offset (0, 0) = kymatio's maps
    # offset (1, 1) = maps of the image moved 2 pixels up and left
    moved = np.zeros_like(imgs)
    moved[:, :26, :26] = imgs[:, 2:, 2:]
    ref = features.scattering(moved, progress=False).reshape(3, 7, 7, 81)
    np.testing.assert_array_equal(big[:, 1::2, 1::2], ref)
    with pytest.raises(ValueError, match="power of 2"):
        features.scattering(imgs, progress=False, oversample=3)


def test_stored_files_get_the_usual_permissions(tmp_path):
    import os
    import stat

    mask = os.umask(0o022)
    try:
        features.save_features(tmp_path, np.zeros((2, 2)), [0, 1], np.zeros((1, 2)), [1])
    finally:
        os.umask(mask)
    for name in ("X_train.npy", "y_test.npy", "meta.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name
