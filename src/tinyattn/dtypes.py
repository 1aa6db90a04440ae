"""The dtypes a tensor can have: PyTorch's names, independent of the array library.

A tensor's data is a NumPy, CuPy or Array-API array; each library has its own dtype objects. These
small objects are the user-facing names (`tinyattn.float32`, `tinyattn.long`, ...), and the backend
translates them into the array library's dtypes.
"""


class dtype:
    """A tensor element type, printed and compared like PyTorch's (`tinyattn.float32`)."""

    __slots__ = ("name", "is_floating_point", "itemsize")

    def __init__(self, name, is_floating_point, itemsize):
        self.name = name
        self.is_floating_point = is_floating_point
        self.itemsize = itemsize

    def __repr__(self):
        return f"tinyattn.{self.name}"

    def __copy__(self):  # dtypes are singletons: copies of a module keep them
        return self

    def __deepcopy__(self, memo):
        return self


float32 = dtype("float32", True, 4)
float64 = dtype("float64", True, 8)
int32 = dtype("int32", False, 4)
int64 = dtype("int64", False, 8)
bool_ = dtype("bool", False, 1)
# the small integers, as PyTorch has them (images as bytes, quantised values, compact token ids)
uint8 = dtype("uint8", False, 1)
int8 = dtype("int8", False, 1)
int16 = dtype("int16", False, 2)

ALL = (float32, float64, int32, int64, bool_, uint8, int8, int16)
BY_NAME = {d.name: d for d in ALL}
default_float = float32

# Half precision exists as names, because programs written for PyTorch name them (nanoGPT's
# {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]), but
# tinyattn computes in float32 and float64 only: a tensor of these dtypes is refused (`computable`).
float16 = dtype("float16", True, 2)
bfloat16 = dtype("bfloat16", True, 2)
HALF = (float16, bfloat16)


# PyTorch's legacy tensor type names, one per dtype: x.type() gives "torch.FloatTensor", and
# tinyattn.FloatTensor (tinyattn/functions/legacy.py) makes a float32 tensor
LEGACY_NAMES = {float32: "FloatTensor", float64: "DoubleTensor", int64: "LongTensor", int32: "IntTensor",
                int16: "ShortTensor", int8: "CharTensor", uint8: "ByteTensor", bool_: "BoolTensor"}
BY_LEGACY_NAME = {name: d for d, name in LEGACY_NAMES.items()}


def computable(d):
    """`d` itself if tinyattn can hold tensors of dtype `d`; a TypeError that says what to do if not."""
    if d in HALF:
        raise TypeError(
            f"tinyattn computes in float32 and float64 only, so it cannot make a {d.name} tensor: use "
            "float32 (for a script with a --dtype option, run it with --dtype=float32)"
        )
    return d


def category(d):
    """PyTorch's promotion categories: bool < integer < floating point."""
    if d is bool_:
        return 0
    return 2 if d.is_floating_point else 1


def promote(a, b):
    """The result dtype of an op between two tensors of dtypes `a` and `b` (PyTorch's rule)."""
    if a is b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if uint8 in (a, b):  # uint8 and a signed integer: the smallest signed one that holds both (int8 -> int16)
        signed = b if a is uint8 else a
        return int16 if signed is int8 else signed
    return a if a.itemsize >= b.itemsize else b


def sums_as_int64(d):
    """Whether PyTorch's sum, prod and their running forms of a `d` tensor are int64 (bool and every
    integer dtype: sums of small integers would overflow)."""
    return not d.is_floating_point and d is not int64
