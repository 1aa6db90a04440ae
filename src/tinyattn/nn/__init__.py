"""`tinyattn.nn`: layers, the attention classes, the recurrent layers, and `functional` (import it as F)."""

from . import functional, init
from .attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v1,
    SelfAttention_v2,
    multihead_from_wrapper,
)
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .distance import CosineSimilarity, PairwiseDistance
from .layers import (
    ELU,
    GELU,
    GLU,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LazyLinear,
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
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm
from .module import Module, ModuleDict, ModuleList, Parameter, ParameterDict, ParameterList, Sequential
from .multihead_attention import MultiheadAttention
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    Dropout2d,
    MaxPool1d,
    MaxPool2d,
)
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
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

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
