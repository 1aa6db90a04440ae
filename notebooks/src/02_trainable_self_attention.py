# %% [markdown]
# # 2. Self-attention with trainable weights
#
# In notebook 1 a token's attention weights came from dot products of the raw embeddings, so
# nothing could be learned. Scaled dot-product attention, the kind GPT uses, gives the model three
# trainable matrices:
#
# - `W_query` turns a token into a **query**: what this token is looking for;
# - `W_key` turns a token into a **key**: what this token offers to be found by;
# - `W_value` turns a token into a **value**: what this token hands over when it is attended to.
#
# The score of query *i* with key *j* is `q^i · k^j`; softmax turns a row of scores into weights;
# the context vector is the weighted sum of the **values**. Same imports as before: the book's code,
# run on tinyattn.

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

# %% [markdown]
# ## One query, step by step
#
# Project the 3-dimensional inputs to `d_out = 2` dimensions (GPT keeps `d_in == d_out`; a different
# size makes it easier to see which matrix is which). The matrices are random for now; training
# would change them. `requires_grad=False` only keeps the printout short.

# %%
x_2 = inputs[1]         # the query token, "journey"
d_in = inputs.shape[1]  # 3
d_out = 2

torch.manual_seed(123)
W_query = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
W_key = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
W_value = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)

print(W_query)
print(W_key)
print(W_value)

# %%
query_2 = x_2 @ W_query
key_2 = x_2 @ W_key
value_2 = x_2 @ W_value

print(query_2)
print(key_2)
print(value_2)

# %% [markdown]
# Every token needs a key and a value (the query token attends to all of them); one matrix product
# each gives all six:

# %%
keys = inputs @ W_key
values = inputs @ W_value
queries = inputs @ W_query

print("keys.shape:", keys.shape)
print("values.shape:", values.shape)
print("queries.shape:", queries.shape)

# %% [markdown]
# The score of the query with the second token's key, then with all keys at once:

# %%
keys_2 = keys[1]
attn_score_22 = query_2.dot(keys_2)
print(attn_score_22)

attn_scores_2 = query_2 @ keys.T  # all the scores for query 2
print(attn_scores_2)

# %% [markdown]
# And all queries against all keys, a 6 × 6 matrix (row = query, column = key):

# %%
attn_scores = queries @ keys.T
print(attn_scores)

# %% [markdown]
# ## Scale by √d_k, then softmax
#
# The scores are divided by the square root of the keys' dimension `d_k` before the softmax. Why
# comes right after; first the weights and the context vector of query 2:

# %%
d_k = keys.shape[-1]
attn_weights_2 = torch.softmax(attn_scores_2 / d_k**0.5, dim=-1)
print(attn_weights_2)
print(d_k)

context_vec_2 = attn_weights_2 @ values
print(context_vec_2)

assert torch.allclose(attn_weights_2, torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]), atol=1e-4)
assert torch.allclose(context_vec_2, torch.tensor([0.3061, 0.8210]), atol=1e-4)

# %% [markdown]
# ## Why divide by √d_k?
#
# ### Reason 1: large scores make softmax peaky
#
# Softmax exponentiates, so it magnifies differences. Multiply the same five scores by 8 and almost
# all the weight lands on the largest one:

# %%
scores = torch.tensor([0.1, -0.2, 0.3, -0.2, 0.5])

softmax_result = torch.softmax(scores, dim=-1)
print("Softmax without scaling:", softmax_result)

softmax_scaled_result = torch.softmax(scores * 8, dim=-1)
print("Softmax after scaling (scores * 8):", softmax_scaled_result)

# %% [markdown]
# A nearly one-hot softmax is bad for learning: its gradient is nearly zero (a saturated softmax
# barely changes when its inputs move), so the query and key matrices would hardly be trained.
# The derivative of the largest weight `w` with respect to its own score is `w (1 - w)`, which
# vanishes as `w` approaches 1:

# %%
for factor in (1, 8, 32):
    s = (scores * factor).requires_grad_()
    w = torch.softmax(s, dim=-1)
    w[4].backward()
    print(f"scores * {factor:>2}: weight[4] = {w[4].item():.4f}, d weight[4] / d score[4] = {s.grad[4].item():.4f}")

# %% [markdown]
# ### Reason 2: the variance of a dot product grows with the dimension
#
# If the entries of `q` and `k` are independent with mean 0 and variance 1, then `q · k` is a sum of
# `d` products, each of variance 1, so its variance is `d`. With `d = 64` the scores spread over
# ±8 or so and softmax becomes peaky. Dividing by `√d` brings the variance back to 1, whatever `d`.
# An experiment (seeded, so the numbers repeat):

# %%
torch.manual_seed(123)


def dot_product_variance(dim, num_trials=1000):
    q = torch.randn(num_trials, dim)
    k = torch.randn(num_trials, dim)
    dot_products = (q * k).sum(dim=-1)  # num_trials dot products
    return dot_products.var().item(), (dot_products / dim**0.5).var().item()


dims = [2, 5, 16, 64, 100, 256]
results = [dot_product_variance(dim) for dim in dims]
for dim, (before, after) in zip(dims, results):
    print(f"dim={dim:>3}: variance before scaling {before:8.3f}, after dividing by sqrt(dim) {after:.3f}")

# %%
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(dims, [r[0] for r in results], "o-", label="q · k")
ax.plot(dims, [r[1] for r in results], "o-", label="q · k / √d")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("dimension d")
ax.set_ylabel("variance")
ax.legend()
ax.grid(alpha=0.3)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## A compact class: `SelfAttention_v1`
#
# The steps above, for all queries at once, as a module. `nn.Parameter` registers the matrices so
# that `parameters()` (and an optimizer) finds them.

# %%
class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T  # omega
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = attn_weights @ values
        return context_vec


torch.manual_seed(123)
sa_v1 = SelfAttention_v1(d_in, d_out)
print(sa_v1(inputs))

# %% [markdown]
# The second row is `context_vec_2` from above: same seed, same matrices. The library ships the same
# class as `nn.SelfAttention_v1`:

# %%
torch.manual_seed(123)
print(torch.allclose(nn.SelfAttention_v1(d_in, d_out)(inputs), sa_v1(inputs)))

# %% [markdown]
# ## `SelfAttention_v2`: `nn.Linear` instead of raw matrices
#
# `nn.Linear(d_in, d_out, bias=False)` does the same product, `x @ W.T`, with a better
# initialisation (uniform in ±1/√d_in, so the outputs don't grow with `d_in`). It stores its weight
# as `(d_out, d_in)`, the transpose of our matrices.

# %%
class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = attn_weights @ values
        return context_vec


torch.manual_seed(789)
sa_v2 = SelfAttention_v2(d_in, d_out)
print(sa_v2(inputs))

assert torch.allclose(sa_v1(inputs)[0], torch.tensor([0.2996, 0.8053]), atol=1e-4)
assert torch.allclose(sa_v2(inputs)[0], torch.tensor([-0.0739, 0.0713]), atol=1e-4)

# %% [markdown]
# The two classes compute the same function: give v1 the (transposed) weights of v2 and the outputs
# agree.

# %%
sa_v1.W_query = nn.Parameter(sa_v2.W_query.weight.T)
sa_v1.W_key = nn.Parameter(sa_v2.W_key.weight.T)
sa_v1.W_value = nn.Parameter(sa_v2.W_value.weight.T)
print(sa_v1(inputs))
print(torch.allclose(sa_v1(inputs), sa_v2(inputs)))

# %% [markdown]
# ## The weights as a heat map
#
# The library's attention classes keep the weights of their last forward pass in `.attn_weights`
# (detached), which is handy for pictures. With random matrices the weights are still close to
# uniform (every row near 1/6); training is what makes them sharp.

# %%
torch.manual_seed(123)
lib_v1 = nn.SelfAttention_v1(d_in, d_out)
torch.manual_seed(789)
lib_v2 = nn.SelfAttention_v2(d_in, d_out)
lib_v1(inputs)
lib_v2(inputs)

fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
for ax, (name, module) in zip(axes, [("SelfAttention_v1, seed 123", lib_v1), ("SelfAttention_v2, seed 789", lib_v2)]):
    im = ax.imshow(module.attn_weights.numpy(), cmap="viridis")
    ax.set_xticks(range(6), words, rotation=45, ha="right")
    ax.set_yticks(range(6), words)
    ax.set_title(name, fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8)
fig.tight_layout()
plt.show()
print(lib_v2.attn_weights)

# %% [markdown]
# ## The weights are trainable
#
# Unlike notebook 1, the output now depends on parameters, and `backward()` gives their gradients,
# which is all an optimizer needs:

# %%
out = sa_v2(inputs)
out.sum().backward()
for name, p in sa_v2.named_parameters():
    print(name, tuple(p.shape), "grad:", p.grad.shape)

# %% [markdown]
# Next: a language model predicts the next token, so a token must not attend to the tokens after
# it. Notebook 3 adds the causal mask and dropout.
