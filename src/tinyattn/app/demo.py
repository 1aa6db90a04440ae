"""`tinyattn demo`: multi-head attention with weight splits, step by step, then traced and checked.

The walk is the attention chapter's toy example (seed 000): a 1 x 3 x 6 input, explicit 6 x 6 matrices
wq, wk, wv, two heads of size 3. Each step's code is printed and then run, and prints its tensors and
shapes, with the numbers the notebook printed. Then the same computation as the `MultiHeadAttention`
module, the trace of its forward and backward pass (which line of `forward` made which tensor), and
a gradient check of the whole module against finite differences.

    tinyattn demo                 # everything
    tinyattn demo --no-trace      # without the trace table
    tinyattn demo --no-gradcheck  # without the gradient check
    tinyattn demo --html step.html  # instead: the page that shows the traced step in a browser
"""

import ast
import contextlib
import copy
import io
import os
import sys
import textwrap

import tinyattn

from .. import gradient_check
from ..console import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ArgumentParser, error_text, terminal_width

STEPS = [
    (
        "STEP 1: start with the input",
        "One sequence (b = 1) of 3 tokens, each a 6-dimensional embedding: (b, num_tokens, d_in) = (1, 3, 6).",
        """
        x = tinyattn.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                              [6.0, 5.0, 4.0, 3.0, 2.0, 1.0],
                              [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]])
        print(x)
        print(x.shape)
        """,
    ),
    (
        "STEP 2: decide d_out and num_heads",
        "d_out = 6 (the size of each context vector), num_heads = 2, so head_dim = d_out / num_heads = 3.",
        """
        b, num_tokens, d_in = x.shape
        d_out, num_heads = 6, 2
        head_dim = d_out // num_heads
        print(head_dim)
        """,
    ),
    (
        "STEP 3: the trainable weight matrices for queries, keys and values (6 x 6 each)",
        "Given explicitly here, so that every number below can be checked by hand.",
        """
        wq = tinyattn.tensor([
            [ 0.6323, -0.2366,  1.2455,  0.3465,  1.2458,  0.3229],
            [ 0.6571, -0.2378, -0.5311, -0.2610, -1.4819, -1.6418],
            [-0.2990,  0.4216,  0.2114, -0.0271, -0.5682,  0.6937],
            [-1.1291, -1.0102,  0.6946,  0.1094,  0.5130, -0.8669],
            [ 0.3480,  0.2593,  0.4412,  1.0017, -0.3913, -0.2878],
            [ 0.2484,  0.2846, -0.3386, -0.6164,  1.2722,  0.5754]])
        wk = tinyattn.tensor([
            [-0.3703,  0.5431, -0.0372, -0.4406,  0.4103, -0.1773],
            [ 1.5993, -0.2777, -1.1909, -0.4301,  0.6927, -1.3304],
            [ 1.2470, -0.1872, -0.1670,  1.4302,  1.2927,  0.4822],
            [-0.0984, -0.8983,  0.3334, -0.6312,  0.1022, -1.0715],
            [-0.7647, -0.1734,  0.6305,  1.0155,  0.8474,  0.1454],
            [-1.5085, -0.4529,  0.0997, -0.1084,  0.8046,  0.3459]])
        wv = tinyattn.tensor([
            [ 1.6395,  1.1234, -0.1001,  0.5021, -1.0590,  0.1412],
            [-0.4271,  0.5681,  0.4164, -1.2534,  1.3061,  0.3610],
            [-0.2824, -0.4314,  1.2358,  0.1181, -1.2467,  0.1893],
            [ 1.3440,  0.1487, -0.6174,  0.8890, -0.3282,  1.4662],
            [ 0.1814, -0.4761, -0.0402,  0.7326,  0.7654, -0.1080],
            [-0.8974,  0.6786,  0.5602, -0.2443, -0.4883,  1.3996]])
        print(wq)
        print(wk)
        print(wv)
        """,
    ),
    (
        "STEP 4: keys, queries and values",
        "(b, num_tokens, d_in) @ (d_in, d_out) -> (b, num_tokens, d_out): (1, 3, 6) @ (6, 6) -> (1, 3, 6)",
        """
        keys = tinyattn.matmul(x, wk)
        queries = tinyattn.matmul(x, wq)
        values = tinyattn.matmul(x, wv)
        print(keys)
        print(queries)
        print(values)
        print(keys.shape)
        """,
    ),
    (
        "STEP 5: unroll the last dim into heads",
        "(b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim): (1, 3, 6) -> (1, 3, 2, 3).\n"
        "Each token's 6 numbers become 2 rows of 3, one per head; no number moves in memory.",
        """
        keys = keys.view(b, num_tokens, num_heads, head_dim)
        values = values.view(b, num_tokens, num_heads, head_dim)
        queries = queries.view(b, num_tokens, num_heads, head_dim)
        print(keys)
        print(values)
        print(queries)
        print(keys.shape)
        """,
    ),
    (
        "STEP 6: group the matrices by head",
        "(b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim): (1, 3, 2, 3) -> (1, 2, 3, 3).\n"
        "Now each head holds its own 3 x 3 matrix: one row per token.",
        """
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        queries = queries.transpose(1, 2)
        print(keys)
        print(values)
        print(queries)
        print(keys.shape)
        """,
    ),
    (
        "STEP 7: the attention scores, one matrix per head",
        "(b, num_heads, num_tokens, head_dim) @ (b, num_heads, head_dim, num_tokens)\n"
        "-> (b, num_heads, num_tokens, num_tokens): (1, 2, 3, 3) @ (1, 2, 3, 3) -> (1, 2, 3, 3)",
        """
        print(keys.transpose(2, 3))
        attn_scores = queries @ keys.transpose(2, 3)
        print(attn_scores)
        print(attn_scores.shape)
        """,
    ),
    (
        "STEP 8: the attention weights: causal mask, scale by sqrt(head_dim), softmax",
        "A token may not look at the tokens after it: their scores become -inf, hence weight 0.\n"
        "(The notebook also applied dropout here, with a random state its dump does not show; the demo\n"
        "uses no dropout, so from here on its numbers are the exact weights, not the notebook's.)",
        """
        mask = tinyattn.triu(tinyattn.ones(3, 3), diagonal=1)
        mask_bool = mask.bool()[:3, :3]
        print(mask)
        print(mask_bool)
        attn_scores = attn_scores.masked_fill(mask_bool, -tinyattn.inf)
        print(attn_scores)
        print(keys.shape[-1])
        attn_weights = tinyattn.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        print(attn_weights)
        print(attn_weights.sum(dim=-1))
        """,
    ),
    (
        "STEP 9: the context vectors",
        "(b, num_heads, num_tokens, num_tokens) @ (b, num_heads, num_tokens, head_dim)\n"
        "-> (b, num_heads, num_tokens, head_dim): (1, 2, 3, 3) @ (1, 2, 3, 3) -> (1, 2, 3, 3)",
        """
        context_vec = attn_weights @ values
        print(context_vec)
        print(context_vec.shape)
        """,
    ),
    (
        "STEP 10: back to one row per token",
        "(b, num_heads, num_tokens, head_dim) -> (b, num_tokens, num_heads, head_dim): (1, 2, 3, 3) -> (1, 3, 2, 3)",
        """
        context_vec = context_vec.transpose(1, 2)
        print(context_vec)
        print(context_vec.shape)
        """,
    ),
    (
        "STEP 11: combine the heads",
        "(b, num_tokens, num_heads, head_dim) -> (b, num_tokens, d_out): (1, 3, 2, 3) -> (1, 3, 6).\n"
        "After the transpose the numbers are not in row order: .contiguous() copies them so .view() can work.",
        """
        context_vec = context_vec.contiguous().view(b, num_tokens, d_out)
        print(context_vec)
        print(context_vec.shape)
        """,
    ),
]

MODULE_STEPS = [
    (
        "THE SAME AS A MODULE: tinyattn.nn.MultiHeadAttention",
        "Load wq, wk, wv into the module (a Linear layer stores its weight transposed: x @ W.T) and make\n"
        "out_proj the identity: the module computes exactly steps 4 to 11.",
        """
        mha = tinyattn.nn.MultiHeadAttention(d_in, d_out, context_length=3,
                                             dropout=0.0, num_heads=2)
        with tinyattn.no_grad():
            mha.W_query.weight.copy_(wq.T)
            mha.W_key.weight.copy_(wk.T)
            mha.W_value.weight.copy_(wv.T)
            mha.out_proj.weight.copy_(tinyattn.eye(d_out))
            mha.out_proj.bias.zero_()
        out = mha(x)
        print(out)
        print((out - context_vec).abs().max())
        """,
    ),
    (
        "THE NOTEBOOK'S MODULE EXAMPLE: random initial weights, seed 123",
        "Two copies of a 3-token sequence: (b, num_tokens, d_in) = (2, 3, 6).",
        """
        tinyattn.manual_seed(123)
        inputs = tinyattn.tensor([[0.43, 0.15, 0.89, 0.55, 0.87, 0.66],
                                  [0.57, 0.85, 0.64, 0.22, 0.58, 0.33],
                                  [0.77, 0.25, 0.10, 0.05, 0.80, 0.55]])
        batch = tinyattn.stack((inputs, inputs), dim=0)
        print(batch.shape)
        mha_123 = tinyattn.nn.MultiHeadAttention(d_in, d_out, context_length=3,
                                                 dropout=0.0, num_heads=2)
        context_vecs = mha_123(batch)
        print(context_vecs)
        print(context_vecs.shape)
        """,
    ),
]


def say(text):
    """Print prose as written, or refilled to the terminal's width where a line would not fit.

    Refilled, consecutive lines make one paragraph; an indented line (code) stays a line of its own.
    """
    width = terminal_width()
    lines = text.splitlines()
    if not width or all(len(line) < width for line in lines):
        print(text)
        return
    paragraph = []
    for line in lines + [" "]:  # the last, indented, line ends the last paragraph
        if line[:1].isspace() or not line:
            if paragraph:
                print(textwrap.fill(" ".join(paragraph), width - 1))
                paragraph = []
            if line.strip():
                print(line)
        else:
            paragraph.append(line)


def heading(title, text=""):
    print()
    say(title)
    print("=" * min(len(title), (terminal_width() or len(title) + 1) - 1))
    if text:
        say(text)


def run_cell(code, namespace):
    """Run `code` one statement at a time, each printed as typed at a Python prompt, then its output."""
    code = textwrap.dedent(code).strip("\n")
    lines = code.splitlines()
    for statement in ast.parse(code).body:
        source = lines[statement.lineno - 1:statement.end_lineno]
        for i, line in enumerate(source):
            print(("... " if i else ">>> ") + line)
        exec(compile("\n".join(source), "<demo>", "exec"), namespace)


def walk(namespace):
    heading(
        "MULTI-HEAD ATTENTION WITH WEIGHT SPLITS, STEP BY STEP",
        "The toy example of the attention chapter: what MultiHeadAttention.forward does, one line at a time.",
    )
    for title, text, code in STEPS + MODULE_STEPS:
        heading(title, text)
        run_cell(code, namespace)


def show_trace(namespace):
    mha, x = namespace["mha"], namespace["x"]
    heading(
        "THE TRACE: every op of mha(x) and of its backward pass",
        'with tinyattn.trace(name="mha") as tr:\n'
        "    out = mha(x)\n"
        "    out.sum().backward()\n"
        "print(tr.table(code=True))",
    )
    mha.zero_grad()
    with tinyattn.trace(name="mha") as tr:
        out = mha(x)
        out.sum().backward()
    print()
    print(tr.table(code=True))
    print()
    say(textwrap.dedent("""\
        The forward rows are steps 4 to 11, in order: the three projections (step 4), three views (5),
        three transposes (6), the mask's two ops, then one `attention` op for steps 7 to 9 (the
        scores, the mask, the scaling, the softmax and the matmul with the values: one op whose
        forward and hand-derived backward sit side by side in tinyattn/nn/functional.py), the
        transpose (10), contiguous and view (11); then out_proj (the identity here). The backward
        rows run the same ops newest first, each shown at the line of its forward op (None: the
        gradient of the attention weights, which nothing used). Views and transposes allocate
        nothing in the forward; in the backward, undoing a view copies the gradient when it arrives
        transposed (here the queries' and the values': their gradients come laid out head by head)."""))
    return tr


# the demo's three tokens, labelled with the first words of the chapter's sentence
WORDS = ["Your", "journey", "starts"]


def traced_step(namespace):
    """The trace of mha(x) and its backward pass with every value kept, the tokens labelled."""
    mha, x = namespace["mha"], namespace["x"]
    mha.zero_grad()
    with tinyattn.trace(name="mha", values=True) as tr:
        out = mha(x)
        out.sum().backward()
    return tr.label_tokens(WORDS)


def write_html(path):
    """Run the steps quietly, trace mha(x) with its values and write the page; returns 0 or 2."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        print(error_text("tinyattn demo", f"cannot write {path!r}: the folder {folder!r} does not exist"),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    namespace = {"tinyattn": tinyattn}
    with contextlib.redirect_stdout(io.StringIO()):  # the walk's printing is not what the page is for
        for _, _, code in STEPS + MODULE_STEPS:
            run_cell(code, namespace)
    tr = traced_step(namespace)
    try:
        written = tr.to_html(path, title="tinyattn demo: multi-head attention, forward and backward",
                             names=namespace)  # x, the input, under its name
    except OSError as error:
        print(error_text("tinyattn demo", f"cannot write {path!r}: {error.strerror or error}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    size = os.path.getsize(written)
    print(f"wrote {path} ({size / 1024:.0f} KiB): {len(tr.forward)} forward and {len(tr.backward)} backward ops; "
          "open it in a browser")
    return 0


def check_gradients(namespace):
    heading(
        "GRADIENT CHECK: the module's backward against finite differences (float64)",
        "gradcheck(lambda x, *params: mha_123(x), (batch, *mha_123.parameters())) with everything in float64:\n"
        "every entry of the Jacobian with respect to the input and every parameter, from the backward pass,\n"
        "must match the central difference (f(p + eps) - f(p - eps)) / (2 eps).",
    )
    module = copy.deepcopy(namespace["mha_123"]).double()
    batch = namespace["batch"].double().requires_grad_()
    params = list(module.parameters())

    def forward(x, *parameters):  # the parameters are inputs so that the check perturbs them
        return module(x)

    report = gradient_check.check_gradients(forward, (batch, *params))
    count = sum(p.numel() for p in params) + batch.numel()
    say(f"inputs checked: the input {list(batch.shape)} and {len(params)} parameters ({count} numbers in all)")
    print(f"max abs error {report.max_abs_error:.1e}, max rel error {report.max_rel_error:.1e}")
    if report.error is not None:
        say(f"FAILED: {report.error}")
        return False
    print("PASSED: the backward pass agrees with the finite differences")
    return True


def main(argv=None):
    """Run the demo; returns 0 (1 if the gradient check fails)."""
    parser = ArgumentParser(
        prog="tinyattn demo",
        description="Multi-head attention with weight splits, step by step (the attention chapter's toy "
        "example), then the trace of the module's forward and backward pass and a gradient check.",
        epilog="On a terminal the text and the trace table fit its width; into a file or a pipe they keep "
        "one line per row.",
    )
    parser.add_argument("--no-trace", action="store_true", help="skip the trace table")
    parser.add_argument("--no-gradcheck", action="store_true", help="skip the gradient check")
    parser.add_argument("--html", metavar="PATH", help="write the page that shows the traced step (the graph, "
                        "every value and gradient, the heads' weights) to PATH instead of printing the walk")
    args = parser.parse_args(argv)

    state = tinyattn.get_rng_state()
    try:
        if args.html is not None:
            return write_html(args.html)
        namespace = {"tinyattn": tinyattn}
        walk(namespace)
        if not args.no_trace:
            show_trace(namespace)
        if not args.no_gradcheck and not check_gradients(namespace):
            return 1
    except KeyboardInterrupt:  # what was printed stays; no traceback
        sys.stdout.flush()
        print("\ntinyattn demo: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        tinyattn.set_rng_state(state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
