"""Four training loops written the way a lecture writes them, for `tinyattn bench --what learner`.

Each loop is written once and receives the library as an argument (`torch`), so the very same source
text runs on PyTorch and on tinyattn. The shapes are those of a names dataset (27 characters, a
context of 3, embeddings of 10, a hidden layer of 200, batches of 32); the data is random, drawn from
the library's own generator after `manual_seed`, so both libraries see the same numbers.

Each `*_loop(torch)` builds its parameters and data and returns `step`, a zero-argument function that
runs one training step and returns the loss tensor. CALLS, at the end, holds the single calls such
a step makes, for `tinyattn bench --what calls`.
"""

import numpy as np  # (only for the NumPy floors of the calls; the loops use the library they are given)

VOCAB, BLOCK, N_EMBD, HIDDEN, BATCH = 27, 3, 10, 200, 32
NAMES = 1000  # rows of random (context, next character) examples for the MLP loops
BIGRAMS = 228146  # the bigrams of the names dataset, as ids


def _names_data(torch):
    X = torch.randint(0, VOCAB, (NAMES, BLOCK))
    Y = torch.randint(0, VOCAB, (NAMES,))
    return X, Y


def mlp_loop(torch):
    """The embedding MLP: a minibatch of 32, `F.cross_entropy`, SGD by hand on `p.data`."""
    F = torch.nn.functional
    torch.manual_seed(2147483647)
    X, Y = _names_data(torch)
    C = torch.randn((VOCAB, N_EMBD))
    W1 = torch.randn((N_EMBD * BLOCK, HIDDEN))
    b1 = torch.randn(HIDDEN)
    W2 = torch.randn((HIDDEN, VOCAB))
    b2 = torch.randn(VOCAB)
    parameters = [C, W1, b1, W2, b2]
    for p in parameters:
        p.requires_grad = True

    def step():
        ix = torch.randint(0, X.shape[0], (BATCH,))
        emb = C[X[ix]]
        h = torch.tanh(emb.view(-1, N_EMBD * BLOCK) @ W1 + b1)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Y[ix])
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            p.data += -0.1 * p.grad
        return loss

    return step, parameters


def batchnorm_loop(torch):
    """The MLP with batch norm written op by op, `retain_grad()` on every intermediate, backward, then
    the embedding's gradient scattered by hand, one row at a time (`dC[ix] += demb[k, j]`)."""
    torch.manual_seed(2147483647)
    X, Y = _names_data(torch)
    C = torch.randn((VOCAB, N_EMBD))
    W1 = torch.randn((N_EMBD * BLOCK, HIDDEN)) * (5 / 3) / ((N_EMBD * BLOCK) ** 0.5)
    b1 = torch.randn(HIDDEN) * 0.1
    W2 = torch.randn((HIDDEN, VOCAB)) * 0.1
    b2 = torch.randn(VOCAB) * 0.1
    bngain = torch.randn((1, HIDDEN)) * 0.1 + 1.0
    bnbias = torch.randn((1, HIDDEN)) * 0.1
    parameters = [C, W1, b1, W2, b2, bngain, bnbias]
    for p in parameters:
        p.requires_grad = True
    n = BATCH

    def step():
        ix = torch.randint(0, X.shape[0], (n,))
        Xb, Yb = X[ix], Y[ix]
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hprebn = embcat @ W1 + b1
        bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
        bndiff = hprebn - bnmeani
        bndiff2 = bndiff**2
        bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)
        bnvar_inv = (bnvar + 1e-5)**-0.5
        bnraw = bndiff * bnvar_inv
        hpreact = bngain * bnraw + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        logit_maxes = logits.max(1, keepdim=True).values
        norm_logits = logits - logit_maxes
        counts = norm_logits.exp()
        counts_sum = counts.sum(1, keepdim=True)
        counts_sum_inv = counts_sum**-1
        probs = counts * counts_sum_inv
        logprobs = probs.log()
        loss = -logprobs[range(n), Yb].mean()
        for p in parameters:
            p.grad = None
        for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes, logits, h,
                  hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]:
            t.retain_grad()
        loss.backward()
        with torch.no_grad():
            demb = emb.grad
            dC = torch.zeros_like(C)
            for k in range(Xb.shape[0]):
                for j in range(Xb.shape[1]):
                    ix = Xb[k, j]
                    dC[ix] += demb[k, j]
            grads = [dC] + [p.grad for p in parameters[1:]]
            for p, grad in zip(parameters, grads):
                p.data += -0.1 * grad
        return loss

    return step, parameters


def bigram_loop(torch):
    """The full-batch bigram net: one-hot of every bigram's first character, `@`, exp, row sums, the
    probabilities of the next characters picked by fancy indexing, log, mean, backward, SGD."""
    F = torch.nn.functional
    torch.manual_seed(2147483647)
    xs = torch.randint(0, VOCAB, (BIGRAMS,))
    ys = torch.randint(0, VOCAB, (BIGRAMS,))
    num = xs.nelement()
    W = torch.randn((VOCAB, VOCAB), requires_grad=True)

    def step():
        xenc = F.one_hot(xs, num_classes=VOCAB).float()
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdim=True)
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W**2).mean()
        W.grad = None
        loss.backward()
        W.data += -50 * W.grad
        return loss

    return step, [W]


def elementwise_loop(torch):
    """Twenty elementwise and reduction ops on (32, 64) tensors, a backward, and an SGD step in place."""
    torch.manual_seed(2147483647)
    a = torch.randn(32, 64, requires_grad=True)
    b = torch.randn(32, 64, requires_grad=True)

    def step():
        x = a * b + a                                        # 1, 2
        x = x - b / (b.abs() + 1)                            # 3, 4, 5, 6
        x = torch.tanh(x) + x.exp() * 0.1                    # 7, 8, 9, 10
        x = (x.abs() + 1).log() + torch.sigmoid(x)           # 11, 12, 13, 14
        x = x - x.mean(1, keepdim=True)                      # 15, 16
        x = x.relu() ** 2                                    # 17, 18
        loss = x.sum(0).max()                                # 19, 20
        a.grad = None
        b.grad = None
        loss.backward()
        a.data -= 0.01 * a.grad
        b.data -= 0.01 * b.grad
        return loss

    return step, [a, b]


LOOPS = {
    "embedding MLP": mlp_loop,
    "batch norm op by op": batchnorm_loop,
    "full-batch bigram": bigram_loop,
    "20 ops on (32, 64)": elementwise_loop,
}


# ---------------------------------------------------------------------------------------------
# the calls a learner's step makes, one at a time, for `tinyattn bench --what calls`
#
# Each entry of CALLS is (label, make, numpy_make): `make(torch)` builds the inputs with the library
# it is given and returns a zero-argument function that makes the call once (the same source text
# on tinyattn and on PyTorch); `numpy_make()`, where there is one, returns the same call written
# directly in NumPy: the floor a Python library on NumPy cannot go under.

GPT_EMBD, GPT_LAYERS, GPT_VOCAB, GPT_BLOCK = 128, 4, 65, 64


def gpt_shapes(vocab=GPT_VOCAB, block=GPT_BLOCK, n_layer=GPT_LAYERS, d=GPT_EMBD):
    """The parameter shapes of a small GPT (nanoGPT's CPU model: 52 tensors, 0.8M numbers)."""
    layer = [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,),  # layer norm, attention
             (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]  # layer norm, MLP
    return [(vocab, d), (block, d)] + layer * n_layer + [(d,), (d,)]


def _gpt_parameters(torch):
    torch.manual_seed(0)
    parameters = [torch.nn.Parameter(torch.randn(shape) * 0.02) for shape in gpt_shapes()]
    for p in parameters:
        p.grad = torch.randn(p.shape) * 0.01
    return parameters


def _pair(torch, shape=(4, 4)):
    torch.manual_seed(0)
    return torch.randn(shape, requires_grad=True), torch.randn(shape, requires_grad=True)


def _numpy_pair(shape=(4, 4)):
    rng = np.random.default_rng(0)
    return rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)


def _call_add(torch):
    a, b = _pair(torch)
    return lambda: a + b


def _call_sum(torch):
    a, _ = _pair(torch)
    return lambda: a.sum()


def _mlp_layer(torch):
    torch.manual_seed(0)
    x = torch.randn(BATCH, N_EMBD * BLOCK)
    W = torch.randn((N_EMBD * BLOCK, HIDDEN), requires_grad=True)
    b = torch.randn(HIDDEN, requires_grad=True)
    return x, W, b


def _call_affine(torch):
    x, W, b = _mlp_layer(torch)
    return lambda: x @ W + b


def _embedding_table(torch):
    torch.manual_seed(0)
    C = torch.randn((VOCAB, N_EMBD), requires_grad=True)
    ix = torch.randint(0, VOCAB, (BATCH, BLOCK))
    return C, ix


def _call_embedding_lookup(torch):
    C, ix = _embedding_table(torch)
    return lambda: C[ix]


def _call_embedding_view(torch):
    C, ix = _embedding_table(torch)
    return lambda: C[ix].view(-1, N_EMBD * BLOCK)


def _call_cross_entropy(torch):
    torch.manual_seed(0)
    logits = torch.randn((BATCH, VOCAB), requires_grad=True)
    targets = torch.randint(0, VOCAB, (BATCH,))
    F = torch.nn.functional
    return lambda: F.cross_entropy(logits, targets)


def _call_softmax(torch):
    torch.manual_seed(0)
    x = torch.randn((8, 16, 64), requires_grad=True)
    F = torch.nn.functional
    return lambda: F.softmax(x, dim=-1)


def _call_layer_norm(torch):
    torch.manual_seed(0)
    norm = torch.nn.LayerNorm(64)
    x = torch.randn((8, 16, 64), requires_grad=True)
    return lambda: norm(x)


def _call_linear(torch):
    torch.manual_seed(0)
    layer = torch.nn.Linear(N_EMBD * BLOCK, HIDDEN)
    x = torch.randn(BATCH, N_EMBD * BLOCK)
    return lambda: layer(x)


def _call_embedding(torch):
    torch.manual_seed(0)
    layer = torch.nn.Embedding(VOCAB, N_EMBD)
    ix = torch.randint(0, VOCAB, (BATCH, BLOCK))
    return lambda: layer(ix)


def _call_module(torch):
    """Module.__call__'s own cost: a module whose forward returns its input."""
    layer = torch.nn.Identity()
    x = torch.zeros(4, 4)
    return lambda: layer(x)


def _lstm(torch, bidirectional):
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(16, 32, bidirectional=bidirectional)
    x = torch.randn((8, 4, 16), requires_grad=True)  # (time, batch, features)

    def step():
        lstm.zero_grad()
        out, _ = lstm(x)
        out.sum().backward()

    return step


def _call_lstm(torch):
    return _lstm(torch, False)


def _call_bilstm(torch):
    return _lstm(torch, True)


def _call_dropout(torch):
    torch.manual_seed(0)
    x = torch.randn((BATCH, HIDDEN), requires_grad=True)
    F = torch.nn.functional
    return lambda: F.dropout(x, 0.1, training=True)


def _unary(name):
    def make(torch):
        torch.manual_seed(0)
        x = torch.rand((BATCH, HIDDEN), requires_grad=True) + 0.5
        function = getattr(torch, name)
        return lambda: function(x)

    make.__name__ = f"_call_{name}"
    return make


def _numpy_unary(name):
    def make():
        x = np.random.default_rng(0).random((BATCH, HIDDEN), dtype=np.float32) + 0.5
        function = getattr(np, name)
        return lambda: function(x)

    return make


def _indexed(torch):
    torch.manual_seed(0)
    return torch.randn((BATCH, HIDDEN), requires_grad=True)


def _call_index_int(torch):
    x = _indexed(torch)
    return lambda: x[3]


def _call_index_slice(torch):
    x = _indexed(torch)
    return lambda: x[2:10]


def _call_index_0d(torch):
    x = _indexed(torch)
    i = torch.tensor(3)
    return lambda: x[i]


def _call_index_tensor(torch):
    x = _indexed(torch)
    ix = torch.randint(0, BATCH, (BATCH,))
    return lambda: x[ix]


def _call_index_mask(torch):
    x = _indexed(torch)
    mask = x.detach() > 0
    return lambda: x[mask]


def _call_backward(torch):
    """Forward and backward of a small expression (the autograd engine's own cost)."""
    a, b = _pair(torch, (BATCH, 64))

    def step():
        a.grad = b.grad = None
        (a * b).tanh().sum().backward()

    return step


def _call_sgd_by_hand(torch):
    _, W, _ = _mlp_layer(torch)

    def step():
        W.data += -0.1 * W

    return step


def _call_zero_grad(torch):
    parameters = _gpt_parameters(torch)
    optimizer = torch.optim.SGD(parameters, lr=0.1)
    grads = [p.grad for p in parameters]

    def step():
        for p, g in zip(parameters, grads):  # (untimed work would be nicer; this is a loop of 52 stores)
            p.grad = g
        optimizer.zero_grad()

    return step


def _call_sgd_step(torch):
    parameters = _gpt_parameters(torch)
    optimizer = torch.optim.SGD(parameters, lr=1e-3, momentum=0.9)
    return optimizer.step


def _call_adamw_step(torch):
    parameters = _gpt_parameters(torch)
    optimizer = torch.optim.AdamW(parameters, lr=1e-3)
    return optimizer.step


def _call_clip_grad_norm(torch):
    parameters = _gpt_parameters(torch)
    clip = torch.nn.utils.clip_grad_norm_
    return lambda: clip(parameters, 1e9)  # a norm far below the limit: the grads stay as they are


def _call_rand(torch):
    return lambda: torch.rand(BATCH)


def _call_randn(torch):
    return lambda: torch.randn(BATCH)


def _call_randn_2d(torch):
    return lambda: torch.randn(BATCH, N_EMBD * BLOCK)


def _call_randint(torch):
    return lambda: torch.randint(0, VOCAB, (BATCH,))


def _call_multinomial(torch):
    torch.manual_seed(0)
    p = torch.rand(VOCAB)
    return lambda: torch.multinomial(p, 1, replacement=True)


def _call_data_loader(torch):
    """One batch of 32 from a shuffled DataLoader over a TensorDataset of (context, next) pairs."""
    torch.manual_seed(0)
    X, Y = _names_data(torch)
    data = torch.utils.data
    loader = data.DataLoader(data.TensorDataset(X, Y), batch_size=BATCH, shuffle=True)
    batches = iter(loader)

    def step():
        nonlocal batches
        try:
            return next(batches)
        except StopIteration:  # a new epoch: a new shuffle
            batches = iter(loader)
            return next(batches)

    return step


def _numpy_add():
    a, b = _numpy_pair()
    return lambda: a + b


def _numpy_sum():
    a, _ = _numpy_pair()
    return lambda: a.sum()


def _numpy_affine():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, N_EMBD * BLOCK), dtype=np.float32)
    W = rng.standard_normal((N_EMBD * BLOCK, HIDDEN), dtype=np.float32)
    b = rng.standard_normal(HIDDEN, dtype=np.float32)
    return lambda: x @ W + b


def _numpy_embedding():
    rng = np.random.default_rng(0)
    return rng.standard_normal((VOCAB, N_EMBD), dtype=np.float32), rng.integers(0, VOCAB, (BATCH, BLOCK))


def _numpy_lookup():
    C, ix = _numpy_embedding()
    return lambda: C[ix]


def _numpy_lookup_view():
    C, ix = _numpy_embedding()
    return lambda: C[ix].reshape(-1, N_EMBD * BLOCK)


def _numpy_cross_entropy():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((BATCH, VOCAB), dtype=np.float32)
    targets = rng.integers(0, VOCAB, BATCH)
    rows = np.arange(BATCH)

    def cross_entropy():
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_sum = np.log(np.exp(shifted).sum(axis=1))
        return (log_sum - shifted[rows, targets]).mean()

    return cross_entropy


def _numpy_softmax():
    x = np.random.default_rng(0).standard_normal((8, 16, 64), dtype=np.float32)

    def softmax():
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    return softmax


def _numpy_layer_norm():
    x = np.random.default_rng(0).standard_normal((8, 16, 64), dtype=np.float32)
    weight, bias = np.ones(64, np.float32), np.zeros(64, np.float32)

    def layer_norm():
        centred = x - x.mean(axis=-1, keepdims=True)
        return centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + 1e-5) * weight + bias

    return layer_norm


def _numpy_indexed():
    return np.random.default_rng(0).standard_normal((BATCH, HIDDEN), dtype=np.float32)


def _numpy_index(key):
    def make():
        x = _numpy_indexed()
        k = key(x)
        return lambda: x[k]

    return make


def _numpy_sgd_by_hand():
    W = np.random.default_rng(0).standard_normal((N_EMBD * BLOCK, HIDDEN), dtype=np.float32)

    def step():
        nonlocal W
        W += -0.1 * W

    return step


def _numpy_draws(kind):
    def make():
        rng = np.random.default_rng(0)
        if kind == "rand":
            return lambda: rng.random(BATCH, dtype=np.float32)
        if kind == "randn":
            return lambda: rng.standard_normal(BATCH, dtype=np.float32)
        if kind == "randn_2d":
            return lambda: rng.standard_normal((BATCH, N_EMBD * BLOCK), dtype=np.float32)
        return lambda: rng.integers(0, VOCAB, BATCH)

    return make


CALLS = [
    ("a + b, 4x4", _call_add, _numpy_add),
    ("a.sum(), 4x4", _call_sum, _numpy_sum),
    ("x @ W + b (32,30)@(30,200)", _call_affine, _numpy_affine),
    ("C[ix], ix (32, 3)", _call_embedding_lookup, _numpy_lookup),
    ("C[ix].view(-1, 30)", _call_embedding_view, _numpy_lookup_view),
    ("F.cross_entropy (32, 27)", _call_cross_entropy, _numpy_cross_entropy),
    ("F.softmax (8, 16, 64)", _call_softmax, _numpy_softmax),
    ("nn.LayerNorm(64) (8,16,64)", _call_layer_norm, _numpy_layer_norm),
    ("nn.Linear(30, 200) (32,30)", _call_linear, _numpy_affine),
    ("nn.Embedding(27, 10) (32,3)", _call_embedding, _numpy_lookup),
    ("Module.__call__ (Identity)", _call_module, None),
    ("nn.LSTM fwd+bwd (8,4,16)", _call_lstm, None),
    ("bi-LSTM fwd+bwd (8,4,16)", _call_bilstm, None),
    ("F.dropout (32, 200)", _call_dropout, None),
    ("tanh (32, 200)", _unary("tanh"), _numpy_unary("tanh")),
    ("exp (32, 200)", _unary("exp"), _numpy_unary("exp")),
    ("log (32, 200)", _unary("log"), _numpy_unary("log")),
    ("x[3]", _call_index_int, _numpy_index(lambda x: 3)),
    ("x[2:10]", _call_index_slice, _numpy_index(lambda x: slice(2, 10))),
    ("x[0-d tensor]", _call_index_0d, _numpy_index(lambda x: np.array(3))),
    ("x[index (32,)]", _call_index_tensor, _numpy_index(lambda x: np.random.default_rng(0).integers(0, BATCH, BATCH))),
    ("x[bool mask]", _call_index_mask, _numpy_index(lambda x: x > 0)),
    ("(a*b).tanh().sum() backward", _call_backward, None),
    ("W.data += -0.1 * W", _call_sgd_by_hand, _numpy_sgd_by_hand),
    ("zero_grad, GPT params", _call_zero_grad, None),
    ("SGD step, GPT params", _call_sgd_step, None),
    ("AdamW step, GPT params", _call_adamw_step, None),
    ("clip_grad_norm_, GPT", _call_clip_grad_norm, None),
    ("rand(32)", _call_rand, _numpy_draws("rand")),
    ("randn(32)", _call_randn, _numpy_draws("randn")),
    ("randn(32, 30)", _call_randn_2d, _numpy_draws("randn_2d")),
    ("randint(0, 27, (32,))", _call_randint, _numpy_draws("randint")),
    ("multinomial(27 probs, 1)", _call_multinomial, None),
    ("DataLoader batch of 32", _call_data_loader, None),
]
