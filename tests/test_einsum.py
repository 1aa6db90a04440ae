"""einsum: PyTorch's equations (letters, '...', implicit outputs, diagonals, broadcasting, any number of
operands), forward values against NumPy and PyTorch, gradients against finite differences over random
equations (on both backends), and a clear ValueError for every kind of bad equation.
"""

import string

import numpy as np
import pytest
from hypothesis import given, strategies as st
from test_op_gradients import arrays, check, leaf, property_test

import tinyattn
from tinyattn import backend
from tinyattn.app import selfcheck
from tinyattn.errors import ShapeError


def host(t):
    return backend.to_host(t.detach().array)


@st.composite
def einsum_cases(draw, max_operands=3):
    """(equation, operand shapes, shapes with every letter dim at its full size): random equations
    with repeated letters (diagonals), size-1 dims that broadcast, '...' and implicit outputs."""
    letters = draw(st.lists(st.sampled_from("abcdB"), min_size=1, max_size=4, unique=True), label="letters")
    size = {letter: draw(st.integers(1, 3)) for letter in letters}
    ellipsis = tuple(draw(st.lists(st.integers(1, 3), max_size=2), label="... dims"))
    terms, shapes, full_shapes, any_ellipsis = [], [], [], False
    for _ in range(draw(st.integers(1, max_operands), label="operands")):
        labels = draw(st.lists(st.sampled_from(letters), max_size=3), label="labels")  # may repeat: diagonals
        ones = draw(st.sets(st.sampled_from(letters)), label="broadcast letters")  # size 1 in this operand
        shape = [1 if letter in ones else size[letter] for letter in labels]
        full = [size[letter] for letter in labels]
        term = "".join(labels)
        if ellipsis and draw(st.booleans(), label="has ..."):
            any_ellipsis = True
            kept = ellipsis[len(ellipsis) - draw(st.integers(0, len(ellipsis))):]
            kept = tuple(1 if draw(st.booleans()) else n for n in kept)  # ... dims broadcast too
            at = draw(st.integers(0, len(labels)))
            term = term[:at] + "..." + term[at:]
            shape[at:at] = kept
            full[at:at] = kept
        terms.append(term)
        shapes.append(tuple(shape))
        full_shapes.append(full)
    for term, shape, full in zip(terms, shapes, full_shapes):  # a letter of size 1 in every operand has size 1
        for i, letter in enumerate(_dims(term, shape)):
            sizes = [n for t, s in zip(terms, shapes) for c, n in zip(_dims(t, s), s) if c == letter]
            if letter != "." and all(n == 1 for n in sizes):
                full[i] = 1
    full_shapes = [tuple(full) for full in full_shapes]
    equation = ",".join(terms)
    if draw(st.booleans(), label="explicit output"):
        used = sorted({c for term in terms for c in term if c.isalpha()})
        output = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        if any_ellipsis and draw(st.booleans(), label="... in output"):
            at = draw(st.integers(0, len(output)))
            output = output[:at] + "..." + output[at:]
        equation += "->" + output
    return equation, shapes, full_shapes


def _dims(term, shape):
    """One character per dim of an operand: its letter, or '.' for a dim of its '...'."""
    return term.replace("...", "." * (len(shape) - len(term.replace("...", ""))))


def numpy_einsum(equation, values, full_shapes):
    """NumPy's einsum, with the size-1 letter dims PyTorch broadcasts spelled out at full size, and
    '...' dims that the output sums over (which NumPy refuses) written as letters of their own."""
    left, arrow, output = equation.partition("->")
    if arrow and "..." in left and "..." not in output:
        count = max(len(_dims(t, s)) - len(t.replace("...", "")) for t, s in zip(left.split(","), full_shapes))
        extra = "QRST"[:count]
        left = ",".join(t.replace("...", extra[count - (len(s) - len(t.replace("...", ""))):])
                        for t, s in zip(left.split(","), full_shapes))
        equation = left + "->" + output
    return np.einsum(equation, *(np.broadcast_to(v, s) for v, s in zip(values, full_shapes)))


@given(case=einsum_cases(), dtype=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_random_equations_match_numpy(xp_backend, case, dtype, data):
    equation, shapes, full_shapes = case
    values = [data.draw(arrays(s)).astype(dtype) for s in shapes]
    result = tinyattn.einsum(equation, *(tinyattn.tensor(v) for v in values))
    expected = numpy_einsum(equation, values, full_shapes)
    assert result.shape == expected.shape and result.dtype.name == np.dtype(dtype).name
    loose = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(host(result), expected, **loose)


@given(case=einsum_cases(), data=st.data())
def test_random_equations_match_pytorch(torch, case, data):
    equation, shapes, _ = case
    values = [data.draw(arrays(s)) for s in shapes]
    ours = [tinyattn.tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    out, want = tinyattn.einsum(equation, *ours), torch.einsum(equation, *theirs)
    np.testing.assert_allclose(host(out), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    weights = np.random.default_rng(0).standard_normal(tuple(want.shape))
    (out * tinyattn.tensor(weights)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(host(x.grad), y.grad.numpy(), rtol=1e-12, atol=1e-12)


@property_test
@given(case=einsum_cases(), data=st.data())
def test_random_equations_gradients(xp_backend, case, data):
    equation, shapes, _ = case
    check(lambda *xs: tinyattn.einsum(equation, *xs), *(leaf(data.draw(arrays(s))) for s in shapes))


NAMED = {
    # the forms attention, linear algebra and reductions use
    "attention scores": ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    "attention context": ("bhqk,bhkd->bhqd", [(2, 2, 3, 5), (2, 2, 5, 4)]),
    "batched matmul implicit": ("bij,bjk", [(2, 3, 4), (2, 4, 2)]),
    "matmul with ...": ("...ij,...jk->...ik", [(2, 1, 3, 4), (3, 4, 2)]),
    "linear": ("btc,oc->bto", [(2, 3, 4), (5, 4)]),
    "outer": ("i,j->ij", [(3,), (4,)]),
    "dot": ("i,i->", [(4,), (4,)]),
    "trace": ("ii->", [(3, 3)]),
    "diagonal": ("ii->i", [(3, 3)]),
    "batched diagonal": ("...ii->...i", [(2, 3, 3)]),
    "diagonal of three dims": ("iji->ij", [(3, 2, 3)]),
    "sum": ("ij->", [(3, 4)]),
    "column sums": ("ij->j", [(3, 4)]),
    "transpose": ("ij->ji", [(3, 4)]),
    "permute": ("abc->cab", [(2, 3, 4)]),
    "three operands": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    "elementwise of three": ("a,a,a->a", [(3,), (3,), (3,)]),
    "bilinear": ("bn,anm,bm->ba", [(2, 3), (4, 3, 2), (2, 2)]),
    "broadcast a size-1 dim": ("ij,ij->ij", [(1, 3), (2, 3)]),
    "sum over ...": ("...ij->ij", [(4, 2, 3)]),
    "scalar times vector": (",i->i", [(), (3,)]),
    "uppercase letters": ("Bij,Bjk->Bik", [(2, 3, 4), (2, 4, 2)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(NAMED))
def test_named_equations_match_pytorch(torch, name, dtype):
    equation, shapes = NAMED[name]
    rng = np.random.default_rng(len(name))
    values = [rng.standard_normal(s).astype(dtype) for s in shapes]
    results = []
    for lib in (tinyattn, torch):
        inputs = [lib.tensor(v, requires_grad=True) for v in values]
        out = lib.einsum(equation, *inputs)
        (out * out).sum().backward()
        results.append((out.detach().numpy(), [x.grad.numpy() for x in inputs]))
    (ours, our_grads), (theirs, their_grads) = results
    loose = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, **loose)
    for g, want in zip(our_grads, their_grads):
        np.testing.assert_allclose(g, want, **loose)


@pytest.mark.parametrize("name", list(NAMED))
def test_named_equations_gradients(xp_backend, name):
    equation, shapes = NAMED[name]
    rng = np.random.default_rng(len(name))
    check(lambda *xs: tinyattn.einsum(equation, *xs), *(leaf(rng.standard_normal(s)) for s in shapes))


def test_the_same_tensor_twice_gets_both_gradients(xp_backend):
    x = leaf(np.random.default_rng(0).standard_normal((3, 4)))
    check(lambda x: tinyattn.einsum("ij,ij->i", x, x), x)
    check(lambda x: tinyattn.einsum("ij,kj->ik", x, x), x)  # x x^T
    check(lambda x: tinyattn.einsum("ij,jk,kl", x, x.T, x), x)


def test_other_calling_forms_match_pytorch(torch):
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    for lib in (tinyattn, torch):  # the operands in a list, and the sublist form
        assert lib.einsum("ij,jk", [lib.tensor(a), lib.tensor(b)]).tolist() == (a @ b).tolist()
        assert lib.einsum(lib.tensor(a), [0, 1], lib.tensor(b), [1, 2], [0, 2]).tolist() == (a @ b).tolist()
        assert lib.einsum(lib.tensor(a), [0, 1], lib.tensor(b), [1, 2]).tolist() == (a @ b).tolist()
        assert tuple(lib.einsum(lib.tensor(a), [Ellipsis, 1], lib.tensor(b), [1, 2]).shape) == (2, 4)
        assert lib.einsum(" ij , jk -> ik ", lib.tensor(a), lib.tensor(b)).tolist() == (a @ b).tolist()
    ints = tinyattn.einsum("ij,jk->ik", tinyattn.tensor([[1, 2]]), tinyattn.tensor([[3], [4]]))
    assert ints.dtype is tinyattn.int64 and ints.tolist() == [[11]]
    assert tinyattn.einsum("ij,jk", tinyattn.zeros(2, 0), tinyattn.zeros(0, 3)).tolist() == [[0.0] * 3] * 2
    assert tinyattn.einsum("i->", tinyattn.tensor([1.0, 2.0])).grad_fn is None  # no graph without grad


BAD = [
    # (equation, operand shapes, exception, what the message says)
    ("ij,jk", [(2, 3)], ValueError, "2 operand terms .* but 1 tensor was given"),
    ("ij", [(2, 3), (3, 4)], ValueError, "1 operand term .* but 2 tensors were given"),
    ("ij", [(2, 3, 4)], ValueError, "operand 0 has 3 dims .* names 2"),
    ("ijk", [(2, 3)], ValueError, "operand 0 has 2 dims"),
    ("ijk...", [(2, 3)], ValueError, "names 3 besides '...'"),
    ("i1", [(2, 3)], ValueError, "invalid subscript '1'"),
    ("i.j", [(2, 3)], ValueError, "'.' that is not part of '...'"),
    ("...i...", [(2, 3)], ValueError, "more than one '...'"),
    ("i->i->i", [(2,)], ValueError, "more than one '->'"),
    ("ij->ii", [(2, 2)], ValueError, "output subscript 'i' appears more than once"),
    ("ij->k", [(2, 2)], ValueError, "output subscript 'k' .* appears in no operand"),
    ("ii->i", [(2, 3)], ShapeError, "subscript 'i' is repeated in operand 0 .* different sizes"),
    ("i,i->i", [(2,), (3,)], ShapeError, "subscript 'i' has size 3 in operand 1 .* but size 2"),
    ("...i,...i", [(2, 3), (4, 3)], ShapeError, "'...' dim 0 has size 4"),
    ("i-j", [(2, 3)], ValueError, "invalid subscript '-'"),
]


@pytest.mark.parametrize("equation, shapes, error, message", BAD)
def test_bad_equations_get_clear_errors(equation, shapes, error, message):
    with pytest.raises(error, match=message):
        tinyattn.einsum(equation, *(tinyattn.ones(s) for s in shapes))


def test_bad_operands_get_clear_errors():
    with pytest.raises(TypeError, match="one dtype"):
        tinyattn.einsum("ij,jk", tinyattn.ones(2, 3), tinyattn.ones(3, 4, dtype=tinyattn.float64))
    with pytest.raises(TypeError, match="bool"):
        tinyattn.einsum("i->", tinyattn.ones(2, dtype=tinyattn.bool))
    with pytest.raises(TypeError, match="operand 1 is a list"):
        tinyattn.einsum("i,i", tinyattn.ones(2), [1.0, 2.0])
    with pytest.raises(TypeError, match="equation as a string"):
        tinyattn.einsum(3, tinyattn.ones(2))
    with pytest.raises(ValueError, match=r"sublist subscript must be an int in \[0, 52\)"):
        tinyattn.einsum(tinyattn.ones(2), [52])


def test_the_subscripts_cover_pytorchs_alphabet():
    x = tinyattn.ones(*([1] * 10))
    equation = string.ascii_letters[:10] + "->" + string.ascii_letters[9::-1]
    assert tinyattn.einsum(equation, x).shape == (1,) * 10


def test_gradcheck_table_has_the_new_ops():
    names = {c.name for c in selfcheck.op_checks()}
    for name in ["einsum attention scores", "einsum diagonal", "sin", "sort", "scatter", "F.pad reflect"]:
        assert name in names, name
