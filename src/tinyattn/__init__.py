"""tinyattn: tensors, autograd and attention from scratch, on NumPy (CPU) or CuPy (GPU).

It speaks PyTorch's dialect, so the attention chapter's code runs with the imports swapped:

    import tinyattn as torch
    import tinyattn.nn as nn
    from tinyattn.nn import functional as F
"""

import math as _math

from . import dtypes as _dtypes
from . import autograd  # noqa: F401  (tinyattn.autograd: Function, grad, backward)
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .backend import Device as device
from .errors import BackwardError, CheckpointError, DeviceError, GradcheckError, ShapeError
from .functions import *  # noqa: F401,F403  (creation functions and the torch.* function forms)
from .functions import Generator, Size, Tensor, manual_seed, tensor
from .printing import get_printoptions, set_printoptions
from .storage import TypedStorage, UntypedStorage

float32 = _dtypes.float32
float64 = _dtypes.float64
int32 = _dtypes.int32
int64 = _dtypes.int64
bool = _dtypes.bool_
float = _dtypes.float32
double = _dtypes.float64
int = _dtypes.int32
long = _dtypes.int64
uint8 = _dtypes.uint8
int8 = _dtypes.int8
int16 = short = _dtypes.int16
dtype = _dtypes.dtype
float16 = half = _dtypes.float16  # names only: tinyattn refuses half-precision tensors (dtypes.computable)
bfloat16 = _dtypes.bfloat16

inf = _math.inf
nan = _math.nan
pi = _math.pi
e = _math.e


def get_default_dtype():
    """The dtype of new floating-point tensors: `tinyattn.float32`."""
    return _dtypes.default_float


__version__ = "0.1.0"
from . import nn  # noqa: E402
from . import linalg  # noqa: E402
from . import optim  # noqa: E402
from . import utils  # noqa: E402  (tinyattn.utils.data: Dataset, DataLoader)
# names that PyTorch programs use and a CPU engine only accepts (torch.cuda, torch.amp, torch.backends, ...):
# their modules live together in tinyattn/compat/, and since PyTorch's names are top-level, each is bound
# here as tinyattn.<name> too, an attribute and an importable name (`import tinyattn.cuda.amp`)
from .compat import bind_pytorch_names as _bind_pytorch_names  # noqa: E402
_bind_pytorch_names()
from . import distributions  # noqa: E402  (Categorical, Normal, Bernoulli, Uniform)
from . import testing  # noqa: E402  (assert_close)
from .autograd import functional as _autograd_functional  # noqa: E402,F401  (torch.autograd.functional)
from .compat.amp import autocast, is_autocast_enabled  # noqa: E402
from .compat.backends import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402
from .compat.compiler import compile  # noqa: E402
from .gradient_check import gradcheck, numerical_grad, numerical_jacobian  # noqa: E402
from .tracing import AnomalyError, detect_anomaly, draw_graph, trace  # noqa: E402
from .serialization import load, save  # noqa: E402
from .backend.threads import get_num_threads, set_num_threads  # noqa: E402  (NumPy's BLAS threads, as torch's)

from .functions.legacy import (BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor,  # noqa: E402
                               IntTensor, LongTensor, ShortTensor, Variable as _Variable, range)
autograd.Variable = _Variable  # torch.autograd.Variable: the old name of a tensor that records gradients

# PyTorch spells these torch.autograd.gradcheck and torch.autograd.detect_anomaly: the same objects
# there too, set here because tinyattn.autograd is imported by the modules that define them
autograd.gradcheck, autograd.detect_anomaly = gradcheck, detect_anomaly

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from . import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
