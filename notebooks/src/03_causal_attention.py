# %% [markdown]
# # 3. Causal attention
#
# A GPT-style model is trained to predict the next token. If token *t* could attend to tokens
# *t+1, t+2, ...*, it would simply read the answer. **Causal** (or masked) attention hides the
# future: the weights above the diagonal of the attention matrix must be exactly zero.
#
# This notebook builds the mask three ways, shows why the first one leaks, adds dropout on the
# attention weights, and walks into a trap (`masked_fill` vs `masked_fill_`) that a simple test
# catches. The book's code again, with `import tinyattn as torch`.

# %%
import tinyattn as torch
import tinyattn.nn as nn
from tinyattn.nn import functional as F

import matplotlib.pyplot as plt

plt.rcParams["figure.dpi"] = 80

inputs = torch.tensor(
    [[0.43, 0.15, 0.89],  # Your     (x^1)
     [0.55, 0.87, 0.66],  # journey  (x^2)
     [0.57, 0.85, 0.64],  # starts   (x^3)
     [0.22, 0.58, 0.33],  # with     (x^4)
     [0.77, 0.25, 0.10],  # one      (x^5)
     [0.05, 0.80, 0.55]]  # step     (x^6)
)
words = ["Your", "journey", "starts", "with", "one", "step"]
d_in, d_out = 3, 2

# %% [markdown]
# We start from the `SelfAttention_v2` of notebook 2 (the library ships it as
# `nn.SelfAttention_v2`), seeded as in the book, and compute its weights by hand:

# %%
torch.manual_seed(789)
sa_v2 = nn.SelfAttention_v2(d_in, d_out)

queries = sa_v2.W_query(inputs)
keys = sa_v2.W_key(inputs)
values = sa_v2.W_value(inputs)

attn_scores = queries @ keys.T
attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
print(attn_weights)

# %% [markdown]
# ## Mask 1: zero the future after the softmax
#
# `torch.tril` keeps the lower triangle (the diagonal included) of a matrix of ones: row *t* has
# ones in columns 0..t, the tokens that query *t* may see.

# %%
context_length = attn_scores.shape[0]
mask_simple = torch.tril(torch.ones(context_length, context_length))
print(mask_simple)

masked_simple = attn_weights * mask_simple
print(masked_simple)

# %% [markdown]
# The rows no longer sum to 1 (the first row's only weight is 0.1921), so we renormalise each row:

# %%
row_sums = masked_simple.sum(dim=-1, keepdim=True)
masked_simple_norm = masked_simple / row_sums
print(masked_simple_norm)

# %% [markdown]
# ### Why masking after the softmax leaks, and why renormalising fixes it
#
# The softmax ran over the *whole* row, so its denominator `Σ_j exp(s_tj)` contains the scores of the
# future tokens. Zeroing their weights afterwards does not remove them from that sum: before
# renormalising, token 0's weight (0.1921) still depends on what tokens 1 to 5 are. A **causality
# test** shows it: change the last token and see whether anything before it moves.

# %%
def masked_after_softmax(x, renormalise):
    scores = sa_v2.W_query(x) @ sa_v2.W_key(x).T
    weights = torch.softmax(scores / d_out**0.5, dim=-1) * mask_simple
    if renormalise:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ sa_v2.W_value(x)


changed = inputs.clone()
changed[-1] = torch.tensor([0.9, -0.4, 0.3])  # a different last token ("step" -> something else)

for renormalise in (False, True):
    before, after = masked_after_softmax(inputs, renormalise), masked_after_softmax(changed, renormalise)
    leak = (before[:-1] - after[:-1]).abs().max().item()  # rows 0..4 must not see token 5
    print(f"renormalise={renormalise}: largest change in tokens 0-4 = {leak:.2e}")

# %% [markdown]
# After renormalising, the factors that the future tokens put in the denominator cancel exactly:
# `exp(s_tj) / Σ_{k≤t} exp(s_tk)` is the softmax over the visible scores alone, so nothing leaks (the
# tiny change that remains is float32 rounding). It is correct, but wasteful: a softmax over scores that
# we then throw away, and a second pass to renormalise.
#
# ## Mask 2: the `-inf` trick
#
# Put `-inf` in the scores above the diagonal *before* the softmax. `exp(-inf) = 0`, so those
# positions get weight 0 and are left out of the denominator: one softmax, and the rows already sum
# to 1. `triu(..., diagonal=1)` marks the positions to hide.

# %%
mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
print(mask)

masked = attn_scores.masked_fill(mask.bool(), -torch.inf)
print(masked)

attn_weights = torch.softmax(masked / keys.shape[-1] ** 0.5, dim=-1)
print(attn_weights)

# %%
assert torch.allclose(attn_weights, masked_simple_norm, atol=1e-6)
assert (attn_weights.triu(diagonal=1) == 0).all()
assert torch.allclose(attn_weights[2], torch.tensor([0.3800, 0.3097, 0.3103, 0.0, 0.0, 0.0]), atol=1e-4)
print("the -inf trick gives the renormalised weights, with exact zeros above the diagonal")

# %% [markdown]
# ## Dropout on the attention weights
#
# During training, dropout zeroes each weight with probability `p` and multiplies the survivors by
# `1 / (1 - p)`, so that the expected value of every weight is unchanged. It keeps the model from
# relying on a few particular connections. With `p = 0.5` the survivors are doubled:

# %%
torch.manual_seed(123)
dropout = torch.nn.Dropout(0.5)
example = torch.ones(6, 6)
print(dropout(example))

# %%
torch.manual_seed(123)
print(dropout(attn_weights))

# %% [markdown]
# Same seed, same mask: the first matrix shows which positions survive. (On tinyattn the mask comes
# from the same random stream as PyTorch's, so these are the book's numbers.) Rows no longer sum to
# 1, which is fine: dropout is only active in training mode. `eval()` switches it off:

# %%
dropout.eval()
print(torch.equal(dropout(attn_weights), attn_weights))
dropout.train()

torch.manual_seed(123)
assert torch.allclose(dropout(attn_weights)[2], torch.tensor([0.7599, 0.6194, 0.6206, 0.0, 0.0, 0.0]), atol=1e-4)

# %% [markdown]
# ## A compact class, and a trap
#
# Real inputs come in batches: `(batch, num_tokens, d_in)`. Two copies of our sentence:

# %%
batch = torch.stack((inputs, inputs), dim=0)
print(batch.shape)

# %% [markdown]
# Here is a `CausalAttention` class as one might write it. Look at the masking line: can you see
# what is wrong?

# %%
class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


torch.manual_seed(123)
ca_wrong = CausalAttention(d_in, d_out, context_length, 0.0)
context_vecs = ca_wrong(batch)
print("context_vecs.shape:", context_vecs.shape)
print(context_vecs)

# %% [markdown]
# It runs, the shapes are right, and the numbers look plausible. But `masked_fill` **returns a new
# tensor** and leaves `attn_scores` alone; the result is thrown away, so nothing is masked. The
# in-place version is `masked_fill_` (PyTorch's convention: a trailing underscore means "in place"),
# or one writes `attn_scores = attn_scores.masked_fill(...)`.
#
# Nothing crashes, so how would we notice? The same causality test as above: change the last token
# of the input and check that the outputs of all earlier tokens stay put.

# %%
def causality_test(module, x):
    """The largest change in outputs 0..T-2 when the last token changes (0 for a causal module)."""
    changed = x.clone()
    changed[:, -1] += 1.0  # a different last token
    with torch.no_grad():
        before, after = module(x), module(changed)
    return (before[:, :-1] - after[:, :-1]).abs().max().item()


leak = causality_test(ca_wrong, batch)
print(f"largest change in earlier outputs: {leak:.4f}")
print("causal" if leak == 0 else "NOT causal: earlier tokens see the last one")

# %% [markdown]
# A second clue: with the mask doing nothing, the class is plain `SelfAttention_v2` applied to each
# batch item, and seeded identically it gives the same numbers:

# %%
torch.manual_seed(123)
print(torch.allclose(ca_wrong(batch)[0], nn.SelfAttention_v2(d_in, d_out)(inputs)))

# %% [markdown]
# The fix is one character:

# %%
class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)  # swap the last two dims, keep the batch dim
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)  # in place
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


torch.manual_seed(123)
ca = CausalAttention(d_in, d_out, context_length, 0.0)
context_vecs = ca(batch)
print(context_vecs)
print(f"causality test: largest change in earlier outputs = {causality_test(ca, batch)}")

# %% [markdown]
# Two details of the class:
#
# - the mask is a **buffer** (`register_buffer`): saved in the `state_dict` and moved by `.to(device)`
#   with the parameters, but not trained;
# - `[:num_tokens, :num_tokens]` lets the layer take sequences shorter than `context_length`.
#
# The last row is the same as the wrong class's last row: the last token may see everything, so
# the mask changes nothing for it. Only the earlier rows differ. These are the book's numbers, and
# the library's `nn.CausalAttention` gives them too:

# %%
assert torch.allclose(context_vecs[0, 0], torch.tensor([-0.4519, 0.2216]), atol=1e-4)
assert torch.allclose(context_vecs[0, -1], torch.tensor([-0.5299, -0.1081]), atol=1e-4)

torch.manual_seed(123)
lib_ca = nn.CausalAttention(d_in, d_out, context_length, 0.0)
print(torch.allclose(lib_ca(batch), context_vecs))

# %% [markdown]
# Is the in-place `masked_fill_` safe for autograd? Yes here: the backward of `queries @ keys.T`
# needs `queries` and `keys`, not its own output, so overwriting the scores loses nothing. (Had an op
# saved the tensor that we then overwrote, the backward pass would stop with an error naming the
# in-place change, as PyTorch's does.)

# %%
context_vecs.sum().backward()
print(ca.W_query.weight.grad)

# %% [markdown]
# ## The causal weights as a heat map
#
# The library's class keeps the weights of its last forward in `.attn_weights` (before dropout).
# Left: the causal weights of the first batch item. Right: the same weights after dropout with
# `p = 0.5`, as the layer would use them in training.

# %%
torch.manual_seed(123)
lib_ca = nn.CausalAttention(d_in, d_out, context_length, dropout=0.5)
lib_ca(batch)
weights = lib_ca.attn_weights[0]
torch.manual_seed(123)
dropped = nn.Dropout(0.5)(weights)

fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
for ax, (title, w) in zip(axes, [("causal weights", weights), ("after dropout (p = 0.5)", dropped)]):
    im = ax.imshow(w.numpy(), cmap="viridis", vmin=0)
    ax.set_xticks(range(6), words, rotation=45, ha="right")
    ax.set_yticks(range(6), words)
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8)
fig.tight_layout()
plt.show()

# %% [markdown]
# One head sees the sequence one way. Notebook 4 runs several heads side by side: multi-head
# attention.
