"""tinyattn.distributions.Categorical against torch.distributions.Categorical: samples at the same seed,
log_prob, entropy and their gradients, shapes; gradients against finite differences in float64."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn
from tinyattn import gradcheck
from tinyattn.distributions import Categorical

property_test = settings(suppress_health_check=[*settings.default.suppress_health_check,
                                                HealthCheck.function_scoped_fixture])


def run(lib, kind, param, value, sample_shape, seed):
    lib.manual_seed(seed)
    x = lib.tensor(param, requires_grad=True)
    d = lib.distributions.Categorical(**{kind: x})
    samples = d.sample(sample_shape)
    log_prob = d.log_prob(lib.tensor(value))
    entropy = d.entropy()
    (log_prob.sum() + 2 * entropy.sum()).backward()
    return [samples.numpy(), log_prob.detach().numpy(), entropy.detach().numpy(), x.grad.numpy(),
            d.probs.detach().numpy(), d.logits.detach().numpy(), d.mode.numpy(), tuple(d.batch_shape),
            tuple(d.event_shape), float(lib.rand(1))]


@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["probs", "logits"]),
       shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
       sample_shape=st.sampled_from([(), (1,), (5,), (2, 3)]), dtype=st.sampled_from(["float32", "float64"]))
def test_samples_log_prob_entropy_and_gradients_equal_pytorchs(torch, seed, kind, shape, sample_shape, dtype):
    rng = np.random.default_rng(seed)
    param = (rng.random(shape) + 0.05 if kind == "probs" else rng.standard_normal(shape) * 2).astype(dtype)
    value = rng.integers(0, shape[-1], size=shape[:-1])
    theirs = run(torch, kind, param, value, sample_shape, seed)
    ours = run(tinyattn, kind, param, value, sample_shape, seed)
    tolerance = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ours[0], theirs[0])  # the same draws
    for mine, reference in zip(ours[1:6], theirs[1:6]):
        np.testing.assert_allclose(mine, reference, **tolerance)
    np.testing.assert_array_equal(ours[6], theirs[6])  # mode
    assert ours[7:] == theirs[7:]  # batch_shape, event_shape, and the generator left where PyTorch leaves it


def test_log_prob_broadcasts_as_pytorchs(torch):
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32)
    value = np.array([[1], [2], [0]])  # (3, 1) against a batch of 2: (3, 2)
    ours = Categorical(probs=tinyattn.tensor(p)).log_prob(tinyattn.tensor(value))
    theirs = torch.distributions.Categorical(probs=torch.tensor(p)).log_prob(torch.tensor(value))
    assert tuple(ours.shape) == tuple(theirs.shape) == (3, 2)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_zero_probabilities_give_a_finite_entropy_as_pytorchs(torch):
    p = np.array([0.0, 0.5, 0.5])
    ours = Categorical(logits=tinyattn.tensor(np.log(p))).entropy()
    theirs = torch.distributions.Categorical(logits=torch.tensor(np.log(p))).entropy()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    assert np.isfinite(ours.numpy())


@property_test
@given(values=hnp.arrays(np.float64, (2, 3), elements=st.floats(-2, 2)), kind=st.sampled_from(["probs", "logits"]),
       value=hnp.arrays(np.int64, (2,), elements=st.integers(0, 2)))
def test_gradients_match_finite_differences(xp_backend, values, kind, value):
    param = tinyattn.tensor(np.exp(values) if kind == "probs" else values, dtype=tinyattn.float64, requires_grad=True)
    index = tinyattn.tensor(value)

    def log_prob_and_entropy(x):
        d = Categorical(**{kind: x})
        return d.log_prob(index) + d.entropy()

    assert gradcheck(log_prob_and_entropy, (param,))


def test_bad_arguments_get_clear_errors():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
        Categorical()
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        Categorical(probs=tinyattn.ones(3), logits=tinyattn.ones(3))
    with pytest.raises(ValueError, match=r"probs of shape \[3\] must be finite and non-negative"):
        Categorical(probs=tinyattn.tensor([0.5, -0.1, 0.6]))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        Categorical(logits=tinyattn.tensor(1.0))
    with pytest.raises(ValueError, match="within the support: class indices 0 to 2"):
        Categorical(probs=tinyattn.ones(3)).log_prob(tinyattn.tensor(3))
    with pytest.raises(TypeError, match="must be a float tensor"):
        Categorical(probs=tinyattn.tensor([1, 2]))
    assert repr(Categorical(logits=tinyattn.zeros(2, 4))) == "Categorical(logits: tinyattn.Size([2, 4]))"
