"""softmax without dim=: PyTorch's deprecated implicit choice (0 for 0-, 1- and 3-dim inputs, else 1), with
its warning, so that older tutorials that call F.softmax(scores) run and print PyTorch's numbers."""

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
import tinyattn.nn.functional as F

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (2, 3, 4, 5)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_implicit_dim_matches_pytorch(torch, shape, name):
    values = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        ours = getattr(F, name)(tinyattn.tensor(values))
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        theirs = getattr(torch.nn.functional, name)(torch.tensor(values))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape", SHAPES[1:], ids=str)
def test_implicit_dim_picks_pytorch_dim(shape):
    values = np.random.default_rng(0).standard_normal(shape)
    expected_dim = 0 if len(shape) in (1, 3) else 1
    with pytest.warns(UserWarning):
        sums = F.softmax(tinyattn.tensor(values)).sum(expected_dim).numpy()
    np.testing.assert_allclose(sums, np.ones_like(sums))


@pytest.mark.parametrize("layer", [nn.Softmax, nn.LogSoftmax])
def test_layers_without_dim_use_the_implicit_choice(layer):
    x = tinyattn.randn(2, 3, 4)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        out = layer()(x)
    expected = F.softmax(x, dim=0) if layer is nn.Softmax else F.log_softmax(x, dim=0)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
