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
from .layers import (
    ELU,
    GELU,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    MSELoss,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential
from .multihead_attention import MultiheadAttention
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from . import utils  # noqa: E402  (clip_grad_norm_)
from . import parallel  # noqa: E402  (DataParallel; DistributedDataParallel, which one process cannot run)
from .parallel import DataParallel  # noqa: E402  (nn.DataParallel, as PyTorch exports it)
