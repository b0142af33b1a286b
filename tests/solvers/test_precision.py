"""Single-precision products (``MulticlassOperator(dtype=numpy.float32)``) in the solvers.

A float32 fit reaches the float64 optimum (objectives compared, the certificate of the
returned point computed with float64 products); the compiled kernels receive float64
arrays only; the default (float64) path is the same as before; solvers without a
single-precision path refuse a float32 operator.
"""

import numpy as np
import pytest
from conftest import make_random_problem

from sparsesvm import solvers as S
from sparsesvm.model.operator import MulticlassOperator
from sparsesvm.model.penalties import make_penalty
from sparsesvm.solvers import _kernels
from sparsesvm.solvers.registry import lookup

L, M, K = 24, 6, 3
PENALTY = ("l12", 2)
#: (solver, weight): lam for the regularised forms, eta for the constrained ones
FITS = {"hinge-reg": (S.hinge_reg, 2.0), "hinge-con": (S.hinge_con, 0.3 * L),
        "hinge-lin": (S.hinge_lin, 0.3 * L), "square": (S.square, 2.0), "logit": (S.logit, 2.0)}


def make_problem():
    """Overlapping Gaussian classes, features stored float32 (as MNIST's scattering)."""
    Phi, y = make_random_problem(3, L=L, M=M, K=K, sep=0.7)[:2]
    return Phi.astype(np.float32), y


def fit_options(method, tol):
    """The certified gap as the rule (hinge-lin: the relative change, its gap is loose)."""
    opts = dict(tol=tol, max_iter=40000, stopping="rel_change" if method == "hinge-lin" else "gap")
    if method.startswith("hinge"):
        opts["step_ratio"] = 10.0
    return opts


@pytest.fixture(scope="module")
def ops():
    Phi, y = make_problem()
    return MulticlassOperator(Phi, y, K), MulticlassOperator(Phi, y, K, dtype=np.float32)


@pytest.mark.parametrize("method", list(FITS))
def test_float32_fit_reaches_the_float64_optimum(ops, method):
    op64, op32 = ops
    fit, par = FITS[method]
    pen = make_penalty(*PENALTY, M, K)
    tol = 1e-6 if method == "hinge-lin" else 1e-5
    ref = fit(op64, pen, par, **fit_options(method, tol))
    res = fit(op32, pen, par, **fit_options(method, tol))
    assert ref.converged and res.converged
    assert res.X.dtype == np.float64
    # the certificate of the returned point, with float64 products: within 2 tol of the
    # optimum (the loop's rule saw its float32 products)
    if method != "hinge-lin":
        assert res.rel_gap <= 2 * tol
    # the reported objective and violation are those of float64 products
    if method == "hinge-reg":
        from sparsesvm.model.losses import hinge_loss

        value = pen.value(res.X) + par * hinge_loss(op64.T(res.X), op64.R)
        assert res.objective == pytest.approx(value, rel=1e-13)
    # the same optimum as the float64 fit, to the accuracy of the rule
    assert res.objective == pytest.approx(ref.objective, rel=2 * tol)
    assert res.constraint_violation <= max(ref.constraint_violation, 2 * tol * par)
    assert np.linalg.norm(res.X - ref.X) <= 1e-3 * np.linalg.norm(ref.X)


def _checked(kernel):
    """``kernel`` asserting that every array it receives is float64."""
    def run(*args):
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.dtype == np.float64, a.dtype
        return kernel(*args)
    return run


@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con", "square"])
def test_compiled_kernels_receive_float64_only(monkeypatch, method):
    Mb, Kb = 2600, 4  # (M + 1) K above the compiled kernels' MIN_SIZE
    assert (Mb + 1) * Kb >= _kernels.MIN_SIZE
    Phi, y = make_random_problem(0, L=20, M=Mb, K=Kb)[:2]
    pen = make_penalty("l1inf", 100, Mb, Kb)
    if _kernels.fused_step(pen, (Mb + 1) * Kb) is None:
        pytest.skip("numba not installed (or SPARSESVM_NUMBA=0): no compiled kernels")
    calls = []
    for name in ("fused_step", "simplex_step", "epigraph_step"):
        make = getattr(_kernels, name)

        def wrapped(*args, _make=make):
            k = _make(*args)
            calls.append(k is not None)
            return None if k is None else _checked(k)
        monkeypatch.setattr(_kernels, name, wrapped)
    op = MulticlassOperator(Phi.astype(np.float32), y, Kb, dtype=np.float32)
    fit, par = FITS[method]
    res = fit(op, pen, par if method != "hinge-con" else 0.3 * 20, tol=0.0, max_iter=30)
    assert res.n_iter == 30 and np.isfinite(res.objective)
    assert any(calls)


@pytest.mark.parametrize("method", list(FITS))
def test_default_operator_path_is_unchanged(method):
    """The default operator is float64 and its own ``double()``: the result is the same,
    bit for bit, as with an explicit ``dtype=numpy.float64`` (no second evaluation)."""
    Phi, y = make_problem()
    fit, par = FITS[method]
    pen = make_penalty(*PENALTY, M, K)
    a = fit(MulticlassOperator(Phi, y, K), pen, par, tol=1e-5, max_iter=500)
    b = fit(MulticlassOperator(Phi, y, K, dtype="float64"), pen, par, tol=1e-5, max_iter=500)
    np.testing.assert_array_equal(a.X, b.X)
    assert (a.n_iter, a.objective, a.rel_gap) == (b.n_iter, b.objective, b.rel_gap)


@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con", "square"])
def test_accelerated_refuses_a_float32_operator(method):
    pytest.importorskip("scipy.optimize")
    try:
        run, _ = lookup(method, "accelerated")
    except ValueError:
        pytest.skip("solver 'accelerated' not available")
    Phi, y = make_problem()
    op = MulticlassOperator(Phi, y, K, dtype=np.float32)
    with pytest.raises(ValueError, match="solver 'accelerated' computes in float64 only"):
        run(op, make_penalty(*PENALTY, M, K), 0.5, tol=1e-3, max_iter=10, step_ratio=1.0,
            trace=False, reference=None, stopping="gap")
