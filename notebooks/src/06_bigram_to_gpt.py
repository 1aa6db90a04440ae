# %% [markdown]
# # 6. From bigram to GPT
#
# The walk of Karpathy's *"Let's build GPT"*, on tinyattn: a character-level language model that
# starts as a lookup table (the **bigram** model), learns to average over the past, turns that
# average into **self-attention**, grows several heads, feed-forward layers and residual **blocks**,
# and ends as a small GPT that we train and sample from.
#
# The code is PyTorch's, with `import tinyattn as torch`. Two settings at the top:
#
# - the text: Tiny Shakespeare (1.1 million characters, the walk's text), read from the file named
#   by the environment variable `TINYSHAKESPEARE` (default `input.txt` in this folder). A fresh
#   clone does not have it, and then the notebook runs on the small corpus that ships with
#   tinyattn, Shakespeare's sonnets I-LX (37,546 characters). **The outputs stored in this notebook
#   are from such a fresh run, on the sonnets**; the first cell says which text it read. To run it
#   on Tiny Shakespeare:
#   `curl -o notebooks/input.txt https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt`;
# - the sizes: when `TINYATTN_NOTEBOOK_QUICK` is set (as in CI) the training runs are a few dozen
#   steps of a tiny model, so the whole notebook runs in under a minute; without it, a few minutes
#   on a laptop CPU.

# %%
import os
import pathlib
import time

import tinyattn as torch
import tinyattn.nn as nn
from tinyattn.nn import functional as F
from tinyattn.app.text_data import default_corpus, load_text

import matplotlib.pyplot as plt

plt.rcParams["figure.dpi"] = 80

QUICK = bool(os.environ.get("TINYATTN_NOTEBOOK_QUICK"))
DATA_PATH = pathlib.Path(os.environ.get("TINYSHAKESPEARE", "input.txt"))

if DATA_PATH.is_file():
    text = load_text(DATA_PATH)
    corpus = "Tiny Shakespeare" if len(text) == 1115394 else DATA_PATH.name
    print(f"corpus: {corpus}, read from {DATA_PATH} ({len(text):,} characters)")
else:
    text = default_corpus()
    corpus = "the bundled sonnets"
    print(f"corpus: Shakespeare's sonnets I-LX, which ship with tinyattn ({len(text):,} characters),\n"
          f"because {DATA_PATH} was not found. A text this small is learnt by heart: the GPT at the end\n"
          "will overfit it (its validation loss rises while the training loss falls). For the walk's\n"
          "text, Tiny Shakespeare, see the first cell.")
TINY_SHAKESPEARE = len(text) == 1115394  # the seed notebook's numbers can be checked on this text
print("quick run" if QUICK else "full run")

# %% [markdown]
# ## The data

# %%
print(f"Length of the dataset (in chars): {len(text)}")
print(text[:300])

# %% [markdown]
# ## A tokenizer: characters to integers
#
# The vocabulary is every character that occurs in the text, sorted. Real GPTs use sub-word
# tokens (a vocabulary of ~50,000 pieces, so shorter sequences); characters keep everything
# visible.

# %%
chars = sorted(list(set(text)))
vocab_size = len(chars)
print("".join(chars))
print(vocab_size)

stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}
encode = lambda s: [stoi[c] for c in s]           # string -> list of integers
decode = lambda l: "".join([itos[i] for i in l])  # list of integers -> string

print(encode("Hi there!"))
print(decode(encode("Hi there!")))

# %% [markdown]
# The library has the same tokenizer as `tinyattn.app.text_data.CharTokenizer` (with `encode_array` for
# long texts, and clear errors for characters outside the vocabulary):

# %%
from tinyattn.app.text_data import CharTokenizer

tokenizer = CharTokenizer.from_text(text)
print(tokenizer, tokenizer.encode("Hi there!") == encode("Hi there!"))

# %% [markdown]
# The whole text as one long tensor of ids, split 90% / 10% into training and validation data:

# %%
data = torch.tensor(encode(text), dtype=torch.long)
print(data.shape, data.dtype)
print(data[:100])

n = int(0.9 * len(data))
train_data = data[:n]
val_data = data[n:]

# %% [markdown]
# ## Blocks and batches
#
# We never feed the whole text at once: training looks at random chunks of `block_size + 1`
# characters. One chunk holds `block_size` examples, one per position: from the first *t*
# characters, predict character *t + 1*. So the model learns to predict from contexts of every
# length from 1 to `block_size`.

# %%
block_size = 8
print(train_data[: block_size + 1])

x = train_data[:block_size]
y = train_data[1 : block_size + 1]
for t in range(block_size):
    context = x[: t + 1]
    target = y[t]
    print(f"When input is {context} the target is {target}.")

# %% [markdown]
# A batch stacks `batch_size` chunks taken at random offsets, to keep the processor busy:

# %%
torch.manual_seed(1337)
batch_size = 4  # how many independent sequences we process in parallel
block_size = 8  # the longest context for the predictions


def get_batch(split):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix])
    return x, y


xb, yb = get_batch("train")
print("inputs:")
print(xb.shape)
print(xb)
print("targets:")
print(yb.shape)
print(yb)

for t in range(block_size):  # the examples of the first row
    print(f"When input is {xb[0, : t + 1].tolist()} the target is {yb[0, t]}.")

# %% [markdown]
# The library's `tinyattn.app.text_data.get_batch` draws the offsets the same way, so the same seed gives
# the same batch:

# %%
from tinyattn.app.text_data import get_batch as library_get_batch

torch.manual_seed(1337)
xb2, yb2 = library_get_batch(train_data, batch_size=4, block_size=8)
print(torch.equal(xb2, xb), torch.equal(yb2, yb))

if TINY_SHAKESPEARE:  # the seed notebook's batch
    assert xb[0].tolist() == [24, 43, 58, 5, 57, 1, 46, 43]
    assert xb[3].tolist() == [25, 17, 27, 10, 0, 21, 1, 54]

# %% [markdown]
# ## The bigram model
#
# The simplest language model: the next character depends only on the current one. An
# `Embedding(vocab_size, vocab_size)` is a table with one row per character; row *c* holds the
# scores (logits) of every possible next character. The loss is the cross-entropy between those
# scores and the real next characters.

# %%
torch.manual_seed(1337)


class BigramLanguageModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        # each token reads off the logits for the next token from a lookup table
        self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        # idx and targets are both (B, T) tensors of integers
        logits = self.token_embedding_table(idx)  # (B, T, C)
        if targets is None:
            loss = None
        else:
            B, T, C = logits.shape
            logits = logits.view(B * T, C)  # cross_entropy wants (N, C)
            targets = targets.view(B * T)
            loss = F.cross_entropy(logits, targets)
        return logits, loss

    def generate(self, idx, max_new_tokens):
        # idx is (B, T) array of indices in the current context
        for _ in range(max_new_tokens):
            logits, loss = self(idx)
            logits = logits[:, -1, :]  # the last time step: (B, C)
            probs = F.softmax(logits, dim=-1)  # (B, C)
            idx_next = torch.multinomial(probs, num_samples=1)  # (B, 1)
            idx = torch.cat((idx, idx_next), dim=1)  # (B, T+1)
        return idx


m = BigramLanguageModel(vocab_size)
logits, loss = m(xb, yb)
print(logits.shape)
print(loss)

idx = torch.zeros((1, 1), dtype=torch.long)  # start from id 0 (the newline)
generated = decode(m.generate(idx, max_new_tokens=100)[0].tolist())
print(generated)

# %% [markdown]
# The text is noise. If the untrained model gave every character the same probability, the loss
# would be `-ln(1/vocab_size)`; the random table is not that even, so the loss is a bit higher:

# %%
import math

print(f"-ln(1/{vocab_size}) = {-math.log(1 / vocab_size):.4f}")
if TINY_SHAKESPEARE:  # the seed notebook's numbers, and its text
    assert abs(loss.item() - 4.8786) < 1e-4
    assert generated.startswith("\nSKIcLT;AcELMoTbvZv C?nq-QE33:CJqkOKH-q;:la!oiywkHjgChzbQ?u!3bLIgwevmyFJGUGp")

# %% [markdown]
# ### Training the bigram model
#
# AdamW, batches of 32, and a plain loop. We print the loss every so often rather than at every
# step, so that the output stays short.

# %%
optimizer = torch.optim.AdamW(m.parameters(), lr=1e-3)

batch_size = 32
bigram_steps = 500 if QUICK else 10000
started = time.perf_counter()
for step in range(bigram_steps):
    xb, yb = get_batch("train")
    logits, loss = m(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if step % (bigram_steps // 5) == 0 or step == bigram_steps - 1:
        print(f"step {step:>5}: loss {loss.item():.4f}")
print(f"{bigram_steps} steps in {time.perf_counter() - started:.0f} s")

# %%
print(decode(m.generate(idx=torch.zeros((1, 1), dtype=torch.long), max_new_tokens=300)[0].tolist()))

# %% [markdown]
# Better: words of the right length, capitals after newlines. But a character that only sees the
# one before it cannot do much more. The tokens have to **talk to each other**, and only to the
# ones before them (the future is what we predict).
#
# ## The mathematical trick: averaging the past with a matrix
#
# The simplest way for token *t* to gather the past: the average of tokens 0..t. With loops first:

# %%
torch.manual_seed(1337)
B, T, C = 4, 8, 2  # batch, time, channels
x = torch.randn(B, T, C)
print(x.shape)

xbow = torch.zeros((B, T, C))  # "bag of words": the mean of the past
for b in range(B):
    for t in range(T):
        xprev = x[b, : t + 1]  # (t+1, C)
        xbow[b, t] = torch.mean(xprev, 0)

print(x[0])
print(xbow[0])

assert torch.allclose(x[0, 0], torch.tensor([0.1808, -0.0700]), atol=1e-4)
assert torch.allclose(xbow[0, -1], torch.tensor([-0.0341, 0.1332]), atol=1e-4)

# %% [markdown]
# The loops are slow. A matrix product does it: multiplying by a lower-triangular matrix of ones
# sums the rows up to *t*...

# %%
torch.manual_seed(42)
a = torch.tril(torch.ones(3, 3))
b = torch.randint(0, 10, (3, 2)).float()
c = a @ b
print("a =", a, sep="\n")
print("b =", b, sep="\n")
print("c =", c, sep="\n")

# %% [markdown]
# ...and normalising its rows to sum to 1 turns the sums into averages:

# %%
a = a / torch.sum(a, 1, keepdim=True)
c = a @ b
print("a =", a, sep="\n")
print("c =", c, sep="\n")

# %% [markdown]
# For our batch: a `(T, T)` weight matrix, broadcast over the batch: `(T, T) @ (B, T, C) -> (B, T, C)`.

# %%
wei = torch.tril(torch.ones(T, T))
wei = wei / wei.sum(1, keepdim=True)
xbow2 = wei @ x
print(torch.allclose(xbow, xbow2, atol=1e-6))

# %% [markdown]
# A third version, the one self-attention uses: start from scores (here all zero), set the future
# to `-inf`, softmax. Zero scores give equal weights over the visible past: the same averages.
# The point is that the scores no longer have to be zero.

# %%
tril = torch.tril(torch.ones(T, T))
wei = torch.zeros((T, T))
wei = wei.masked_fill(tril == 0, float("-inf"))
print(wei)
wei = F.softmax(wei, dim=-1)
print(wei)
xbow3 = wei @ x
print(torch.allclose(xbow, xbow3, atol=1e-6))

# %% [markdown]
# ## Self-attention: data-dependent weights
#
# Instead of equal weights, let each token decide how much it wants from each earlier token. Every
# token emits a **query** ("what am I looking for?") and a **key** ("what do I contain?"); the
# score is their dot product. A single head of size 16, on random inputs:

# %%
torch.manual_seed(1337)
B, T, C = 4, 8, 32
x = torch.randn(B, T, C)

head_size = 16
key = nn.Linear(C, head_size, bias=False)
query = nn.Linear(C, head_size, bias=False)
value = nn.Linear(C, head_size, bias=False)
k = key(x)  # (B, T, 16)
q = query(x)  # (B, T, 16)
wei = q @ k.transpose(-2, -1)  # (B, T, 16) @ (B, 16, T) -> (B, T, T)

tril = torch.tril(torch.ones(T, T))
wei = wei.masked_fill(tril == 0, float("-inf"))
wei = F.softmax(wei, dim=-1)

v = value(x)  # what each token hands over
out = wei @ v
print(out.shape)
print(wei[0])

assert torch.allclose(wei[0, 1, :2], torch.tensor([0.1574, 0.8426]), atol=1e-4)

# %% [markdown]
# Each row is now different: token 4 (counting from 0), say, takes 79% of its information from
# itself and 11% from token 1. Notes from the walk:
#
# - attention is a **communication** mechanism between nodes of a directed graph; it has no notion
#   of position, so we will add position embeddings to the tokens;
# - batch items never talk to each other;
# - the mask makes this a **decoder** block (predict the future from the past); without it, as in
#   an encoder, every token sees every other;
# - **self**-attention: keys, queries and values all come from `x`; in cross-attention the keys and
#   values come from elsewhere.
#
# ### Scaled attention
#
# The scores above are unscaled. With unit-variance queries and keys, `q · k` has variance
# `head_size`, and softmax of large scores approaches a one-hot vector (each token would listen
# to just one other). Dividing by `√head_size` keeps the variance near 1:

# %%
torch.manual_seed(1337)
k = torch.randn(B, T, head_size)
q = torch.randn(B, T, head_size)
print(f"var(k) = {k.var().item():.4f}, var(q) = {q.var().item():.4f}")
print(f"var(q @ k^T) = {(q @ k.transpose(-2, -1)).var().item():.4f}")
print(f"var(q @ k^T / sqrt(head_size)) = {(q @ k.transpose(-2, -1) * head_size**-0.5).var().item():.4f}")

print(torch.softmax(torch.tensor([0.1, -0.2, 0.3, -0.2, 0.5]), dim=-1))
print(torch.softmax(torch.tensor([0.1, -0.2, 0.3, -0.2, 0.5]) * 8, dim=-1))  # sharpens towards one-hot

# %% [markdown]
# ## From one head to a GPT
#
# The pieces as modules, as the walk builds them:
#
# - `Head`: one head of causal self-attention (the cell above, scaled);
# - `MultiHeadAttention`: several heads in parallel, concatenated, then a projection;
# - `FeedForward`: after the tokens have talked, each one thinks on its own (a small MLP per token);
# - `Block`: communication then computation, each wrapped in a **residual connection**
#   (`x = x + f(LayerNorm(x))`), which keeps gradients flowing through deep stacks; the LayerNorm
#   before each part keeps the activations' scale in check.

# %%
class Head(nn.Module):
    """One head of self-attention."""

    def __init__(self, n_embd, head_size, block_size, dropout):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)  # (B, T, hs)
        q = self.query(x)  # (B, T, hs)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5  # (B, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        v = self.value(x)  # (B, T, hs)
        return wei @ v  # (B, T, hs)


class MultiHeadAttention(nn.Module):
    """Several heads of self-attention in parallel."""

    def __init__(self, n_embd, num_heads, head_size, block_size, dropout):
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, head_size, block_size, dropout) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return self.dropout(self.proj(out))


class FeedForward(nn.Module):
    """A linear layer followed by a non-linearity, per token."""

    def __init__(self, n_embd, dropout):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.ReLU(),
            nn.Linear(4 * n_embd, n_embd),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    """Transformer block: communication followed by computation."""

    def __init__(self, n_embd, n_head, block_size, dropout):
        super().__init__()
        head_size = n_embd // n_head
        self.sa = MultiHeadAttention(n_embd, n_head, head_size, block_size, dropout)
        self.ffwd = FeedForward(n_embd, dropout)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        x = x + self.ffwd(self.ln2(x))
        return x


class GPTLanguageModel(nn.Module):
    def __init__(self, vocab_size, n_embd, n_head, n_layer, block_size, dropout=0.0):
        super().__init__()
        self.block_size = block_size
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, block_size, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)  # final layer norm
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        tok_emb = self.token_embedding_table(idx)  # (B, T, C)
        pos_emb = self.position_embedding_table(torch.arange(T))  # (T, C): where each token is
        x = tok_emb + pos_emb  # (B, T, C)
        x = self.blocks(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, vocab_size)
        if targets is None:
            return logits, None
        B, T, C = logits.shape
        return logits, F.cross_entropy(logits.view(B * T, C), targets.view(B * T))

    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.block_size :]  # the position table has only block_size rows
            logits, _ = self(idx_cond)
            probs = F.softmax(logits[:, -1, :], dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx

# %% [markdown]
# A small one, a forward and backward pass on one batch:

# %%
torch.manual_seed(1337)
block_size = 32
gpt = GPTLanguageModel(vocab_size, n_embd=64, n_head=4, n_layer=2, block_size=block_size)
print(f"{sum(p.numel() for p in gpt.parameters()):,} parameters")

xb, yb = get_batch("train")
logits, loss = gpt(xb, yb)
loss.backward()
print(logits.shape, loss)

# %% [markdown]
# ## Training a GPT
#
# The library ships this model as `tinyattn.app.models.GPT`, with the choices nanoGPT makes: the heads
# computed by one `nn.MultiHeadAttention` (the weight-split class of notebook 4) instead of a list
# of heads, GELU instead of ReLU, the output layer sharing its matrix with the token embedding, and
# GPT-2's initialisation. `tinyattn.app.training.train` runs the loop above with a warmup + cosine
# learning rate, gradient clipping and a periodic estimate of the train and validation loss.
#
# Progress: on a terminal, `train` keeps one progress line up to date; here (not a terminal) it
# draws no bar and prints only the periodic estimates, so the output stays a few lines long.

# %%
from tinyattn.app.training import TrainConfig, sample, train

if QUICK:
    config = TrainConfig(steps=30, batch_size=8, block_size=16, n_layer=1, n_head=2, n_embd=32,
                         lr=3e-3, warmup_steps=5, eval_interval=10, eval_iters=2)
else:
    config = TrainConfig(steps=1500, batch_size=32, block_size=64, n_layer=4, n_head=4, n_embd=64,
                         lr=2e-3, warmup_steps=100, eval_interval=250, eval_iters=10)
print(config)

result = train(config, text)
model, tokenizer = result.model, result.tokenizer
print(f"{model.num_parameters():,} parameters, {result.step} steps on {corpus} in {result.seconds:.0f} s")

best = min(result.history, key=lambda h: h["val_loss"])
last = result.history[-1]
if last["val_loss"] > best["val_loss"] + 0.01:  # say it, rather than let a rising curve pass unnoticed
    print(f"overfitting: the validation loss was lowest at step {best['step']} ({best['val_loss']:.3f}) and is "
          f"{last['val_loss']:.3f} at step {last['step']},\nwhile the training loss fell to "
          f"{last['train_loss']:.3f}: the model memorises the {len(text):,} characters of {corpus}\n"
          "instead of learning what generalises. More text (Tiny Shakespeare), fewer steps or dropout help.")

# %% [markdown]
# ### The loss curve
#
# Grey: the loss of each training batch (noisy); dots: the mean over `eval_iters` batches of each
# split. When the validation loss stops following the training loss, the model starts to memorise.

# %%
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(range(1, len(result.losses) + 1), result.losses, color="0.75", linewidth=0.8, label="train (each step)")
steps = [h["step"] for h in result.history]
ax.plot(steps, [h["train_loss"] for h in result.history], "o-", label="train (estimate)")
ax.plot(steps, [h["val_loss"] for h in result.history], "o-", label="validation (estimate)")
ax.set_xlabel("step")
ax.set_ylabel("cross-entropy loss")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ### What the heads look at
#
# Each attention layer of the library's model keeps its last weights in `.attn_weights`, shape
# `(batch, heads, T, T)`. Run a stretch of validation text through the trained model and draw the
# heads of the first and the last layer (row = the character predicting, column = the character
# attended to). Typical patterns: heads that look at the previous character or two, heads that
# look back to the last space or newline.

# %%
snippet = text[int(0.95 * len(text)):][: min(24, config.block_size)]
ids = torch.tensor([tokenizer.encode(snippet)], dtype=torch.long)
model.eval()
with torch.no_grad():
    model(ids)

labels = [{"\n": "⏎", " ": "␣"}.get(ch, ch) for ch in snippet]
layers = sorted({0, len(model.blocks) - 1})
n_head = config.n_head
fig, axes = plt.subplots(len(layers), n_head, figsize=(2.4 * n_head, 2.5 * len(layers)), squeeze=False)
for row, layer in zip(axes, layers):
    weights = model.blocks[layer].attn.attn_weights[0]  # (heads, T, T)
    for h, ax in enumerate(row):
        ax.imshow(weights[h].numpy(), cmap="viridis", vmin=0, vmax=1)
        ax.set_title(f"layer {layer + 1}, head {h + 1}", fontsize=9)
        ax.set_xticks(range(len(labels)), labels, fontsize=6)
        ax.set_yticks(range(len(labels)), labels, fontsize=6)
fig.tight_layout()
plt.show()
print(repr(snippet))

# %% [markdown]
# ### Text from the trained model
#
# `sample` starts from a newline and draws one character at a time from the model's predicted
# distribution (seeded, so the text is the same on every run):

# %%
print(sample(model, tokenizer, prompt="\n", tokens=200 if QUICK else 600, seed=1337))

# %% [markdown]
# On Tiny Shakespeare, a few minutes of CPU training give speaker names, line breaks and
# Shakespeare-shaped words; the loss goes from 4.2 at the start to around 2. On the bundled sonnets
# (the text of the outputs stored here) the same run learns the sonnets' words and line lengths,
# and then starts to recite rather than generalise: the gap between the two curves above. Longer runs and larger
# models do much better: the walk's final setting (`n_layer=6, n_head=6, n_embd=384,
# block_size=256, dropout=0.2`, 5000 steps of 64 sequences) reaches a validation loss near 1.5,
# which wants a GPU (`TrainConfig(device="cuda")`, with CuPy installed). The same run from the
# command line: `tinyattn train --help`.
