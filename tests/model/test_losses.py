"""The losses of sparsesvm.model.losses against loops over samples and classes
written from their definitions (scores S, labels z, margins 1 + S_lk - S_lz)."""

import math

import numpy as np
import pytest

from sparsesvm.model import losses
from sparsesvm.model.operator import MulticlassOperator


def _problem(seed, L=9, M=4, K=3):
    rng = np.random.default_rng(seed)
    Phi = rng.standard_normal((L, M))
    y = rng.integers(0, K, L)
    y[:K] = np.arange(K)
    X = 2.0 * rng.standard_normal((M + 1, K))
    op = MulticlassOperator(Phi, y, K)
    return op, X, Phi @ X[:-1] + X[-1], y


def _loop(S, y, per_sample):
    return sum(per_sample([S[l, k] for k in range(S.shape[1])], int(y[l])) for l in range(len(y)))


def _hinge(s, z):
    return max((1.0 if k != z else 0.0) + s[k] - s[z] for k in range(len(s)))


def _square(s, z):
    return sum(max(0.0, 1.0 + s[k] - s[z]) ** 2 for k in range(len(s)) if k != z)


def _logit(s, z):
    return math.log(1.0 + sum(math.exp(1.0 + s[k] - s[z]) for k in range(len(s)) if k != z))


def _ova(s, z):
    return sum(max(0.0, 1.0 - (1.0 if k == z else -1.0) * s[k]) ** 2 for k in range(len(s)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_losses_match_loops_over_samples(seed):
    op, X, S, y = _problem(seed)
    TX = op.T(X)
    assert losses.hinge_loss(TX, op.R) == pytest.approx(_loop(S, y, _hinge), rel=1e-12)
    np.testing.assert_allclose(losses.hinge_losses(TX, op.R),
                               [_hinge(list(S[l]), int(y[l])) for l in range(len(y))], rtol=1e-12)
    sq, lg, ova = _loop(S, y, _square), _loop(S, y, _logit), _loop(S, y, _ova)
    assert losses.squared_hinge_loss(TX, op.R) == pytest.approx(sq, rel=1e-12)
    assert losses.logistic_loss(TX, op.R) == pytest.approx(lg, rel=1e-12)
    assert losses.smooth_loss("square", S, y) == pytest.approx(sq, rel=1e-12)
    assert losses.smooth_loss("logit", S, y) == pytest.approx(lg, rel=1e-12)
    assert losses.smooth_loss("ova", S, y) == pytest.approx(ova, rel=1e-12)
    np.testing.assert_allclose(losses.margins(S, y), TX + op.R, rtol=1e-12, atol=1e-12)
    assert np.all(losses.margins(S, y)[np.arange(len(y)), y] == 0.0)


def test_logistic_loss_is_stable_at_large_margins():
    op, X, S, y = _problem(3)
    big = 1e3 * X  # exp of the margins would overflow without the shift
    TX = op.T(big)
    val = losses.logistic_loss(TX, op.R)
    assert np.isfinite(val)
    assert val == pytest.approx(losses.hinge_loss(TX, op.R), rel=1e-3)  # log-sum-exp ~ max
    assert isinstance(val, float) and isinstance(losses.hinge_loss(TX, op.R), float)


def test_ova_signs():
    np.testing.assert_array_equal(losses.ova_signs(np.array([2, 0]), 3),
                                  [[-1.0, -1.0, 1.0], [1.0, -1.0, -1.0]])
