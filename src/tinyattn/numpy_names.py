"""NumPy's argument names that PyTorch accepts beside its own: `axis=` for `dim=`, `keepdims=` for `keepdim=`.

PyTorch's argument parser takes `x.sum(axis=1, keepdims=True)` as `x.sum(dim=1, keepdim=True)` in the
functions it writes in C++ (the reductions, softmax, cat, stack, sort, squeeze, ...), though not in
those it writes in Python (`Tensor.norm`, `Tensor.split`, `F.softmax`). tinyattn's methods and
functions where PyTorch accepts them take `axis` and `keepdims` as keyword-only arguments and call
these helpers only when one of them is given, so the ordinary call pays one `is None` test.
"""


def dim_or_axis(name, dim, axis, default=None):
    """`dim`, or NumPy's `axis` in its place; both given is an error, as in PyTorch."""
    if axis is None:
        return dim
    if not (dim is default or (type(dim) is type(default) and dim == default)):
        raise TypeError(f"{name}() got both dim and axis (NumPy's name for dim): give one of them")
    return axis


def required_dim(name, dim, axis):
    """The dim of a function that needs one (softmax, cumsum, unsqueeze), given as dim or as axis."""
    dim = dim_or_axis(name, dim, axis)
    if dim is None:
        raise TypeError(f"{name}() missing 1 required argument: 'dim'")
    return dim


def dim_and_keepdim(name, dim, keepdim, axis, keepdims, default=None):
    """(dim, keepdim) of a reduction called with NumPy's axis= and/or keepdims=."""
    if keepdims is not None:
        if keepdim:
            raise TypeError(f"{name}() got both keepdim and keepdims (NumPy's name for keepdim): give one of them")
        keepdim = keepdims
    return dim_or_axis(name, dim, axis, default), keepdim
