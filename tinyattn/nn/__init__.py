"""`tinyattn.nn`: layers, the attention classes, and `functional` (import it as F)."""

from . import functional, init
from .attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v1,
    SelfAttention_v2,
    multihead_from_wrapper,
)
from .conv import Conv1d
from .layers import (
    ELU,
    GELU,
    GLU,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    Unflatten,
)
from .losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .normalization import BatchNorm1d, BatchNorm2d
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential
from .multihead_attention import MultiheadAttention
from . import utils  # noqa: E402  (clip_grad_norm_)
from . import parallel  # noqa: E402  (DataParallel; DistributedDataParallel, which one process cannot run)
