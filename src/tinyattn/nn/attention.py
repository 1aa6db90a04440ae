"""The attention classes of the attention chapter, with the book's names, arguments and state_dict keys.

From the simplest to the one GPT uses:

- `SelfAttention_v1`: scaled dot-product attention with raw weight matrices (x @ W).
- `SelfAttention_v2`: the same with `Linear` projections (better initialisation).
- `CausalAttention`: a mask hides the future tokens; dropout on the weights; batched input.
- `MultiHeadAttentionWrapper`: several causal heads side by side, outputs concatenated.
- `MultiHeadAttention`: the same heads from one projection each for Q, K and V, split by a view.

Three differences from the book's code, each for safety, none changing a result the book shows:
the weights of the last forward are kept in `.attn_weights` (detached, before dropout) for heat maps;
a sequence longer than `context_length` is a clear error (the book's mask slice would fail later with
a shape error); and a row whose scores are all masked gives zero weights instead of NaN.
"""

import math

from .. import functions
from ..errors import ShapeError
from . import functional as F
from .layers import Dropout, Linear
from .module import Module, ModuleList, Parameter


def _check_context(num_tokens, context_length):
    if num_tokens > context_length:
        raise ValueError(
            f"the input has {num_tokens} tokens but this attention layer was built with "
            f"context_length={context_length}: crop the input to the last {context_length} tokens "
            "or build the layer with a larger context_length"
        )


class SelfAttention_v1(Module):
    """Self-attention with trainable weight matrices W_query, W_key, W_value of shape (d_in, d_out)."""

    def __init__(self, d_in, d_out):
        super().__init__()
        _check_sizes(self, d_in=d_in, d_out=d_out)
        self.W_query = Parameter(functions.rand(d_in, d_out))
        self.W_key = Parameter(functions.rand(d_in, d_out))
        self.W_value = Parameter(functions.rand(d_in, d_out))
        self.attn_weights = None

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.transpose(-2, -1)  # omega: one score per (query, key) pair
        attn_weights = functions.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        self.attn_weights = attn_weights.detach()
        return attn_weights @ values


class SelfAttention_v2(Module):
    """Self-attention with Linear projections (weights stored transposed, as nn.Linear does)."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        _check_sizes(self, d_in=d_in, d_out=d_out)
        self.W_query = Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = Linear(d_in, d_out, bias=qkv_bias)
        self.attn_weights = None

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = functions.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        self.attn_weights = attn_weights.detach()
        return attn_weights @ values


class CausalAttention(Module):
    """Single-head attention in which token t attends only to tokens 0..t, with dropout on the weights."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        _check_sizes(self, d_in=d_in, d_out=d_out, context_length=context_length)
        self.d_out = d_out
        self.context_length = context_length
        self.W_query = Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = Dropout(dropout)
        # 1 above the diagonal: the future positions each query must not see
        self.register_buffer("mask", functions.triu(functions.ones(context_length, context_length), diagonal=1))
        self.attn_weights = None

    def forward(self, x):
        num_tokens = x.shape[-2]
        _check_context(num_tokens, self.context_length)
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -math.inf)
        attn_weights = F.safe_softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        self.attn_weights = attn_weights.detach()
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


class MultiHeadAttentionWrapper(Module):
    """`num_heads` independent CausalAttention heads; their outputs concatenated (d_out * num_heads)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        _check_sizes(self, d_in=d_in, d_out=d_out, context_length=context_length, num_heads=num_heads)
        self.heads = ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return functions.cat([head(x) for head in self.heads], dim=-1)

    @property
    def attn_weights(self):
        """The heads' weights of the last forward, stacked: (..., num_heads, num_tokens, num_tokens)."""
        if any(head.attn_weights is None for head in self.heads):
            return None
        return functions.stack([head.attn_weights for head in self.heads], dim=-3)


class MultiHeadAttention(Module):
    """Multi-head attention with weight splits: one projection each for Q, K and V, split into heads.

    Shapes, with b batch items, T tokens, h heads of size hd = d_out / h:
    x (b, T, d_in) -> Q, K, V (b, T, d_out) -> view (b, T, h, hd) -> transpose (b, h, T, hd)
    -> scores Q K^T (b, h, T, T) -> causal mask, softmax(scores / sqrt(hd)), dropout
    -> weights @ V (b, h, T, hd) -> transpose (b, T, h, hd) -> view (b, T, d_out) -> out_proj.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        _check_sizes(self, d_in=d_in, d_out=d_out, context_length=context_length, num_heads=num_heads, split=True)
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.W_query = Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = Linear(d_out, d_out)  # combines the heads' outputs
        self.dropout = Dropout(dropout)
        self.register_buffer("mask", functions.triu(functions.ones(context_length, context_length), diagonal=1))
        self.attn_weights = None

    def forward(self, x):
        if x.ndim != 3:
            raise ShapeError(f"MultiHeadAttention expects input of shape (batch, num_tokens, d_in), got {list(x.shape)}")
        b, num_tokens, d_in = x.shape
        _check_context(num_tokens, self.context_length)

        keys = self.W_key(x)  # (b, num_tokens, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)

        # split the last dim into heads: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        # group by head: (b, num_heads, num_tokens, head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        # The book's next steps, as one op (F.attention, forward and backward side by side), which
        # makes fewer passes over the (num_tokens x num_tokens) scores and computes the same numbers:
        #   attn_scores = queries @ keys.transpose(2, 3)
        #   attn_scores.masked_fill_(mask_bool, -inf)
        #   attn_weights = softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        #   context_vec = self.dropout(attn_weights) @ values
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        context_vec, attn_weights = F.attention(queries, keys, values, blocked=mask_bool,
                                                dropout_p=self.dropout.p, training=self.dropout.training)
        self.attn_weights = attn_weights.detach()

        context_vec = context_vec.transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # merge the heads
        return self.out_proj(context_vec)


def multihead_from_wrapper(wrapper):
    """The MultiHeadAttention that computes exactly what a MultiHeadAttentionWrapper computes.

    Head i of the wrapper projects with W_query_i of shape (head_dim, d_in) (Linear's layout). Stacking
    the heads' matrices along the output dim gives one (num_heads * head_dim, d_in) projection whose
    rows i*head_dim .. (i+1)*head_dim are head i's: the view into heads then recovers each head
    exactly, and both scale by sqrt(head_dim). With out_proj the identity, concatenating the heads is
    all that is left, which is what the wrapper does.

    With dropout active the two draw their masks in a different order (the wrapper head by head, the
    weight-split class for all heads at once), so they agree in distribution, not draw by draw.
    """
    heads = list(wrapper.heads)
    first = heads[0]
    head_dim = first.d_out
    d_in = first.W_query.in_features
    qkv_bias = first.W_query.bias is not None
    mha = MultiHeadAttention(d_in, head_dim * len(heads), first.context_length, first.dropout.p, len(heads), qkv_bias)
    mha.to(first.W_query.weight.dtype)  # the wrapper's precision (a float64 wrapper gives a float64 copy)
    state = {"mask": first.mask}
    for name in ("W_query", "W_key", "W_value"):
        state[f"{name}.weight"] = functions.cat([getattr(h, name).weight.detach() for h in heads], dim=0)
        if qkv_bias:
            state[f"{name}.bias"] = functions.cat([getattr(h, name).bias.detach() for h in heads], dim=0)
    state["out_proj.weight"] = functions.eye(head_dim * len(heads))
    state["out_proj.bias"] = functions.zeros(head_dim * len(heads))
    mha.load_state_dict(state)
    return mha.to(first.mask.device).train(wrapper.training)


def _check_sizes(layer, split=False, **sizes):
    """A ValueError naming the argument unless every size is a positive integer (PyTorch would fail
    later, with a ZeroDivisionError or a shape error); with split=True, also unless num_heads divides d_out."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not hasattr(value, "__index__") or value < 1:  # an int, NumPy's too
            raise ValueError(f"{type(layer).__name__}: {name} must be a positive integer, got {value!r}")
    if split and sizes["d_out"] % sizes["num_heads"] != 0:
        raise ValueError(
            f"d_out must be divisible by num_heads, got d_out={sizes['d_out']} and num_heads={sizes['num_heads']}: "
            "each head gets d_out // num_heads dimensions"
        )
