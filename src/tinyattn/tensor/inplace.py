"""Tensor methods that change a tensor in place, and the machinery they share: an in-place op runs its
out-of-place twin and writes the result into the tensor's memory, counts the change on the version
counter, and records it on the graph (on a view's root too, as CopySlices) so that backward stays
correct or refuses, as PyTorch does. Random fills (uniform_, normal_, bernoulli_) are here too.
"""

import math
import warnings

import numpy as np

from .. import autograd, backend, dtypes, ops, random, tensor_core
from ..errors import BackwardError, ShapeError
from ..tensor_core import TensorCore
from . import creation
from .arguments import _scalar, _value_to_write
from .promotion import _inplace_operand
from .shapes import resize_


# in-place arithmetic that `Tensor._inplace_direct` runs as one NumPy call when there is no graph
_INPLACE_UFUNCS = {ops.Add: np.add, ops.Sub: np.subtract, ops.Mul: np.multiply, ops.Div: np.true_divide}


# torch.* functions that are Tensor methods too (x.asin() is tinyattn.asin(x)): the class below
# binds them, so each is written once

def bernoulli(input, p=None, *, generator=None):
    """0 or 1 for each element of input: 1 with probability input's element (or with probability p
    for every element, when p is given). Drawn from PyTorch's CPU stream: one float32 uniform per
    element, in the probabilities' dtype (1 where it is below the probability); float64 uniforms
    for a number p (as Tensor.bernoulli_)."""
    gen = creation.generator_or_default(generator)
    if p is not None:
        return input.new_empty(input.shape).bernoulli_(p, generator=generator)
    if not input.dtype.is_floating_point:
        raise TypeError(f"bernoulli expects a floating point tensor of probabilities, got {input.dtype}")
    probs = backend.to_host(input.detach().array)
    if probs.size and not ((probs >= 0) & (probs <= 1)).all():
        raise ValueError("bernoulli expects 0 <= p <= 1 for every element of input")
    # float32 uniforms for float32 probabilities, float64 for float64, in index order whatever input's
    # layout (PyTorch draws into a contiguous tensor, whose memory order leads the fill)
    uniforms = gen.uniform(probs.shape, probs.dtype)
    return creation._from_host((uniforms < probs).astype(probs.dtype), input.dtype, input.device, False)


def random_(input, from_=0, to=None, *, generator=None):
    """Fill with random integers (as numbers of the tensor's dtype): random_(to) in [0, to),
    random_(from_, to) in [from_, to) (PyTorch's randint stream), random_() in [0, 2**mantissa] for
    floats and [0, 2**63) for int64. Written `from` in PyTorch; tinyattn takes it positionally."""
    gen = creation.generator_or_default(generator)
    strides = creation._fill_strides(input)  # (PyTorch fills in memory order)
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        if input.dtype is dtypes.float32:
            values = gen._draw32(input.numel()) % np.uint64((1 << 24) + 1)
        elif input.dtype is dtypes.float64:
            values = gen._draw64(input.numel()) % np.uint64((1 << 53) + 1)
        elif input.dtype is dtypes.int64:
            values = gen.randint(0, 1 << 63, (input.numel(),))
        else:
            raise TypeError(f"random_() without bounds is not available for {input.dtype} here: give random_(to)")
    else:
        creation._check_random_bounds(int(from_), int(to), input.dtype)
        values = gen.randint(int(from_), int(to), (input.numel(),))
    values = random.in_fill_order(values, tuple(input.shape), strides)
    return input._overwrite(values.astype(input.dtype.name), "Random")


_DTYPE_WORDS = {dtypes.float32: "Float", dtypes.float64: "Double", dtypes.int64: "Long", dtypes.int32: "Int",
                dtypes.int16: "Short", dtypes.int8: "Char", dtypes.uint8: "Byte", dtypes.bool_: "Bool"}


def _into(out, result, name):
    """Write result into out as PyTorch does: no gradients, no narrowing of the kind of number, and
    an `out` of another shape resized (with PyTorch's warning unless it was empty). Returns out."""
    if not isinstance(out, TensorCore):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if autograd.grad_mode.enabled and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    narrowing = (result.dtype.is_floating_point and not out.dtype.is_floating_point
                 or out.dtype is dtypes.bool_ and result.dtype is not dtypes.bool_)
    if narrowing:
        raise RuntimeError(f"result type {_DTYPE_WORDS.get(result.dtype, result.dtype)} can't be cast to the desired "
                           f"output type {_DTYPE_WORDS.get(out.dtype, out.dtype)}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=3)
        resize_(out, *result.shape)
    return out.copy_(result)


class InPlaceMethods:
    """The in-place methods of tinyattn.Tensor and the machinery they share."""

    __slots__ = ()  # a mixin of Tensor, which keeps its numbers in TensorCore's slots

    # --- filling in place (initialisation) ---

    def zero_(self):
        """In place: every element set to 0."""
        return self._inplace(ops.Overwrite, backend.namespace(self.array).zeros_like(self.array), "Zero")

    def fill_(self, value):
        """In place: every element set to `value`."""
        _scalar(value)  # a number or a 0-d tensor (which receives the gradient, if it requires one)
        return self._inplace(ops.IndexPut, Ellipsis, _value_to_write(self, value))

    def copy_(self, source):
        """In place: the elements of `source` (broadcast to self's shape) copied into self."""
        if not isinstance(source, TensorCore):
            source = tensor_core.from_data(source, dtype=self.dtype, device=self.device)
        if ops.broadcast_shape(source.shape, self.shape) != self.shape:  # NumPy would drop leading 1s
            raise ShapeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(ops.broadcast_shape(source.shape, self.shape) or source.shape)}: copy_ needs a "
                "source that broadcasts to the tensor's shape"
            )
        return self._inplace(ops.IndexPut, Ellipsis, source.to(self.device, self.dtype))

    def uniform_(self, a=0.0, b=1.0, generator=None):
        """In place: every element drawn uniformly from [a, b) (PyTorch's stream for the same seed)."""
        if not (math.isfinite(a) and math.isfinite(b) and a <= b):
            raise ValueError(f"uniform_ draws from [a, b), finite with a <= b, got a={a} and b={b}")
        values = creation.generator_or_default(generator).uniform(  # in memory order, as PyTorch fills
            self.array.shape, np.dtype(self.dtype.name), a, b, strides=creation._fill_strides(self))
        return self._overwrite(values, "Uniform")

    def normal_(self, mean=0.0, std=1.0, generator=None):
        """In place: every element drawn from N(mean, std²) (PyTorch's stream for the same seed)."""
        values = creation.generator_or_default(generator).normal(  # in memory order, as PyTorch fills
            self.array.shape, np.dtype(self.dtype.name), mean, std, strides=creation._fill_strides(self))
        return self._overwrite(values, "Normal")

    def _overwrite(self, host_values, name):
        """Replace the numbers (initialisation): allowed on leaves under no_grad, like PyTorch."""
        return self._inplace(ops.Overwrite, backend.from_host(host_values, self.device), name)

    def _check_inplace(self, recording):
        array = self.array
        if type(array) is np.ndarray and array.flags.writeable and 0 not in array.strides:
            pass  # (the common case, told at once: no element shared, nothing read-only)
        elif backend.shares_elements(array):
            raise RuntimeError(
                f"cannot write in place to this tensor of shape {list(self.shape)}: several of its elements "
                "are one place in memory (it is an expand()ed or broadcast view); write to a .clone() of it"
            )
        elif backend.is_read_only(array):  # a part of an expand()ed view: NumPy keeps it read-only
            raise RuntimeError(
                f"cannot write in place to this tensor of shape {list(self.shape)}: its memory is read-only "
                "(a view into an expand()ed tensor, or read-only NumPy data); write to the tensor before "
                "expand(), or to a .clone()"
            )
        if not recording:
            return
        if self.grad_fn is None and self.requires_grad:
            raise BackwardError(
                "a leaf tensor that requires grad is being changed in place: wrap the update in "
                "`with tinyattn.no_grad():` (as optimizers do), or work on a .clone()"
            )
        root = self._base
        if root is not None and root.grad_fn is None and root.requires_grad:
            raise BackwardError(
                "a view of a leaf tensor that requires grad is being changed in place: wrap the update in "
                "`with tinyattn.no_grad():`, or work on a .clone() of the leaf"
            )

    def _inplace(self, function, *args):
        """Run `function` out of place, then write its result into this tensor's memory.

        Writing into the same memory keeps views of this tensor in sync, as PyTorch's in-place
        ops do; the graph is rebased so that this tensor's grad_fn is the new op.
        """
        recording = autograd.grad_mode.enabled and (
            self.requires_grad or any(isinstance(a, TensorCore) and a.requires_grad for a in args)
        )
        self._check_inplace(recording)
        if not recording and self._inplace_direct(function, args):
            return self
        result = function.apply(self, *args)
        node = result.grad_fn
        if node is not None and any(item is self.array for item in node.saved):
            # the op kept our numbers for its backward: give it a copy of them before we overwrite
            original = backend.namespace(self.array).asarray(self.array, copy=True)
            node.saved = tuple(original if item is self.array else item for item in node.saved)
            node.saved_versions = tuple(v for v in node.saved_versions if v[0] is not self._version)
        self._check_fits_in_place(result)
        if node is not None and self._base is not None:
            self._inplace_on_view(result)
        else:
            self._store(result.array)
            if node is not None:
                self.grad_fn, self.output_nr, self._requires_grad = node, 0, True
        if node is not None and node.saved_versions:
            # what the op saved of its output, or computed from this tensor's old numbers (a mask), now
            # belongs to this tensor as written: a later change raises (y.exp_() then y.add_(1), as in PyTorch)
            mine = self._version
            node.saved_versions = tuple((mine, mine[0], shape) if counter is result._version or counter is mine
                                        else (counter, version, shape)
                                        for counter, version, shape in node.saved_versions)
        return self

    def _inplace_direct(self, function, args):
        """`p.data += -lr * p.grad`, `x *= 2` with no graph to record: the op's NumPy ufunc writes its
        result straight into this tensor's memory, the same numbers the op would compute, without the
        op's result tensor and the copy back. Returns False where that does not apply (then the op runs)."""
        ufunc = _INPLACE_UFUNCS.get(function)
        array = self.array
        if ufunc is None or type(array) is not np.ndarray or array.dtype.kind != "f" or autograd.observers:
            return False
        (other,) = args
        if isinstance(other, TensorCore):
            other = other.array
            if type(other) is not np.ndarray or other.dtype is not array.dtype or other.ndim > array.ndim:
                return False  # (the operand was checked to broadcast to this tensor's shape)
        elif type(other) not in (int, float):
            return False
        quiet = backend.float_errors_off()
        try:
            ufunc(array, other, out=array)
        finally:
            backend.float_errors_restore(quiet)
        self._bump_version()
        if self._base is not None:
            self._view_version = self._version[0]
        return True

    def _inplace_on_view(self, result):
        """Write `result` into this view while recording: the change is recorded on the root (the
        tensor whose memory the view shares) as a CopySlices node, as PyTorch does, so that the
        root's gradients see it; the view becomes "this view of the new root"."""
        root, steps = self._base, self._view_steps

        def view_of(array):
            base = tensor_core.wrap(array)
            view = autograd.replay_view(steps, base)
            if view._base is not base:  # a step copied: writing to it would not reach `array`
                raise RuntimeError("internal error: a view could not be taken again from its root's layout")
            return view.array

        changed = ops.CopySlices.apply(root, result, view_of)
        root.grad_fn, root.output_nr, root._requires_grad = changed.grad_fn, 0, True
        self._bump_version()  # the counter root and views share
        autograd.refresh_view(self)
        return self

    def _inplace_no_grad(self, operator, other):
        """x //= y, x %= y, x &= y ...: the out-of-place result written into x's memory (no gradient)."""
        result = operator(self, _inplace_operand(self, other))  # y in x's dtype, as for x += y
        if result is NotImplemented:
            return NotImplemented
        if autograd.grad_mode.enabled and self.requires_grad:
            raise BackwardError(
                "this in-place op has no gradient and the tensor requires grad: do it under "
                "`with tinyattn.no_grad():` or on x.detach()"
            )
        self._check_inplace(recording=False)
        self._check_fits_in_place(result)
        self._store(result.array)
        return self

    def _store(self, array):
        """Write an in-place op's result into this tensor's memory and count the change."""
        if array is not self.array:  # ops that wrote in place already did
            self.array[...] = array
        self._bump_version()
        if self._base is not None:
            self._view_version = self._version[0]  # not a stale view: it saw this change itself

    def _check_fits_in_place(self, result):
        """An in-place op keeps the tensor's shape and dtype: refuse a result that would change either."""
        if result.array.shape != self.array.shape:  # NumPy would quietly drop the new leading 1s
            raise ShapeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(result.shape)}: an in-place op cannot change a tensor's shape; use the "
                "out-of-place op (a = a + b)"
            )
        if result.array.dtype != self.array.dtype:
            raise TypeError(
                f"an in-place op would change this {self.dtype} tensor into {result.dtype}: "
                "use the out-of-place op instead"
            )

    # --- random (in tinyattn.functions for the torch.* forms) ---

    def multinomial(self, num_samples, replacement=False, generator=None):
        """Category indices drawn with probabilities proportional to the rows (PyTorch's stream)."""
        return creation.multinomial(self, num_samples, replacement, generator=generator)

    def bernoulli_(self, p=0.5, generator=None):
        """In place: each element set to 1 with probability `p` (a number, or a tensor that broadcasts to
        self: one probability per element), else 0 (PyTorch's stream)."""
        strides, generator = creation._fill_strides(self), creation.generator_or_default(generator)
        if isinstance(p, TensorCore):
            values = creation._bernoulli_of_probabilities(generator, self.array.shape, strides, p)
        else:  # in memory order, as PyTorch fills
            values = generator.bernoulli(self.array.shape, p, strides=strides)
        name = "BernoulliBackward1" if isinstance(p, TensorCore) else "BernoulliBackward2"  # PyTorch's overloads
        return self._overwrite(values.astype(self.dtype.name), name)

    # the torch.* functions above, as methods
    bernoulli = bernoulli
    random_ = random_
