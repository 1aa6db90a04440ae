"""inf and NaN come without NumPy's RuntimeWarnings, as in PyTorch, and NumPy's own settings stay the user's.

setup.cfg turns any RuntimeWarning raised from the library's code into an error for the whole suite;
these tests go further: every warning at all is an error while they run.
"""

import math
import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn import backend, nn, optim
from tinyattn.nn import functional as F

INF, NAN = math.inf, math.nan


def cases():
    """(name, function): each makes an inf or a NaN that NumPy would warn about."""
    def t(values, **kwargs):
        return tinyattn.tensor(values, **kwargs)

    return [
        ("log(0)", lambda: t([0.0, 1.0]).log()),
        ("log(-1)", lambda: t([-1.0]).log()),
        ("sqrt(-1)", lambda: t([-1.0]).sqrt()),
        ("1 / 0", lambda: t([1.0, 0.0]) / t([0.0, 0.0])),
        ("0 ** -1", lambda: t([0.0]) ** -1),
        ("exp overflow", lambda: t([100.0]).exp()),
        ("mul overflow", lambda: t([1e30]) * t([1e30])),
        ("inf - inf", lambda: t([INF]) - t([INF])),
        ("sum overflow", lambda: t([3e38, 3e38]).sum()),
        ("matmul with inf", lambda: t([[INF, 0.0]]) @ t([[0.0], [1.0]])),
        ("softmax of a row of -inf", lambda: t([[-INF, -INF, -INF]]).softmax(-1)),
        ("log_softmax of a row of -inf", lambda: F.log_softmax(t([[-INF, -INF]]), dim=-1)),
        ("cross_entropy of inf logits", lambda: F.cross_entropy(t([[INF, 1.0]]), t([1]))),
        ("cross_entropy, all targets ignored", lambda: F.cross_entropy(t([[1.0, 2.0]]), t([-100]))),
        ("layer_norm of inf", lambda: F.layer_norm(t([[INF, 1.0, 2.0]]), (3,))),
        ("mean of inf and -inf", lambda: t([INF, -INF]).mean()),
        ("var of one element", lambda: t([1.0]).var()),
        ("tanh, sigmoid of nan", lambda: (t([NAN]).tanh(), t([NAN]).sigmoid())),
        ("float // 0", lambda: t([1.0, 0.0]) // 0),
        ("float % 0", lambda: t([1.0]) % 0.0),
        ("nan to int64", lambda: t([NAN, INF]).to(tinyattn.int64)),
        ("isclose of infinities", lambda: t([INF, NAN]).isclose(t([INF, 1.0]))),
        ("print inf and nan", lambda: str(t([INF, -INF, NAN, 1e38]) * 10)),
        ("masked_fill, then softmax", lambda: t([[1.0, 2.0]]).masked_fill(t([[True, True]]), -INF).softmax(-1)),
    ]


@pytest.mark.parametrize("name, compute", cases(), ids=[name for name, _ in cases()])
def test_no_numpy_warning_escapes_an_op(name, compute, xp_backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compute()


def test_backward_optimizer_step_and_clipping_of_inf_and_nan_are_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = tinyattn.tensor([0.0, 4.0], requires_grad=True)
        (x.sqrt() * 0.0).sum().backward()  # 0 * inf in the backward pass
        assert math.isnan(x.grad[0].item())
        layer = nn.Linear(2, 2)
        opt = optim.AdamW(layer.parameters(), lr=1e-3)
        layer(tinyattn.tensor([[1e30, INF]])).sum().backward()
        nn.utils.clip_grad_norm_(layer.parameters(), 1.0)
        opt.step()
        assert not bool(layer.weight.isfinite().all())  # broken weights, as in PyTorch, but no warning


def test_the_users_numpy_settings_are_kept_and_restored_after_an_error():
    before = np.geterr()
    with np.errstate(divide="raise"):
        tinyattn.tensor([0.0]).log()  # the op is silent even inside the user's errstate
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))  # and the user's own NumPy code still gets the user's setting
        with pytest.raises(tinyattn.ShapeError):
            tinyattn.ones(2, 3) @ tinyattn.ones(2, 3)  # an op that fails restores the state too
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))
    assert np.geterr() == before
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.log(np.zeros(1))  # NumPy's default outside: a warning, as before tinyattn was imported


def test_without_numpys_context_variable_the_public_errstate_does_the_same(monkeypatch):
    monkeypatch.setattr(backend, "float_errors_off", backend._errstate_off)  # what an older NumPy gets
    monkeypatch.setattr(backend, "float_errors_restore", backend._errstate_restore)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tinyattn.tensor([0.0]).log().item() == -INF
        assert math.isnan(tinyattn.tensor([[-INF, -INF]]).softmax(-1)[0, 0].item())
    assert np.geterr()["divide"] == "warn"
