# %% [markdown] tags=["exercises-only"]
# # 5. Gradient-check exercises: write the backward pass yourself
#
# Autograd computes gradients by calling, for every op, a hand-written **backward** function. Here
# you write seventeen of them, from `x + y` to the book's multi-head attention layer, each as a
# `tinyattn.autograd.Function` whose forward is given, and a checker tells you not only whether your
# backward is right but, when it is not, **what the mistake is**: transposed, sign flipped, off by a
# factor of 2 or 1/sqrt(d), a missing sum over broadcast dims, softmax without its cross terms, ...
# Then you write the five parts of an autograd engine that call those backwards (exercises 18-22),
# and a whole layer's backward by hand, every intermediate of an MLP with batch norm (exercise 23).
#
# Fill in the cells marked **Exercise** (each one raises `NotImplementedError` until you do), then
# run the check cell below it. The same exercises, with the same checker, are on the command line:
# `tinyattn exercises start DIR` writes them as files, `tinyattn exercises check DIR` checks them.
# The reference solutions are in [05_gradient_check_solutions.ipynb](05_gradient_check_solutions.ipynb):
# try first.

# %% [markdown] tags=["solutions-only"]
# # 5. Gradient-check exercises: solutions
#
# The reference solutions to [05_gradient_check_exercises.ipynb](05_gradient_check_exercises.ipynb)
# (the backward of seventeen ops, the five parts of an autograd engine, an MLP with batch norm
# backpropagated by hand), each run through the checker, then what the checker says about mistakes
# learners really make.

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
import math
import os

import tinyattn
import tinyattn as torch
from tinyattn import exercises
from tinyattn.autograd import Function
from tinyattn.nn import functional as F

# random cases the checker tries per exercise (fewer when the test suite runs the notebook)
EXAMPLES = 5 if os.environ.get("TINYATTN_NOTEBOOK_QUICK") else 20


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
# Forget the factor 2 and `gradcheck` fails with a `tinyattn.GradcheckError` whose message says which
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
# That is where most courses stop: a number that is wrong, and no idea why. The exercises below go
# further. `exercises.check(YourClass)` runs three stages and stops at the first failure:
#
# 1. **the fixed cases** (the example, then edge cases: repeated ids, a stretched size-1 dim,
#    `keepdim=True`, ignored targets): your whole Jacobian against finite differences, as above. They
#    alone catch every mistake the exercises plant. When they disagree,
#    the checker compares your Jacobian with *transformations of the right one* (transposed, negated,
#    scaled by a constant it can name, summed over other dims, cut to its diagonal, with a mask taken
#    off, belonging to another input, ...) and names the one that matches, with the evidence;
# 2. **float32 with large inputs**, where a backward can be right in float64 and overflow in float32;
# 3. **random cases** drawn by Hypothesis: other shapes, size-1 dims, repeated ids, ignored targets.
#    A backward that only works for the example fails with the smallest case Hypothesis finds.
#
# It prints one line when all is well, and the diagnosis when not. Each exercise's statement gives the
# shapes; `exercises.hint(NAME)` prints a hint, if you want one.

# %% [markdown]
# #: statement add

# %% tags=["exercise"]
#: exercise add

# %% tags=["solution"]
#: exercise add

# %%
exercises.check(Add, examples=EXAMPLES);

# %% [markdown]
# #: statement mul

# %% tags=["exercise"]
#: exercise mul

# %% tags=["solution"]
#: exercise mul

# %%
exercises.check(Mul, examples=EXAMPLES);

# %% [markdown]
# #: statement sum

# %% tags=["exercise"]
#: exercise sum

# %% tags=["solution"]
#: exercise sum

# %%
exercises.check(Sum, examples=EXAMPLES);

# %% [markdown]
# #: statement mean

# %% tags=["exercise"]
#: exercise mean

# %% tags=["solution"]
#: exercise mean

# %%
exercises.check(Mean, examples=EXAMPLES);

# %% [markdown]
# #: statement matmul

# %% tags=["exercise"]
#: exercise matmul

# %% tags=["solution"]
#: exercise matmul

# %%
exercises.check(MatMul, examples=EXAMPLES);

# %% [markdown]
# #: statement exp_log

# %% tags=["exercise"]
#: exercise exp_log

# %% tags=["solution"]
#: exercise exp_log

# %%
exercises.check(ExpLog, examples=EXAMPLES);

# %% [markdown]
# #: statement relu

# %% tags=["exercise"]
#: exercise relu

# %% tags=["solution"]
#: exercise relu

# %%
exercises.check(ReLU, examples=EXAMPLES);

# %% [markdown]
# #: statement gelu

# %% tags=["exercise"]
#: exercise gelu

# %% tags=["solution"]
#: exercise gelu

# %%
exercises.check(GELU, examples=EXAMPLES);

# %% [markdown]
# #: statement softmax

# %% tags=["exercise"]
#: exercise softmax

# %% tags=["solution"]
#: exercise softmax

# %%
exercises.check(Softmax, examples=EXAMPLES);

# %% [markdown]
# #: statement log_softmax

# %% tags=["exercise"]
#: exercise log_softmax

# %% tags=["solution"]
#: exercise log_softmax

# %%
exercises.check(LogSoftmax, examples=EXAMPLES);

# %% [markdown]
# #: statement cross_entropy

# %% tags=["exercise"]
#: exercise cross_entropy

# %% tags=["solution"]
#: exercise cross_entropy

# %%
exercises.check(CrossEntropy, examples=EXAMPLES);

# %% [markdown]
# #: statement layer_norm

# %% tags=["exercise"]
#: exercise layer_norm

# %% tags=["solution"]
#: exercise layer_norm

# %%
exercises.check(LayerNorm, examples=EXAMPLES);

# %% [markdown]
# #: statement embedding

# %% tags=["exercise"]
#: exercise embedding

# %% tags=["solution"]
#: exercise embedding

# %%
exercises.check(Embedding, examples=EXAMPLES);

# %% [markdown]
# #: statement dropout

# %% tags=["exercise"]
#: exercise dropout

# %% tags=["solution"]
#: exercise dropout

# %%
exercises.check(Dropout, examples=EXAMPLES);

# %% [markdown]
# #: statement masked_fill

# %% tags=["exercise"]
#: exercise masked_fill

# %% tags=["solution"]
#: exercise masked_fill

# %%
exercises.check(MaskedFill, examples=EXAMPLES);

# %% [markdown]
# #: statement causal_head

# %% tags=["exercise"]
#: exercise causal_head

# %% tags=["solution"]
#: exercise causal_head

# %%
exercises.check(AttentionHead, examples=EXAMPLES);

# %% [markdown]
# #: statement multi_head_attention

# %% tags=["exercise"]
#: exercise multi_head_attention

# %% tags=["solution"]
#: exercise multi_head_attention

# %%
exercises.check(MultiHeadAttention, examples=EXAMPLES);

# %% [markdown]
# ## The engine track
#
# The backwards you wrote are called by an engine: it records every op in a graph during the
# forward, then walks that graph from the loss back, running each op's backward and passing the
# gradients along. Exercises 18-22 are the parts of that engine. Each is plugged into a small one,
# `tinyattn.exercises.engine`, built like tinyattn's own on NumPy arrays with less of everything,
# and the checker compares its gradients, with your part in it, against tinyattn's on the same graph
# (the example, edge cases, random graphs), and names the classic mistakes.
#
# What you need of the small engine: `Var(array, requires_grad=False, name=None)` is a tensor
# (`x.array`, `x.grad_fn`, the `Node` that made it, `None` for a leaf; `x.grad` after `backward`),
# with the ops `+`, `-`, `*` (broadcasting), `.tanh()` and `.sum(dim)`. A `Node` is one recorded op:
# `node.edges` (where each input's gradient goes), `node.inputs()` (the nodes its inputs came from),
# `node.needs_input_grad`, `node.saved`. The checker plugs in one of your parts at a time, the
# others being the reference ones, so each exercise can be done on its own.

# %%
import numpy as np

from tinyattn.exercises.engine import BackwardError, Node, Var, grad_mode

a = Var(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True, name="a")
w = Var(np.array([0.5, -0.5]), requires_grad=True, name="w")
c = Var(np.array([[2.0], [3.0]]), name="c")  # a constant: no gradient
out = (a * w).tanh() * a + c
print(out.grad_fn, out.grad_fn.edges)  # the op that made out, and where its inputs' gradients go
print(out.grad_fn.inputs())  # the nodes its inputs came from (c is not one)
out.backward()  # the gradient of out.sum(), into the leaves
print(w.grad, c.grad)

# %% [markdown]
# #: statement topological_order

# %% tags=["exercise"]
#: exercise topological_order

# %% tags=["solution"]
#: exercise topological_order

# %%
exercises.check(topological_order, examples=EXAMPLES);

# %% [markdown]
# #: statement accumulate

# %% tags=["exercise"]
#: exercise accumulate

# %% tags=["solution"]
#: exercise accumulate

# %%
exercises.check(accumulate, examples=EXAMPLES);

# %% [markdown]
# #: statement unbroadcast

# %% tags=["exercise"]
#: exercise unbroadcast

# %% tags=["solution"]
#: exercise unbroadcast

# %%
exercises.check(unbroadcast, examples=EXAMPLES);

# %% [markdown]
# #: statement saved

# %% tags=["exercise"]
#: exercise saved

# %% tags=["solution"]
#: exercise saved

# %%
exercises.check(Saved, examples=EXAMPLES);

# %% [markdown]
# #: statement apply

# %% tags=["exercise"]
#: exercise apply

# %% tags=["solution"]
#: exercise apply

# %%
exercises.check(apply, examples=EXAMPLES);

# %% [markdown]
# ## The layer track: backprop by hand
#
# Autograd hides the chain rule; writing it out once for a whole layer shows what it does. Exercise
# 23 is a two-layer MLP with batch norm and a cross-entropy loss, written one op per line with every
# intermediate named by `keep()`. You return the gradient of the loss with respect to each of them,
# from the loss back, with tinyattn's ops and no `.backward()`. The checker runs the same forward
# with autograd and compares your gradients with its own one by one, in the backward order: it
# names the first wrong one and what it looks like (transposed, missing the sum over the batch, off
# by 1/n, the path through a value used twice forgotten, ...).

# %% [markdown]
# #: statement mlp_batchnorm

# %% tags=["exercise"]
#: exercise mlp_batchnorm

# %% tags=["solution"]
#: exercise mlp_batchnorm

# %%
exercises.check(manual_backward, examples=EXAMPLES);

# %% [markdown] tags=["solutions-only"]
# ## What the checker says about mistakes
#
# Each exercise carries the mistakes learners make, planted in a copy of its solution (the tests check
# that the checker names every one of them). A few, with the backward that makes them and the report:

# %% tags=["solutions-only"]
import inspect


def show(name, mistake):
    """Print a planted mistake's code, then what the checker says about it."""
    exercise = exercises.get(name)
    planted = next(m for m in exercise.mistakes if m.name == mistake)
    print(inspect.getsource(planted.backward))
    exercises.check(exercise.make(planted.backward), exercise=name, examples=EXAMPLES)


show("softmax", "diagonal_only")

# %% [markdown] tags=["solutions-only"]
# Weight and bias of layer norm returned in the wrong order: both have shape `(n,)`, so only their
# values can tell.

# %% tags=["solutions-only"]
show("layer_norm", "weight_and_bias_swapped")

# %% [markdown] tags=["solutions-only"]
# The scale `1/sqrt(d)` of the scores forgotten in the backward of the attention head: the gradients of
# `W_query` and `W_key` are off by exactly `sqrt(d)`; `x`'s mixes that with its right path through `v`.

# %% tags=["solutions-only"]
show("causal_head", "scale_forgotten")

# %% [markdown] tags=["solutions-only"]
# An embedding whose backward assigns instead of adding: right on the example, whose ids are all
# different, wrong as soon as an id repeats. Hypothesis finds such a case and shrinks it to the smallest.

# %% tags=["solutions-only"]
show("embedding", "assigned")

# %% [markdown] tags=["solutions-only"]
# Cross-entropy with a softmax written out without the shift by the row max: right in float64, NaN in
# float32 once the logits pass 88.

# %% tags=["solutions-only"]
show("cross_entropy", "no_max_shift")

# %% [markdown] tags=["solutions-only"]
# The engine track: a topological order taken breadth first, in the order the nodes are found. `v1`
# comes before `v2`, which uses it, so `v1`'s backward runs before all its gradient has arrived.

# %% tags=["solutions-only"]
show("topological_order", "breadth_first")

# %% [markdown] tags=["solutions-only"]
# Backprop by hand: `h_pre` reaches the loss through `diff` and through the batch's `mean`; forget the
# second path and the checker says so, with every gradient before it right.

# %% tags=["solutions-only"]
show("mlp_batchnorm", "mean_path_forgotten")

# %% [markdown]
# ## Going further
#
# - On the command line, `tinyattn exercises start DIR` writes the same exercises as files, one per
#   exercise (`--track backward`, `engine` or `layer` for one track), and `tinyattn exercises check
#   DIR` prints a table of them with the same diagnoses (`--solutions` writes the reference
#   solutions, for teachers).
# - `gradcheck` works on any function of tensors, not only on your own `Function`s: try
#   `tinyattn.gradcheck(lambda x: F.gelu(x), (x,))`, or a whole module in float64
#   (`module.double()`), with the parameters as inputs.
# - For large inputs, `fast_mode=True` compares one random projection `vᵀ J u` instead of the whole
#   Jacobian: two passes instead of one per element.
# - Dropout is random, yet checkable: `gradcheck` reseeds the generator before every evaluation
#   (`seed=`), so the mask stays the same while `x` moves.
