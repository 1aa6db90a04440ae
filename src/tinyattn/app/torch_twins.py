"""PyTorch twins of tinyattn's MultiHeadAttention and GPT: the same layers, names and math, op for op.

They are what the benchmarks and parity tests compare against. The twins use the book's
MultiHeadAttention (separate query/key/value projections, an explicit causal mask and softmax) rather
than PyTorch's fused attention, so that both libraries do the same arithmetic, and a tinyattn
state_dict loads into them unchanged.

PyTorch is passed in as an argument: tinyattn never imports it (these functions are only called by
code that has imported torch itself).
"""

import dataclasses

from .. import backend


def _with_weights_of(torch, twin, module):
    """Copy a tinyattn module's state_dict into its PyTorch twin, on the module's device."""
    state = module.state_dict()
    twin.load_state_dict({k: torch.from_numpy(backend.to_host(v.array).copy()) for k, v in state.items()})
    return twin.to(str(next(iter(state.values())).device))


def torch_classes(torch):
    """The twin classes, built on the given torch module: (MultiHeadAttention, GPT)."""
    nn, F = torch.nn, torch.nn.functional

    class MultiHeadAttention(nn.Module):
        def __init__(self, d, context_length, dropout, num_heads, bias):
            super().__init__()
            self.num_heads, self.head_dim, self.d_out = num_heads, d // num_heads, d
            self.W_query = nn.Linear(d, d, bias=bias)
            self.W_key = nn.Linear(d, d, bias=bias)
            self.W_value = nn.Linear(d, d, bias=bias)
            self.out_proj = nn.Linear(d, d)
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

        def forward(self, x):
            b, T, _ = x.shape
            shape = (b, T, self.num_heads, self.head_dim)
            q = self.W_query(x).view(shape).transpose(1, 2)
            k = self.W_key(x).view(shape).transpose(1, 2)
            v = self.W_value(x).view(shape).transpose(1, 2)
            scores = q @ k.transpose(2, 3)
            scores.masked_fill_(self.mask.bool()[:T, :T], -torch.inf)
            weights = self.dropout(torch.softmax(scores / self.head_dim**0.5, dim=-1))
            return self.out_proj((weights @ v).transpose(1, 2).contiguous().view(b, T, self.d_out))

    class FeedForward(nn.Module):
        def __init__(self, n, dropout, bias):
            super().__init__()
            self.fc = nn.Linear(n, 4 * n, bias=bias)
            self.gelu = nn.GELU(approximate="tanh")
            self.proj = nn.Linear(4 * n, n, bias=bias)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            return self.dropout(self.proj(self.gelu(self.fc(x))))

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            bias = c.get("bias", True)
            self.ln_1 = nn.LayerNorm(c["n_embd"], bias=bias)
            self.attn = MultiHeadAttention(c["n_embd"], c["block_size"], c["dropout"], c["n_head"], bias)
            self.attn_dropout = nn.Dropout(c["dropout"])
            self.ln_2 = nn.LayerNorm(c["n_embd"], bias=bias)
            self.mlp = FeedForward(c["n_embd"], c["dropout"], bias)

        def forward(self, x):
            x = x + self.attn_dropout(self.attn(self.ln_1(x)))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.token_embedding = nn.Embedding(c["vocab_size"], c["n_embd"])
            self.position_embedding = nn.Embedding(c["block_size"], c["n_embd"])
            self.dropout = nn.Dropout(c["dropout"])
            self.blocks = nn.ModuleList([Block(c) for _ in range(c["n_layer"])])
            self.ln_f = nn.LayerNorm(c["n_embd"], bias=c.get("bias", True))
            self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
            self.lm_head.weight = self.token_embedding.weight

        def forward(self, idx, targets=None):
            T = idx.shape[1]
            x = self.dropout(self.token_embedding(idx) + self.position_embedding(torch.arange(T)))
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
            return logits, loss

    return MultiHeadAttention, GPT


def torch_gpt_class(torch):
    return torch_classes(torch)[1]


def multihead_attention(torch, module):
    """A PyTorch copy of a tinyattn MultiHeadAttention, with the same weights, on the same device."""
    attention_class, _ = torch_classes(torch)
    twin = attention_class(module.d_out, module.context_length, module.dropout.p, module.num_heads,
                           module.W_query.bias is not None)
    return _with_weights_of(torch, twin, module)


def gpt(torch, model):
    """A PyTorch copy of a tinyattn GPT, with the same weights, on the same device."""
    return _with_weights_of(torch, torch_gpt_class(torch)(dataclasses.asdict(model.config)), model)
