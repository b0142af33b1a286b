"""Penalties: values against direct formulas written group by group, proxes
against CVXPY, Moreau's identity with independently computed dual-ball
projections, the bias row, dtypes and input validation."""

import cvxpy as cp
import numpy as np
import pytest

from sparsesvm.model.penalties import L1Penalty, check_groups, make_penalty

# (name, groups, M, K): blocks dividing M, a shorter last block, size 1, size M, across classes
CASES = [
    ("l2", None, 7, 3),
    ("l1", None, 7, 3),
    ("l12", 3, 7, 3),
    ("l12", 4, 8, 2),
    ("l12", 1, 5, 3),
    ("l12", 6, 6, 4),
    ("l12", "features", 7, 3),
    ("l12", 4, 10, 3),
    ("l1inf", 3, 7, 3),
    ("l1inf", 4, 10, 3),
    ("l1inf", 4, 8, 2),
    ("l1inf", 1, 5, 3),
    ("l1inf", 6, 6, 4),
    ("l1inf", "features", 7, 3),
]


def group_index_lists(groups, M, K):
    """Explicit list of groups, each a list of (row, col) entries of W."""
    if groups is None:
        return None
    if groups == "features":
        return [[(j, k) for k in range(K)] for j in range(M)]
    out = []
    for k in range(K):
        for start in range(0, M, groups):
            out.append([(j, k) for j in range(start, min(start + groups, M))])
    return out


def direct_value(name, groups, W):
    if name == "l2":
        return 0.5 * sum(W[j, k] ** 2 for j in range(W.shape[0]) for k in range(W.shape[1]))
    if name == "l1":
        return sum(abs(W[j, k]) for j in range(W.shape[0]) for k in range(W.shape[1]))
    total = 0.0
    for g in group_index_lists(groups, *W.shape):
        vals = np.array([W[e] for e in g])
        total += np.sqrt((vals**2).sum()) if name == "l12" else np.abs(vals).max()
    return total


def cvx_prox(name, groups, W, tau):
    M, K = W.shape
    U = cp.Variable((M, K))
    if name == "l2":
        g = 0.5 * cp.sum_squares(U)
    elif name == "l1":
        g = cp.sum(cp.abs(U))
    else:
        terms = []
        for grp in group_index_lists(groups, M, K):
            vec = cp.hstack([U[j, k] for j, k in grp])
            terms.append(cp.norm(vec, 2) if name == "l12" else cp.norm(vec, "inf"))
        g = sum(terms)
    cp.Problem(cp.Minimize(tau * g + 0.5 * cp.sum_squares(U - W))).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return U.value


def _X(rng, M, K, scale=1.0):
    return rng.normal(scale=scale, size=(M + 1, K))


@pytest.mark.parametrize("name,groups,M,K", CASES)
def test_value_matches_direct_formula(name, groups, M, K):
    rng = np.random.default_rng(M * 10 + K)
    pen = make_penalty(name, groups, M, K)
    X = _X(rng, M, K)
    v = pen.value(X)
    assert isinstance(v, float)
    np.testing.assert_allclose(v, direct_value(name, groups, X[:-1]), rtol=1e-12)
    # biases are ignored by the value
    X2 = X.copy()
    X2[-1] = 1e6
    assert pen.value(X2) == v
    assert pen.name == name and pen.groups == groups


@pytest.mark.parametrize("name,groups,M,K", CASES)
@pytest.mark.parametrize("tau", [0.3, 1.5])
def test_prox_matches_cvxpy(name, groups, M, K, tau):
    rng = np.random.default_rng(100 + M * 10 + K)
    pen = make_penalty(name, groups, M, K)
    X = _X(rng, M, K, scale=1.5)
    P = pen.prox(X, tau)
    assert P.shape == X.shape and P is not X
    np.testing.assert_array_equal(P[-1], X[-1])  # bias untouched
    np.testing.assert_allclose(P[:-1], cvx_prox(name, groups, X[:-1], tau), atol=1e-6)
    # prox decreases tau*g + 1/2||. - X||^2 against the input point and random perturbations
    def F(U):
        return tau * pen.value(U) + 0.5 * np.sum((U[:-1] - X[:-1]) ** 2)
    for _ in range(5):
        Q = P + 1e-3 * rng.normal(size=P.shape)
        assert F(P) <= F(Q) + 1e-12
    assert F(P) <= F(X)


def dual_ball_projection(name, groups, W, tau):
    """Projection onto {dual norm <= tau}, per group, written with loops."""
    if name == "l1":
        return np.clip(W, -tau, tau)
    out = W.copy()
    for grp in group_index_lists(groups, *W.shape):
        rows, cols = zip(*grp)
        v = W[rows, cols]
        if name == "l12":
            n = np.linalg.norm(v)
            out[rows, cols] = v if n <= tau else v * tau / n
        else:  # l1inf: dual is l1; bisection on the threshold
            if np.abs(v).sum() <= tau:
                continue
            lo, hi = 0.0, np.abs(v).max()
            for _ in range(200):
                t = 0.5 * (lo + hi)
                if np.maximum(np.abs(v) - t, 0).sum() > tau:
                    lo = t
                else:
                    hi = t
            out[rows, cols] = np.sign(v) * np.maximum(np.abs(v) - 0.5 * (lo + hi), 0)
    return out


@pytest.mark.parametrize("name,groups,M,K", [c for c in CASES if c[0] != "l2"])
def test_moreau_identity(name, groups, M, K):
    """prox_{tau g}(x) + P_{dual ball(tau)}(x) = x for a norm g."""
    rng = np.random.default_rng(7)
    pen = make_penalty(name, groups, M, K)
    for tau in (0.0, 0.2, 1.0, 5.0):
        X = _X(rng, M, K, scale=2.0)
        P = pen.prox(X, tau)
        np.testing.assert_allclose(P[:-1] + dual_ball_projection(name, groups, X[:-1], tau),
                                   X[:-1], atol=1e-10)


def test_l2_prox_and_moreau():
    rng = np.random.default_rng(3)
    pen = make_penalty("l2", None, 6, 4)
    X = _X(rng, 6, 4)
    tau = 0.6
    P = pen.prox(X, tau)
    np.testing.assert_allclose(P[:-1], X[:-1] / (1 + tau))
    # g = g* for 1/2||.||^2: prox_{tau g}(x) + tau prox_{g/tau}(x / tau) = x
    Q = pen.prox(X / tau, 1 / tau)
    np.testing.assert_allclose(P[:-1] + tau * Q[:-1], X[:-1], atol=1e-12)


def test_group_sparsity_structure():
    """Whole groups vanish together: within-class blocks (shorter last block) and features."""
    M, K = 10, 3
    X = np.zeros((M + 1, K))
    X[:-1] = 0.01
    X[0:4, 1] = 5.0   # block 0 of class 1 is large
    X[8:10, 2] = 5.0  # shorter last block (size 2) of class 2 is large
    X[-1] = [1.0, 2.0, 3.0]
    for name in ("l12", "l1inf"):
        P = make_penalty(name, 4, M, K).prox(X, 1.0)
        nz = P[:-1] != 0
        expect = np.zeros((M, K), bool)
        expect[0:4, 1] = True
        expect[8:10, 2] = True
        np.testing.assert_array_equal(nz, expect)
        np.testing.assert_array_equal(P[-1], X[-1])
    Xf = np.full((M + 1, K), 0.01)
    Xf[3] = 5.0
    for name in ("l12", "l1inf"):
        P = make_penalty(name, "features", M, K).prox(Xf, 1.0)
        nz_rows = np.flatnonzero(np.any(P[:-1] != 0, axis=1))
        np.testing.assert_array_equal(nz_rows, [3])


@pytest.mark.parametrize("name,groups", [("l2", None), ("l1", None), ("l12", 3), ("l1inf", 3),
                                          ("l12", "features"), ("l1inf", "features")])
def test_dtype_and_zero_step(name, groups):
    rng = np.random.default_rng(5)
    pen = make_penalty(name, groups, 7, 3)
    X = _X(rng, 7, 3)
    np.testing.assert_allclose(pen.prox(X, 0.0), X, atol=1e-15)
    X32 = X.astype(np.float32)
    P32 = pen.prox(X32, 0.5)
    assert P32.dtype == np.float32
    np.testing.assert_allclose(P32, pen.prox(X, 0.5), atol=1e-5)
    Xi = np.arange(24).reshape(8, 3)
    assert pen.prox(Xi, 0.5).dtype == np.float64
    # input is not modified
    Xc = X.copy()
    pen.prox(X, 0.5)
    np.testing.assert_array_equal(X, Xc)
    # the unchecked path (solver loops) gives the same answers
    np.testing.assert_array_equal(pen.prox(X, 0.5, check_input=False), pen.prox(X, 0.5))
    assert pen.value(X, check_input=False) == pen.value(X)


def test_make_penalty_validation():
    with pytest.raises(ValueError, match="unknown penalty"):
        make_penalty("l0", None, 5, 3)
    with pytest.raises(ValueError, match="groups=None"):
        make_penalty("l1", 2, 5, 3)
    with pytest.raises(ValueError, match="groups=None"):
        make_penalty("l2", "features", 5, 3)
    with pytest.raises(ValueError, match="needs groups"):
        make_penalty("l12", None, 5, 3)
    with pytest.raises(ValueError, match=">= 1"):
        make_penalty("l1inf", 0, 5, 3)
    with pytest.raises(ValueError, match=">= 1"):
        make_penalty("l1inf", -2, 5, 3)
    with pytest.raises(ValueError, match="larger than the number of features"):
        make_penalty("l12", 6, 5, 3)
    with pytest.raises(ValueError, match="'features'"):
        make_penalty("l12", "classes", 5, 3)
    with pytest.raises(ValueError, match="int block size"):
        make_penalty("l12", 2.5, 5, 3)
    with pytest.raises(ValueError, match="int block size"):
        make_penalty("l12", True, 5, 3)
    with pytest.raises(ValueError, match="n_features"):
        make_penalty("l1", None, 0, 3)
    pen = make_penalty("l12", np.int64(2), 5, 3)  # numpy integers are fine
    assert pen.groups == 2
    with pytest.raises(ValueError, match="shape"):
        pen.value(np.ones((5, 3)))
    with pytest.raises(ValueError, match="shape"):
        pen.prox(np.ones((6, 2)), 1.0)
    with pytest.raises(ValueError, match="NaN"):
        pen.prox(np.full((6, 3), np.nan), 1.0)
    with pytest.raises(ValueError, match="step"):
        pen.prox(np.ones((6, 3)), -1.0)
    with pytest.raises(ValueError, match="step"):
        pen.prox(np.ones((6, 3)), np.ones(2))


@pytest.mark.parametrize("K", [1, 3])
def test_unit_blocks_are_soft_thresholding_and_input_untouched(K):
    """Blocks of size 1 make l12 and l1inf equal to l1 (independent closed form);
    with b = 1 or K = 1 the group view could alias the input: it must not be modified."""
    rng = np.random.default_rng(11)
    M = 6
    X = _X(rng, M, K)
    Xc = X.copy()
    soft = np.sign(X[:-1]) * np.maximum(np.abs(X[:-1]) - 0.4, 0)
    for name in ("l12", "l1inf"):
        for groups in (1, M, "features"):
            pen = make_penalty(name, groups, M, K)
            P = pen.prox(X, 0.4)
            np.testing.assert_array_equal(X, Xc)
            if groups == 1 or (groups == "features" and K == 1):
                np.testing.assert_allclose(P[:-1], soft, atol=1e-14)
                np.testing.assert_allclose(pen.value(X), np.abs(X[:-1]).sum(), rtol=1e-12)


def direct_group_dual_norms(name, groups, V):
    """Dual norm of every group, from the explicit group lists (l1: every entry)."""
    if name == "l1":
        return np.abs(V).ravel()
    norms = []
    for grp in group_index_lists(groups, *V.shape):
        v = np.array([V[e] for e in grp])
        norms.append(np.linalg.norm(v) if name == "l12" else np.abs(v).sum())
    return np.array(norms)


@pytest.mark.parametrize("name,groups,M,K", [c for c in CASES if c[0] != "l2"])
def test_dual_norm_is_the_polar_of_the_penalty(name, groups, M, K):
    rng = np.random.default_rng(5)
    pen = make_penalty(name, groups, M, K)
    V = rng.standard_normal((M, K))
    dn = pen.dual_norm(V)
    assert dn == pytest.approx(direct_group_dual_norms(name, groups, V).max(), rel=1e-12)
    for _ in range(200):
        W = rng.standard_normal((M, K)) * (rng.random((M, K)) < 0.5)
        assert abs(np.vdot(V, W)) <= dn * pen.weight_value(W) + 1e-12
    # Moreau: prox_g(V) + P_{dual ball}(V) = V, i.e. V - prox lies in the unit dual ball
    assert pen.dual_norm(V - pen.weight_prox(V, 1.0)) <= 1 + 1e-12
    with pytest.raises(ValueError, match="not a norm"):
        make_penalty("l2", None, M, K).dual_norm(V)


@pytest.mark.parametrize("name,groups,M,K", CASES)
def test_group_layout_holds_the_groups(name, groups, M, K):
    """to_groups puts group (i1, i2) (flat index i1 * n2 + i2) on axis 1; group_dual_norms
    and per-group steps follow that order; from_groups inverts it."""
    rng = np.random.default_rng(9)
    pen = make_penalty(name, groups, M, K)
    W = rng.standard_normal((M, K))
    A = pen.to_groups(W)
    assert A.shape == pen.group_shape
    np.testing.assert_array_equal(pen.from_groups(A), W)
    n1, s, n2 = pen.group_shape
    lists = group_index_lists(groups, M, K) or [[(j, k)] for j in range(M) for k in range(K)]
    assert len(lists) == n1 * n2
    by_flat = {}
    for grp in lists:  # locate each explicit group in the layout by its entries
        vals = sorted(W[e] for e in grp)
        hits = [i for i in range(n1 * n2)
                if sorted(A[i // n2, :, i % n2][:len(grp)]) == vals]
        assert hits
        by_flat[hits[0]] = grp
    assert sorted(by_flat) == list(range(n1 * n2))
    if name != "l2":  # group (i1, i2) has the dual norm of its own entries
        own = [np.array([W[e] for e in by_flat[i]]) for i in range(n1 * n2)]
        dual = np.abs if name == "l1" else (np.linalg.norm if name == "l12" else
                                             lambda v: np.abs(v).sum())
        np.testing.assert_allclose(pen.group_dual_norms(W).ravel(),
                                   [float(np.sum(dual(v))) for v in own], rtol=1e-12)


@pytest.mark.parametrize("name,groups,M,K", CASES)
def test_prox_with_per_group_steps_is_the_prox_of_each_group(name, groups, M, K):
    """The prox is separable over groups: with one step per group, each group is the
    scalar-step prox of that group (the scalar prox is checked against CVXPY above)."""
    rng = np.random.default_rng(13)
    pen = make_penalty(name, groups, M, K)
    X = _X(rng, M, K, scale=1.5)
    steps = rng.uniform(0.0, 2.0, size=pen.step_shape())
    P = pen.prox(X, steps)
    np.testing.assert_array_equal(P[-1], X[-1])
    np.testing.assert_array_equal(pen.weight_prox(X[:-1], steps), P[:-1])
    n1, _, n2 = pen.group_shape
    mask = np.zeros(pen.group_shape)
    for i in range(n1 * n2):
        mask[:] = 0.0
        mask[i // n2, :, i % n2] = 1.0
        entries = pen.from_groups(mask) == 1.0
        want = pen.prox(X, float(steps[i // n2, 0, i % n2]))[:-1][entries]
        np.testing.assert_allclose(P[:-1][entries], want, rtol=1e-14, atol=1e-15)
    with pytest.raises(ValueError, match="one step per group"):
        pen.prox(X, steps[:-1])
    with pytest.raises(ValueError, match="every group"):
        pen.prox(X, -steps)


def test_compiled_form_is_declared_by_the_class():
    forms = {(n, g): make_penalty(n, g, 12, 3).compiled_form()
             for n, g in (("l2", None), ("l1", None), ("l12", 4), ("l1inf", 4),
                          ("l12", "features"), ("l1inf", "features"))}
    assert forms == {("l2", None): (0, 1), ("l1", None): (1, 1), ("l12", 4): (2, 4),
                     ("l1inf", 4): (3, 4), ("l12", "features"): (2, 0),
                     ("l1inf", "features"): (3, 0)}

    class MyL1(L1Penalty):  # a prox of its own: no compiled form
        def _prox(self, W, tau, out):
            out[:] = W

    assert MyL1(2, 2).compiled_form() is None


def test_check_groups_normalises_and_names_the_rule():
    assert check_groups("l1inf", np.int64(1000)) == 1000
    assert type(check_groups("l1inf", np.int64(3), 8)) is int
    assert check_groups("l12", "features", None, "square") == "features"
    assert check_groups("l2", None, None, "ova") is None
    for args, match in ((("l12", 0), r"group size must be in 1..n_features, got groups=0"),
                        (("l12", 9, 8), r"group size must be in 1..n_features=8, got groups=9"),
                        (("l1", 2), "takes groups=None"),
                        (("l1inf", None), "needs groups"),
                        (("l12", "rows"), "int block size or 'features'"),
                        (("l12", 2.0), "int block size or 'features'"),
                        (("l12", np.bool_(True)), "int block size or 'features'"),
                        (("l12", "features", 8, "ova"), "ova.*across-class"),
                        (("l0", None), "unknown penalty")):
        with pytest.raises(ValueError, match=match):
            check_groups(*args)
