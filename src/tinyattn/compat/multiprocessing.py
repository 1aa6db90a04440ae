"""`tinyattn.multiprocessing`: what `torch.multiprocessing` is to a program that imports it at the top.

PyTorch's module is Python's `multiprocessing` with extras for sharing tensors between processes.
tinyattn's tensors are NumPy arrays, which Python's pickling already sends between processes, so
this module is Python's `multiprocessing` (every name of it: `set_start_method`, `cpu_count`, `Pool`,
`Process`, `Queue`, ...) plus PyTorch's few additions, kept for compatibility only:

- `spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn")` runs `fn(i, *args)`
  for i in 0..nprocs-1, each in a new process (as PyTorch's); with join=True it waits for them all
  and raises a RuntimeError naming the first process that failed;
- `get_sharing_strategy`, `set_sharing_strategy`, `get_all_sharing_strategies`: bookkeeping only
  (there is no shared tensor memory to manage).
"""

import multiprocessing as _multiprocessing
from multiprocessing import *  # noqa: F401,F403  (Python's names, as torch.multiprocessing re-exports them)

_SHARING_STRATEGIES = {"file_descriptor", "file_system"}
_sharing_strategy = "file_descriptor"


def get_all_sharing_strategies():
    return set(_SHARING_STRATEGIES)


def get_sharing_strategy():
    return _sharing_strategy


def set_sharing_strategy(new_strategy):
    global _sharing_strategy
    if new_strategy not in _SHARING_STRATEGIES:
        raise ValueError(f"unknown sharing strategy {new_strategy!r}: use one of {sorted(_SHARING_STRATEGIES)}")
    _sharing_strategy = new_strategy


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start `fn(i, *args)` in nprocs processes; wait for them and check their exit codes if join."""
    context = _multiprocessing.get_context(start_method)
    processes = [context.Process(target=fn, args=(i, *args), daemon=daemon) for i in range(nprocs)]
    for process in processes:
        process.start()
    if not join:
        return processes
    for process in processes:
        process.join()
    for i, process in enumerate(processes):
        if process.exitcode != 0:
            raise RuntimeError(f"process {i} of {nprocs} (running {getattr(fn, '__name__', fn)}) exited with "
                               f"code {process.exitcode}: its traceback is printed above")
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run `fn(i, *args)` for i in range(nprocs), each in a new process started with start_method."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)


__all__ = list(_multiprocessing.__all__) + [
    "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy", "spawn", "start_processes",
]

# a name this module lacks is named as programs reach it, tinyattn.multiprocessing (compat/__init__.py), and a PyTorch
# name says so (tinyattn/missing.py); dir() lists the module's public names only, not what it imports
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr("tinyattn.multiprocessing")
__dir__ = _missing.module_dir("tinyattn.multiprocessing")
