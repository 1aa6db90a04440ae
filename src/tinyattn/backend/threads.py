"""How many threads tinyattn computes with on the CPU: `set_num_threads(n)`, `get_num_threads()`.

tinyattn's matrix products run in NumPy's BLAS (OpenBLAS in NumPy's wheels), which starts one thread
per core and splits each large product between them. On a machine of its own that is what you want.
On a shared one it is not: each product waits for its slowest thread, and a thread that shares its
core with another busy process runs only part of the time, so every product waits for the scheduler.
A GPT training step with 2 BLAS threads on 2 cores, beside one busy process, took several times as
long as with 1 thread (see docs/explanations/performance.md for the figures).

    tinyattn.set_num_threads(1)     # as torch.set_num_threads: NumPy's BLAS uses one thread from now on
    tinyattn.get_num_threads()      # 1

The count is the whole process's (NumPy's BLAS is one pool), as PyTorch's is. It is set through
threadpoolctl, the library NumPy and scikit-learn users control BLAS pools with; without it
`get_num_threads()` reports what the environment says and `set_num_threads()` raises. Different
counts can round the last bit of a product differently (OpenBLAS picks its kernels by the count),
as PyTorch's thread counts do: a run is reproducible with the same count.

The library itself leaves NumPy's count as it finds it. The `tinyattn train` and `generate` commands
compute with COMMAND_DEFAULT (1) thread unless `--threads N` says otherwise: one thread is never the
one that a busy neighbour makes every product wait for, and a run gives the same numbers on any machine
and under any load. `tinyattn bench` uses every core this process may use (`available_cores()`).
"""

import contextlib
import numbers
import os
import time

try:
    import threadpoolctl
except ImportError:  # optional at run time: without it the count cannot be changed from Python
    threadpoolctl = None

# the variables OpenBLAS, OpenMP and MKL read their thread count from when the library loads
ENVIRONMENT_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def available_cores():
    """The cores this process may run on (its CPU affinity, which a container or `taskset` narrows),
    not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


_controller = None


def _blas_pools():
    """threadpoolctl's controllers of the BLAS libraries loaded in this process (NumPy's), [] without it."""
    global _controller
    if threadpoolctl is None:
        return []
    if _controller is None or not _controller.lib_controllers:
        _controller = threadpoolctl.ThreadpoolController().select(user_api="blas")
    return _controller.lib_controllers


def set_num_threads(n, /):
    """Use `n` threads for the matrix products from now on, in the whole process (NumPy's BLAS pool).

    As `torch.set_num_threads`. 1 is the safe choice on a machine that other programs keep busy.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    if threadpoolctl is None:
        raise RuntimeError("set_num_threads needs threadpoolctl (pip install threadpoolctl); or set "
                           "OPENBLAS_NUM_THREADS before Python starts")
    set_blas_threads(int(n))


def set_blas_threads(n):
    """The BLAS pool's thread count, without set_num_threads' checks (for backend.parallel: a few us)."""
    for pool in _blas_pools():
        release = getattr(type(pool), "clear_controlling_thread", None)
        if release is not None:  # threadpoolctl 3.8 lets only one Python thread set OpenBLAS's count
            release(force=True)
        pool.set_num_threads(n)


@contextlib.contextmanager
def using(n):
    """A block computed with `n` threads; the count from before is back after it (n=None: unchanged).

        with tinyattn.backend.threads.using(1):
            model(x).sum().backward()
    """
    if n is None:
        yield
        return
    before = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(before)


def get_num_threads():
    """The threads the matrix products use (NumPy's BLAS pool), as `torch.get_num_threads`."""
    counts = [pool.num_threads for pool in _blas_pools()]
    counts = [c for c in counts if c]
    if counts:
        return max(counts)
    for name in ENVIRONMENT_VARIABLES:  # no threadpoolctl: what the BLAS read when it loaded
        value = os.environ.get(name, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return min(int(value), available_cores())
    return available_cores()


def can_set_num_threads():
    """Whether the BLAS thread pool can be resized here (threadpoolctl and a BLAS it knows)."""
    return threadpoolctl is not None and bool(_blas_pools())


# ---------------------------------------------------------------------------------------------
# the commands' rule, and how busy the machine is

COMMAND_DEFAULT = 1  # the threads `tinyattn train` and `tinyattn generate` use without --threads


def busy_cores(seconds=0.2):
    """How many cores other processes kept busy over the next `seconds` (Linux; None elsewhere): the
    benchmark says it beside its figures.

    Read from /proc/stat (time every core spent working) minus this process's own CPU time.
    """
    def work_and_total():
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle and iowait
        return sum(fields[:8]) - idle, sum(fields[:8])  # user nice system idle iowait irq softirq steal

    try:
        work0, total0 = work_and_total()
        own0 = _own_cpu_seconds()
        time.sleep(seconds)
        work1, total1 = work_and_total()
        own1 = _own_cpu_seconds()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None
    ticks_per_second = os.sysconf("SC_CLK_TCK")
    machine_cores = os.cpu_count() or 1
    elapsed_core_seconds = (total1 - total0) / ticks_per_second  # over all the machine's cores
    others = (work1 - work0) / ticks_per_second - (own1 - own0)
    return max(0.0, others / elapsed_core_seconds * machine_cores)


def _own_cpu_seconds():
    times = os.times()
    return times.user + times.system
