"""`nn.MultiheadAttention`: PyTorch's own attention layer, with its arguments, parameters and numbers.

The chapter's `MultiHeadAttention` (attention.py) is always causal self-attention with three Linear
projections. PyTorch's layer is the general one of "Attention Is All You Need": queries, keys and
values may come from different sequences (cross-attention), masks are given per call, and the three
input projections are packed into one `in_proj_weight` of shape (3E, E) (or kept apart as
`q_proj_weight`, `k_proj_weight`, `v_proj_weight` when keys or values have other sizes, kdim/vdim).
The parameters, their names, their order and their initialisation are PyTorch's, so the same seed
gives the same weights and a state_dict moves between the two libraries unchanged.

Shapes, with N batch items, L queries, S keys, E = embed_dim, H heads of size E/H:
query (L, N, E) ((N, L, E) with batch_first=True, (L, E) unbatched) -> Q, K, V by the in-projection
-> split into heads (N, H, L, E/H) -> F.attention (one op: scores, masks, softmax, dropout, weights @ V)
-> heads merged (L, N, E) -> out_proj. Returns (output, weights): weights (N, L, S) averaged over the
heads, (N, H, L, S) with average_attn_weights=False, or None with need_weights=False.

Masks follow PyTorch: in `attn_mask` ((L, S) or (N*H, L, S)) and `key_padding_mask` ((N, S)) a bool
True means "may NOT attend" (masked_fill's convention, the opposite of scaled_dot_product_attention's
bool mask), and a float mask is added to the scores.

Differences from PyTorch, both deliberate: a query whose keys are all masked gets zero weights (its
output is out_proj's bias) where PyTorch gives NaN (except on its scaled_dot_product_attention path,
need_weights=False while training, which gives zeros too); and there is no separate inference
"fast path": eval mode computes what training mode computes, without dropout.
"""

import math
import warnings

from .. import dtypes, functions
from ..errors import ShapeError
from ..tensor import Tensor
from . import functional as F
from . import init
from .layers import Linear
from .module import Module, Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """The output projection of MultiheadAttention: a Linear under PyTorch's name for it (a name that
    matters to PyTorch's quantization tools, and that print(model) shows)."""


class MultiheadAttention(Module):
    """Multi-head attention as torch.nn.MultiheadAttention: same arguments, parameters and results."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim must be divisible by num_heads, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads}: each head gets embed_dim // num_heads dimensions")
        F.check_dropout_p(dropout)
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads

        def empty(*shape):
            return Parameter(functions.empty(*shape, device=device, dtype=dtype))

        # registered in PyTorch's order, the unused ones as None: parameters() and state_dict() match
        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        # built (and so initialised, drawing from the generator) before the in-projection's draws
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:  # one more key and value, learned, that every query can attend to
            self.bias_k = empty(1, 1, embed_dim)
            self.bias_v = empty(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        """PyTorch's initialisation, in its order: Xavier-uniform projections, zero biases (out_proj's
        too), Xavier-normal bias_k and bias_v."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = self._check_inputs(query, key, value, key_padding_mask, attn_mask)
        if not batched:  # one sequence: a batch of one, taken off again at the end
            query, key, value = _each_once(lambda t: t.unsqueeze(0), query, key, value)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:  # computed batch first: (L, N, E) -> (N, L, E)
            query, key, value = _each_once(lambda t: t.transpose(0, 1), query, key, value)
        batch, num_queries, _ = query.shape
        num_keys = key.shape[1]
        self._check_masks(key_padding_mask, attn_mask, batch, num_queries, num_keys)
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        # PyTorch's reading of the is_causal hint: with need_weights=False and no padding mask it
        # replaces attn_mask by the causal mask; otherwise attn_mask is used and the hint ignored
        use_causal = is_causal and key_padding_mask is None and not need_weights
        if key_padding_mask is not None and attn_mask is not None and key_padding_mask.dtype != attn_mask.dtype:
            warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. Use same type "
                          "for both instead.", stacklevel=3)  # the caller of module(...)

        q, k, v = self._in_projection(query, key, value)  # (N, L, E), (N, S, E), (N, S, E)
        if self.bias_k is not None:
            k = functions.cat([k, self.bias_k.expand(batch, 1, self.embed_dim)], dim=1)
            v = functions.cat([v, self.bias_v.expand(batch, 1, self.embed_dim)], dim=1)
        q, k, v = (self._split_heads(t) for t in (q, k, v))  # (N, H, L or S', E/H)
        if self.add_zero_attn:  # one more key and value of zeros in every head
            zeros = functions.zeros(batch, self.num_heads, 1, self.head_dim, dtype=k.dtype, device=k.device)
            k = functions.cat([k, zeros], dim=2)
            v = functions.cat([v, zeros], dim=2)
        extra_keys = k.shape[2] - num_keys  # the keys added above, which no mask hides

        blocked, bias = [], []
        if use_causal:
            blocked.append(F.causal_mask(num_queries, k.shape[2], q.device))
        elif attn_mask is not None:
            if attn_mask.ndim == 3:  # (N*H, L, S): one mask per batch item and head
                attn_mask = attn_mask.reshape(batch, self.num_heads, num_queries, num_keys)
            (blocked if attn_mask.dtype is dtypes.bool_ else bias).append(_pad_keys(attn_mask, extra_keys))
        if key_padding_mask is not None:  # (N, S): hides keys, for every query and head
            mask = _pad_keys(key_padding_mask, extra_keys).reshape(batch, 1, 1, k.shape[2])
            (blocked if mask.dtype is dtypes.bool_ else bias).append(mask)
        blocked = _combined(blocked, lambda a, b: a | b)
        bias = _combined(bias, lambda a, b: a + b)

        keep = None  # dropout's mask, drawn here because the weights returned are after dropout
        if self.training and self.dropout > 0:
            keep = F.dropout_mask((batch, self.num_heads, num_queries, k.shape[2]), self.dropout, q)
        context, weights = F.attention(q, k, v, blocked, bias, dropout_keep=keep)

        # merge the heads, sequence first as PyTorch does: (N, H, L, E/H) -> (L, N, E)
        context = context.permute(2, 0, 1, 3).reshape(num_queries, batch, self.embed_dim)
        output = self.out_proj(context)
        if not batched:
            output = output.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        if not need_weights:
            return output, None
        if keep is not None:
            weights = weights * Tensor._wrap(keep)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        return output, weights if batched else weights.squeeze(0)

    def _in_projection(self, query, key, value):
        """Q, K and V: one matrix product for self-attention (query, key and value the same tensor),
        otherwise one per input, with the rows of the packed weight (or the separate weights)."""
        if self._qkv_same_embed_dim:
            if query is key and key is value:
                return F.linear(query, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
            weights = self.in_proj_weight.chunk(3)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        biases = (None,) * 3 if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        return tuple(F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))

    def _split_heads(self, x):
        """(N, T, E) -> (N, H, T, E/H)."""
        return x.reshape(x.shape[0], x.shape[1], self.num_heads, self.head_dim).transpose(1, 2)

    def _check_inputs(self, query, key, value, key_padding_mask, attn_mask):
        """Whether the input is batched; a clear error for shapes that do not fit."""
        if query.ndim not in (2, 3):
            raise ShapeError(f"MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor (shape {list(query.shape)})")
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ShapeError(f"MultiheadAttention: for a {query.ndim}-D query, key and value must be "
                             f"{query.ndim}-D too, got shapes {list(key.shape)} and {list(value.shape)}")
        for name, t, size in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.shape[-1] != size:
                raise ShapeError(f"MultiheadAttention: {name} of shape {list(t.shape)} should have {size} "
                                 f"features in its last dim (embed_dim={self.embed_dim}, kdim={self.kdim}, "
                                 f"vdim={self.vdim})")
        if key.shape[:-1] != value.shape[:-1]:
            raise ShapeError(f"MultiheadAttention: key of shape {list(key.shape)} and value of shape "
                             f"{list(value.shape)} must have the same sequence length and batch size")
        batch_dim = None if query.ndim == 2 else (0 if self.batch_first else 1)
        if batch_dim is not None and query.shape[batch_dim] != key.shape[batch_dim]:
            raise ShapeError(f"MultiheadAttention: query of shape {list(query.shape)} and key of shape "
                             f"{list(key.shape)} must have the same batch size (dim {batch_dim}"
                             f"{', batch_first=True' if self.batch_first else ', batch_first=False'})")
        for name, mask in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
            if mask is not None and mask.dtype is not dtypes.bool_ and not mask.dtype.is_floating_point:
                raise TypeError(f"MultiheadAttention: only bool and floating types of {name} are supported, "
                                f"got {mask.dtype}")
        return query.ndim == 3

    def _check_masks(self, key_padding_mask, attn_mask, batch, num_queries, num_keys):
        """The masks' shapes, once the input is batch first (an unbatched one as a batch of one)."""
        if key_padding_mask is not None and tuple(key_padding_mask.shape) != (batch, num_keys):
            raise ShapeError(f"MultiheadAttention: key_padding_mask of shape {list(key_padding_mask.shape)} "
                             f"should be (batch, keys) = {[batch, num_keys]} ((keys,) for an unbatched input)")
        if attn_mask is not None:
            expected = {2: (num_queries, num_keys), 3: (batch * self.num_heads, num_queries, num_keys)}
            if tuple(attn_mask.shape) != expected.get(attn_mask.ndim):
                raise ShapeError(f"MultiheadAttention: attn_mask of shape {list(attn_mask.shape)} should be "
                                 f"(queries, keys) = {list(expected[2])} or (batch * num_heads, queries, keys) = "
                                 f"{list(expected[3])}")


def _each_once(change, query, key, value):
    """change(query), change(key), change(value), with `query is key` and `key is value` still true
    where they were (self-attention's projection is then one matrix product)."""
    new_query = change(query)
    new_key = new_query if key is query else change(key)
    new_value = new_key if value is key else new_query if value is query else change(value)
    return new_query, new_key, new_value


def _pad_keys(mask, count):
    """The mask with `count` more key columns that hide nothing (False, or 0.0 for a float mask)."""
    if count == 0:
        return mask
    pad = functions.zeros(*mask.shape[:-1], count, dtype=mask.dtype, device=mask.device)
    return functions.cat([mask, pad], dim=-1)


def _combined(masks, join):
    """None, the one mask, or the masks joined pairwise (bool masks by |, float masks by +)."""
    if not masks:
        return None
    result = masks[0]
    for mask in masks[1:]:
        result = join(result, mask)
    return result
