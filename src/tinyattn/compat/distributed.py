"""`tinyattn.distributed`: PyTorch's multi-process training, which tinyattn does not have. The names
exist, for compatibility only, so that programs which import them run in one process.

nanoGPT imports `init_process_group` and `destroy_process_group` and calls them only when `torchrun`
has set RANK in the environment; started with plain `python`, it trains in one process, with tinyattn
as with PyTorch. `is_available()` is False and `is_initialized()` False; starting a process group,
and everything that needs one, raises a RuntimeError that says what to do instead.
"""

_ONE_PROCESS = (
    "tinyattn trains in one process and has no process groups: start the script with plain `python` "
    "(without torchrun, so that RANK is not set), or train with PyTorch, which can start from the same "
    "weights (a tinyattn state_dict has PyTorch's keys and shapes)"
)


class ReduceOp:
    """The reduction names of all_reduce (SUM, AVG, ...), so that code naming them imports."""

    SUM, AVG, PRODUCT, MIN, MAX = "sum", "avg", "product", "min", "max"


def is_available():
    return False


def is_initialized():
    return False


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    raise RuntimeError(_ONE_PROCESS)


def _no_process_group(*args, **kwargs):
    raise RuntimeError(f"no process group has been initialized: {_ONE_PROCESS}")


destroy_process_group = get_rank = get_world_size = barrier = all_reduce = broadcast = _no_process_group

# a name this module lacks is named as programs reach it, tinyattn.distributed (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py); dir() lists the module's public names only, not what it imports
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.distributed")
__dir__ = _missing.module_dir("tinyattn.distributed")
