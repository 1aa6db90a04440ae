"""Character-level language models: seed 002's bigram model and a small GPT.

Both take ids `idx` of shape (B, T) and return `(logits, loss)`: logits of shape (B, T, vocab_size),
or (B * T, vocab_size) when `targets` are given (seed 002's convention: the shape cross_entropy
wants), and the mean cross-entropy loss (None without targets). `generate` extends `idx` one sampled
token at a time.

The GPT (as in nanoGPT and "Let's build GPT"):

    idx (B, T) -> token embedding + position embedding (B, T, n_embd) -> dropout
      -> n_layer x Block:  x = x + attention(LayerNorm(x));  x = x + feed_forward(LayerNorm(x))
      -> LayerNorm -> lm_head (B, T, vocab_size)

Attention is `nn.MultiHeadAttention` (causal, n_head heads); the feed-forward is
Linear(n, 4n) -> GELU -> Linear(4n, n) -> Dropout. The LM head shares its weight matrix with the
token embedding (weight tying, as in GPT-2): a character's input vector is also its output vector.
"""

import dataclasses
import math
import numbers

from .. import functions, nn
from ..autograd import no_grad
from ..errors import ShapeError
from ..nn import functional as F


class LanguageModel(nn.Module):
    """What both models share: `generate`, `block_size` (the longest context they can read), `kind`
    (the name `build_model` knows them by) and `config` (a dataclass: what rebuilds the model)."""

    kind = None
    block_size = None

    @no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """Append `max_new_tokens` tokens to `idx` (B, T), each sampled from the model's prediction.

        temperature < 1 sharpens the distribution (safer, more repetitive text), > 1 flattens it;
        top_k keeps only the k most likely tokens. The context is cropped to the last `block_size`
        tokens. Call model.eval() first to switch dropout off.
        """
        for idx in self.generate_stream(idx, max_new_tokens, temperature, top_k, generator):
            pass
        return idx

    def generate_stream(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """What `generate` does, one token at a time: yields the ids so far (B, T + i) after each new one.

        For printing text as it is sampled (`tinyattn generate`); the arguments are generate's.
        """
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1):
            raise ValueError(f"top_k must be a positive int or None, got {top_k!r}")
        _check_ids(idx, "generate")
        for _ in range(max_new_tokens):
            context = idx if idx.shape[1] <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(context)
            logits = logits[:, -1, :]  # the prediction for the next token: (B, vocab_size)
            if temperature != 1.0:
                logits = logits / temperature
            if top_k is not None:
                kth_largest = logits.topk(min(top_k, logits.shape[-1])).values[:, -1:]
                logits = logits.masked_fill(logits < kth_largest, -math.inf)
            probs = F.softmax(logits, dim=-1)
            idx_next = functions.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)
            idx = functions.cat((idx, idx_next), dim=1)
            yield idx


def _check_ids(idx, who):
    if idx.ndim != 2 or idx.shape[1] == 0:
        raise ShapeError(f"{who} expects ids of shape (batch, tokens) with at least one token, got "
                         f"{list(idx.shape)} (to start from nothing, give one token: zeros((1, 1), dtype=long))")


def _loss(logits, targets):
    """Seed 002's reshape: cross_entropy wants (N, C) logits and (N,) targets."""
    if targets is None:
        return logits, None
    B, T, C = logits.shape
    if tuple(targets.shape) != (B, T):
        raise ShapeError(f"targets of shape {list(targets.shape)} for ids of shape {[B, T]}: give one target "
                         "(the next token) per id, the same shape as the ids")
    logits = logits.view(B * T, C)
    return logits, F.cross_entropy(logits, targets.reshape(B * T))  # reshape: a slice of a batch may be strided


def _positive_int(name, value):
    """An int (NumPy's too) of at least 1, as a Python int; a ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


@dataclasses.dataclass
class BigramConfig:
    vocab_size: int

    def __post_init__(self):
        self.vocab_size = _positive_int("vocab_size", self.vocab_size)


class BigramLanguageModel(LanguageModel):
    """Seed 002's bigram model: each token reads the logits of the next token off a lookup table."""

    kind = "bigram"
    block_size = 1  # it only ever looks at the last token, so generate feeds it only that one

    def __init__(self, vocab_size):
        super().__init__()
        self.config = BigramConfig(vocab_size)
        self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        """(logits, loss) for ids `idx` of shape (B, T); loss is None without targets."""
        _check_ids(idx, "the bigram model")
        logits = self.token_embedding_table(idx)  # (B, T, C)
        return _loss(logits, targets)


@dataclasses.dataclass
class GPTConfig:
    vocab_size: int
    block_size: int = 64  # the longest context (tokens)
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = True  # biases in the Linear layers (nanoGPT's switch)

    def __post_init__(self):
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            setattr(self, name, _positive_int(f"GPTConfig.{name}", getattr(self, name)))
        if self.n_embd % self.n_head:
            raise ValueError(
                f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head}): each head gets "
                "n_embd // n_head dimensions"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


class FeedForward(nn.Module):
    """Per-token MLP: widen to 4 n_embd, GELU, project back (the `proj` is a residual projection)."""

    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        """Linear, GELU, Linear and dropout on each position."""
        return self.dropout(self.proj(self.gelu(self.fc(x))))


class Block(nn.Module):
    """A pre-LayerNorm transformer block: tokens communicate (attention), then compute (feed-forward)."""

    def __init__(self, config):
        super().__init__()
        n = config.n_embd
        self.ln_1 = nn.LayerNorm(n, bias=config.bias)
        self.attn = nn.MultiHeadAttention(n, n, config.block_size, config.dropout, config.n_head,
                                          qkv_bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)  # on the residual branch, as in nanoGPT
        self.ln_2 = nn.LayerNorm(n, bias=config.bias)
        self.mlp = FeedForward(config)

    def forward(self, x):
        """x + attention(layer_norm(x)), then x + feed_forward(layer_norm(x))."""
        x = x + self.attn_dropout(self.attn(self.ln_1(x)))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(LanguageModel):
    """A decoder-only transformer over characters (see the module docstring for the picture)."""

    kind = "gpt"

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.block_size = config.block_size
        self.token_embedding = nn.Embedding(config.vocab_size, config.n_embd)
        self.position_embedding = nn.Embedding(config.block_size, config.n_embd)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight  # weight tying: one matrix, two uses
        self._init_weights(config)

    @no_grad()
    def _init_weights(self, config):
        """GPT-2's initialisation: N(0, 0.02) weights, zero biases, and the projections that add into
        the residual stream scaled by 1/sqrt(2 n_layer), so the stream's variance does not grow with
        depth. (Linear's default init is fine for small nets but trains this one more slowly.)"""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)) and module is not self.lm_head:
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        residual_std = 0.02 / math.sqrt(2 * config.n_layer)
        for block in self.blocks:
            nn.init.normal_(block.attn.out_proj.weight, mean=0.0, std=residual_std)
            nn.init.normal_(block.mlp.proj.weight, mean=0.0, std=residual_std)

    def forward(self, idx, targets=None):
        """(logits, loss) for ids `idx` of shape (B, T); loss is None without targets."""
        _check_ids(idx, "GPT")
        B, T = idx.shape
        if T > self.block_size:
            raise ValueError(
                f"cannot forward a sequence of {T} tokens: the model's block_size is {self.block_size} "
                "(crop the input to its last block_size tokens, as generate() does)"
            )
        positions = functions.arange(T, device=idx.device)
        x = self.dropout(self.token_embedding(idx) + self.position_embedding(positions))  # (B, T, n_embd)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, vocab_size)
        return _loss(logits, targets)

    def num_parameters(self):
        """The number of trainable numbers in the model."""
        return sum(p.numel() for p in self.parameters())


def build_model(kind, **config):
    """A model from its kind ('bigram' or 'gpt') and its config (what a checkpoint stores)."""
    if kind == "bigram":
        return BigramLanguageModel(config["vocab_size"])
    if kind == "gpt":
        return GPT(GPTConfig(**config))
    raise ValueError(f"unknown model kind {kind!r}: use 'bigram' or 'gpt'")


def state_shapes(kind, **config):
    """(name, shape) of each state_dict entry of build_model(kind, **config), in order, without building
    the model: a checkpoint's arrays are checked against its configuration before memory is taken.
    (tests/test_checkpoint.py checks that this agrees with the models' own state_dict.)"""
    if kind == "bigram":
        vocab = BigramConfig(**config).vocab_size
        yield "token_embedding_table.weight", (vocab, vocab)
        return
    if kind != "gpt":
        raise ValueError(f"unknown model kind {kind!r}: use 'bigram' or 'gpt'")
    c = GPTConfig(**config)
    n, biases = c.n_embd, c.bias
    yield "token_embedding.weight", (c.vocab_size, n)
    yield "position_embedding.weight", (c.block_size, n)
    for i in range(c.n_layer):
        layer = [("ln_1.weight", (n,)), ("ln_1.bias", (n,)), ("attn.mask", (c.block_size, c.block_size))]
        for name in ("W_query", "W_key", "W_value"):
            layer += [(f"attn.{name}.weight", (n, n)), (f"attn.{name}.bias", (n,))]
        layer += [("attn.out_proj.weight", (n, n)), ("attn.out_proj.bias!", (n,)),  # out_proj always has one
                  ("ln_2.weight", (n,)), ("ln_2.bias", (n,)),
                  ("mlp.fc.weight", (4 * n, n)), ("mlp.fc.bias", (4 * n,)),
                  ("mlp.proj.weight", (n, 4 * n)), ("mlp.proj.bias", (n,))]
        for name, shape in layer:
            if name.endswith("!") or biases or not name.endswith(".bias"):
                yield f"blocks.{i}.{name.rstrip('!')}", shape
    yield "ln_f.weight", (n,)
    if biases:
        yield "ln_f.bias", (n,)
    yield "lm_head.weight", (c.vocab_size, n)


def parameter_groups(model, weight_decay):
    """AdamW groups as in nanoGPT: weight matrices and embeddings decay; biases and LayerNorm don't."""
    params = list(model.parameters())
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups
