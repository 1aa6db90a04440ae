"""Layers given the wrong kind of input, or built with sizes that cannot work, say so by name.

Before: nn.Linear given a NumPy array said "the input is float32 but the weight is tinyattn.float32",
given a list raised an AttributeError, given a 0-d tensor spoke of "the input's last dim is None", and
MultiHeadAttention(num_heads=0) was a bare ZeroDivisionError.
"""

import numpy as np
import pytest

import tinyattn
from tinyattn import nn


@pytest.mark.parametrize("layer, value, message", [
    (nn.Linear(3, 2), np.ones((2, 3), dtype=np.float32),
     "linear: the input must be a tinyattn tensor, got a numpy.ndarray: convert it with tinyattn.tensor(...) "
     "(or tinyattn.from_numpy)"),
    (nn.Linear(3, 2), [[1.0, 2.0, 3.0]], "linear: the input must be a tinyattn tensor, got a list"),
    (nn.Embedding(5, 3), [1, 2], "embedding: the ids must be a tinyattn tensor, got a list"),
    (nn.Embedding(5, 3), np.array([1, 2]), "embedding: the ids must be a tinyattn tensor, got a numpy.ndarray"),
    (nn.LayerNorm(3), np.ones((2, 3), dtype=np.float32), "layer_norm: the input must be a tinyattn tensor"),
    (nn.Dropout(0.5), np.ones(3), "dropout: the input must be a tinyattn tensor"),
    (nn.GELU(), [1.0], "gelu: the input must be a tinyattn tensor, got a list"),
    (nn.MultiHeadAttention(4, 4, 3, 0.0, 2), np.ones((1, 3, 4), dtype=np.float32), "must be a tinyattn tensor"),
])
def test_a_layer_given_something_else_than_a_tensor_says_so(layer, value, message):
    with pytest.raises(TypeError) as info:
        layer(value)
    assert message in str(info.value)


def test_linear_given_a_0d_tensor_names_the_features_it_needs():
    with pytest.raises(tinyattn.ShapeError, match=r"the input is a 0-d tensor \(one number\) but the weight "
                                                   r"expects 3 features .* shape \(\.\.\., 3\)"):
        nn.Linear(3, 2)(tinyattn.tensor(1.0))


@pytest.mark.parametrize("build, message", [
    (lambda: nn.MultiHeadAttention(4, 4, 3, 0.0, num_heads=0), "MultiHeadAttention: num_heads must be a positive integer, got 0"),
    (lambda: nn.MultiHeadAttention(4, 4, 3, 0.0, num_heads=-2), "num_heads must be a positive integer, got -2"),
    (lambda: nn.MultiHeadAttention(4, 0, 3, 0.0, 2), "MultiHeadAttention: d_out must be a positive integer, got 0"),
    (lambda: nn.MultiHeadAttention(4, 4, 0, 0.0, 2), "context_length must be a positive integer, got 0"),
    (lambda: nn.MultiHeadAttention(0, 4, 3, 0.0, 2), "d_in must be a positive integer, got 0"),
    (lambda: nn.MultiHeadAttention(4.0, 4, 3, 0.0, 2), "d_in must be a positive integer, got 4.0"),
    (lambda: nn.MultiHeadAttention(4, 5, 3, 0.0, 2), "d_out must be divisible by num_heads, got d_out=5 and num_heads=2"),
    (lambda: nn.MultiHeadAttentionWrapper(4, 4, 3, 0.0, num_heads=0), "MultiHeadAttentionWrapper: num_heads must be"),
    (lambda: nn.MultiHeadAttentionWrapper(4, 4, -1, 0.0, 2), "context_length must be a positive integer, got -1"),
    (lambda: nn.CausalAttention(4, 0, 3, 0.0), "CausalAttention: d_out must be a positive integer, got 0"),
    (lambda: nn.CausalAttention(4, 4, -1, 0.0), "CausalAttention: context_length must be a positive integer, got -1"),
    (lambda: nn.CausalAttention(True, 4, 3, 0.0), "d_in must be a positive integer, got True"),
    (lambda: nn.SelfAttention_v1(-1, 4), "SelfAttention_v1: d_in must be a positive integer, got -1"),
    (lambda: nn.SelfAttention_v2(4, 0), "SelfAttention_v2: d_out must be a positive integer, got 0"),
    (lambda: nn.Linear(-1, 2), "Linear: in_features must be an integer >= 0, got -1"),
    (lambda: nn.Linear(3, 2.5), "Linear: out_features must be an integer >= 0, got 2.5"),
    (lambda: nn.Embedding(-1, 2), "Embedding: num_embeddings must be an integer >= 0, got -1"),
])
def test_sizes_that_cannot_work_are_a_value_error_naming_the_argument(build, message):
    with pytest.raises(ValueError) as info:
        build()
    assert message in str(info.value)


def test_sizes_that_work_still_do():
    assert nn.MultiHeadAttention(np.int64(4), 4, 3, 0.0, np.int64(2)).head_dim == 2  # NumPy integers are fine
    with pytest.warns(UserWarning, match="zero-element"):  # PyTorch allows empty layers, with this warning
        assert nn.Linear(0, 2).weight.shape == (2, 0)
