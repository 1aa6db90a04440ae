"""Exercise 11: cross-entropy of logits, with ignore_index: softmax minus one-hot, over the rows counted."""

import numpy as np

import tinyattn as torch
from tinyattn.autograd import Function
from tinyattn.nn import functional as F

from .exercise import Exercise, Factor, Mistake, Suspect

IGNORE = -100


class CrossEntropy(Function):
    @staticmethod
    def forward(ctx, logits, target, ignore_index):
        counted = target != ignore_index  # (N,): the mean is over these rows only
        safe = target.masked_fill(~counted, 0)  # any class for the ignored rows: their loss is not used
        picked = logits.gather(1, safe.unsqueeze(1)).squeeze(1)  # logits[i, target[i]]
        losses = torch.logsumexp(logits, dim=1) - picked  # -log softmax(logits)[i, target[i]]
        ctx.save_for_backward(logits, target)
        ctx.ignore_index = ignore_index
        return (losses * counted).sum() / counted.sum()

    @staticmethod
    def backward(ctx, grad_loss):
        logits, target = ctx.saved_tensors
        # --- solution ---
        counted = target != ctx.ignore_index
        shifted = logits - logits.max(dim=1, keepdim=True).values  # exp(shifted) <= 1: no overflow
        probs = shifted.exp() / shifted.exp().sum(dim=1, keepdim=True)
        one_hot = F.one_hot(target.masked_fill(~counted, 0), logits.shape[1])
        # d loss_i / d logits_i = softmax_i - one_hot_i for the counted rows; the mean divides by their number
        grad = (probs - one_hot) * counted.unsqueeze(1) / counted.sum()
        return grad * grad_loss, None, None


# --- mistakes learners make -------------------------------------------------------------------


def _probs(logits):
    shifted = logits - logits.max(dim=1, keepdim=True).values
    return shifted.exp() / shifted.exp().sum(dim=1, keepdim=True)


def ignored_rows_kept(ctx, grad_loss):
    logits, target = ctx.saved_tensors
    counted = target != ctx.ignore_index
    one_hot = F.one_hot(target.masked_fill(~counted, 0), logits.shape[1]) * counted.unsqueeze(1)
    return (_probs(logits) - one_hot) / counted.sum() * grad_loss, None, None


def mean_over_all_rows(ctx, grad_loss):
    logits, target = ctx.saved_tensors
    counted = target != ctx.ignore_index
    one_hot = F.one_hot(target.masked_fill(~counted, 0), logits.shape[1])
    return (_probs(logits) - one_hot) * counted.unsqueeze(1) / logits.shape[0] * grad_loss, None, None


def no_max_shift(ctx, grad_loss):
    logits, target = ctx.saved_tensors
    counted = target != ctx.ignore_index
    probs = logits.exp() / logits.exp().sum(dim=1, keepdim=True)
    one_hot = F.one_hot(target.masked_fill(~counted, 0), logits.shape[1])
    return (probs - one_hot) * counted.unsqueeze(1) / counted.sum() * grad_loss, None, None


def sum_not_mean(ctx, grad_loss):
    logits, target = ctx.saved_tensors
    counted = target != ctx.ignore_index
    one_hot = F.one_hot(target.masked_fill(~counted, 0), logits.shape[1])
    return (_probs(logits) - one_hot) * counted.unsqueeze(1) * grad_loss, None, None


def grad_loss_forgotten(ctx, grad_loss):
    logits, target = ctx.saved_tensors
    counted = target != ctx.ignore_index
    one_hot = F.one_hot(target.masked_fill(~counted, 0), logits.shape[1])
    return (_probs(logits) - one_hot) * counted.unsqueeze(1) / counted.sum(), None, None


def sign_flipped(ctx, grad_loss):
    logits, target = ctx.saved_tensors
    counted = target != ctx.ignore_index
    one_hot = F.one_hot(target.masked_fill(~counted, 0), logits.shape[1])
    return (one_hot - _probs(logits)) * counted.unsqueeze(1) / counted.sum() * grad_loss, None, None


# ----------------------------------------------------------------------------------------------


def _parts(case):
    logits, target = case["logits"], case["target"]
    counted = target != case["ignore_index"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    one_hot = np.zeros_like(logits)
    one_hot[np.arange(len(target))[counted], target[counted]] = 1.0
    return probs, one_hot, counted[:, None], counted.sum()


def _ignored_rows(probe):
    probs, one_hot, counted, n = _parts(probe.case)
    return ["logits"] if probe.matches("logits", ((probs - one_hot) / n)[None]) else []


def _denominator(probe):
    probs, one_hot, counted, n = _parts(probe.case)
    rows = probe.case["logits"].shape[0]
    return ["logits"] if probe.matches("logits", ((probs - one_hot) * counted / rows)[None]) else []


def example():
    rng = np.random.default_rng(11)
    return {"logits": rng.standard_normal((5, 3)), "target": np.array([2, 0, 1, 1, 0]), "ignore_index": IGNORE}


def edge_cases():
    # two rows whose target is ignore_index: they get no gradient, and the mean is over the other three
    case = example()
    return [{**case, "target": np.array([2, IGNORE, 1, IGNORE, 0])}]


def large_case():
    case = example()
    return {**case, "logits": 10 * case["logits"] + 100}


def random_case(draw, s):
    rows, classes = draw(s.size(1, 5)), draw(s.size(1, 4))
    target = draw(s.ints((rows,), 0, classes - 1))
    ignored = draw(s.masks((rows,)))
    ignored[0] = False  # at least one row counted (with none, the mean is 0/0)
    return {"logits": draw(s.floats((rows, classes), low=-3.0, high=3.0)),
            "target": np.where(ignored, IGNORE, target), "ignore_index": IGNORE}


def factors(case):
    n = int(np.sum(case["target"] != case["ignore_index"]))
    return [Factor("N", n, explanation=f"The loss is the mean over the N = {n} counted rows: divide by N.")]


def edge(case):
    ignored = int(np.sum(case["target"] == case["ignore_index"]))
    return f"{ignored} target{'s' * (ignored != 1)} equal to ignore_index" if ignored else ""


EXERCISE = Exercise(
    number=11,
    name="cross_entropy",
    title="cross-entropy, with ignore_index",
    function=CrossEntropy,
    statement=(
        "loss = the mean over the counted rows i of -log softmax(logits_i)[target_i], where a row whose "
        "target equals ignore_index is not counted (padding): it adds nothing to the loss and gets no "
        "gradient. forward saves the logits, so backward recomputes the softmax; if you write it out, "
        "subtract each row's max before exp, or float32 overflows. grad_loss is a number you must "
        "multiply by (the loss may be scaled after)."
    ),
    shapes=(
        "logits        (N, C), e.g. (5, 3)\n"
        "target        (N,) class indices, or ignore_index (-100)\n"
        "loss          () a scalar\n"
        "grad_loss     ()  ->  return grad_logits (N, C), None, None"
    ),
    hint=(
        "For one row, d loss_i / d logits_i = softmax(logits_i) - one_hot(target_i). Zero the ignored "
        "rows (multiply by (target != ignore_index).unsqueeze(1)), divide by the number of counted rows, "
        "multiply by grad_loss. F.one_hot(indices, C) gives the one-hot rows (mask the ignored targets to "
        "a valid class first)."
    ),
    todo="return grad_logits (the shape of logits), None, None",
    args=("logits", "target", "ignore_index"),
    grads=("logits",),
    outputs=("loss",),
    example=example,
    random_case=random_case,
    reference=lambda logits, target, ignore_index: F.cross_entropy(logits, target, ignore_index=ignore_index),
    factors=factors,
    edge_cases=edge_cases,
    suspects=(
        Suspect("ignored-rows", "ignored rows get a gradient",
                "A row whose target is ignore_index adds nothing to the loss, so its gradient is 0: "
                "multiply by the mask of counted rows, softmax included.", _ignored_rows),
        Suspect("wrong-denominator", "divided by all rows, not the counted",
                "The mean is over the counted rows: divide by (target != ignore_index).sum(), not by N.",
                _denominator),
    ),
    large_case=large_case,
    large_case_text="logits of about 100",
    unstable_explanation=(
        "exp overflows float32 above 88.7 (inf / inf is NaN): subtract each row's max from the logits "
        "before exp; softmax does not change."
    ),
    edge=edge,
    mistakes=(
        Mistake(ignored_rows_kept, "ignored-rows", found_by="edge case"),
        Mistake(mean_over_all_rows, "wrong-denominator", found_by="edge case"),
        Mistake(no_max_shift, "unstable-float32", found_by="float32"),
        Mistake(sum_not_mean, "constant-factor"),
        Mistake(grad_loss_forgotten, "not-linear"),
        Mistake(sign_flipped, "sign-flipped"),
    ),
)
