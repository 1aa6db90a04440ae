"""Every differentiable primitive: its forward and its backward, side by side, on raw arrays.

An op is a `Function` with `takes_arrays = True`: `forward(ctx, ...)` receives NumPy/CuPy arrays (and
plain Python values such as `dim`), returns an array, and saves what the backward needs;
`backward(ctx, grad)` receives the gradient of the output and returns one gradient per forward
argument (None where there is none). `ctx.xp` is the array namespace (NumPy or CuPy), so the same
code runs on both devices. The ops never see a Tensor: `Function.apply` (autograd/function.py) unwraps the
inputs, wraps the output and records the graph.

One file per family, each readable on its own (each imports only `base`):

- `base.py`: the `Op` base class and the shape helpers every backward uses (`unbroadcast`,
  `broadcast_shape`, `normalize_dims`, `keepdims_shape`)
- `elementwise.py`: arithmetic, the unary math, clamp, maximum/minimum, where
- `reductions.py`: sum, mean, var, std, max, prod, amax/amin, norms, median, cumsum, cumprod, logsumexp
- `views.py`: reshape, view, permute, transpose, expand, copies, tril/triu, diagonals, cat/stack, roll, flip
- `indexing.py`: tensor[key] and its assignment, gather, scatter, masked ops, index_select, index_add, sort
- `softmax.py`: softmax and log-softmax (their forward and backward, which attention reuses), and
  layer norm (normalization over the last dims)
- `products.py`: matmul and einsum
- `linalg.py`: inverse, determinant, solve
- `conv.py`: convolution and pooling as im2col and one matrix product
- `nn.py`: the fused ops of nn (linear, embedding, dropout, the activations GELU, SiLU, softplus,
  leaky ReLU and ELU, constant padding, attention), each layer's math as one op
- `losses.py`: the fused losses (cross-entropy, nll, mse, binary cross-entropy)

Every op and helper is re-exported here, so `tinyattn.ops.Mul` and `from tinyattn.ops import unbroadcast`
name them wherever they live. `tinyattn.nn.functional` checks the arguments of the fused ops and runs
them (`ops.AttentionOp.apply(...)`).
"""

from .base import (Op, broadcast_shape, keepdims_shape, normalize_dim, normalize_dims, shape_of, unbroadcast)
from .elementwise import (Abs, Acos, Add, Asin, Atan, Atan2, Ceil, Clamp, Cos, Cosh, Div, Erf, Exp, Exp2, Expm1,
    Floor, Fmod, Log, Log10, Log1P, Log2, Maximum, Minimum, Mul, Neg, Pow, Reciprocal, Relu, Round, Rsqrt, Sigmoid,
    Sign, Sin, Sinh, Sqrt, StepFunction, Sub, Tanh, Trunc, Where, integer_power, power, stable_sigmoid, tie_shares)
from .reductions import (Amax, Cumprod, Cumsum, LinalgVectorNorm, LogSumExp, MaxAll, MaxAlongDim, Mean, MedianAll,
    Prod, Std, Sum, Var, running_sum)
from .views import (Cat, Clone, Contiguous, Diag, Expand, Flip, Permute, Reshape, Roll, Stack, T, ToDevice,
    ToDtype, Transpose, Tril, Triu, View, check_matrix)
from .indexing import (CopySlices, Gather, Index, IndexAdd, IndexPut, IndexSelect, MaskedFill, MaskedSelect,
    Overwrite, Scatter, Sort, along_axis_key, basic_index_name, corner, is_basic_key)
from .softmax import (LayerNormOp, LogSoftmax, Softmax, layer_norm_rows, layer_norm_rows_backward,
    softmax_backward, softmax_forward)
from .products import (Einsum, EinsumPlan, Matmul, check_matmul_shapes, einsum_contract, einsum_labels_present,
    parse_einsum)
from .linalg import (Det, Inverse, Solve)
from .conv import (AdaptiveAvgPool2D, AvgPool2D, Convolution, ConvolutionTranspose, MaxPool2DWithIndices,
    adaptive_windows, add_windows, as_rows, col2im, crop, from_rows, im2col, output_size, pad_image, pool_counts,
    window_slices, windows)
from .nn import (AttentionOp, ConstantPadNdOp, DropoutOp, EluOp, EmbeddingOp, GeluOp, LeakyReluOp, LinearOp, SiluOp,
    SoftplusOp, attention_backward, attention_forward, gelu_backward, gelu_forward)
from .losses import (BinaryCrossEntropyOp, CrossEntropyOp, MseLossOp, NllLossOp)

__all__ = [
    "Op", "broadcast_shape", "keepdims_shape", "normalize_dim", "normalize_dims", "shape_of", "unbroadcast", "Abs",
    "Acos", "Add", "Asin", "Atan", "Atan2", "Ceil", "Clamp", "Cos", "Cosh", "Div", "Erf", "Exp", "Exp2", "Expm1",
    "Floor", "Fmod", "Log", "Log10", "Log1P", "Log2", "Maximum", "Minimum", "Mul", "Neg", "Pow", "Reciprocal", "Relu",
    "Round", "Rsqrt", "Sigmoid", "Sign", "Sin", "Sinh", "Sqrt", "StepFunction", "Sub", "Tanh", "Trunc", "Where",
    "integer_power", "power", "stable_sigmoid", "tie_shares", "Amax", "Cumprod", "Cumsum", "LinalgVectorNorm",
    "LogSumExp", "MaxAll", "MaxAlongDim", "Mean", "MedianAll", "Prod", "Std", "Sum", "Var", "running_sum", "Cat",
    "Clone", "Contiguous", "Diag", "Expand", "Flip", "Permute", "Reshape", "Roll", "Stack", "T", "ToDevice",
    "ToDtype", "Transpose", "Tril", "Triu", "View", "check_matrix", "CopySlices", "Gather", "Index", "IndexAdd",
    "IndexPut", "IndexSelect", "MaskedFill", "MaskedSelect", "Overwrite", "Scatter", "Sort", "along_axis_key",
    "basic_index_name", "corner", "is_basic_key", "LogSoftmax", "Softmax", "softmax_backward",
    "softmax_forward", "LayerNormOp", "layer_norm_rows", "layer_norm_rows_backward", "Einsum", "EinsumPlan", "Matmul",
    "check_matmul_shapes", "einsum_contract", "einsum_labels_present", "parse_einsum", "Det", "Inverse", "Solve",
    "AdaptiveAvgPool2D", "AvgPool2D", "Convolution", "ConvolutionTranspose", "MaxPool2DWithIndices",
    "adaptive_windows", "add_windows", "as_rows", "col2im", "crop", "from_rows", "im2col", "output_size", "pad_image",
    "pool_counts", "window_slices", "windows", "AttentionOp", "ConstantPadNdOp", "DropoutOp", "EluOp", "EmbeddingOp",
    "GeluOp", "LeakyReluOp", "LinearOp", "SiluOp", "SoftplusOp", "attention_backward", "attention_forward",
    "gelu_backward", "gelu_forward", "BinaryCrossEntropyOp", "CrossEntropyOp", "MseLossOp", "NllLossOp",
]
