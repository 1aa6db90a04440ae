"""`tinyattn.Tensor`: an array (NumPy or CuPy) plus what autograd needs to differentiate through it.

Read in this order: tensor.py (the class: what a tensor is, conversions, printing, and the mixins it
is made of), then the methods by family, each a mixin class whose methods run the ops of
`tinyattn.ops`: elementwise.py (arithmetic, comparisons, elementwise math), reductions.py,
products.py, shapes.py (shapes, views, memory layout), indexing.py, inplace.py (in-place methods and
the machinery they share). Beneath them, the helpers they read arguments with: arguments.py (dims,
shapes, numbers), promotion.py (PyTorch's type promotion), index_keys.py (what x[key] means).
The tensor's data slots and version counter are TensorCore's, in tinyattn/tensor_core.py.
"""

# what the rest of the library imports from here
from ..tensor_core import Size  # noqa: F401
from .arguments import _dim, _value_to_write, parse_to_args  # noqa: F401
from .reductions import vector_norm  # noqa: F401
from .tensor import Tensor  # noqa: F401
