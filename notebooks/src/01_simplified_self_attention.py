# %% [markdown]
# # 1. Simplified self-attention
#
# Self-attention lets every token of a sequence look at every other token and build a new vector
# for itself, a **context vector**, as a weighted mix of all of them. This notebook builds the
# simplest version, with no trainable weights: the weights come straight from dot products of the
# input vectors.
#
# The code is the book's PyTorch code run on **tinyattn**: only the imports change.
#
# ```python
# import tinyattn as torch            # was: import torch
# import tinyattn.nn as nn            # was: import torch.nn as nn
# from tinyattn.nn import functional as F
# ```
#
# Every number printed below is the number PyTorch prints for the same code.

# %%
import tinyattn as torch
import tinyattn.nn as nn
from tinyattn.nn import functional as F

import matplotlib.pyplot as plt

plt.rcParams["figure.dpi"] = 80

# %% [markdown]
# ## Six tokens
#
# The running example: the sentence *"Your journey starts with one step"*, one token per word, each
# token already turned into a 3-dimensional embedding vector (made-up numbers, small enough to
# follow by hand).

# %%
inputs = torch.tensor(
    [[0.43, 0.15, 0.89],  # Your     (x^1)
     [0.55, 0.87, 0.66],  # journey  (x^2)
     [0.57, 0.85, 0.64],  # starts   (x^3)
     [0.22, 0.58, 0.33],  # with     (x^4)
     [0.77, 0.25, 0.10],  # one      (x^5)
     [0.05, 0.80, 0.55]]  # step     (x^6)
)
words = ["Your", "journey", "starts", "with", "one", "step"]
print(inputs.shape)

# %% [markdown]
# ## Step 1: attention scores are dot products
#
# Take the second token, *journey*, as the **query**. Its attention score with token *i* is the dot
# product `x^2 · x^i`: large when the two vectors point the same way, small when they don't.

# %%
query = inputs[1]  # x^2, "journey"

attn_scores_2 = torch.empty(inputs.shape[0])
for i, x_i in enumerate(inputs):
    attn_scores_2[i] = torch.dot(x_i, query)
print(attn_scores_2)

# %% [markdown]
# A dot product is just "multiply elementwise, then add up". The first score by hand:

# %%
res = 0.0
for idx, element in enumerate(inputs[0]):
    res += inputs[0][idx] * query[idx]
print(res)
print(torch.dot(inputs[0], query))

# %% [markdown]
# ## Step 2: normalise the scores into weights
#
# We want weights that are positive and add up to 1, so that the context vector is a weighted
# *average*. The naive way divides by the sum:

# %%
attn_weights_2_tmp = attn_scores_2 / attn_scores_2.sum()
print("Attention weights:", attn_weights_2_tmp)
print("Sum:", attn_weights_2_tmp.sum())

# %% [markdown]
# This works here only because every score happens to be positive. Scores are dot products, and dot
# products can be negative or add up to (almost) zero; then "divide by the sum" gives negative
# weights, or weights that explode:

# %%
scores = torch.tensor([2.0, -1.0, -0.9])
print("sum-normalised:", scores / scores.sum())  # the sum is 0.1: weights of 20, -10, -9
print("softmax:       ", torch.softmax(scores, dim=0))

# %% [markdown]
# **Softmax** fixes both problems: `exp` makes every score positive, then we divide by the sum.
# Written out naively:

# %%
def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=0)


attn_weights_2_naive = softmax_naive(attn_scores_2)
print("Attention weights:", attn_weights_2_naive)
print("Sum:", attn_weights_2_naive.sum())

# %% [markdown]
# `exp` overflows for scores around 89 in float32 (`exp(89) > 3.4e38`), so the library's softmax
# first subtracts the row's maximum, which changes nothing mathematically (the factor `exp(-max)`
# cancels) and keeps every `exp` at most 1:

# %%
attn_weights_2 = torch.softmax(attn_scores_2, dim=0)
print("Attention weights:", attn_weights_2)
print("Sum:", attn_weights_2.sum())

import numpy as np

big = torch.tensor([100.0, 99.0, 98.0])
with np.errstate(over="ignore", invalid="ignore"):  # NumPy would warn about the overflow
    print("exp:    ", torch.exp(big))
    print("naive:  ", softmax_naive(big))               # inf / inf = nan
print("library:", torch.softmax(big, dim=0))

# %% [markdown]
# ## Step 3: the context vector is the weighted sum of the inputs

# %%
context_vec_2 = torch.zeros(query.shape)
for i, x_i in enumerate(inputs):
    context_vec_2 += attn_weights_2[i] * x_i
print(context_vec_2)

# %% [markdown]
# ## All tokens at once
#
# The same three steps for every query. With two loops first, as the definition says:

# %%
attn_scores = torch.empty(6, 6)
for i, x_i in enumerate(inputs):
    for j, x_j in enumerate(inputs):
        attn_scores[i, j] = torch.dot(x_i, x_j)
print(attn_scores)

# %% [markdown]
# Row *i*, column *j* is `x^i · x^j`: that is exactly the matrix product `inputs @ inputs.T`, which
# does all 36 dot products in one call.

# %%
attn_scores = inputs @ inputs.T
print(attn_scores)

# %% [markdown]
# Softmax along the last dimension normalises each row (each query) separately; `dim=-1` means
# "over the keys", so every row sums to 1:

# %%
attn_weights = torch.softmax(attn_scores, dim=-1)
print(attn_weights)
print("All row sums:", attn_weights.sum(dim=-1))

# %% [markdown]
# And the context vectors of all six tokens are one more matrix product: row *i* of the result is
# the weighted sum `Σ_j attn_weights[i, j] * x^j`.

# %%
all_context_vecs = attn_weights @ inputs
print(all_context_vecs)
print("Previous 2nd context vector:", context_vec_2)

# %% [markdown]
# The numbers above are the ones the attention chapter prints. A few checks, so that a change in
# the library that altered them would fail this notebook:

# %%
assert torch.allclose(attn_scores[1], torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]), atol=1e-4)
assert torch.allclose(attn_weights[1], torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]), atol=1e-4)
assert torch.allclose(all_context_vecs[0], torch.tensor([0.4421, 0.5931, 0.5790]), atol=1e-4)
assert torch.allclose(all_context_vecs[1], context_vec_2)
print("matches the book")

# %% [markdown]
# ## What the weights look like
#
# A heat map of the 6 × 6 weights: row = the query token, column = the token it attends to. Without
# trainable weights, a token attends most to tokens whose embeddings point the same way as its own,
# and to long vectors (a dot product grows with length): "journey" and "starts" have long, almost
# identical vectors, so they attend to each other, and every token gives them a large share.

# %%
def show_weights(weights, labels, title):
    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    im = ax.imshow(weights.detach().numpy(), cmap="viridis", vmin=0)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, shrink=0.8)
    fig.tight_layout()
    plt.show()


show_weights(attn_weights, words, "softmax(inputs @ inputs.T)")

# %% [markdown]
# ## A second example: random embeddings
#
# The same computation on four random 3-dimensional tokens (*"I am learning this"*), seeded so that
# everyone gets the same numbers. `torch.manual_seed(42)` followed by `torch.rand` gives PyTorch's
# numbers on tinyattn too: the generator is the same Mersenne Twister.

# %%
torch.manual_seed(42)
x = torch.rand((4, 3))
print(x)

scores = x @ x.T
weights = torch.softmax(scores, dim=-1)
context = weights @ x
print(scores)
print(weights)
print(context)

assert torch.allclose(x[0], torch.tensor([0.8823, 0.9150, 0.3829]), atol=1e-4)
assert torch.allclose(context[2], torch.tensor([0.5165, 0.7774, 0.6536]), atol=1e-4)

# %% [markdown]
# ## What is missing
#
# Here a token's weights depend only on how similar the raw embeddings are, and nothing can be
# learned. The next notebook adds three trainable matrices (queries, keys and values) so that
# training decides what "relevant" means.
