# %% [markdown] tags=["exercises-only"]
# # 5. Gradient-check exercises: write the backward pass yourself
#
# Autograd computes gradients by calling, for every op, a hand-written **backward** function. Here
# you write three of them, the ones attention is made of, and check each against **finite
# differences** with `tinyattn.gradcheck`:
#
# 1. softmax,
# 2. layer norm,
# 3. one causal attention head, all in one op.
#
# Fill in the cells marked **Exercise** (each one raises `NotImplementedError` until you do), then
# run the check cell below it. The reference solutions are in
# [05_gradient_check_solutions.ipynb](05_gradient_check_solutions.ipynb): try first.

# %% [markdown] tags=["solutions-only"]
# # 5. Gradient-check exercises: solutions
#
# The reference solutions to [05_gradient_check_exercises.ipynb](05_gradient_check_exercises.ipynb):
# the backward passes of softmax, layer norm and one causal attention head, each checked against
# finite differences with `tinyattn.gradcheck`, then a few wrong backward passes to show what a
# failing check reports.

# %% [markdown]
# ## How a gradient check works
#
# For an op `y = f(x)`, the backward pass receives `grad_y = ∂L/∂y` (how the loss changes with each
# output) and must return `grad_x = ∂L/∂x`. By the chain rule, `grad_x = Jᵀ grad_y`, where `J` is
# the Jacobian `∂y/∂x`. `gradcheck` builds `J` two ways and compares them entry by entry:
#
# - **analytical**: run your backward once per output element, with `grad_y` one-hot;
# - **numerical**: nudge each input element by ±`eps` and take the central difference
#   `(f(x + eps) - f(x - eps)) / (2 eps)`, accurate to `O(eps²)`.
#
# Check in **float64**: with `eps = 1e-6`, float32's 7 digits would leave almost nothing of the
# difference (gradcheck warns when an input is not float64).
#
# An op with a hand-written backward is a `tinyattn.autograd.Function`, written as in PyTorch:
# `forward(ctx, ...)` computes the result and saves what the backward needs with
# `ctx.save_for_backward(...)`; `backward(ctx, grad_output)` returns one gradient per argument of
# `forward` (`None` for an argument that needs none). Both work on tensors, with gradient recording
# switched off inside. A first example, `y = x²`:

# %%
import tinyattn
import tinyattn as torch
from tinyattn.autograd import Function
from tinyattn.nn import functional as F


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_y):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_y  # dy/dx = 2x, times the gradient that arrives


torch.manual_seed(0)
x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
print(tinyattn.gradcheck(Square.apply, (x,)))

# %% [markdown]
# ## What a failing check looks like
#
# Forget the factor 2 and the check fails with a `tinyattn.GradcheckError` whose message says which
# output and input disagree, at which element, both values, and how many Jacobian entries are out
# of tolerance:

# %%
class WrongSquare(Square):
    @staticmethod
    def backward(ctx, grad_y):
        (x,) = ctx.saved_tensors
        return x * grad_y  # wrong: the factor 2 is missing


try:
    tinyattn.gradcheck(WrongSquare.apply, (x,))
except tinyattn.GradcheckError as error:
    print(error)

# %% [markdown]
# Here the diagonal of the Jacobian is half what it should be (12 wrong entries: one per element;
# the other 132 are correctly 0). A wrong *shape* is caught too, before any number is compared.
#
# One helper to run the checks below:

# %% tags=["exercises-only"]
def check(name, fn, inputs):
    """Run gradcheck on fn(*inputs) and say how it went (without stopping the notebook)."""
    try:
        tinyattn.gradcheck(fn, inputs)
    except NotImplementedError:
        print(f"{name}: not done yet - write the backward in the Exercise cell above, run it, then run this cell again")
    except tinyattn.GradcheckError as error:
        print(f"{name}: the backward disagrees with finite differences:\n{error}")
    else:
        print(f"{name}: gradcheck passed")

# %% tags=["solutions-only"]
def check(name, fn, inputs):
    """Run gradcheck on fn(*inputs); a mismatch raises GradcheckError (and stops the notebook)."""
    tinyattn.gradcheck(fn, inputs)
    print(f"{name}: gradcheck passed")

# %% [markdown]
# ## Exercise 1: softmax
#
# `y = softmax(x)` along the last dimension: `y_i = exp(x_i) / Σ_k exp(x_k)`. The forward pass is
# given (it subtracts the row maximum first, which changes nothing but keeps `exp` from
# overflowing). Its Jacobian, within one row:
#
# `∂y_i / ∂x_j = y_i (δ_ij - y_j)`
#
# Write `grad_x = Jᵀ grad_y` without building `J`: each row needs only `y`, `grad_y` and one sum
# over the row. Hint: work out `Σ_i grad_y_i · y_i (δ_ij - y_j)` by hand first.

# %% tags=["exercise"]
class Softmax(Function):
    @staticmethod
    def forward(ctx, x):
        shifted = x - x.max(dim=-1, keepdim=True).values
        e = shifted.exp()
        y = e / e.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        # Exercise: return grad_x, the same shape as y
        raise NotImplementedError("write the backward here")

# %% tags=["solution"]
class Softmax(Function):
    @staticmethod
    def forward(ctx, x):
        shifted = x - x.max(dim=-1, keepdim=True).values
        e = shifted.exp()
        y = e / e.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        # sum_i g_i y_i (delta_ij - y_j) = y_j g_j - y_j sum_i g_i y_i = y_j (g_j - <g, y>)
        return y * (grad_y - (grad_y * y).sum(dim=-1, keepdim=True))

# %% [markdown]
# The check: the forward agrees with the library's softmax, and the backward with finite
# differences.

# %%
torch.manual_seed(1)
x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
print("forward matches torch.softmax:", torch.allclose(Softmax.apply(x), torch.softmax(x, dim=-1)))
check("softmax", Softmax.apply, (x,))

# %% [markdown]
# ## Exercise 2: layer norm
#
# Layer norm normalises each token's vector (the last dimension, of size `n`) to mean 0 and
# variance 1, then scales and shifts it with the trainable `weight` and `bias`:
#
# `x̂ = (x - μ) · r` with `r = 1 / √(σ² + ε)`, then `y = x̂ · weight + bias`
#
# (`σ²` is the biased variance, dividing by `n`). The backward must return three gradients:
#
# - `grad_bias` and `grad_weight`: the bias and weight are shared by every token, so their
#   gradients **sum over all the leading dimensions** (`grad_y` and `grad_y · x̂`);
# - `grad_x`: with `g = grad_y · weight` (the gradient with respect to `x̂`), and remembering that
#   `μ` and `r` depend on every element of the row, it works out to
#   `grad_x = r · (g - mean(g) - x̂ · mean(g · x̂))`, the means taken along the last dimension.
#   Derive it if you can (differentiate `x̂_i` with respect to `x_j`: one term from `x_j` itself, one
#   from `μ`, one from `r`).

# %% tags=["exercise"]
class LayerNorm(Function):
    eps = 1e-5

    @staticmethod
    def forward(ctx, x, weight, bias):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        rstd = 1.0 / (var + LayerNorm.eps).sqrt()
        xhat = (x - mean) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_y):
        xhat, rstd, weight = ctx.saved_tensors
        # Exercise: return grad_x, grad_weight, grad_bias (each the shape of its input)
        raise NotImplementedError("write the backward here")

# %% tags=["solution"]
class LayerNorm(Function):
    eps = 1e-5

    @staticmethod
    def forward(ctx, x, weight, bias):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        rstd = 1.0 / (var + LayerNorm.eps).sqrt()
        xhat = (x - mean) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_y):
        xhat, rstd, weight = ctx.saved_tensors
        leading = tuple(range(grad_y.ndim - 1))  # every dim but the last: the tokens share weight and bias
        grad_weight = (grad_y * xhat).sum(dim=leading)
        grad_bias = grad_y.sum(dim=leading)
        g = grad_y * weight  # the gradient with respect to xhat
        grad_x = rstd * (g - g.mean(dim=-1, keepdim=True) - xhat * (g * xhat).mean(dim=-1, keepdim=True))
        return grad_x, grad_weight, grad_bias

# %%
torch.manual_seed(2)
x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
weight = (1 + 0.5 * torch.randn(4, dtype=torch.float64)).requires_grad_()
bias = torch.randn(4, dtype=torch.float64, requires_grad=True)

same = torch.allclose(LayerNorm.apply(x, weight, bias), F.layer_norm(x, (4,), weight, bias, eps=LayerNorm.eps))
print("forward matches F.layer_norm:", same)
check("layer norm", LayerNorm.apply, (x, weight, bias))

# %% [markdown]
# ## Exercise 3: one causal attention head
#
# The whole head of notebook 3 as one op, without dropout. For `x` of shape `(..., T, d_in)` and
# three `(d_in, d_out)` matrices:
#
# ```
# q, k, v = x @ W_query, x @ W_key, x @ W_value             (..., T, d_out)
# s = (q @ kᵀ) · c,  c = 1/√d_out, future positions -inf   (..., T, T)
# a = softmax(s)                                             (..., T, T)
# out = a @ v                                                (..., T, d_out)
# ```
#
# Go backwards through these lines, one at a time. Two rules do almost all the work:
#
# - for `C = A @ B`: `grad_A = grad_C @ Bᵀ` and `grad_B = Aᵀ @ grad_C`;
# - a variable used several times (`x` feeds `q`, `k` and `v`) gets the **sum** of the gradients of
#   its uses.
#
# The softmax step is exercise 1 (a masked entry has `a = 0`, so its gradient comes out 0 by
# itself). The weight matrices are shared by all batch items, so their gradients sum over the
# batch: flatten `x` and the gradients to 2-D with `reshape(-1, ...)` first. Transpose the last
# two dims with `.transpose(-2, -1)`.

# %% tags=["exercise"]
class AttentionHead(Function):
    @staticmethod
    def forward(ctx, x, W_query, W_key, W_value):
        q, k, v = x @ W_query, x @ W_key, x @ W_value
        scale = 1.0 / q.shape[-1] ** 0.5
        T = x.shape[-2]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        s = (q @ k.transpose(-2, -1) * scale).masked_fill(future, -torch.inf)
        a = torch.softmax(s, dim=-1)
        ctx.save_for_backward(x, W_query, W_key, W_value, q, k, v, a)
        ctx.scale = scale
        return a @ v

    @staticmethod
    def backward(ctx, grad_out):
        x, W_query, W_key, W_value, q, k, v, a = ctx.saved_tensors
        # Exercise: return grad_x, grad_W_query, grad_W_key, grad_W_value
        raise NotImplementedError("write the backward here")

# %% tags=["solution"]
class AttentionHead(Function):
    @staticmethod
    def forward(ctx, x, W_query, W_key, W_value):
        q, k, v = x @ W_query, x @ W_key, x @ W_value
        scale = 1.0 / q.shape[-1] ** 0.5
        T = x.shape[-2]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        s = (q @ k.transpose(-2, -1) * scale).masked_fill(future, -torch.inf)
        a = torch.softmax(s, dim=-1)
        ctx.save_for_backward(x, W_query, W_key, W_value, q, k, v, a)
        ctx.scale = scale
        return a @ v

    @staticmethod
    def backward(ctx, grad_out):
        x, W_query, W_key, W_value, q, k, v, a = ctx.saved_tensors
        # out = a @ v
        grad_a = grad_out @ v.transpose(-2, -1)
        grad_v = a.transpose(-2, -1) @ grad_out
        # a = softmax(s): exercise 1 (masked entries have a = 0, so their gradient is 0)
        grad_s = a * (grad_a - (grad_a * a).sum(dim=-1, keepdim=True))
        # s = (q @ k^T) * scale
        grad_s = grad_s * ctx.scale
        grad_q = grad_s @ k
        grad_k = grad_s.transpose(-2, -1) @ q
        # q, k, v = x @ W: x is used three times, so its gradient is a sum of three
        grad_x = grad_q @ W_query.T + grad_k @ W_key.T + grad_v @ W_value.T
        x2 = x.reshape(-1, x.shape[-1])  # (batch * T, d_in): the weights are shared by all tokens

        def grad_w(grad):
            return x2.T @ grad.reshape(-1, grad.shape[-1])

        return grad_x, grad_w(grad_q), grad_w(grad_k), grad_w(grad_v)

# %% [markdown]
# The check, on a batch of two sequences of four tokens. The forward is compared with the library's
# `F.scaled_dot_product_attention`:

# %%
torch.manual_seed(3)
x = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
W_query, W_key, W_value = (torch.randn(3, 2, dtype=torch.float64, requires_grad=True) for _ in range(3))

reference = F.scaled_dot_product_attention(x @ W_query, x @ W_key, x @ W_value, is_causal=True)
print("forward matches F.scaled_dot_product_attention:",
      torch.allclose(AttentionHead.apply(x, W_query, W_key, W_value), reference))
check("attention head", AttentionHead.apply, (x, W_query, W_key, W_value))

# %% [markdown] tags=["solutions-only"]
# The library's own ops give the same gradients as the solutions (autograd through `x @ W`,
# `masked_fill`, `softmax`, ...):

# %% tags=["solutions-only"]
def head_from_library_ops(x, W_query, W_key, W_value):
    q, k, v = x @ W_query, x @ W_key, x @ W_value
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


grads_mine = tinyattn.autograd.grad(AttentionHead.apply(x, W_query, W_key, W_value).sum(), (x, W_query, W_key, W_value))
grads_library = tinyattn.autograd.grad(head_from_library_ops(x, W_query, W_key, W_value).sum(), (x, W_query, W_key, W_value))
print(all(torch.allclose(a, b) for a, b in zip(grads_mine, grads_library)))

# %% [markdown] tags=["solutions-only"]
# ## What failing checks look like
#
# Three classic mistakes, and the reports they produce.
#
# **1. Softmax without the subtraction**, `y * grad_y`: the diagonal of each row's Jacobian is off
# by `y_i²`, and every off-diagonal entry is missing.

# %% tags=["solutions-only"]
class WrongSoftmax(Softmax):
    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        return y * grad_y


torch.manual_seed(1)
x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
try:
    tinyattn.gradcheck(WrongSoftmax.apply, (x,))
except tinyattn.GradcheckError as error:
    print(error)

# %% [markdown] tags=["solutions-only"]
# **2. Layer norm that forgets that `μ` and `r` depend on `x`**, `grad_x = r · g`: right for the
# direct path, wrong for the two paths through the row's mean and variance.

# %% tags=["solutions-only"]
class WrongLayerNorm(LayerNorm):
    @staticmethod
    def backward(ctx, grad_y):
        xhat, rstd, weight = ctx.saved_tensors
        leading = tuple(range(grad_y.ndim - 1))
        return rstd * grad_y * weight, (grad_y * xhat).sum(dim=leading), grad_y.sum(dim=leading)


torch.manual_seed(2)
x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
try:
    tinyattn.gradcheck(WrongLayerNorm.apply, (x, weight, bias))
except tinyattn.GradcheckError as error:
    print(error)

# %% [markdown] tags=["solutions-only"]
# **3. A weight gradient that is not summed over the batch**: its shape is wrong, and the check stops
# before comparing any number.

# %% tags=["solutions-only"]
class WrongShapeLayerNorm(LayerNorm):
    @staticmethod
    def backward(ctx, grad_y):
        xhat, rstd, weight = ctx.saved_tensors
        grad_x, _, grad_bias = LayerNorm.backward(ctx, grad_y)
        return grad_x, grad_y * xhat, grad_bias  # (2, 3, 4) for a weight of shape (4,)


try:
    tinyattn.gradcheck(WrongShapeLayerNorm.apply, (x, weight, bias))
except tinyattn.GradcheckError as error:
    print(error)

# %% [markdown]
# ## Going further
#
# - `gradcheck` works on any function of tensors, not only on your own `Function`s: try
#   `tinyattn.gradcheck(lambda x: F.gelu(x), (x,))`, or a whole module in float64
#   (`module.double()`), with the parameters as inputs.
# - For large inputs, `fast_mode=True` compares one random projection `vᵀ J u` instead of the whole
#   Jacobian: two passes instead of one per element.
# - Dropout is random, yet checkable: `gradcheck` reseeds the generator before every evaluation
#   (`seed=`), so the mask stays the same while `x` moves.
