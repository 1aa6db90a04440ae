"""How a tensor is stored: stride(), storage_offset(), storage() and untyped_storage() over views,
against PyTorch where it is installed; and the small PyTorch behaviours learners meet beside them
(true_divide, `in`, a nested list key, .grad's checks and warning, load_state_dict's result, the
printing of return types)."""

import pickle
import warnings

import numpy as np
import pytest

import tinyattn
from tinyattn import backend, nn

# each view as both libraries spell it (m is tinyattn or torch)
VIEWS = {
    "transpose": lambda m: m.arange(12.).reshape(3, 4).t(),
    "transpose 3-d": lambda m: m.arange(24.).view(2, 3, 4).transpose(0, 2),
    "mT": lambda m: m.arange(24.).view(2, 3, 4).mT,
    "slice with steps": lambda m: m.arange(24.).reshape(4, 6)[1::2, ::3],
    "slice of a transpose": lambda m: m.arange(24.).reshape(4, 6).t()[1:, 2:5],
    "narrow": lambda m: m.arange(24.).reshape(4, 6).narrow(1, 2, 3),
    "expand": lambda m: m.arange(3.).reshape(3, 1).expand(3, 4),
    "expand new dims": lambda m: m.arange(3.).expand(2, 3),
    "expand to size 1": lambda m: m.arange(3.).expand(1, 3),
    "view": lambda m: m.arange(24.).view(2, 3, 4),
    "view of a narrowed block": lambda m: m.arange(24.).view(4, 6)[1:3].view(12),
    "reshape of a transpose (a copy)": lambda m: m.arange(12.).reshape(3, 4).t().reshape(2, 6),
    "permute": lambda m: m.arange(24.).view(2, 3, 4).permute(2, 0, 1),
    "select": lambda m: m.arange(24.).view(2, 3, 4).select(1, 2),
    "select from the end": lambda m: m.arange(24.).view(2, 3, 4).select(-1, -1),
    "an index": lambda m: m.arange(24.).view(2, 3, 4)[1],
    "one element": lambda m: m.arange(12.).view(3, 4)[1, 2],
    "ellipsis": lambda m: m.arange(24.).view(2, 3, 4)[..., 1],
    "unsqueeze 0": lambda m: m.arange(12.).view(3, 4).unsqueeze(0),
    "unsqueeze 1": lambda m: m.arange(12.).view(3, 4).unsqueeze(1),
    "unsqueeze at the end": lambda m: m.arange(12.).view(3, 4).unsqueeze(2),
    "unsqueeze of a transpose": lambda m: m.arange(12.).view(3, 4).t().unsqueeze(1),
    "None": lambda m: m.arange(12.).view(3, 4)[:, None],
    "None before a transpose": lambda m: m.arange(12.).view(3, 4).t()[None],
    "squeeze": lambda m: m.arange(12.).view(3, 1, 4).squeeze(1),
    "chunk": lambda m: m.arange(12.).view(3, 4).chunk(2, 1)[1],
    "split": lambda m: m.arange(12.).view(3, 4).split(1, 0)[2],
    "unbind": lambda m: m.arange(12.).view(3, 4).unbind(1)[2],
    "size-1 slice": lambda m: m.arange(12.).view(3, 4)[:, 1:2],
    "flatten of a slice (a copy)": lambda m: m.arange(12.).view(3, 4)[:, :2].flatten(),
    "contiguous of a transpose": lambda m: m.arange(12.).view(3, 4).t().contiguous(),
    "movedim": lambda m: m.arange(24.).view(2, 3, 4).movedim(0, 2),
    "movedim of two": lambda m: m.arange(24.).view(2, 3, 4).movedim((0, 1), (2, 0)),
    "swapaxes": lambda m: m.arange(24.).view(2, 3, 4).swapaxes(0, 1),
    "detach of a slice": lambda m: m.arange(12.).view(3, 4)[1:].detach(),
    "ints": lambda m: m.arange(12).view(3, 4)[1:, ::2],
    "bools": lambda m: (m.arange(12).view(3, 4) > 5).t(),
    "float64": lambda m: m.arange(12, dtype=m.float64).view(3, 4)[:, 1],
    "diagonal": lambda m: m.arange(12.).view(3, 4).diagonal(),
    "diagonal above": lambda m: m.arange(12.).view(3, 4).diagonal(1),
    "diagonal below of a transpose": lambda m: m.arange(12.).view(3, 4).t().diagonal(-1),
    "diagonal of dims 0 and 2": lambda m: m.arange(24.).view(2, 3, 4).diagonal(0, 0, 2),
    "diagonal past the matrix": lambda m: m.arange(12.).view(3, 4).diagonal(5),
    "unfold": lambda m: m.arange(12.).view(3, 4).unfold(1, 2, 1),
    "as_strided": lambda m: m.arange(12.).as_strided((3, 3), (1, 3), 2),
}


def _layout(t):
    """What a learner reads of a tensor's layout, in either library."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TypedStorage's deprecation warning
        storage = t.storage()
        return {"shape": tuple(t.shape), "stride": t.stride(), "strides by dim": [t.stride(d) for d in range(t.ndim)],
                "storage_offset": t.storage_offset(), "is_contiguous": t.is_contiguous(),
                "storage": storage.tolist(), "len(storage)": len(storage), "nbytes": storage.nbytes(),
                "element_size": storage.element_size(), "untyped nbytes": t.untyped_storage().nbytes(),
                # (an empty tensor has no first element: PyTorch's data_ptr() is then 0)
                "start in storage": t.data_ptr() - storage.data_ptr() if t.numel() else None,
                "untyped start": t.untyped_storage().data_ptr() - storage.data_ptr(),
                "values": t.tolist()}


@pytest.mark.parametrize("name", VIEWS)
def test_layout_of_views_as_pytorch(torch, name):
    ours, theirs = _layout(VIEWS[name](tinyattn)), _layout(VIEWS[name](torch))
    assert ours == theirs


@pytest.mark.parametrize("name", ["transpose", "slice with steps", "narrow", "select", "expand", "permute", "bools"])
def test_layout_on_array_api_strict(name):
    """The same layout when the arrays are not NumPy's (array_api_strict stands in for CuPy here)."""
    plain = _layout(VIEWS[name](tinyattn))
    backend.use_array_api_strict(True)
    try:
        strict = VIEWS[name](tinyattn)
        assert type(strict.array) is not np.ndarray
        assert _layout(strict) == plain
    finally:
        backend.use_array_api_strict(False)


def test_views_share_one_storage():
    x = tinyattn.arange(12.).view(3, 4)
    views = [x.t(), x[1:], x[:, ::2], x.select(1, 3), x.view(12), x.unsqueeze(0), x.expand(2, 3, 4), x.detach()]
    pointers = {v.untyped_storage().data_ptr() for v in views}
    assert pointers == {x.untyped_storage().data_ptr()}
    assert x.contiguous().data_ptr() == x.data_ptr()  # already contiguous: itself
    copy = x.t().contiguous()
    assert copy.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert x[1:].data_ptr() - x.data_ptr() == 4 * x.element_size()


def test_writing_into_a_storage_changes_every_view():
    points = tinyattn.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
    points_t = points.t()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        storage = points_t.storage()
        storage[0] = 2.0
        storage[-1] = 7.0
        assert storage[5] == 7.0 and storage[-6] == 2.0
        with pytest.raises(IndexError):
            storage[6]
        with pytest.raises(RuntimeError, match="slices"):
            storage[1:3]
        assert type(storage[0]) is float
    assert points.tolist() == [[2.0, 1.0], [5.0, 3.0], [2.0, 7.0]]
    assert points_t.tolist() == [[2.0, 5.0, 2.0], [1.0, 3.0, 7.0]]
    untyped = points.untyped_storage()
    untyped[0], untyped[1], untyped[2], untyped[3] = 0, 0, 0x80, 0x3F  # 1.0 in float32, little-endian
    assert points[0, 0].item() == 1.0
    assert len(untyped) == 24 and untyped.element_size() == 1 and untyped[3] == 0x3F


def test_storage_of_a_negative_stride_owner_and_of_foreign_memory():
    """NumPy memory that tinyattn did not allocate: the block is all the owner covers, from its lowest byte."""
    data = np.arange(10, dtype=np.float32)[::-1]
    t = tinyattn.from_numpy(np.ascontiguousarray(data))
    assert t.stride() == (1,) and t.storage_offset() == 0
    block, offset = backend.memory_block(data[2:5])  # 7, 6, 5: the first of them is element 7 of the block
    assert offset == 7 * 4 and block.view(np.float32).tolist() == list(range(10))
    # an owner with a negative stride (as_strided's result does not point back to its source array)
    backwards = np.lib.stride_tricks.as_strided(np.arange(10, dtype=np.float32)[9:], shape=(10,), strides=(-4,))
    block, offset = backend.memory_block(backwards[1:])
    assert offset == 8 * 4 and block.view(np.float32).tolist() == list(range(10))
    frozen = np.frombuffer(bytes(range(16)), dtype=np.uint8)[4:12]
    block, offset = backend.memory_block(frozen)
    assert offset == 4 and block.tolist() == list(range(16))


def test_typed_storage_warns_once_as_pytorch():
    from tinyattn import storage as storage_module

    storage_module._warned = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = tinyattn.ones(2).storage()
        s.tolist(), len(s), str(s)
        tinyattn.ones(2).untyped_storage().tolist()
    assert len(caught) == 1 and caught[0].category is UserWarning
    assert "TypedStorage is deprecated" in str(caught[0].message) and caught[0].filename == __file__


def test_storage_prints_as_pytorch(torch):
    """The printed storages, with tinyattn's names where PyTorch prints torch's (as for dtypes)."""
    def printed(m, make):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            text = str(make(m))
        return text.replace("tinyattn.", "torch.")

    makes = [lambda m: m.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]]).t().storage(),
             lambda m: m.tensor([[4.0, 1.0], [5.0, 3.0]]).untyped_storage(),
             lambda m: m.tensor([1, -2], dtype=m.int32).storage(),
             lambda m: m.tensor([True, False]).storage(),
             lambda m: m.tensor([], dtype=m.int64).storage(),
             lambda m: m.tensor([0.1, 1e20], dtype=m.float64)[1:].storage()]
    for make in makes:
        assert printed(tinyattn, make) == printed(torch, make)


def test_stride_errors_and_small_names():
    x = tinyattn.zeros(2, 3)
    assert x.stride(-1) == 1 and x.stride(0) == 3
    with pytest.raises(IndexError):
        x.stride(2)
    with pytest.raises(IndexError):
        tinyattn.tensor(1.0).stride(0)
    assert tinyattn.tensor(1.0).stride() == ()
    assert x.nbytes == 24 and x.itemsize == 4
    with pytest.raises(ValueError, match="repeated"):
        tinyattn.zeros(2, 3, 4).movedim((0, 0), (1, 2))


def test_the_storage_chapter_of_a_book_runs_as_in_pytorch(torch):
    """The walk through storage of a well-known book's chapter on tensors, line by line."""
    def walk(m):
        seen = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            points = m.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
            seen.append(str(points.storage()))
            points_storage = points.storage()
            seen += [points_storage[0], points.storage()[1]]
            points_storage[0] = 2.0
            seen.append(points.tolist())
            second_point = points[1]
            seen += [second_point.storage_offset(), tuple(second_point.size()), second_point.stride()]
            second_point[0] = 10.0
            seen.append(points.tolist())
            points_t = points.t()
            seen.append(points_t.tolist())
            seen.append(points.untyped_storage().data_ptr() == points_t.untyped_storage().data_ptr())
            seen += [points.stride(), points_t.stride(), points.is_contiguous(), points_t.is_contiguous()]
            some_t = m.ones(3, 4, 5)
            transpose_t = some_t.transpose(0, 2)
            seen += [some_t.stride(), transpose_t.stride(), tuple(transpose_t.shape)]
            points_t_cont = points_t.contiguous()
            seen += [points_t_cont.stride(), str(points_t_cont.storage()), points_t_cont.is_contiguous()]
        return [s.replace("tinyattn.", "torch.") if isinstance(s, str) else s for s in seen]

    assert walk(tinyattn) == walk(torch)


# --- the small behaviours beside them ---


def test_true_divide_as_pytorch(torch):
    for m in (tinyattn, torch):
        assert m.true_divide(m.tensor([1, 2]), 2).tolist() == [0.5, 1.0]
        assert m.tensor([3]).true_divide(m.tensor([2])).dtype == m.float32
        x = m.tensor([1.0, 2.0])
        assert x.true_divide_(2) is x and x.tolist() == [0.5, 1.0]
        with pytest.raises((RuntimeError, TypeError)):  # an integer tensor cannot hold the quotient
            m.tensor([1, 2]).true_divide_(2)
    out = tinyattn.empty(2)
    tinyattn.true_divide(tinyattn.tensor([1, 2]), 4, out=out)
    assert out.tolist() == [0.25, 0.5]


def test_contains_as_pytorch(torch):
    def answers(m):
        n = m.tensor([1.0, float("nan")])
        grid = m.tensor([[1.0, 2.0], [3.0, 4.0]])
        found = [True in m.isnan(n), False in m.isnan(n), 2.0 in n, 1 in n, m.tensor(1.0) in n,
                 m.tensor([1.0, 7.0]) in n, grid in n, m.tensor([1.0, 2.0]) in grid, 2 in grid,
                 1.5 in m.tensor([1, 2]), True in m.tensor([1, 0]), float("nan") in n]
        for odd in ("a", None, [1.0]):
            with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
                odd in n
        with pytest.raises(Exception):
            m.tensor([1.0, 2.0, 3.0]) in n  # shapes that do not broadcast
        return found

    assert answers(tinyattn) == answers(torch)


NESTED_KEYS = [[[0, 1], [2, 3]], [[0, 1]], [[0, 1], 2], [[0, 1], slice(None)], [0, [1, 2]], [[[0, 1], [2, 3]]],
               [None, [1]], [[True, False, True, False]], [[1, 2]], [1, 2], [Ellipsis, [0, 5]]]


@pytest.mark.parametrize("key", NESTED_KEYS, ids=repr)
def test_a_list_key_is_read_as_pytorch_reads_it(torch, key):
    def read(m):
        x = m.arange(24).view(4, 6)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            picked = x[key]
            y = m.zeros(4, 6, dtype=m.int64)
            y[key] = 1
        warned = [(w.category, str(w.message)[:70]) for w in caught]  # (PyTorch's names its next versions)
        return tuple(picked.shape), picked.tolist(), y.tolist(), warned

    assert read(tinyattn) == read(torch)


def test_a_too_long_nested_list_key_still_fails_as_in_pytorch(torch):
    for m in (tinyattn, torch):
        with pytest.raises(IndexError), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            m.arange(24).view(4, 6)[[[0, 1], [2, 3], [1, 1]]]


def test_grad_checks_as_pytorch(torch):
    for m in (tinyattn, torch):
        w = m.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="own grad"):
            w.grad = w
        assert w.grad is None
        w.grad = m.zeros(3)
        del w.grad
        assert w.grad is None
        del w.grad  # twice: still None, no error
        assert w.grad is None


def test_an_expanded_grad_as_pytorch(torch):
    for m in (tinyattn, torch):
        w = m.ones(3, requires_grad=True)
        w.grad = m.ones(1).expand(3)
        with pytest.raises(RuntimeError, match="single memory location"):
            (w * 2).sum().backward()
        w = m.ones(3, requires_grad=True)
        g = m.zeros(3).expand(3)  # the same shape: no element shared, so backward adds into it
        w.grad = g
        (w * 2).sum().backward()
        assert w.grad is g and w.grad.tolist() == [2.0, 2.0, 2.0]
    w = tinyattn.ones(2, requires_grad=True)
    frozen = np.zeros(2, dtype=np.float32)
    frozen.flags.writeable = False
    w.grad = tinyattn.from_numpy(frozen)
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0] and frozen.tolist() == [0.0, 0.0]


def test_grad_of_a_non_leaf_warns_as_pytorch(torch):
    def warnings_seen(m):
        x = m.ones(2, requires_grad=True)
        y = x * 2
        z = x * 3
        z.retain_grad()
        (y.sum() + z.sum()).backward()
        counts = []
        for read in (lambda: y.grad, lambda: z.grad, lambda: x.grad, lambda: (m.ones(2) * 2).grad,
                     lambda: y.detach().grad):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                read()
            counts.append([(w.category, "not a leaf" in str(w.message), "retain_grad()" in str(w.message))
                           for w in caught])
        return counts, y.retains_grad, z.retains_grad, x.retains_grad, z.grad.tolist()

    assert warnings_seen(tinyattn) == warnings_seen(torch)


def test_load_state_dict_result_prints_as_pytorch(torch):
    def results(m):
        layer = m.nn.Linear(2, 2)
        matched = layer.load_state_dict(layer.state_dict())
        partial = layer.load_state_dict({"weight": layer.weight.detach(), "extra": m.zeros(1)}, strict=False)
        missing, unexpected = partial
        return (str(matched), repr(matched), repr(partial), str(partial), missing, unexpected,
                partial.missing_keys, matched == ([], []), partial._fields)

    assert results(tinyattn) == results(torch)
    assert isinstance(nn.Linear(1, 1).load_state_dict(nn.Linear(1, 1).state_dict()), tuple)


RETURN_TYPES = {
    "max": lambda m, x: m.max(x, 1),
    "min": lambda m, x: x.min(dim=0, keepdim=True),
    "topk": lambda m, x: m.topk(x, 2),
    "sort": lambda m, x: x.sort(1, descending=True),
    "median": lambda m, x: m.median(x, 1),
    "svd": lambda m, x: m.svd(m.eye(2)),
    "linalg_svd": lambda m, x: m.linalg.svd(m.eye(2)),
    "histogram": lambda m, x: m.histogram(m.tensor([1.0, 2.0, 1.0]), bins=2),
}


@pytest.mark.parametrize("name", RETURN_TYPES)
def test_return_types_print_as_pytorch(torch, name):
    """One field a line, as PyTorch prints them, under tinyattn's name (as dtypes print)."""
    x = [[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]]
    ours = RETURN_TYPES[name](tinyattn, tinyattn.tensor(x))
    theirs = RETURN_TYPES[name](torch, torch.tensor(x))
    assert repr(ours).replace("tinyattn.", "torch.") == repr(theirs)
    assert str(ours) == repr(ours) and type(ours).__name__ == type(theirs).__name__
    assert len(ours) == len(theirs) and all(hasattr(theirs, field) for field in ours._fields)
    again = pickle.loads(pickle.dumps(ours))
    assert type(again) is type(ours) and repr(again) == repr(ours)
    assert getattr(tinyattn.return_types, name) is type(ours)


# results that are views of their input in PyTorch, and results that are copies: a write through a view
# reaches the input, a write into a copy must not (NumPy's flip and a reshape that repeats nothing are views)
RESULTS = {
    "flip": lambda m, x: x.flip(0), "fliplr": lambda m, x: x.fliplr(), "flipud": lambda m, x: x.flipud(),
    "roll": lambda m, x: x.roll(1, 0), "t": lambda m, x: x.t(), "mT": lambda m, x: x.mT,
    "reshape": lambda m, x: x.reshape(6), "view": lambda m, x: x.view(3, 2), "flatten": lambda m, x: x.flatten(),
    "ravel": lambda m, x: x.ravel(), "unsqueeze": lambda m, x: x.unsqueeze(0), "contiguous": lambda m, x: x.contiguous(),
    "clone": lambda m, x: x.clone(), "detach": lambda m, x: x.detach(), "data": lambda m, x: x.data,
    "expand": lambda m, x: x[:1].expand(4, 3), "repeat all ones": lambda m, x: x.repeat(1, 1),
    "repeat of a size-1 dim": lambda m, x: x[:1].repeat(2, 1), "repeat with a new dim": lambda m, x: x.repeat(1, 1, 1),
    "split": lambda m, x: x.split(1)[1], "chunk": lambda m, x: x.chunk(2, 1)[1], "unbind": lambda m, x: x.unbind(1)[1],
    "narrow": lambda m, x: x.narrow(1, 1, 2), "select": lambda m, x: x.select(1, 1), "permute": lambda m, x: x.permute(1, 0),
    "movedim": lambda m, x: x.movedim(0, 1), "tril": lambda m, x: x.tril(), "diagonal": lambda m, x: x.diagonal(),
    "diagonal of a transpose": lambda m, x: x.t().diagonal(-1), "unfold": lambda m, x: x.unfold(1, 2, 1), "to the same dtype": lambda m, x: x.to(m.float32),
    "view_as": lambda m, x: x.view_as(x), "index": lambda m, x: x[1], "slice": lambda m, x: x[:, ::2],
    "None": lambda m, x: x[None], "bool mask": lambda m, x: x[x > 2], "int list": lambda m, x: x[[0, 1]],
    "sort": lambda m, x: x.sort(1).values, "masked_fill": lambda m, x: x.masked_fill(x > 1, 0),
    "stack": lambda m, x: m.stack([x])[0], "from_numpy": lambda m, x: m.from_numpy(x.numpy()),
    "as_tensor": lambda m, x: m.as_tensor(x), "pos": lambda m, x: +x, "mul 1": lambda m, x: x * 1,
    "requires_grad_": lambda m, x: x.requires_grad_(False), "expand to its shape": lambda m, x: x.expand(2, 3),
    "Identity": lambda m, x: m.nn.Identity()(x), "dropout in eval": lambda m, x: m.nn.functional.dropout(x, 0.5, False),
}


@pytest.mark.parametrize("name", RESULTS)
def test_results_share_storage_exactly_where_pytorch_s_do(torch, name):
    def shared_and_written(m):
        x = m.arange(6.0).view(2, 3)
        result = RESULTS[name](m, x)
        shares = result.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        if 0 not in result.stride():  # (an expand()ed view is read-only here: see the differences page)
            result[(0,) * result.ndim] = -1.0
        return shares, x.tolist()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert shared_and_written(tinyattn) == shared_and_written(torch)


# --- as_strided and unfold: views made from a geometry ---

from hypothesis import assume, given, strategies as st  # noqa: E402


@st.composite
def geometries(draw):
    """A storage length, and sizes, strides and an offset that fit in it (overlapping ones included)."""
    ndim = draw(st.integers(1, 3))
    size = tuple(draw(st.integers(0, 3)) for _ in range(ndim))
    stride = tuple(draw(st.integers(0, 4)) for _ in range(ndim))
    offset = draw(st.integers(0, 3))
    length = draw(st.integers(1, 14))
    needed = 0 if 0 in size else offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    assume(needed <= length)
    return length, size, stride, offset


@given(geometries(), st.booleans())
def test_as_strided_gradient(geometry, from_a_transpose):
    length, size, stride, offset = geometry
    x = tinyattn.tensor(np.linspace(-1.0, 1.0, length), dtype=tinyattn.float64, requires_grad=True)
    if from_a_transpose and length % 2 == 0:  # the same storage, reached through a view
        assert tinyattn.gradcheck(lambda t: t.view(2, -1).t().as_strided(size, stride, offset), (x,))
    else:
        assert tinyattn.gradcheck(lambda t: (t * 1).as_strided(size, stride, offset), (x,))


@given(geometries())
def test_as_strided_as_pytorch(geometry):
    torch = pytest.importorskip("torch")
    length, size, stride, offset = geometry
    values = np.linspace(-1.0, 1.0, length)
    weights = np.arange(1.0, 1.0 + max(1, int(np.prod(size)))).reshape(-1)[: int(np.prod(size))].reshape(size)
    results = []
    for m in (tinyattn, torch):
        x = m.tensor(values, requires_grad=True)
        view = m.as_strided(x * 1, size, stride, offset)
        (view * m.tensor(weights)).sum().backward()
        # (an empty view reports the strides of a fresh empty tensor here: NumPy keeps none of its own)
        strides = view.stride() if view.numel() else None
        results.append((view.tolist(), strides, view.storage_offset(), view.is_contiguous(), x.grad.tolist()))
    assert results[0][:4] == results[1][:4]
    np.testing.assert_allclose(results[0][4], results[1][4], rtol=1e-12)


def test_as_strided_refuses_what_pytorch_refuses(torch):
    for m in (tinyattn, torch):
        x = m.arange(6.0)
        for bad, message in [(((3, 3), (1, 2)), "out of bounds for storage of size 24"),
                             (((2,), (-1,)), "Negative strides"), (((2,), (1,), -1), "invalid storage offset"),
                             (((2, 2), (1,)), "mismatch in length of strides and shape")]:
            with pytest.raises(RuntimeError, match=message):
                m.as_strided(x, *bad)
        assert m.as_strided(x, (0, 5), (1, 1), 100).shape == (0, 5)
        y = x[2:]
        assert y.as_strided((2,), (1,)).tolist() == [2.0, 3.0]  # the offset: y's own
        assert y.as_strided((2,), (1,), 0).tolist() == [0.0, 1.0]  # given: counted from the storage's start


def test_as_strided_views_share_the_storage_and_record_in_place_changes(torch):
    def run(m):
        w = m.arange(6.0, requires_grad=True)
        h = w * 1
        v = h[1:].as_strided((2, 2), (1, 2))
        seen = [v.tolist(), v.storage_offset(), v.untyped_storage().data_ptr() == h.untyped_storage().data_ptr()]
        v.t()[0].zero_()  # through a view of the view: recorded on h
        (h * m.arange(6.0)).sum().backward()
        seen += [h.tolist(), w.grad.tolist()]
        w = m.arange(6.0, requires_grad=True)
        h = w * 1
        windows = h.unfold(0, 2, 2)
        h.mul_(2)  # the root changed after the view was taken: the view sees it, and so does its gradient
        (windows * m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
        return seen + [windows.tolist(), w.grad.tolist()]

    assert run(tinyattn) == run(torch)


UNFOLDS = [((8,), 0, 3, 2), ((8,), 0, 8, 1), ((3, 4), 1, 2, 1), ((3, 4), 0, 2, 1), ((2, 3, 4), -1, 3, 3), ((), 0, 1, 1)]


@pytest.mark.parametrize("shape, dim, size, step", UNFOLDS)
def test_unfold_as_pytorch(torch, shape, dim, size, step):
    def run(m, transpose):
        x = m.arange(float(np.prod(shape))).reshape(shape)
        if transpose and x.ndim >= 2:
            x = x.transpose(0, 1)
        u = x.unfold(dim, size, step)
        return tuple(u.shape), u.stride(), u.storage_offset(), u.tolist()

    for transpose in (False, True):
        assert run(tinyattn, transpose) == run(torch, transpose)


def test_unfold_refuses_as_pytorch(torch):
    for m in (tinyattn, torch):
        with pytest.raises(RuntimeError, match="maximum size"):
            m.arange(4.0).unfold(0, 5, 1)
        with pytest.raises(RuntimeError, match="step"):
            m.arange(4.0).unfold(0, 2, 0)


@given(st.integers(1, 3), st.integers(1, 3))
def test_unfold_gradient(size, step):
    x = tinyattn.tensor(np.linspace(-1.0, 1.0, 12).reshape(3, 4), dtype=tinyattn.float64, requires_grad=True)
    assert tinyattn.gradcheck(lambda t: (t * 1).unfold(1, size, step), (x,))
    assert tinyattn.gradcheck(lambda t: (t * 1).t().unfold(0, size, step), (x,))


def test_as_strided_with_grad_of_a_part_of_a_storage_is_refused_with_a_way_out():
    """Its in-place changes could not be recorded on the root: refused, not wrong."""
    part = tinyattn.arange(6.0)[1:].detach().requires_grad_()
    with pytest.raises(RuntimeError, match="clone"):
        part.as_strided((2,), (1,))
    assert part.clone().as_strided((2,), (1,)).tolist() == [1.0, 2.0]
    with tinyattn.no_grad():
        assert part.as_strided((2,), (1,)).tolist() == [1.0, 2.0]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["transpose", "slice with steps", "narrow", "select", "expand", "permute",
                                  "None before a transpose", "bools"])
def test_layout_on_a_gpu(name):
    """The same layout, storages and as_strided views on CuPy arrays as on NumPy's."""
    if not tinyattn.cuda.is_available():
        pytest.skip("needs CuPy and a CUDA GPU")

    def on(device):
        real = tinyattn.set_default_device
        real(device)
        try:
            return VIEWS[name](tinyattn)
        finally:
            real("cpu")

    assert _layout(on("cuda")) == _layout(on("cpu"))
    x = tinyattn.arange(6.0, device="cuda")
    assert x.as_strided((2, 2), (1, 2), 1).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert x.unfold(0, 2, 2).t().storage_offset() == 0 and x[1:].storage_offset() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        storage = x.t().storage()
        storage[0] = 5.0
    assert x[0].item() == 5.0 and "dtype=tinyattn.float32, device=cuda" in str(storage).splitlines()[-1]


def test_writing_into_a_diagonal_changes_the_matrix_as_in_pytorch(torch):
    def run(m):
        x = m.ones(3, 4)
        x.diagonal().fill_(0.0)
        x.diagonal(1).mul_(5.0)
        w = m.arange(12.0, requires_grad=True)
        h = w * 1
        h.view(3, 4).t().diagonal(-1).mul_(5.0)  # recorded on h: the gradient sees it
        (h * m.arange(12.0)).sum().backward()
        return x.tolist(), h.tolist(), w.grad.tolist()

    assert run(tinyattn) == run(torch)


@given(st.integers(-4, 4), st.sampled_from([(0, 1), (1, 0), (0, 2), (2, 1), (-1, -3)]), st.booleans())
def test_diagonal_gradient(offset, dims, from_a_transpose):
    x = tinyattn.tensor(np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4), dtype=tinyattn.float64, requires_grad=True)
    source = (lambda t: t.transpose(0, 2)) if from_a_transpose else (lambda t: t * 1)
    assert tinyattn.gradcheck(lambda t: source(t).diagonal(offset, *dims), (x,))


# results with storages of their own in PyTorch: the same storage size, offset, strides and contiguity here
# (a result that is a slice of a larger array inside the op would differ, and .view() would refuse it)
FRESH = {
    "matmul": lambda m, x: x @ x.t(), "linear": lambda m, x: m.nn.functional.linear(x, x),
    "softmax": lambda m, x: x.softmax(-1), "sum": lambda m, x: x.sum(0), "mean": lambda m, x: x.mean(1),
    "max(dim)": lambda m, x: x.max(1).values, "max(dim) indices": lambda m, x: x.max(1).indices,
    "sort": lambda m, x: x.sort(1).values, "topk": lambda m, x: x.topk(2).values,
    "topk indices": lambda m, x: x.topk(2).indices, "cat": lambda m, x: m.cat([x, x]),
    "stack": lambda m, x: m.stack([x, x]), "var": lambda m, x: x.var(0),
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (3,)), "gelu": lambda m, x: m.nn.functional.gelu(x),
    "cross_entropy per row": lambda m, x: m.nn.functional.cross_entropy(x, m.tensor([0, 1]), reduction="none"),
    "embedding": lambda m, x: m.nn.functional.embedding(m.tensor([1, 0]), x), "tril": lambda m, x: x.tril(),
    "where": lambda m, x: m.where(x > 0.5, x, 0.0), "cumsum": lambda m, x: x.cumsum(1),
    "argmax": lambda m, x: x.argmax(1), "einsum": lambda m, x: m.einsum("ij,kj->ik", x, x),
    "norm": lambda m, x: x.norm(dim=1), "median": lambda m, x: x.median(1).values,
    "masked_select (empty)": lambda m, x: x[x > 5], "gather": lambda m, x: x.gather(1, m.tensor([[0], [1]])),
    "contiguous of a transpose": lambda m, x: x.t().contiguous(), "empty (2, 0)": lambda m, x: m.empty(2, 0),
    "attention": lambda m, x: m.nn.functional.scaled_dot_product_attention(x[None], x[None], x[None])[0],
}


@pytest.mark.parametrize("name", FRESH)
def test_results_have_storages_of_their_own_as_in_pytorch(torch, name):
    def layout(m):
        y = FRESH[name](m, m.arange(6.0).view(2, 3) / 3)
        return len(y.untyped_storage()) // y.element_size(), y.storage_offset(), y.stride(), y.is_contiguous()

    assert layout(tinyattn) == layout(torch)


def test_topk_indices_can_be_viewed_as_in_pytorch():
    indices = tinyattn.arange(6.0).view(2, 3).topk(2).indices
    assert indices.view(-1).tolist() == [2, 1, 2, 1]
