"""NumPy's argument names that PyTorch accepts: `axis=` for `dim=` and `keepdims=` for `keepdim=`.

Each call runs in both libraries on the same numbers (the `torch` fixture skips without PyTorch); the
functions PyTorch writes in Python (`Tensor.norm`, `Tensor.split`, `F.softmax`) refuse the NumPy names
there, and so they do here.
"""

import numpy as np
import pytest

import tinyattn
from tinyattn.nn import functional as F

CALLS = [
    "L.sum(X, axis=1)", "X.sum(1, keepdims=True)", "X.sum(axis=(0, 2), keepdims=True)", "X.sum()",
    "X.mean(axis=1, keepdims=True)", "L.mean(X, axis=0, keepdims=True)", "X.std(axis=1)", "L.std(X, axis=0)",
    "X.var(axis=1, keepdims=True)", "L.var(X, axis=0, keepdims=True)",
    "X.max(axis=1).values", "X.max(axis=1, keepdims=True).indices", "L.max(X, axis=1).values",
    "X.min(axis=0).values", "L.min(X, axis=0).values",
    "X.argmax(axis=2)", "L.argmax(X, axis=1)", "X.argmin(axis=2, keepdims=True)", "L.argmin(X, axis=0)",
    "X.amax(axis=1)", "L.amax(X, axis=0)", "X.amin(axis=(0, 1), keepdims=True)", "L.amin(X, axis=2)",
    "X.prod(axis=1)", "L.prod(X, axis=0, keepdims=True)",
    "(X > 0).any(axis=1)", "L.any(X > 0, axis=0)", "(X > 0).all(axis=1, keepdims=True)", "L.all(X > 0, axis=0)",
    "X.logsumexp(axis=1)", "X.logsumexp(axis=1, keepdims=True)", "L.logsumexp(X, axis=2)",
    "X.cumsum(axis=1)", "L.cumsum(X, axis=0)", "X.cumprod(axis=2)", "L.cumprod(X, axis=0)",
    "X.softmax(axis=-1)", "L.softmax(X, axis=1)", "X.log_softmax(axis=0)", "L.log_softmax(X, axis=1)",
    "X.unsqueeze(axis=0)", "L.unsqueeze(X, axis=1)", "X[:1].squeeze(axis=0)", "L.squeeze(X[:1], axis=0)",
    "X.sort(axis=1).values", "L.sort(X, axis=0).values", "X.argsort(axis=0)", "L.argsort(X, axis=0)",
    "X.topk(2, axis=1).values", "L.topk(X, 1, axis=0).indices",
    "L.cat([X, X], axis=1)", "L.concat([X, X], axis=2)", "L.stack([X, X], axis=2)",
    "X.chunk(2, axis=1)[1]", "L.chunk(X, 3, axis=2)[0]", "X.unbind(axis=1)[2]", "L.unbind(X, axis=2)[0]",
    "X.repeat_interleave(2, axis=1)", "L.repeat_interleave(X, 2, axis=0)", "L.tensor(X.size(axis=2))",
]


@pytest.mark.parametrize("call", CALLS)
def test_numpy_names_give_pytorchs_result(torch, call):
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    ours = eval(call, {"L": tinyattn, "X": tinyattn.tensor(x)})
    theirs = eval(call, {"L": torch, "X": torch.tensor(x)})
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_flow_through_the_numpy_spelling(torch):
    x = np.random.default_rng(1).standard_normal((3, 4))
    a, b = tinyattn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (a.softmax(axis=1) * a.sum(axis=0, keepdims=True)).sum().backward()
    (b.softmax(axis=1) * b.sum(axis=0, keepdims=True)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call, message", [
    ("X.sum(1, axis=1)", "got both dim and axis"),
    ("L.cat([X, X], 1, axis=0)", "got both dim and axis"),
    ("X.sum(keepdim=True, keepdims=True, axis=1)", "got both keepdim and keepdims"),
    ("X.softmax()", "missing 1 required argument: 'dim'"),
    ("X.cumsum()", "missing 1 required argument: 'dim'"),
    ("X.logsumexp()", "missing 1 required argument: 'dim'"),
])
def test_both_spellings_or_none_is_refused_as_pytorch_refuses_it(torch, call, message):
    with pytest.raises(TypeError, match=message):
        eval(call, {"L": tinyattn, "X": tinyattn.ones(2, 3)})
    with pytest.raises(TypeError):  # PyTorch refuses the same calls (in its own words)
        eval(call, {"L": torch, "X": torch.ones(2, 3)})


@pytest.mark.parametrize("call", ["X.norm(axis=1)", "X.split(1, axis=0)", "F.softmax(X, axis=1)"])
def test_functions_pytorch_writes_in_python_refuse_the_numpy_names(torch, call):
    with pytest.raises(TypeError):
        eval(call, {"F": torch.nn.functional, "X": torch.ones(2, 3)})
    with pytest.raises(TypeError):
        eval(call, {"F": F, "X": tinyattn.ones(2, 3)})


# Methods where PyTorch also takes axis= but tinyattn does not: those whose dim comes before a required
# index tensor (x.gather(axis=0, index=i) would need dim to become optional), which the corpus of
# teaching programs never calls with axis=.
WITHOUT_AXIS = {"gather", "index_select", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add",
                "index_add_"}


def test_every_method_with_a_dim_takes_axis_where_pytorch_does(torch):
    import inspect

    x = torch.ones(2, 3)
    missing = []
    for name in dir(tinyattn.Tensor):
        method = getattr(tinyattn.Tensor, name)
        if name.startswith("_") or not callable(method) or name in WITHOUT_AXIS:
            continue
        parameters = inspect.signature(method).parameters
        if "dim" in parameters and "axis" not in parameters:
            try:  # does PyTorch's take it? (a wrong value, so that it fails after the names are accepted)
                getattr(x, name)(axis=99)
            except TypeError as error:
                if "axis" in str(error):
                    continue
            except Exception:  # noqa: BLE001  (accepted the name, failed on the value)
                pass
            missing.append(name)
    assert not missing, f"PyTorch's Tensor takes axis= in {missing}, tinyattn's does not"
