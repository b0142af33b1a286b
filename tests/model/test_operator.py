"""MulticlassOperator against an explicit matrix built entry by entry from the
definition (T X)[l, k] = S[l, k] - S[l, z_l], for dense and CSR features."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import make_random_problem

from sparsesvm.model.operator import TUNE_MIN_SIZE, DenseProducts, MulticlassOperator, SparseProducts, power_norm


def make_problem(L, M, K, seed=0, density=None):
    """Random labels (every class present when L >= K), dense or sparse rows: (Phi, y)."""
    return make_random_problem(seed, L, M, K, labels="random", density=density)[:2]


def explicit_matrix(Phi, y, K):
    """Matrix A of shape (L*K, (M+1)*K) with vec_rowmajor(T X) = A vec_rowmajor(X)."""
    Phi = Phi.toarray() if sp.issparse(Phi) else np.asarray(Phi, float)
    L, M = Phi.shape
    aug = np.hstack([Phi, np.ones((L, 1))])  # only in the test: explicit [Phi 1]
    A = np.zeros((L * K, (M + 1) * K))
    for l in range(L):
        for k in range(K):
            for j in range(M + 1):
                # S[l, k] = sum_j aug[l, j] X[j, k]
                A[l * K + k, j * K + k] += aug[l, j]
                A[l * K + k, j * K + y[l]] -= aug[l, j]
    return A


SHAPES = [(5, 4, 3), (8, 3, 2), (12, 6, 5), (3, 1, 4)]


@pytest.mark.parametrize("L,M,K", SHAPES)
@pytest.mark.parametrize("sparse", [False, True])
def test_T_and_adjoint_match_explicit_matrix(L, M, K, sparse):
    Phi, y = make_problem(L, M, K, seed=L + M + K, density=0.5 if sparse else None)
    op = MulticlassOperator(Phi, y, K)
    A = explicit_matrix(Phi, y, K)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(M + 1, K))
    Y = rng.normal(size=(L, K))
    np.testing.assert_allclose(op.T(X).ravel(), A @ X.ravel(), atol=1e-12)
    np.testing.assert_allclose(op.T_adjoint(Y).ravel(), A.T @ Y.ravel(), atol=1e-12)
    # adjoint identity
    np.testing.assert_allclose(np.vdot(op.T(X), Y), np.vdot(X, op.T_adjoint(Y)), rtol=1e-12)
    # the true-class column is exactly zero
    assert np.all(op.T(X)[np.arange(L), y] == 0.0)
    # scores
    dense = Phi.toarray() if sparse else Phi
    np.testing.assert_allclose(op.scores(X), dense @ X[:-1] + X[-1], atol=1e-12)
    # ||T|| against the largest singular value of the explicit matrix
    s_max = np.linalg.svd(A, compute_uv=False)[0]
    np.testing.assert_allclose(op.norm(max_iter=5000, tol=1e-12, method="power"), s_max, rtol=1e-6)
    np.testing.assert_allclose(op.exact_norm(), s_max, rtol=1e-12)
    np.testing.assert_allclose(op.gram(), dense @ dense.T, atol=1e-12)
    assert op.gram() is op.gram() and not op.gram().flags.writeable
    np.testing.assert_allclose(op.norm(), s_max, rtol=1e-12)  # small L K: exact by default
    # the bound ||T|| <= sqrt(K) ||[Phi 1]||
    aug = np.hstack([dense, np.ones((L, 1))])
    assert op.norm() <= np.sqrt(K) * np.linalg.norm(aug, 2) * (1 + 1e-12)
    assert op.norm(method="power") <= s_max * (1 + 1e-12)  # power iteration gives a lower bound


def test_adjoint_identity_larger_sparse_and_dense_agree():
    L, M, K = 60, 200, 7
    Phi, y = make_problem(L, M, K, seed=3, density=0.05)
    ops = MulticlassOperator(Phi, y, K)
    opd = MulticlassOperator(Phi.toarray(), y, K)
    assert sp.isspmatrix_csr(ops.Phi) or sp.issparse(ops.Phi)
    assert ops.Phi.nnz == Phi.nnz  # never densified
    rng = np.random.default_rng(0)
    for _ in range(3):
        X = rng.normal(size=(M + 1, K))
        Y = rng.normal(size=(L, K))
        np.testing.assert_allclose(np.vdot(ops.T(X), Y), np.vdot(X, ops.T_adjoint(Y)), rtol=1e-11)
        np.testing.assert_allclose(ops.T(X), opd.T(X), atol=1e-12)
        np.testing.assert_allclose(ops.T_adjoint(Y), opd.T_adjoint(Y), atol=1e-12)
    np.testing.assert_allclose(ops.norm(), opd.norm(), rtol=1e-9)


def test_offset_R_and_attributes():
    Phi, y = make_problem(9, 4, 3, seed=2)
    op = MulticlassOperator(Phi, y, 3)
    assert (op.n_samples, op.n_features, op.n_classes) == (9, 4, 3)
    expect = np.ones((9, 3))
    for l in range(9):
        expect[l, y[l]] = 0.0
    np.testing.assert_array_equal(op.R, expect)
    # h_l(T X) is the Crammer-Singer hinge max(0, 1 + max_{k != z} S_k - S_z)
    X = np.random.default_rng(0).normal(size=(5, 3))
    S = Phi @ X[:-1] + X[-1]
    hinge = [max(0.0, 1 + max(S[l, k] - S[l, y[l]] for k in range(3) if k != y[l])) for l in range(9)]
    np.testing.assert_allclose((op.T(X) + op.R).max(1), hinge, atol=1e-12)


def test_norm_reproducible_and_cached():
    Phi, y = make_problem(30, 20, 4, seed=5)
    a = MulticlassOperator(Phi, y, 4).norm()
    op = MulticlassOperator(Phi, y, 4)
    b = op.norm()
    assert a == b and op.norm_ == b
    p = op.norm(method="power")
    assert p == pytest.approx(b, rel=1e-5) and p == op.norm(method="power")
    assert op.norm(rng=np.random.default_rng(123), method="power") == pytest.approx(p, rel=1e-5)
    assert op.norm(rng=7, method="power") == pytest.approx(p, rel=1e-5)


def test_dtype_promotion_and_inputs_not_modified():
    Phi, y = make_problem(10, 6, 3, seed=4)
    op32 = MulticlassOperator(Phi.astype(np.float32), y, 3)
    assert op32.Phi.dtype == np.float64
    X = np.random.default_rng(0).normal(size=(7, 3))
    assert op32.T(X.astype(np.float32)).dtype == np.float64
    Y = np.random.default_rng(1).normal(size=(10, 3))
    Yc = Y.copy()
    op32.T_adjoint(Y)
    np.testing.assert_array_equal(Y, Yc)
    # CSC input is accepted (converted to CSR once)
    opc = MulticlassOperator(sp.csc_matrix(Phi), y, 3)
    np.testing.assert_allclose(opc.T(X), op32.T(X), atol=1e-6)
    # integer-valued float labels are accepted
    MulticlassOperator(Phi, y.astype(float), 3)


def test_bad_inputs_raise():
    Phi, y = make_problem(6, 4, 3, seed=1)
    with pytest.raises(ValueError, match="n_classes"):
        MulticlassOperator(Phi, y, 1)
    with pytest.raises(ValueError, match="n_classes"):
        MulticlassOperator(Phi, y, 2.5)
    with pytest.raises(ValueError, match="2-D"):
        MulticlassOperator(Phi[0], y[:1], 3)
    with pytest.raises(ValueError, match="length"):
        MulticlassOperator(Phi, y[:-1], 3)
    with pytest.raises(ValueError, match="y_idx must lie in"):
        MulticlassOperator(Phi, np.where(y == 0, 3, y), 3)
    with pytest.raises(ValueError, match="y_idx must lie in"):
        MulticlassOperator(Phi, np.where(y == 0, -1, y), 3)
    with pytest.raises(ValueError, match="integer"):
        MulticlassOperator(Phi, y + 0.5, 3)
    bad = Phi.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MulticlassOperator(bad, y, 3)
    bads = sp.csr_matrix(Phi)
    bads.data[0] = np.inf
    with pytest.raises(ValueError, match="NaN or inf"):
        MulticlassOperator(bads, y, 3)
    with pytest.raises(ValueError, match="numeric"):
        MulticlassOperator(np.array([["a"]] * 6), y, 3)
    op = MulticlassOperator(Phi, y, 3)
    with pytest.raises(ValueError, match="X must have shape"):
        op.T(np.ones((4, 3)))
    with pytest.raises(ValueError, match="Y must have shape"):
        op.T_adjoint(np.ones((6, 2)))
    with pytest.raises(ValueError, match="max_iter"):
        op.norm(max_iter=0, method="power")
    with pytest.raises(ValueError, match="rng"):
        op.norm(rng="seed", method="power")
    with pytest.raises(ValueError, match="method"):
        op.norm(method="lanczos")


@pytest.mark.parametrize("shape", [(30, 7), (7, 30), (1, 5), (40, 40)])
def test_power_norm_is_the_spectral_norm(shape):
    rng = np.random.default_rng(sum(shape))
    A = rng.standard_normal(shape)
    est = power_norm(lambda x: A @ x, lambda u: A.T @ u, (shape[1],), max_iter=5000, tol=1e-13)
    assert est == pytest.approx(np.linalg.norm(A, 2), rel=1e-9)
    assert est <= np.linalg.norm(A, 2) * (1 + 1e-12)  # a lower bound
    # few iterations: still a lower bound; a generator or a seed gives the same start
    rough = power_norm(lambda x: A @ x, lambda u: A.T @ u, (shape[1],), max_iter=2)
    assert rough <= np.linalg.norm(A, 2) * (1 + 1e-12)
    assert power_norm(lambda x: A @ x, lambda u: A.T @ u, (shape[1],), rng=3) == power_norm(
        lambda x: A @ x, lambda u: A.T @ u, (shape[1],), rng=np.random.default_rng(3))


def test_power_norm_of_a_map_on_matrices_and_of_zero():
    rng = np.random.default_rng(2)
    B = rng.standard_normal((6, 4))
    # X (4, 3) -> B X: its norm is ||B||
    est = power_norm(lambda X: B @ X, lambda U: B.T @ U, (4, 3), max_iter=5000, tol=1e-13)
    assert est == pytest.approx(np.linalg.norm(B, 2), rel=1e-9)
    assert power_norm(lambda x: 0.0 * x, lambda u: 0.0 * u, (5,)) == 0.0


# --------------------------------------------------------------------------- #
# float32 products (dtype=numpy.float32)
# --------------------------------------------------------------------------- #
def numpy_products(Phi, y, K, X, Y):
    """``T X`` and ``T^T Y`` from the definition, in float64 numpy, independent of the operator."""
    P = Phi.toarray() if sp.issparse(Phi) else np.asarray(Phi, np.float64)
    L = P.shape[0]
    S = P @ X[:-1] + X[-1]
    TX = S - S[np.arange(L), y][:, None]
    G = Y.copy()
    G[np.arange(L), y] -= Y.sum(axis=1)
    return TX, np.vstack([P.T @ G, G.sum(axis=0)]), P


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_products_agree_with_float64_to_float32_accuracy(sparse):
    L, M, K = 40, 300, 6
    Phi, y = make_problem(L, M, K, seed=4, density=0.2 if sparse else None)
    Phi = Phi.astype(np.float32)  # stored single, as the MNIST features
    op = MulticlassOperator(Phi, y, K, dtype=np.float32)
    assert op.dtype == np.float32 and op.double().dtype == np.float64
    rng = np.random.default_rng(2)
    X = rng.normal(size=(M + 1, K))
    Y = rng.normal(size=(L, K))
    TX_ref, TtY_ref, P = numpy_products(Phi, y, K, X, Y)
    TX, TtY = op.T(X), op.T_adjoint(Y)
    # float64 results (what the solvers and the compiled kernels take), C-ordered
    for A in (TX, TtY, op.scores(X)):
        assert A.dtype == np.float64 and A.flags.c_contiguous
    # error bound of a float32 product: a few units of float32 rounding times the sum of |terms|
    eps = np.finfo(np.float32).eps
    TX_bound = 2 * (np.abs(P) @ np.abs(X[:-1])).max() * eps * 8
    assert np.abs(TX - TX_ref).max() <= TX_bound
    assert np.abs(TX - TX_ref).max() > 0  # the products did run in float32
    G = np.abs(Y) + np.abs(Y).sum(axis=1, keepdims=True)
    assert np.abs(TtY[:-1] - TtY_ref[:-1]).max() <= (np.abs(P).T @ G).max() * eps * 8
    # the bias row and the true-class zeros stay exact float64
    np.testing.assert_allclose(TtY[-1], TtY_ref[-1], rtol=1e-13, atol=1e-13)
    assert np.all(TX[np.arange(L), y] == 0.0)
    # adjoint identity to float32 accuracy
    np.testing.assert_allclose(np.vdot(TX, Y), np.vdot(X, TtY), rtol=1e-5)


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_operator_keeps_float64_for_everything_else(sparse):
    L, M, K = 30, 50, 4
    Phi, y = make_problem(L, M, K, seed=5, density=0.3 if sparse else None)
    op64 = MulticlassOperator(Phi, y, K)
    op32 = MulticlassOperator(Phi, y, K, dtype="float32")
    # Phi, the norms and the Gram matrix are float64, identical to the default operator's
    assert op32.Phi.dtype == np.float64
    assert op32.norm(method="power") == op64.norm(method="power")
    assert op32.exact_norm() == op64.exact_norm()
    np.testing.assert_array_equal(op32.gram(), op64.gram())
    # double(): the float64 products of the default operator, bit for bit
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(M + 1, K)), rng.normal(size=(L, K))
    exact = op32.double()
    assert exact.double() is exact and exact.Phi is op32.Phi
    np.testing.assert_array_equal(exact.T(X), op64.T(X))
    np.testing.assert_array_equal(exact.T_adjoint(Y), op64.T_adjoint(Y))


def test_default_operator_is_float64_and_its_own_double():
    Phi, y = make_problem(10, 6, 3, seed=1)
    op = MulticlassOperator(Phi.astype(np.float32), y, 3)
    assert op.dtype == np.float64 and op.double() is op
    assert not hasattr(op, "_Phi32")  # no float32 copy unless asked


@pytest.mark.parametrize("dtype", [np.float16, np.int32, "double-ish", None])
def test_bad_dtype_is_refused(dtype):
    Phi, y = make_problem(10, 6, 3, seed=1)
    with pytest.raises(ValueError, match="dtype .*float64 or float32"):
        MulticlassOperator(Phi, y, 3, dtype=dtype)


def test_float32_refuses_features_beyond_its_range():
    Phi, y = make_problem(10, 6, 3, seed=1)
    Phi[0, 0] = 1e39
    with pytest.raises(ValueError, match="float32 range"):
        MulticlassOperator(Phi, y, 3, dtype=np.float32)


# --------------------------------------------------------------------------- BLAS orientations

@pytest.mark.parametrize("L,M,K", [(30, 400, 10), (7, 1000, 3), (200, 64, 5)])
def test_dense_products_agree_in_both_orientations(L, M, K):
    """Each product, forced into either BLAS orientation, against a long-double sum."""
    rng = np.random.default_rng(L + M + K)
    Phi = np.ascontiguousarray(np.abs(rng.standard_normal((L, M))))
    W = rng.standard_normal((M + 1, K))[:-1]  # a row slice, as the solvers pass X[:-1]
    G = rng.standard_normal((L, K))
    exact_S = (Phi.astype(np.longdouble) @ W.astype(np.longdouble)).astype(float)
    exact_V = (Phi.T.astype(np.longdouble) @ G.astype(np.longdouble)).astype(float)
    prods = DenseProducts(Phi, K)
    for transposed in (False, True):
        prods.transposed = {"forward": transposed, "adjoint": transposed}
        S = prods.forward(W)
        assert S.shape == (L, K) and S.flags.c_contiguous
        np.testing.assert_allclose(S, exact_S, rtol=1e-13, atol=1e-13 * np.abs(exact_S).max())
        out = np.full((M + 1, K), np.nan)
        assert prods.adjoint(G, out[:-1]) is not None
        np.testing.assert_allclose(out[:-1], exact_V, rtol=1e-13, atol=1e-13 * np.abs(exact_V).max())
        assert np.isnan(out[-1]).all()  # only the rows it was given are written


def test_tune_times_both_orientations_once_above_the_size_threshold(monkeypatch):
    rng = np.random.default_rng(0)
    big = DenseProducts(np.abs(rng.standard_normal((60, 1000))), 10)  # 600000 >= TUNE_MIN_SIZE
    choice = big.tune()
    assert set(choice) == {"forward", "adjoint"}
    assert {"forward", "adjoint"} <= set(big.timings) <= {"forward", "adjoint", "sparse_forward"}
    for name in ("forward", "adjoint"):
        t = big.timings[name]
        assert t["direct"] > 0 and t["transposed"] > 0
        assert choice[name] == (t["transposed"] < t["direct"])
    # a second call does not time again
    monkeypatch.setattr(DenseProducts, "forward", lambda *a: pytest.fail("timed twice"))
    assert big.tune() is choice
    small = DenseProducts(np.ones((10, 20)), 3)  # 600 < TUNE_MIN_SIZE: direct, not timed
    assert small.tune() == {"forward": False, "adjoint": False} and small.timings == {}
    assert TUNE_MIN_SIZE == 500_000


def _block_sparse(rng, M, K, density, run=8):
    """(M, K) weights, zero in runs of ``run`` rows within a class (as group penalties leave them)."""
    on = rng.random((-(-M // run), 1, K)) < density
    mask = np.broadcast_to(on, (on.shape[0], run, K)).reshape(-1, K)[:M]
    return rng.standard_normal((M, K)) * mask


@pytest.mark.parametrize("M", [500, 503])  # a whole number of fours of rows, and three more
@pytest.mark.parametrize("pattern", ["blocks", "entries", "zero", "one class", "dense"])
def test_sparse_forward_product_against_long_double(pattern, M):
    """The compiled product over the non-zero weights, against a long-double sum."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(7)
    L, K = 23, 6
    Phi = np.ascontiguousarray(rng.standard_normal((L, M)))
    W = {"blocks": lambda: _block_sparse(rng, M, K, 0.3),
         "entries": lambda: rng.standard_normal((M, K)) * (rng.random((M, K)) < 0.2),
         "zero": lambda: np.zeros((M, K)),
         "one class": lambda: np.outer(rng.standard_normal(M), np.eye(K)[2]),
         "dense": lambda: rng.standard_normal((M, K))}[pattern]()
    exact = (Phi.astype(np.longdouble) @ W.astype(np.longdouble)).astype(float)
    S = DenseProducts(Phi, K).forward_sparse(np.vstack([W, np.ones(K)])[:-1])  # as X[:-1]
    assert S.shape == (L, K) and S.flags.c_contiguous
    np.testing.assert_allclose(S, exact, rtol=1e-13, atol=1e-13 * max(np.abs(exact).max(), 1.0))
    if pattern == "zero":
        assert not S.any()


def test_forward_takes_the_sparse_product_below_its_measured_limit(monkeypatch):
    """tune_sparse() times the sparse product and sets the non-zeros below which forward() uses it."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    Phi = np.ascontiguousarray(np.abs(rng.standard_normal((60, 1000))))  # above TUNE_MIN_SIZE
    prods = DenseProducts(Phi, 10)
    prods.tune()
    assert "sparse_forward" not in prods.timings and prods.sparse_max_nnz == 0  # not asked
    prods.tune_sparse()
    t = prods.timings["sparse_forward"]
    dense = min(prods.timings["forward"].values())
    assert prods.sparse_max_nnz == t["max_nnz"] == int(0.9 * t["nnz"] * dense / t["seconds"])
    prods.sparse_max_nnz = 2000  # pinned for the test: whatever this machine measured
    prods.skip_zero_weights = True
    sparse_W = _block_sparse(rng, 1000, 10, 0.1)
    assert np.count_nonzero(sparse_W) <= 2000
    exact = (Phi.astype(np.longdouble) @ sparse_W.astype(np.longdouble)).astype(float)
    calls = []
    real = DenseProducts.forward_sparse
    monkeypatch.setattr(DenseProducts, "forward_sparse",
                        lambda self, W: calls.append(1) or real(self, W))
    np.testing.assert_allclose(prods.forward(sparse_W), exact, rtol=1e-12, atol=1e-12)
    assert calls == [1]
    prods.forward(rng.standard_normal((1000, 10)))  # dense: BLAS
    prods.forward(sparse_W, transposed=False)  # an orientation asked for: BLAS
    assert calls == [1]


@pytest.mark.parametrize("pattern", ["entries", "odd and even counts", "zero", "one class",
                                     "one sample", "dense"])
def test_sparse_adjoint_product_against_long_double(pattern):
    """The compiled adjoint over the non-zero entries of G, against a long-double sum:
    every count of non-zeros in a class (0 to L, odd and even: the kernel's first pass,
    its fours and its last pair)."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(11)
    L, M, K = 13, 301, 14
    Phi = np.ascontiguousarray(rng.standard_normal((L, M)))
    counts = np.zeros((L, K), bool)
    for k in range(K):  # class k: its first k samples (k = 0 .. 13 non-zeros)
        counts[:k, k] = True
    G = rng.standard_normal((L, K)) * {
        "entries": lambda: rng.random((L, K)) < 0.3,
        "odd and even counts": lambda: counts,
        "zero": lambda: np.zeros((L, K), bool),
        "one class": lambda: np.eye(K, dtype=bool)[[3] * L],
        "one sample": lambda: np.eye(L, dtype=bool)[:, [5] * K],
        "dense": lambda: np.ones((L, K), bool)}[pattern]()
    exact = (Phi.T.astype(np.longdouble) @ G.astype(np.longdouble)).astype(float)
    full = np.full((M + 1, K), np.nan)  # written into the rows of a (M + 1, K) array, as T_adjoint does
    out = DenseProducts(Phi, K).adjoint_sparse(G, full[:-1])
    assert out.base is full and np.isnan(full[-1]).all()
    np.testing.assert_allclose(out, exact, rtol=1e-13, atol=1e-13 * max(np.abs(exact).max(), 1.0))
    if pattern == "zero":
        assert not out.any()


def test_sparse_products_on_read_only_arrays():
    """Features memory-mapped read-only from disk (the workflow's jobs) and read-only
    weights and duals go through the sparse products as through BLAS'."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(2)
    Phi = np.ascontiguousarray(rng.standard_normal((20, 120)))
    Phi.setflags(write=False)
    W = rng.standard_normal((120, 4)) * (rng.random((120, 4)) < 0.3)
    G = rng.standard_normal((20, 4)) * (rng.random((20, 4)) < 0.3)
    W.setflags(write=False)
    G.setflags(write=False)
    prods = DenseProducts(Phi, 4)
    np.testing.assert_allclose(prods.forward_sparse(W), Phi @ W, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(prods.adjoint_sparse(G, np.empty((120, 4))), Phi.T @ G,
                               rtol=1e-13, atol=1e-13)
    # and through forward() and adjoint(), whose count of non-zeros picks them (the
    # compiled count once tune_sparse has loaded it, on read-only arrays too)
    from sparsesvm.solvers import _kernels

    count = _kernels.nonzero_count()
    assert count(W) == np.count_nonzero(W) and count(G) == np.count_nonzero(G)
    prods._count = count
    prods.skip_zero_weights = True
    prods.sparse_max_nnz = prods.sparse_adjoint_max_nnz = 10**9
    np.testing.assert_allclose(prods.forward(W), Phi @ W, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(prods.adjoint(G, np.empty((120, 4))), Phi.T @ G,
                               rtol=1e-13, atol=1e-13)


def test_adjoint_takes_the_sparse_product_below_its_measured_limit(monkeypatch):
    """tune_sparse() times the sparse adjoint empty and at a quarter density, and sets the
    non-zeros of G up to which the line through the two beats 0.9 times BLAS' product;
    adjoint() takes it then (only with skip_zero_weights and no orientation asked for)."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    Phi = np.ascontiguousarray(np.abs(rng.standard_normal((60, 1000))))  # above TUNE_MIN_SIZE
    prods = DenseProducts(Phi, 10)
    prods.tune()
    assert "sparse_adjoint" not in prods.timings and prods.sparse_adjoint_max_nnz == 0
    prods.tune_sparse()
    t = prods.timings["sparse_adjoint"]
    budget = 0.9 * min(prods.timings["adjoint"].values()) - t["seconds_empty"]
    expected = (0 if budget <= 0 else 600 if t["seconds"] <= t["seconds_empty"]
                else min(600, int(budget * t["nnz"] / (t["seconds"] - t["seconds_empty"]))))
    assert prods.sparse_adjoint_max_nnz == t["max_nnz"] == expected
    assert 0 < t["nnz"] < 600
    prods.sparse_adjoint_max_nnz = 100  # pinned for the test: whatever this machine measured
    calls = []
    real = DenseProducts.adjoint_sparse
    monkeypatch.setattr(DenseProducts, "adjoint_sparse",
                        lambda self, G, out: calls.append(1) or real(self, G, out))
    G = rng.standard_normal((60, 10)) * (rng.random((60, 10)) < 0.1)
    assert np.count_nonzero(G) <= 100
    out = np.empty((1000, 10))
    exact = (Phi.T.astype(np.longdouble) @ G.astype(np.longdouble)).astype(float)
    prods.adjoint(G, out)  # skip_zero_weights not set: BLAS
    assert calls == []
    prods.skip_zero_weights = True
    np.testing.assert_allclose(prods.adjoint(G, out), exact, rtol=1e-12, atol=1e-12)
    assert calls == [1]
    prods.adjoint(rng.standard_normal((60, 10)), out)  # dense: BLAS
    prods.adjoint(G, out, transposed=False)  # an orientation asked for: BLAS
    prods.adjoint(G, np.empty((10, 1000)).T)  # an F-ordered out: BLAS
    assert calls == [1]


def test_no_sparse_product_without_the_kernel(monkeypatch):
    from sparsesvm.solvers import _kernels

    monkeypatch.setattr(_kernels, "sparse_forward", lambda: None)
    monkeypatch.setattr(_kernels, "sparse_adjoint", lambda: None)
    prods = DenseProducts(np.abs(np.random.default_rng(0).standard_normal((60, 1000))), 10)
    prods.tune_sparse()
    assert prods.sparse_max_nnz == 0 and "sparse_forward" not in prods.timings
    assert prods.sparse_adjoint_max_nnz == 0 and "sparse_adjoint" not in prods.timings
    assert prods._PhiT is None  # no copy of Phi^T kept


@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con", "logit"])
def test_sparse_products_do_not_change_a_fit(method, monkeypatch):
    """A paper fit (or logit's forward-backward) whose products skip the zero weights and
    the zero entries of G, against one with BLAS': the same iterates to rounding."""
    pytest.importorskip("numba")
    from sparsesvm.model.penalties import make_penalty
    from sparsesvm.solvers import hinge_con, hinge_reg, logit

    Phi, y = make_problem(40, 300, 4, seed=3)
    pen = make_penalty("l1inf", 5, 300, 4)
    fit = {"hinge-reg": lambda op: hinge_reg(op, pen, 10.0, tol=0.0, max_iter=300),
           "hinge-con": lambda op: hinge_con(op, pen, 8.0, tol=0.0, max_iter=300),
           "logit": lambda op: logit(op, pen, 0.3, tol=0.0, max_iter=300)}[method]
    calls = {"forward": 0, "adjoint": 0}
    real = {"forward": DenseProducts.forward_sparse, "adjoint": DenseProducts.adjoint_sparse}

    def counted(name):
        def call(self, *args):
            calls[name] += 1
            return real[name](self, *args)
        return call

    monkeypatch.setattr(DenseProducts, "forward_sparse", counted("forward"))
    monkeypatch.setattr(DenseProducts, "adjoint_sparse", counted("adjoint"))
    results = []
    for limit in (0, 10**9):
        op = MulticlassOperator(Phi, y, 4)
        op.products.transposed = {"forward": False, "adjoint": False}
        op.products.sparse_max_nnz = limit  # never / always the sparse products
        op.products.sparse_adjoint_max_nnz = limit
        results.append(fit(op))
        assert op.products.skip_zero_weights  # these loops ask for it
        assert (min(calls.values()) > 0) == (limit > 0)
    assert 0 < np.count_nonzero(results[1].X[:-1]) < results[1].X[:-1].size
    np.testing.assert_allclose(results[0].X, results[1].X, rtol=1e-9, atol=1e-12)


def test_the_sparse_product_is_timed_only_when_asked_for(monkeypatch):
    """A solver that keeps BLAS' product does not load the compiled kernels for the other."""
    from sparsesvm.solvers import _kernels

    monkeypatch.setattr(_kernels, "sparse_forward", lambda: pytest.fail("kernel loaded"))
    Phi, y = make_problem(60, 1000, 10, seed=1)
    op = MulticlassOperator(Phi, y, 10).prepare()
    assert op.products.transposed is not None and "sparse_forward" not in op.products.timings


def test_no_timing_with_sparsesvm_tune_0(monkeypatch):
    """SPARSESVM_TUNE=0: direct orientations, no sparse product, nothing timed."""
    monkeypatch.setenv("SPARSESVM_TUNE", "0")
    monkeypatch.setattr("sparsesvm.model.operator._seconds", lambda *a: pytest.fail("timed"))
    prods = DenseProducts(np.abs(np.random.default_rng(0).standard_normal((60, 1000))), 10)
    prods.tune_sparse()
    assert prods.transposed == {"forward": False, "adjoint": False}
    assert prods.timings == {} and prods.sparse_max_nnz == 0


def test_only_the_loops_without_momentum_skip_zero_weights():
    """The primal-dual loops and forward-backward skip zero weights; FISTA (square, logit's
    "fista" scheme) keeps BLAS' product (its restarts are discrete decisions)."""
    from sparsesvm.model.penalties import make_penalty
    from sparsesvm.solvers import hinge_reg, logit, square

    Phi, y = make_problem(40, 300, 4, seed=3)
    pen = make_penalty("l1inf", 5, 300, 4)
    op = MulticlassOperator(Phi, y, 4)
    hinge_reg(op, pen, 10.0, tol=0.0, max_iter=5)
    assert op.products.skip_zero_weights
    square(op, pen, 10.0, tol=0.0, max_iter=5)
    assert not op.products.skip_zero_weights
    logit(op, pen, 10.0, tol=0.0, max_iter=5)
    assert op.products.skip_zero_weights
    logit(op, pen, 10.0, tol=0.0, max_iter=5, scheme="fista")
    assert not op.products.skip_zero_weights
    assert op.prepare(skip_zero_weights=True).products.skip_zero_weights
    assert not op.prepare().products.skip_zero_weights


def test_operator_orientation_does_not_change_a_fit():
    """A paper fit with each product forced into either orientation: the same iterates
    (to rounding; bitwise where BLAS sums in the same order)."""
    from sparsesvm.model.penalties import make_penalty
    from sparsesvm.solvers import hinge_reg

    Phi, y = make_problem(40, 300, 4, seed=3)
    pen = make_penalty("l1inf", 5, 300, 4)
    results = []
    for transposed in (False, True):
        op = MulticlassOperator(Phi, y, 4)
        op.products.transposed = {"forward": transposed, "adjoint": transposed}
        results.append(hinge_reg(op, pen, 10.0, tol=0.0, max_iter=300))
    assert results[0].n_iter == results[1].n_iter == 300
    np.testing.assert_allclose(results[0].X, results[1].X, rtol=1e-9, atol=1e-12)


def test_prepare_sets_up_the_products_of_either_kind():
    Phi, y = make_problem(60, 1000, 10, seed=1)
    op = MulticlassOperator(Phi, y, 10)
    assert isinstance(op.products, DenseProducts) and op.products.transposed is None
    assert op.prepare() is op and op.products.transposed is not None
    sparse = MulticlassOperator(sp.random(60, 1000, density=0.1, format="csr", random_state=0),
                                y, 10)
    assert isinstance(sparse.products, SparseProducts) and sparse.products.compiled is None
    assert sparse.prepare() is sparse and sparse.products.compiled is not None


# --------------------------------------------------------------------------- sparse Phi: compiled products

@pytest.mark.parametrize("row_density", [1.0, 0.3, 0.0])
def test_compiled_sparse_products_are_scipys_to_the_bit(row_density):
    """[Phi 1] @ X by the columns of [Phi 1], skipping the zero rows of X, and [Phi^T; 1^T] @ G
    by its rows: scipy's sums, bitwise (and against explicit dense products)."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    L, M, K = 70, 900, 12
    Phi = sp.random(L, M, density=0.05, format="csr", random_state=1)
    y = rng.integers(0, K, L)
    X = rng.standard_normal((M + 1, K)) * (rng.random((M + 1, 1)) < row_density)
    X[3, 5] = 2.0  # a row with one non-zero entry
    X[7] = -0.0  # negative zeros: a zero row too
    X[-1] = rng.standard_normal(K)  # the biases
    op = MulticlassOperator(Phi, y, K)
    plain = op.scores(X)
    Y = rng.standard_normal((L, K))
    plain_adjoint = op.T_adjoint(Y)
    assert op.products.compiled is None  # before prepare: scipy's products
    assert op.prepare() is op and op.products.compiled
    assert set(op.products.timings) == {"forward", "adjoint"}  # each timed against scipy's
    op.products.use = {"forward": True, "adjoint": True}  # whatever the timings chose
    S = op.scores(X)
    assert S.shape == (L, K) and S.flags.c_contiguous
    np.testing.assert_array_equal(S, plain)
    np.testing.assert_array_equal(op.T(X), np.asarray(op._Phi1 @ X) - np.asarray(
        op._Phi1 @ X)[np.arange(L), y][:, None])
    for compiled in (False, True):  # each product asked for explicitly
        np.testing.assert_array_equal(op.products.forward(X, compiled), plain)
    np.testing.assert_allclose(S, Phi.toarray() @ X[:-1] + X[-1], rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(op.scores(np.asfortranarray(X)), plain)  # any memory order
    V = op.T_adjoint(Y)
    assert V.shape == (M + 1, K) and V.flags.c_contiguous
    np.testing.assert_array_equal(V, plain_adjoint)
    # (an F-ordered Y: numpy sums its rows in another order, so only to rounding)
    np.testing.assert_allclose(op.T_adjoint(np.asfortranarray(Y)), V, rtol=1e-14, atol=1e-14)
    G = Y.copy()
    G[np.arange(L), y] -= Y.sum(axis=1)
    np.testing.assert_allclose(V, np.vstack([Phi.toarray().T @ G, G.sum(axis=0)]), rtol=1e-13,
                               atol=1e-13)


def test_compiled_sparse_products_only_with_the_kernels(monkeypatch):
    Phi = sp.random(20, 50, density=0.2, format="csr", random_state=0)
    y = np.arange(20) % 3
    small = MulticlassOperator(Phi, y, 3).prepare()  # below the kernels' size: scipy
    assert small.products.compiled is False and not any(small.products.use.values())
    with pytest.raises(RuntimeError, match="not loaded"):
        small.products.adjoint(np.ones((20, 3)), compiled=True)
    from sparsesvm.solvers import _kernels

    monkeypatch.setattr(_kernels, "MIN_SIZE", 0)
    monkeypatch.setenv("SPARSESVM_TUNE", "0")  # nothing timed: scipy's
    assert MulticlassOperator(Phi, y, 3).prepare().products.compiled is False
    monkeypatch.delenv("SPARSESVM_TUNE")
    monkeypatch.setenv("SPARSESVM_NUMBA", "0")
    monkeypatch.setattr(_kernels, "_kernel", None)
    assert MulticlassOperator(Phi, y, 3).prepare().products.compiled is False
    # float32 products keep their own (scipy) product
    assert MulticlassOperator(Phi, y, 3, dtype=np.float32).prepare().products.compiled is None


def test_sparse_products_take_the_faster_by_their_timings(monkeypatch):
    """prepare() keeps, for each product, whichever of scipy's and the compiled one it timed
    faster; both give the same bits."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(2)
    Phi = sp.random(40, 3000, density=0.02, format="csr", random_state=3)
    y = np.arange(40) % 4
    # forward: scipy 2 s, compiled 1 s; adjoint: scipy 1 s, compiled 2 s (three calls each)
    fake = iter([2.0] * 3 + [1.0] * 3 + [1.0] * 3 + [2.0] * 3)
    monkeypatch.setattr("sparsesvm.model.operator._seconds", lambda fn, *a: (fn(*a), next(fake))[1])
    op = MulticlassOperator(Phi, y, 4).prepare()
    assert op.products.use == {"forward": True, "adjoint": False}
    assert op.products.timings["forward"] == {"scipy": 2.0, "compiled": 1.0}
    X = rng.standard_normal((3001, 4)) * (rng.random((3001, 1)) < 0.3)
    Y = rng.standard_normal((40, 4))
    plain = MulticlassOperator(Phi, y, 4)
    np.testing.assert_array_equal(op.T(X), plain.T(X))
    np.testing.assert_array_equal(op.T_adjoint(Y), plain.T_adjoint(Y))


@pytest.mark.parametrize("name", ["l12", "l1inf", "l1"])
def test_compiled_sparse_products_do_not_change_a_fit(monkeypatch, name):
    """Every solver on the operator of a sparse Phi: with the compiled products, the same
    iterates as with scipy's, to the bit; with T^T formed row by row inside the primal step
    too (:func:`sparsesvm.solvers._kernels.sparse_step`), the same to rounding."""
    pytest.importorskip("numba")
    from sparsesvm.model.penalties import make_penalty
    from sparsesvm.solvers import _kernels, hinge_con, hinge_lin, hinge_reg, logit, square

    Phi, y = make_problem(60, 2500, 5, seed=2, density=0.03)
    pen = make_penalty(name, None if name == "l1" else "features", 2500, 5)
    fits = [lambda op: hinge_reg(op, pen, 3.0, tol=0.0, max_iter=200),
            lambda op: hinge_con(op, pen, 10.0, tol=0.0, max_iter=200),
            lambda op: hinge_lin(op, pen, 10.0, tol=0.0, max_iter=200),
            lambda op: square(op, pen, 1.0, tol=0.0, max_iter=200),
            lambda op: logit(op, pen, 1.0, tol=0.0, max_iter=200)]
    sparse_step = _kernels.sparse_step
    calls = []
    monkeypatch.setattr(_kernels, "sparse_step", lambda *a, **k: calls.append(1) or sparse_step(*a, **k))

    def compiled(fit, rowwise):
        op = MulticlassOperator(Phi, y, 5).prepare()
        assert op.products.compiled
        op.products.use = {"forward": True, "adjoint": True}  # whatever the timings chose
        adjoint_rows = op.T_adjoint_rows
        if not rowwise:
            op.T_adjoint_rows = lambda Y: None
        else:  # the row-by-row step runs
            op.T_adjoint_rows = lambda Y: calls.append(2) or adjoint_rows(Y)
        result = fit(op)
        assert all(op.products.use.values())  # the fit's own prepare() keeps the choice
        return result

    for fit in fits:
        calls.clear()
        rowwise = compiled(fit, True)
        assert 2 in calls
        products = compiled(fit, False)
        op = MulticlassOperator(Phi, y, 5)
        op.products.compiled = False  # prepare keeps it: scipy's product
        plain = fit(op)
        assert 0 < np.count_nonzero(plain.X[:-1]) < plain.X[:-1].size
        assert products.X.tobytes() == plain.X.tobytes()
        np.testing.assert_allclose(rowwise.X, plain.X, rtol=1e-9, atol=1e-12 * np.abs(plain.X).max())


def test_rows_step_whatever_product_the_timing_chose():
    """The row-by-row step is taken wherever the compiled sparse products are loaded, not only
    where the timing of the product alone chose the compiled one (T_adjoint keeps that choice):
    a timing that narrowly prefers scipy's product would otherwise switch off the step that
    settles zero rows (several times the time per iteration at E3's supports)."""
    pytest.importorskip("numba")
    Phi, y = make_problem(60, 2500, 5, seed=2, density=0.03)
    op = MulticlassOperator(Phi, y, 5).prepare()
    assert op.products.compiled
    Y = np.random.default_rng(0).standard_normal((60, 5))
    for use in (True, False):
        op.products.use = {"forward": use, "adjoint": use}
        rows = op.T_adjoint_rows(Y)
        assert rows is not None
        (indptr, indices, data), G = rows
        A = sp.csr_matrix((data, indices, indptr), shape=(2501, 60))
        np.testing.assert_allclose(A @ G, op.T_adjoint(Y), rtol=1e-12, atol=1e-12)
    op = MulticlassOperator(Phi, y, 5)
    op.products.compiled = False  # scipy's products only: no row-by-row step
    assert op.prepare().T_adjoint_rows(Y) is None


# --------------------------------------------------------------------------- unused features

def test_restricted_operator_is_the_full_one_on_the_kept_features():
    rng = np.random.default_rng(4)
    L, M, K = 12, 30, 4
    dense = rng.standard_normal((L, M)) * (rng.random((L, M)) < 0.3)
    dense[:, ::3] = 0.0  # every third feature unused
    Phi = sp.csr_matrix(dense)
    y = rng.integers(0, K, L)
    used = np.unique(Phi.indices)
    assert used.size < M
    full = MulticlassOperator(Phi, y, K)
    sub = full.restrict_features(used)
    assert (sub.n_samples, sub.n_features, sub.n_classes) == (L, used.size, K)
    X = np.zeros((M + 1, K))
    X[np.append(used, M)] = rng.standard_normal((used.size + 1, K))
    Y = rng.standard_normal((L, K))
    np.testing.assert_allclose(sub.T(X[np.append(used, M)]), full.T(X), rtol=1e-14, atol=1e-14)
    V = full.T_adjoint(Y)
    assert np.all(V[np.setdiff1d(np.arange(M), used)] == 0)  # the unused rows of T^T Y
    np.testing.assert_allclose(sub.T_adjoint(Y), V[np.append(used, M)], rtol=1e-14, atol=1e-14)
    # the norm is the full operator's, to the bit, by both methods; and it is the same norm
    for method in ("power", "exact"):
        fresh = MulticlassOperator(Phi, y, K)
        assert fresh.restrict_features(used).norm(method=method) == fresh.norm(method=method)
    np.testing.assert_allclose(MulticlassOperator(Phi[:, used], y, K).exact_norm(), full.exact_norm(),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="increasing"):
        full.restrict_features(used[::-1])


@pytest.mark.parametrize("sparse", [False, True])
def test_meter_gets_each_products_multiply_adds(sparse):
    """``meter`` is called once per product with Phi, with its stored entries times the
    columns multiplied (the products side by side: times their number); None by default."""
    K = 4
    Phi, y = make_problem(12, 9, K, seed=3, density=0.3 if sparse else None)
    op = MulticlassOperator(Phi, y, K)
    assert op.meter is None
    got = []
    op.meter = got.append
    stored = Phi.nnz if sparse else Phi.size
    X, Y = np.ones((10, K)), np.ones((12, K))
    op.T(X)
    op.scores(X)
    op.T_adjoint(Y)
    op.T_many(np.stack([X, X, X]))
    op.T_adjoint_many(np.stack([Y, Y]))
    one = [stored * K]
    if op.shares_products():  # one product for all
        assert got == one * 3 + [3 * stored * K, 2 * stored * K]
    else:  # one each
        assert got == one * 8


@pytest.mark.parametrize("L,M,K", [(7, 40, 3), (30, 400, 10), (1, 500, 2)])
def test_compiled_label_kernels_are_numpys_to_the_bit(L, M, K, monkeypatch):
    """Once prepared for the primal-dual loops (numba installed), ``T`` adds the biases and
    subtracts the label column, and ``T^T`` forms ``G`` and its bias row, in compiled passes:
    the same bits as numpy's operations (signed zeros included), read-only and non-C-ordered
    inputs too."""
    from sparsesvm.model import operator
    from sparsesvm.solvers import _kernels

    if not _kernels.available():
        pytest.skip("numba not installed")
    monkeypatch.setattr(operator, "TUNE_MIN_SIZE", 0)  # the kernels on these small shapes too
    monkeypatch.setattr(_kernels, "MIN_SIZE", 0)
    rng = np.random.default_rng(L + M + K)
    Phi = rng.standard_normal((L, M))
    y = rng.integers(0, K, L)
    compiled = MulticlassOperator(Phi, y, K)
    compiled.products.load_labels()
    assert compiled.products.labels is not None
    plain = MulticlassOperator(Phi, y, K)
    plain.products = compiled.products  # the same products; labels off only while plain runs

    def numpy_path(fn, arg):
        labels, compiled.products.labels = compiled.products.labels, None
        try:
            return fn(arg)
        finally:
            compiled.products.labels = labels

    X = rng.standard_normal((M + 1, K)) * (rng.random((M + 1, K)) < 0.3)
    X[-1, 0] = -0.0
    Y = rng.random((L, K)) * (rng.random((L, K)) < 0.4)
    Y[0, :] = -0.0  # a row of negative zeros: the signs of the sums' zeros count too
    for Xi in (X, np.asfortranarray(X)):
        got, want = compiled.T(Xi), numpy_path(plain.T, Xi)
        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
        assert np.all(got[np.arange(L), y] == 0.0)
    Yr = Y.copy()
    Yr.flags.writeable = False
    for Yi in (Y, np.asfortranarray(Y), Yr):
        got, want = compiled.T_adjoint(Yi), numpy_path(plain.T_adjoint, Yi)
        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
    np.testing.assert_array_equal(Y, np.where(Y == 0, 0.0, Y))  # the input is not modified


@pytest.mark.parametrize("skip", [False, True])
def test_label_kernels_only_when_the_products_are_prepared(skip, monkeypatch):
    """Not loaded by a plain operator (numpy's operations), nor for sparse or float32
    products, nor below the kernels' size; loaded by ``prepare`` (with or without the
    products over the non-zeros; and with ``SPARSESVM_TUNE=0``: they time nothing)."""
    from sparsesvm.solvers import _kernels

    monkeypatch.setenv("SPARSESVM_TUNE", "0")
    Phi, y = make_problem(30, 1000, 10, seed=1)  # 10010 weights: the kernels' size
    op = MulticlassOperator(Phi, y, 10)
    assert op.products.labels is None and op._labels() is None
    op.prepare(skip_zero_weights=skip)
    assert (op._labels() is not None) == _kernels.available()
    small = MulticlassOperator(Phi[:, :900], y, 10).prepare(skip_zero_weights=skip)
    assert small._labels() is None
    single = MulticlassOperator(Phi, y, 10, dtype=np.float32)
    single.prepare(skip_zero_weights=skip)
    assert single._labels() is None
    sparse = MulticlassOperator(sp.csr_matrix(Phi), y, 10).prepare(skip_zero_weights=skip)
    assert sparse._labels() is None
    monkeypatch.setattr(_kernels, "label_kernels", lambda: None)  # numba missing
    other = MulticlassOperator(Phi, y, 10).prepare(skip_zero_weights=skip)
    assert other._labels() is None
