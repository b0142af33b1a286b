"""The certified stopping rule (``stopping="gap"``) of the paper's exact-hinge solvers.

Checked against an independent optimum (CVXPY/Clarabel, tests/cvx_reference.py): when the
rule fires at ``tol``, the true relative suboptimality is at most ``tol`` (the gap is an
upper bound), and the rule costs what it says.
"""
import numpy as np
import pytest
from conftest import make_random_problem
from cvx_reference import solve as cvx_solve

from sparsesvm import SparseSVC


def _problem(seed=0):
    """24 rows, 6 features, 3 classes shifted by 0.8: (X, y)."""
    return make_random_problem(seed, L=24, M=6, K=3, shift=0.8)[:2]


@pytest.mark.parametrize("penalty,groups", [("l1", None), ("l1inf", 2), ("l2", None)])
def test_hinge_reg_gap_rule_certifies_suboptimality(penalty, groups):
    X, y = _problem()
    alpha, tol = 0.5, 1e-3
    clf = SparseSVC(method="hinge-reg", penalty=penalty, groups=groups, alpha=alpha, tol=tol,
                    max_iter=200000, stopping="gap").fit(X, y)
    assert clf.converged_ and clf.stopping_ == "gap"
    assert 0.0 <= clf.rel_gap_ <= tol
    opt, _ = cvx_solve("hinge-reg", X, y, 3, penalty, groups, lam=1.0 / alpha)
    # the gap bounds the suboptimality: P(X) - P* <= rel_gap * D <= rel_gap * P*
    assert clf.objective_ >= opt * (1 - 1e-6)
    assert (clf.objective_ - opt) / opt <= tol * (1 + 1e-6)


def test_gap_is_recorded_and_shrinks_with_the_paper_rule():
    X, y = _problem(seed=1)
    loose = SparseSVC(method="hinge-reg", penalty="l1", alpha=0.5, tol=1e-2).fit(X, y)
    tight = SparseSVC(method="hinge-reg", penalty="l1", alpha=0.5, tol=1e-6,
                      max_iter=200000).fit(X, y)
    assert loose.stopping_ == "rel_change"
    assert np.isfinite(loose.rel_gap_) and loose.rel_gap_ > tight.rel_gap_ >= 0.0


def test_hinge_con_gap_rule_reaches_the_constrained_optimum():
    X, y = _problem(seed=2)
    alpha, tol = 0.3, 2e-3
    clf = SparseSVC(method="hinge-con", penalty="l1", alpha=alpha, tol=tol, max_iter=400000,
                    stopping="gap").fit(X, y)
    assert clf.converged_ and clf.rel_gap_ <= tol
    eta = alpha * X.shape[0]
    opt, _ = cvx_solve("hinge-con", X, y, 3, "l1", None, eta=eta)
    assert clf.constraint_violation_ <= tol * eta
    assert abs(clf.objective_ - opt) / opt <= 2 * tol


def test_trace_of_the_gap_rule_records_its_certified_gaps():
    """stopping="gap" with a trace at the check interval: each entry's rel_gap is the
    certificate at that iterate, a bound on its suboptimality (CVXPY's optimum); NaN only
    where the rule did not check. The paper's rule keeps no rel_gap entry."""
    from sparsesvm.solvers._loop import GAP_CHECK_EVERY

    X, y = _problem(seed=3)
    clf = SparseSVC(method="hinge-reg", penalty="l1", alpha=0.5, tol=1e-4, max_iter=200000, stopping="gap",
                    trace=GAP_CHECK_EVERY).fit(X, y)
    tr = clf.trace_
    gaps = np.asarray(tr["rel_gap"])
    assert len(gaps) == len(tr["iteration"]) and np.all(np.isfinite(gaps))
    assert np.all(np.asarray(tr["iteration"]) % GAP_CHECK_EVERY == 0)
    assert gaps[-1] == clf.rel_gap_ <= 1e-4 < gaps[0]
    opt, _ = cvx_solve("hinge-reg", X, y, 3, "l1", None, lam=2.0)
    sub = (np.asarray(tr["objective"]) - opt) / opt
    assert np.all(sub <= gaps * (1 + 1e-6) + 1e-9)
    odd = SparseSVC(method="hinge-reg", penalty="l1", alpha=0.5, tol=1e-4, max_iter=200000, stopping="gap",
                    trace=7).fit(X, y).trace_
    at_checks = np.asarray(odd["iteration"]) % GAP_CHECK_EVERY == 0
    assert np.all(np.isfinite(odd["rel_gap"][at_checks])) and np.all(np.isnan(odd["rel_gap"][~at_checks]))
    assert "rel_gap" not in SparseSVC(method="hinge-reg", penalty="l1", alpha=0.5, trace=True).fit(X, y).trace_


def test_unknown_stopping_rule_refused():
    X, y = _problem()
    with pytest.raises(ValueError, match="stopping"):
        SparseSVC(method="hinge-reg", stopping="duality").fit(X, y)


def test_auto_stopping_resolves_per_solver():
    X, y = _problem()
    acc = SparseSVC(method="hinge-reg", penalty="l1", alpha=0.5, solver="accelerated",
                    tol=1e-6).fit(X, y)
    assert acc.stopping_ == "gap" and acc.rel_gap_ <= 1e-6
    smooth = SparseSVC(method="logit", penalty="l1", alpha=0.5, tol=1e-4).fit(X, y)
    assert smooth.stopping_ == "rel_change" and np.isfinite(smooth.rel_gap_) and smooth.rel_gap_ >= 0


@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con", "square", "ova"])
def test_gap_rule_computes_the_returned_points_gap_once(method, monkeypatch):
    """A gap-stopped fit evaluates the gap once per check and reuses the last one for
    ``rel_gap_``: as many evaluations as checks (not one more), and ``rel_gap_`` is the
    value the last check computed at the returned point."""
    from sparsesvm.model import certificates
    from sparsesvm.solvers import _loop, baselines

    X, y = _problem(seed=2)
    values = []
    module, name = (certificates, "certify") if method.startswith("hinge") else (baselines, "_smooth_rel_gap")
    real = getattr(module, name)

    def counted(*args, **kwargs):
        values.append(real(*args, **kwargs))
        return values[-1]

    monkeypatch.setattr(module, name, counted)
    clf = SparseSVC(method=method, penalty="l1", alpha=0.5, tol=1e-3, max_iter=200000,
                    stopping="gap").fit(X, y)
    assert clf.converged_ and clf.n_iter_ % _loop.GAP_CHECK_EVERY == 0
    assert len(values) == clf.n_iter_ // _loop.GAP_CHECK_EVERY
    last = values[-1] if method in ("square", "ova") else values[-1].rel_gap
    if np.isfinite(last):  # hinge-con without a feasible scaling reports a KKT measure instead
        assert clf.rel_gap_ == last
    assert clf.rel_gap_ <= 1e-3


@pytest.mark.parametrize("name", ["hinge_reg", "hinge_con"])
def test_max_time_stops_the_paper_loop_on_its_clock(name):
    """``max_time`` ends the loop after that many loop seconds, unconverged, with a certified gap."""
    from sparsesvm.model.operator import MulticlassOperator
    from sparsesvm.model.penalties import make_penalty
    from sparsesvm.solvers import paper

    X, y = make_random_problem(1, L=300, M=40, K=3, shift=0.5)[:2]
    op = MulticlassOperator(X, y, 3)
    solve = getattr(paper, name)
    res = solve(op, make_penalty("l2", None, 40, 3), 1.0 if name == "hinge_reg" else 30.0, tol=1e-14,
                max_iter=10**9, stopping="gap", max_time=0.05)
    assert not res.converged and 0.05 <= res.fit_time and res.n_iter < 10**9
    assert np.isfinite(res.rel_gap) and res.rel_gap > 1e-14
    with pytest.raises(ValueError, match="max_time must be None or a positive"):
        solve(op, make_penalty("l2", None, 40, 3), 1.0, max_time=0)
