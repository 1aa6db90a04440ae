"""Four training loops written the way a lecture writes them, for `tinyattn bench --what learner`.

Each loop is written once and receives the library as an argument (`torch`), so the very same source
text runs on PyTorch and on tinyattn. The shapes are those of a names dataset (27 characters, a
context of 3, embeddings of 10, a hidden layer of 200, batches of 32); the data is random, drawn from
the library's own generator after `manual_seed`, so both libraries see the same numbers.

Each `*_loop(torch)` builds its parameters and data and returns `step`, a zero-argument function that
runs one training step and returns the loss tensor.
"""

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
