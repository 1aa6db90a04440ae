# %% [markdown]
# # 4. Multi-head attention
#
# One attention head computes one set of weights: one notion of "which tokens matter to me". With
# several heads, each with its own query, key and value projections, the layer can follow several
# relations at once (one head the previous word, another the subject of the sentence, ...), and
# concatenates what they find.
#
# This notebook builds multi-head attention twice: first as a **wrapper** around several causal
# heads, then as the **weight-split** class GPT uses, which computes all heads with one matrix
# product each for Q, K and V. We go through the weight-split forward pass in eleven steps with the
# shapes at every step, look at its trace, and check that the two classes agree. The book's code,
# with `import tinyattn as torch`.

# %%
import tinyattn
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
batch = torch.stack((inputs, inputs), dim=0)
print(batch.shape)

# %% [markdown]
# ## The wrapper: heads side by side
#
# The simplest multi-head attention: `num_heads` independent `CausalAttention` heads (notebook 3,
# shipped as `nn.CausalAttention`), their outputs concatenated along the last dimension. Each head
# outputs `d_out` numbers per token, so the result has `d_out * num_heads`.

# %%
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [nn.CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


torch.manual_seed(123)
context_length = batch.shape[1]  # the number of tokens
d_in, d_out = 3, 2
wrapper = MultiHeadAttentionWrapper(d_in, d_out, context_length, 0.0, num_heads=2)
context_vecs = wrapper(batch)
print(context_vecs)
print("context_vecs.shape:", context_vecs.shape)

# %% [markdown]
# The first two columns are the causal head of notebook 3 (same seed, so the first head gets the
# same weights); the last two come from the second head. These are the book's numbers.
#
# The seed notebook this chapter comes from printed `[-0.5337, -0.1051, 0.5085, 0.3508]` in its
# first row: its `CausalAttention` had the `masked_fill` bug of notebook 3, so its heads were not
# causal. Its last row agrees with ours, as it must: the last token sees every token either way.

# %%
assert torch.allclose(context_vecs[0, 0], torch.tensor([-0.4519, 0.2216, 0.4772, 0.1063]), atol=1e-4)
assert torch.allclose(context_vecs[0, -1], torch.tensor([-0.5299, -0.1081, 0.5077, 0.3493]), atol=1e-4)
print("matches the book")

# %% [markdown]
# ## Weight splits: one projection for all heads
#
# The wrapper runs `num_heads` small matrix products for the queries (and as many for keys and
# values), one after the other. GPT-3 has 96 heads: that is a lot of small products. Instead we can
# use **one** query matrix of size `d_in × d_out`, where `d_out = num_heads × head_dim`, compute all
# queries with one product, and then *split* the result into heads with a reshape. Same for keys
# and values. The arithmetic is the same; the work is done in a few large products, which is what
# CPUs and GPUs are fast at.
#
# The cost is bookkeeping with 4-dimensional tensors. A toy example, one step at a time: one batch
# item, three tokens, `d_in = d_out = 6`, two heads of `head_dim = 3`.
#
# ### Step 1: the input, `(b, num_tokens, d_in) = (1, 3, 6)`

# %%
x = torch.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                   [6.0, 5.0, 4.0, 3.0, 2.0, 1.0],
                   [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]])
print(x)
print(x.shape)

# %% [markdown]
# ### Step 2: decide `d_out` and `num_heads`
#
# `d_out` is the size of each token's context vector; each head gets `head_dim = d_out / num_heads`
# of it.

# %%
b, num_tokens, d_in = x.shape
d_out, num_heads = 6, 2
head_dim = d_out // num_heads
print("head_dim:", head_dim)

# %% [markdown]
# ### Step 3: the trainable matrices `wq`, `wk`, `wv`, each `(d_in, d_out) = (6, 6)`
#
# Written out, so that every number below can be checked by hand.

# %%
wq = torch.tensor([[ 0.6323, -0.2366,  1.2455,  0.3465,  1.2458,  0.3229],
                   [ 0.6571, -0.2378, -0.5311, -0.2610, -1.4819, -1.6418],
                   [-0.2990,  0.4216,  0.2114, -0.0271, -0.5682,  0.6937],
                   [-1.1291, -1.0102,  0.6946,  0.1094,  0.5130, -0.8669],
                   [ 0.3480,  0.2593,  0.4412,  1.0017, -0.3913, -0.2878],
                   [ 0.2484,  0.2846, -0.3386, -0.6164,  1.2722,  0.5754]])
wk = torch.tensor([[-0.3703,  0.5431, -0.0372, -0.4406,  0.4103, -0.1773],
                   [ 1.5993, -0.2777, -1.1909, -0.4301,  0.6927, -1.3304],
                   [ 1.2470, -0.1872, -0.1670,  1.4302,  1.2927,  0.4822],
                   [-0.0984, -0.8983,  0.3334, -0.6312,  0.1022, -1.0715],
                   [-0.7647, -0.1734,  0.6305,  1.0155,  0.8474,  0.1454],
                   [-1.5085, -0.4529,  0.0997, -0.1084,  0.8046,  0.3459]])
wv = torch.tensor([[ 1.6395,  1.1234, -0.1001,  0.5021, -1.0590,  0.1412],
                   [-0.4271,  0.5681,  0.4164, -1.2534,  1.3061,  0.3610],
                   [-0.2824, -0.4314,  1.2358,  0.1181, -1.2467,  0.1893],
                   [ 1.3440,  0.1487, -0.6174,  0.8890, -0.3282,  1.4662],
                   [ 0.1814, -0.4761, -0.0402,  0.7326,  0.7654, -0.1080],
                   [-0.8974,  0.6786,  0.5602, -0.2443, -0.4883,  1.3996]])
print(wq.shape, wk.shape, wv.shape)

# %% [markdown]
# ### Step 4: keys, queries and values, one product each: `(1, 3, 6) @ (6, 6) -> (1, 3, 6)`
#
# Columns 0-2 of each result will belong to head 1, columns 3-5 to head 2.

# %%
keys = torch.matmul(x, wk)
queries = torch.matmul(x, wq)
values = torch.matmul(x, wv)

print(keys)
print(queries)
print(values)
print(keys.shape)

# %% [markdown]
# ### Step 5: unroll the last dimension into heads: `(b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)`
#
# `view` reinterprets the same memory: the six numbers of each token become two rows of three, one
# per head. Nothing is copied.

# %%
keys = keys.view(b, num_tokens, num_heads, head_dim)
values = values.view(b, num_tokens, num_heads, head_dim)
queries = queries.view(b, num_tokens, num_heads, head_dim)

print(keys)
print(keys.shape)

# %% [markdown]
# Read it as: token 1 → `[head 1: (-6.6988, -7.7515, 2.1643), head 2: (4.8921, 15.1472, -2.8751)]`, and so on.
#
# ### Step 6: group by head: `(b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)`
#
# Attention happens *within* a head, across tokens, so we want each head's tokens together. Swapping
# dims 1 and 2 does it (another view: only the strides change).

# %%
keys = keys.transpose(1, 2)
queries = queries.transpose(1, 2)
values = values.transpose(1, 2)

print(keys)
print(keys.shape)

# %% [markdown]
# ### Step 7: attention scores: `(b, h, T, hd) @ (b, h, hd, T) -> (b, h, T, T)`
#
# Matrix multiplication on 4-D tensors treats the leading dims `(b, h)` as a batch: one `T × T`
# score matrix per batch item and head, all in one call.

# %%
attn_scores = queries @ keys.transpose(2, 3)
print(attn_scores)
print(attn_scores.shape)

assert torch.allclose(attn_scores[0, 0, 0], torch.tensor([13.4968, -17.5172, -0.5743]), atol=1e-3)

# %% [markdown]
# ### Step 8: causal mask, scale by √head_dim, softmax
#
# The same `(T, T)` mask broadcasts over the batch and the heads. Note the scale is `√head_dim`
# (here √3), the size of the vectors whose dot products made the scores, not √d_out. The seed
# notebook applied dropout with `p = 0.5` at this point too; we leave it out, so that the numbers
# below don't depend on a random draw.

# %%
mask_bool = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool()
print(mask_bool)

attn_scores = attn_scores.masked_fill(mask_bool, -torch.inf)
print(attn_scores)

attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
print(attn_weights)
print(attn_weights.shape)

# %% [markdown]
# The scores here are large (up to 80), so even after scaling the softmax is nearly one-hot: with
# trained weights and LayerNorm before attention they would be much smaller.
#
# ### Step 9: context vectors per head: `(b, h, T, T) @ (b, h, T, hd) -> (b, h, T, hd)`

# %%
context_vec = attn_weights @ values
print(context_vec)
print(context_vec.shape)

# %% [markdown]
# ### Step 10: back to tokens first: `(b, num_heads, num_tokens, head_dim) -> (b, num_tokens, num_heads, head_dim)`

# %%
context_vec = context_vec.transpose(1, 2)
print(context_vec)
print(context_vec.shape)

# %% [markdown]
# ### Step 11: combine the heads: `(b, num_tokens, num_heads, head_dim) -> (b, num_tokens, d_out)`
#
# Each token's two head outputs are laid side by side: exactly the wrapper's concatenation. The
# transpose in step 10 only changed strides, so the numbers are no longer in row order in memory,
# and `view` needs them to be: `contiguous()` makes that copy first (`reshape` would do both).

# %%
print(context_vec.is_contiguous())
context_vec = context_vec.contiguous().view(b, num_tokens, d_out)
print(context_vec)
print(context_vec.shape)
steps_result = context_vec

# %% [markdown]
# GPT then applies one more `Linear(d_out, d_out)`, the **output projection**, which lets the model
# mix what the heads found.
#
# ## The class: `MultiHeadAttention`
#
# The eleven steps are exactly the forward pass of the book's class. `nn.Linear` stores its weight
# as `(d_out, d_in)` and computes `x @ weight.T`.

# %%
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads  # reduce the projection dim to match the desired output dim

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # combines the heads' outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape                                          # step 1

        keys = self.W_key(x)                                                   # step 4: (b, num_tokens, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)         # step 5
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)                                            # step 6
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)                           # step 7

        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]                 # step 8
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)                  # steps 9 and 10
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out) # step 11
        context_vec = self.out_proj(context_vec)                               # optional projection
        return context_vec

# %% [markdown]
# Give it the toy matrices (transposed, for `Linear`) and an identity output projection, and it
# reproduces step 11:

# %%
mha = MultiHeadAttention(d_in, d_out, context_length=num_tokens, dropout=0.0, num_heads=num_heads)
with torch.no_grad():
    mha.W_query.weight.copy_(wq.T)
    mha.W_key.weight.copy_(wk.T)
    mha.W_value.weight.copy_(wv.T)
    mha.out_proj.weight.copy_(torch.eye(d_out))
    mha.out_proj.bias.zero_()

print(torch.allclose(mha(x), steps_result, atol=1e-4))

# %% [markdown]
# And with random initial weights (seed 123) on a batch of two 3-token sequences, it prints the
# seed notebook's numbers:

# %%
torch.manual_seed(123)
inputs6 = torch.tensor([[0.43, 0.15, 0.89, 0.55, 0.87, 0.66],
                        [0.57, 0.85, 0.64, 0.22, 0.58, 0.33],
                        [0.77, 0.25, 0.10, 0.05, 0.80, 0.55]])
batch6 = torch.stack((inputs6, inputs6), dim=0)
print(batch6.shape)

batch_size, context_length6, d_in6 = batch6.shape
mha6 = MultiHeadAttention(d_in6, 6, context_length6, 0.0, num_heads=2)
context_vecs6 = mha6(batch6)
print(context_vecs6)
print(context_vecs6.shape)

assert torch.allclose(context_vecs6[0, 0], torch.tensor([0.1569, -0.0873, 0.0210, 0.0215, -0.3243, -0.2518]), atol=1e-4)

# %% [markdown]
# The library's `nn.MultiHeadAttention` is the same class (same parameter names, same
# initialisation order), so it prints the same:

# %%
torch.manual_seed(123)
lib_mha6 = nn.MultiHeadAttention(d_in6, 6, context_length6, 0.0, num_heads=2)
print(torch.allclose(lib_mha6(batch6), context_vecs6))
print(list(lib_mha6.state_dict().keys()))

# %% [markdown]
# ## The trace: every op of the forward pass, with its shapes
#
# `tinyattn.trace()` records each op run inside it: which module ran it, the shapes in and out, the
# bytes of new memory, and the line of source that called it. Here is our class from above on the
# toy input, with the toy weights: read the table next to the steps. Views and transposes cost 0
# bytes (they share memory); `contiguous` is the one copy of step 11; the `*` marks the in-place
# `masked_fill_`.

# %%
with tinyattn.trace(name="mha") as tr:
    out = mha(x)
    out.sum().backward()

print(tr.forward.filter(module="mha").table(code=True))

# %% [markdown]
# The backward pass visits the same ops in reverse order; each row shows the gradient coming in and
# the gradients going out (one per input of the op):

# %%
print(tr.backward.filter(module="mha"))

# %% [markdown]
# The library's `nn.MultiHeadAttention` computes the same numbers, bit for bit, but runs steps 7 to 9
# (the scores, the mask, the scaling, the softmax, dropout and the product with the values) as one
# op, `attention`. Its forward and its hand-derived backward sit side by side in
# `tinyattn/ops/nn.py` (`AttentionOp`); one op makes fewer passes over the
# `num_tokens x num_tokens` scores than six. It returns the weights too, which the module keeps in
# `.attn_weights`:

# %%
lib_mha = nn.MultiHeadAttention(d_in, d_out, num_tokens, 0.0, num_heads)
lib_mha.load_state_dict(mha.state_dict())

with tinyattn.trace(name="mha") as lib_tr:
    lib_out = lib_mha(x)
    lib_out.sum().backward()

print(lib_tr.forward.filter(module="mha"))
print("the same output:", torch.equal(lib_out, out))
print("the same gradients:", torch.equal(lib_mha.W_query.weight.grad, mha.W_query.weight.grad))

# %% [markdown]
# ## Do the wrapper and the weight-split class agree?
#
# They should compute the same function when the weights correspond: stack the heads' query
# matrices of the wrapper into one big query matrix (rows `i*head_dim ... (i+1)*head_dim` of
# `Linear`'s weight belong to head *i*), the same for keys and values, and make the output
# projection the identity. Then the split into heads in step 5 hands each head exactly its own
# rows.

# %%
torch.manual_seed(123)
wrapper = MultiHeadAttentionWrapper(d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2)
split = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)

state = {"mask": wrapper.heads[0].mask}
for name in ("W_query", "W_key", "W_value"):
    state[f"{name}.weight"] = torch.cat([getattr(head, name).weight for head in wrapper.heads], dim=0)
state["out_proj.weight"] = torch.eye(4)
state["out_proj.bias"] = torch.zeros(4)
split.load_state_dict(state)

out_wrapper = wrapper(batch)
out_split = split(batch)
print(out_wrapper[0])
print(out_split[0])
print("the two agree:", torch.allclose(out_wrapper, out_split, atol=1e-6))

# %% [markdown]
# The library has this conversion as `nn.multihead_from_wrapper`. And the gradients agree too:

# %%
lib_split = nn.multihead_from_wrapper(wrapper)
print(torch.allclose(lib_split(batch), out_wrapper, atol=1e-6))

out_wrapper.pow(2).sum().backward()
out_split.pow(2).sum().backward()
grad_from_heads = torch.cat([head.W_query.weight.grad for head in wrapper.heads], dim=0)
print("W_query gradients agree:", torch.allclose(grad_from_heads, split.W_query.weight.grad, atol=1e-6))

# %% [markdown]
# ## What each head looks at
#
# The library's class keeps the weights of its last forward in `.attn_weights`, shape
# `(b, num_heads, T, T)`. Two heads on our six-token sentence (random weights, so the patterns mean
# nothing yet; after training, heads specialise):

# %%
torch.manual_seed(123)
lib_mha = nn.MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)
lib_mha(batch)
print(lib_mha.attn_weights.shape)

fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.5), layout="constrained")
for h, ax in enumerate(axes):
    im = ax.imshow(lib_mha.attn_weights[0, h].numpy(), cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(6), words, rotation=45, ha="right")
    ax.set_yticks(range(6), words if h == 0 else [])
    ax.set_title(f"head {h + 1}", fontsize=10)
fig.colorbar(im, ax=axes, shrink=0.8)
plt.show()

# %% [markdown]
# That is the attention layer of GPT. Notebook 5 opens up the backward passes behind it and checks
# them against finite differences; notebook 6 trains a small GPT.
