"""The torch.* functions: `tinyattn.zeros`, `tinyattn.cat`, `tinyattn.exp`, ... as the package root offers them.

Each is defined once. Those that make tensors (tensor, zeros, arange, randint, ...) and those that are Tensor
methods too (asin, median, diag, ...) live in tinyattn/tensor/, below the class that uses them; the rest are
here: forms.py (the function forms of methods: exp(x) is x.exp()), out_forms.py (add, matmul, rand, ... with
out=), defaults.py (default dtype and device, deterministic algorithms), legacy.py (FloatTensor, Variable, ...).
"""

import types as _types

from ..tensor import Size, Tensor  # noqa: F401
from .forms import (abs, abs_, addmm, all, allclose, amax, amin, any, argmax, argmin, argsort, argwhere, baddbmm,
                    cat, cdist, ceil, chunk, clamp, clamp_, clamp_max, clamp_min, clip, clip_, clone, concat, cos,
                    cumprod, cumsum, detach, detach_, dot, einsum, eq, equal, erf, exp, exp2, exp_, expm1, fill_,
                    fix, flatten, flip, fliplr, flipud, floor, fmod, gather, ge, gt, index_fill, index_select,
                    is_floating_point, isclose, isfinite, isinf, isnan, le, log, log10, log1p, log2, log_,
                    log_softmax, logical_not, logspace, logsumexp, lt, masked_fill, masked_select, maximum, mean,
                    meshgrid, minimum, moveaxis, movedim, narrow, ne, neg, neg_, negative, nonzero, norm, normal,
                    numel, outer, permute, pow, prod, promote_types, reciprocal, relu, relu_, repeat_interleave,
                    reshape, result_type, roll, round, rsqrt, scatter, scatter_add, select, sgn, sigmoid, sigmoid_,
                    sign, sin, softmax, sort, split, sqrt, sqrt_, square, squeeze, stack, std, std_mean, sum, t,
                    tanh, tanh_, topk, transpose, tril, tril_indices, triu, triu_indices, trunc, unbind, unique,
                    unsqueeze, var, var_mean, where, zero_)  # noqa: F401
from .defaults import (are_deterministic_algorithms_enabled, get_default_device,
                       is_deterministic_algorithms_warn_only_enabled, set_default_device, set_default_dtype,
                       set_default_tensor_type, use_deterministic_algorithms)  # noqa: F401
from .out_forms import (add, as_strided, bmm, div, matmul, max, min, mm, mul, rand, randn, sub,  # noqa: F401
                        true_divide)
from ..tensor.creation import (Generator, arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                               generator_or_default, get_rng_state, initial_seed, is_tensor, linspace, manual_seed,
                               multinomial, ones, ones_like, rand_like, randint, randint_like, randn_like,
                               randperm, seed, set_rng_state, tensor, zeros, zeros_like)  # noqa: F401
from ..tensor.counting import (bincount, histc, histogram)  # noqa: F401
from ..tensor.elementwise import (acos, addcdiv, addcmul, arccos, arcsin, arctan, arctan2, asin, atan, atan2,
                                  bitwise_xor, cosh, lerp, logical_and, logical_or, logical_xor, multiply, sin_,
                                  sinh)  # noqa: F401
from ..tensor.reductions import (dist, median)  # noqa: F401
from ..tensor.products import (cross, det, inverse, svd)  # noqa: F401
from ..tensor.shapes import (diag, diagonal, ravel, swapaxes, swapdims)  # noqa: F401
from ..tensor.indexing import (index_add)  # noqa: F401
from ..tensor.inplace import (bernoulli)  # noqa: F401

# what `from tinyattn.functions import *` gives the package root: every public name imported above (the
# submodules aside)
__all__ = sorted(name for name, value in globals().items()
                 if not name.startswith("_") and not isinstance(value, _types.ModuleType))
