"""`nn.Transformer` and its parts, as PyTorch has them: the encoder-decoder of "Attention Is All You Need".

    TransformerEncoderLayer   x -> self-attention -> feed-forward, each with a residual and a LayerNorm
    TransformerEncoder        a stack of copies of one encoder layer (+ an optional final norm)
    TransformerDecoderLayer   x -> self-attention -> cross-attention on `memory` -> feed-forward
    TransformerDecoder        a stack of copies of one decoder layer (+ an optional final norm)
    Transformer               encoder(src) = memory; decoder(tgt, memory)

Built from nn.MultiheadAttention, Linear, Dropout and LayerNorm under PyTorch's names, in PyTorch's
order, so the same seed gives the same weights and a state_dict (`layers.0.self_attn.in_proj_weight`,
`layers.0.linear1.weight`, `layers.0.norm1.weight`, ...) moves between the two libraries. The stacks
deep-copy the layer they are given, so all their layers start equal (as in PyTorch); nn.Transformer
then redraws every parameter of two or more dimensions with xavier_uniform_, in parameters() order.

Post-norm (the paper's, `norm_first=False`):  x = norm1(x + dropout1(self_attn(x)))
                                              x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))))
Pre-norm (`norm_first=True`):                 x = x + dropout1(self_attn(norm1(x))), and so on.

Masks go to MultiheadAttention as given (see there): in a bool mask True means "may not attend", a
float mask is added to the scores. Differences from PyTorch, deliberate:
- PyTorch turns bool masks into float masks of -inf first; tinyattn keeps them bool. The numbers are
  the same, except for a query whose keys are all masked: zeros here (MultiheadAttention's rule).
- PyTorch has an inference "fast path" (eval mode, no gradients, batch_first, ...: a fused kernel, and
  nested tensors for padded batches in the encoder). tinyattn computes eval mode as training mode without
  dropout; the results agree to float32 rounding. `enable_nested_tensor` and `mask_check` are accepted
  and stored, and change nothing: tinyattn has no nested tensors.
"""

import copy

from .. import dtypes, functions
from ..errors import ShapeError
from . import functional as F
from . import init
from .layers import GELU, Dropout, LayerNorm, Linear, ReLU
from .module import Module, ModuleList
from .multihead_attention import MultiheadAttention


def _activation(activation):
    """The feed-forward's activation: "relu", "gelu" or any callable (a function or a module)."""
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"activation should be \"relu\", \"gelu\" or a callable, not {activation!r}")
    return activation


def _relu_or_gelu(activation):
    """PyTorch's flag for its fast path (1 relu, 2 gelu, 0 other), kept for code that reads it."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def _dropout_sequence_first(dropout, x, batch_first):
    """dropout(x) for an attention output, with PyTorch's mask. PyTorch's MultiheadAttention computes
    sequence first and returns a batch-first result as a transposed view of an (L, N, E) array; its
    dropout draws the mask in that memory order. Drawing it for x.transpose(0, 1) gives the same mask."""
    if batch_first and x.ndim == 3 and dropout.training and dropout.p > 0:
        return dropout(x.transpose(0, 1)).transpose(0, 1)
    return dropout(x)


def _check_sizes(d_model, nhead):
    if d_model <= 0 or nhead <= 0:
        raise ValueError(f"d_model and nhead must be greater than 0, got d_model={d_model} and nhead={nhead}")
    if d_model % nhead != 0:
        raise ValueError(f"d_model must be divisible by nhead, got d_model={d_model} and nhead={nhead}: "
                         f"each head gets d_model // nhead dimensions")


def _check_features(name, x, d_model):
    if x.ndim not in (2, 3):
        raise ShapeError(f"{name} should be unbatched 2D (seq, d_model) or batched 3D, got shape {list(x.shape)}")
    if x.shape[-1] != d_model:
        raise ShapeError(f"{name} of shape {list(x.shape)} should have d_model={d_model} features in its last dim")


def _seq_len(x, batch_first):
    """The sequence length of x: (S, E) unbatched, (N, S, E) batch first, (S, N, E) otherwise."""
    return x.shape[0] if x.ndim == 2 or not batch_first else x.shape[1]


def _is_causal_mask(mask, is_causal, size):
    """PyTorch's reading of the is_causal hint: True or False as given; None means "look": True when
    the mask is exactly the (size, size) causal mask (bool True, or float -inf, above the diagonal)."""
    if is_causal is not None or mask is None:
        return is_causal is True
    if tuple(mask.shape) != (size, size):
        return False
    if mask.dtype is dtypes.bool_:
        causal = functions.triu(functions.ones(size, size, device=mask.device), diagonal=1) == 1
    else:
        causal = Transformer.generate_square_subsequent_mask(size, device=mask.device, dtype=mask.dtype)
    return bool((mask == causal).all())


class TransformerEncoderLayer(Module):
    """One encoder layer, as torch.nn.TransformerEncoderLayer: self-attention, then a feed-forward
    network (linear1 -> activation -> dropout -> linear2), each added to its input and normalised.

    d_model: features of the input; nhead: attention heads (d_model must be divisible by it);
    dim_feedforward: the feed-forward's hidden size; dropout: after the attention weights, the activation
    and both sub-blocks; activation: "relu", "gelu" or a callable; layer_norm_eps: the norms' eps;
    batch_first: inputs (N, S, E) rather than (S, N, E); norm_first: pre-norm instead of post-norm;
    bias: biases in the linear layers, the attention and the norms.

    forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False): src (S, N, E), (N, S, E)
    or unbatched (S, E); src_mask (S, S) or (N*nhead, S, S); src_key_padding_mask (N, S);
    is_causal: a hint that src_mask is the causal mask (which it then must be given as).
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        _check_sizes(d_model, nhead)
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        # built in PyTorch's order: the generator's draws (and so the weights) follow it
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        activation = _activation(activation)
        self.activation_relu_or_gelu = _relu_or_gelu(activation)
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        _check_features("TransformerEncoderLayer: src", src, self.self_attn.embed_dim)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return _dropout_sequence_first(self.dropout1, x, self.self_attn.batch_first)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """One decoder layer, as torch.nn.TransformerDecoderLayer: self-attention on the target, attention
    from the target to `memory` (the encoder's output), then the feed-forward network; each added to
    its input and normalised (norm1, norm2, norm3). Arguments as TransformerEncoderLayer's.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False): tgt (T, N, E), memory
    (S, N, E) (batch first: (N, T, E), (N, S, E)); tgt_mask (T, T), memory_mask (T, S) (or with a first
    dim N*nhead); tgt_key_padding_mask (N, T), memory_key_padding_mask (N, S).
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        _check_sizes(d_model, nhead)
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        d_model = self.self_attn.embed_dim
        _check_features("TransformerDecoderLayer: tgt", tgt, d_model)
        _check_features("TransformerDecoderLayer: memory", memory, d_model)
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return _dropout_sequence_first(self.dropout1, x, self.self_attn.batch_first)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return _dropout_sequence_first(self.dropout2, x, self.multihead_attn.batch_first)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _clones(layer, num_layers):
    """num_layers deep copies of `layer` (the layer itself is not among them), all equal at the start."""
    if not isinstance(num_layers, int) or num_layers < 0:
        raise ValueError(f"num_layers must be a non-negative int, got {num_layers!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


class TransformerEncoder(Module):
    """A stack of num_layers copies of `encoder_layer`, then `norm` (if given), as torch.nn.TransformerEncoder.

    enable_nested_tensor and mask_check are accepted for PyTorch's signature and change nothing: in
    PyTorch they steer its inference fast path (padded batches as nested tensors), which tinyattn,
    without nested tensors, does not have; the results are the same.

    forward(src, mask=None, src_key_padding_mask=None, is_causal=None): masks as the layer's;
    is_causal=None looks whether `mask` is the causal mask, and tells the layers.
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False  # never: tinyattn has no nested tensors
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        is_causal = _is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """A stack of num_layers copies of `decoder_layer`, then `norm` (if given), as torch.nn.TransformerDecoder.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False): masks as the layer's;
    tgt_is_causal=None looks whether tgt_mask is the causal mask.
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        tgt_is_causal = _is_causal_mask(tgt_mask, tgt_is_causal, _seq_len(tgt, batch_first))
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder transformer, as torch.nn.Transformer: `encoder` (num_encoder_layers layers and
    a LayerNorm) reads src into a memory, `decoder` (num_decoder_layers layers and a LayerNorm) reads tgt
    and attends to that memory. custom_encoder / custom_decoder replace the built ones. After building,
    every parameter of two or more dimensions is redrawn with xavier_uniform_ (PyTorch's
    _reset_parameters), so the same seed gives PyTorch's weights.

    forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
    memory_is_causal=False): src (S, N, E), tgt (T, N, E) (batch first: (N, S, E), (N, T, E);
    unbatched: (S, E), (T, E)); returns (T, N, E). A causal tgt_mask comes from
    Transformer.generate_square_subsequent_mask(T).
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        layer_options = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                             layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first,
                             bias=bias, device=device, dtype=dtype)
        norm_options = dict(eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, **layer_options)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, LayerNorm(d_model, **norm_options))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, **layer_options)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, LayerNorm(d_model, **norm_options))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        if src.ndim == 3 and tgt.ndim == 3:
            batch_dim = 0 if self.batch_first else 1
            if src.shape[batch_dim] != tgt.shape[batch_dim]:
                raise RuntimeError(f"the batch number of src and tgt must be equal: src of shape {list(src.shape)} "
                                   f"and tgt of shape {list(tgt.shape)} differ in dim {batch_dim} "
                                   f"(batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"the feature number of src and tgt must be equal to d_model={self.d_model}, got src "
                               f"of shape {list(src.shape)} and tgt of shape {list(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The (sz, sz) causal mask as floats: -inf above the diagonal (the future), 0.0 elsewhere."""
        return functions.triu(functions.full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)

    def _reset_parameters(self):
        """PyTorch's: xavier_uniform_ on every parameter with two or more dims, in parameters() order."""
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
