"""Work that tinyattn spreads over the cores itself: what NumPy would do on one core.

NumPy's BLAS spreads a matrix product over its threads, but NumPy's elementwise functions (the
exp, tanh and arithmetic of softmax, GELU, layer norm, AdamW) run on one core, where PyTorch uses
every core. `run(part, count)` calls part(0), ..., part(count - 1) at once, the first on the calling
thread and the others on worker threads that wait for work (they block; they never spin): NumPy lets
go of Python's lock (the GIL) while it computes, so the parts do run side by side.

Each part computes its own rows with the same operations in the same order as the whole would, so
the numbers are the same, bit for bit, however many parts there are. Inside a parallel region the
BLAS computes on one thread per part (its own pool would fight the parts for the cores).

How many parts: `parts_for(elements)`, one per thread of `tinyattn.get_num_threads()`, and only
for arrays big enough that the hand-over (some microseconds) pays.
"""

import contextlib
import contextvars
import threading

import numpy as np

from . import threads

# below this many elements per part, handing work to another thread costs more than it saves. It must
# stay above backend.BLAS_SUM_MIN_SIZE: sum_along picks its method by size, and a piece must sum its rows
# the way the whole array would.
MIN_ELEMENTS_PER_PART = 32768

# Pieces of rows start on multiples of this. OpenBLAS's matrix-vector product (the row means of layer
# norm) sums a row in another order when it is one of the last few rows of a call (not a whole block
# of 4): pieces of whole blocks keep every row's sum what it is in one call over all the rows.
ROW_ALIGN = 16

# Off unless asked for: on a quiet 2-core machine the split made the GPT step of `tinyattn bench` slower
# (1.42-1.55x PyTorch's, against 1.25-1.27x without it; docs/how-to/threads-and-devices.md). True turns it on.
enabled = False


class _Worker:
    """A thread that runs one part at a time: `start(function, index)`, then `wait()` for it."""

    def __init__(self):
        self._go = threading.Lock()
        self._go.acquire()
        self._done = threading.Event()  # an Event, not a lock: waiting again after it is set is harmless
        self._job = None
        self.error = None
        thread = threading.Thread(target=self._loop, name="tinyattn-worker", daemon=True)
        thread.start()

    def _loop(self):
        while True:
            self._go.acquire()
            function, index, context = self._job
            try:
                context.run(function, index)
            except BaseException as error:  # handed to the caller of run()
                self.error = error
            self._job = None
            self._done.set()

    def start(self, function, index):
        """Run function(index) in a copy of the caller's context (NumPy's floating-point error state)."""
        self.error = None
        self._done.clear()
        self._job = (function, index, contextvars.copy_context())
        self._go.release()

    def wait(self):
        """The part's exception or None, once it has finished. Ctrl-C does not cut the wait short (the
        part is still writing into the caller's arrays): it is raised after the part is done."""
        interrupted = None
        while True:
            try:
                self._done.wait()
                break
            except KeyboardInterrupt as caught:  # also when it lands just after wait() returned
                interrupted = caught
        error, self.error = self.error, None
        return interrupted or error


_workers = []
_lock = threading.Lock()  # one parallel region at a time (a part never starts another region)
_inside = threading.local()


def parts_for(elements):
    """How many parts an array of `elements` elements is worth splitting into (1: not at all)."""
    most = elements // MIN_ELEMENTS_PER_PART  # checked first: small arrays cost no look-up of the count
    if most < 2 or not enabled or getattr(_inside, "active", False) or not threads.can_set_num_threads():
        return 1
    return min(threads.get_num_threads(), most)


def bounds(length, parts, index, align=1):
    """[start, stop) of part `index` of `parts` nearly equal pieces of range(length), starts on
    multiples of `align` (whole rows, or whole SIMD blocks).

    A last block of fewer than `align` rows goes with the piece before it, never alone: NumPy
    computes a one-row matrix-vector product as a dot product, which sums in another order.
    """
    units = max(1, length // align)
    start = min(units * index // parts * align, length)
    stop = length if index == parts - 1 else min(units * (index + 1) // parts * align, length)
    return start, stop


def run(part, count):
    """Call part(i) for every i in range(count), at once on `count` threads; return when all are done.

    An exception in any part is raised here (the first one, after every part has finished).
    """
    if count <= 1:
        if count == 1:
            part(0)
        return
    with _lock:
        while len(_workers) < count - 1:
            _workers.append(_Worker())
        blas_threads = threads.get_num_threads()
        threads.set_blas_threads(1)  # each part is one thread; BLAS's own pool would compete with them
        _inside.active = True
        started, error = [], None
        try:
            try:
                for index, worker in enumerate(_workers[: count - 1], start=1):
                    worker.start(part, index)
                    started.append(worker)
                part(0)
            except BaseException as caught:  # Ctrl-C included: the started parts are still running
                error = caught
            for worker in started:
                worker_error = worker.wait()  # every started part is waited for, even after an error
                error = error or worker_error
        finally:
            _inside.active = False
            threads.set_blas_threads(blas_threads)
    if error is not None:
        raise error


@contextlib.contextmanager
def single_blas_thread():
    """A block in which the BLAS computes on the calling thread only (a no-op inside a parallel region,
    where it already does)."""
    count = 1 if getattr(_inside, "active", False) or not threads.can_set_num_threads() else threads.get_num_threads()
    if count == 1:
        yield
        return
    threads.set_blas_threads(1)
    try:
        yield
    finally:
        threads.set_blas_threads(count)


def map_rows(function, *arrays, align=ROW_ALIGN, one_blas_thread=False):
    """function(*arrays), computed on pieces of their rows (axis 0) at once and stitched together.

    `function` must treat each row on its own (elementwise math, or math along the last axis such
    as softmax) and return an array, or a tuple of arrays, with one row per input row. Each part
    writes its rows straight into the result. Pieces start on multiples of `align` rows. Other arrays
    than NumPy's (CuPy's) go to `function` whole. one_blas_thread=True: the BLAS computes on one thread
    also when the rows are not split.
    """
    first = arrays[0]
    rows = first.shape[0] if type(first) is np.ndarray and first.ndim else 0
    parts = min(parts_for(first.size), max(1, rows // align))
    if parts <= 1:
        if one_blas_thread and rows:
            with single_blas_thread():
                return function(*arrays)
        return function(*arrays)
    results = {}
    made = threading.Lock()

    def part(index):
        start, stop = bounds(rows, parts, index, align)
        piece = function(*(a[start:stop] for a in arrays))
        with made:  # the first part to finish makes the results, shaped after its pieces
            if not results:
                results["tuple"] = isinstance(piece, tuple)
                results["arrays"] = [np.empty((rows,) + p.shape[1:], p.dtype) for p in _as_tuple(piece)]
        for result, p in zip(results["arrays"], _as_tuple(piece)):
            result[start:stop] = p

    run(part, parts)
    return tuple(results["arrays"]) if results["tuple"] else results["arrays"][0]


# A fused op (GELU, softmax, layer norm) makes a dozen passes or more over its temporaries. Over a
# whole attention-sized array (25 MB) every pass goes out to main memory; over a block of this many
# elements (128 KB of float32 per array) the passes stay in the core's cache.
BLOCK_ELEMENTS = 32768


def in_blocks(array, row_length=1, align=ROW_ALIGN):
    """Whether map_blocks computes `array` (rows of `row_length` elements, blocks of `align` rows at
    least) in blocks: a NumPy array of two blocks or more whose smallest block is not larger than
    two blocks, outside another block. Anything else is computed whole."""
    return (type(array) is np.ndarray and array.size >= 2 * BLOCK_ELEMENTS
            and row_length * align <= 2 * BLOCK_ELEMENTS and not getattr(_inside, "block", False))


def map_blocks(function, *arrays, align=ROW_ALIGN):
    """function(*arrays) as map_rows computes it, but in blocks of rows of about BLOCK_ELEMENTS
    elements, each block through all of `function` before the next one starts (and pieces of the
    blocks on every core where map_rows would split). Arrays that in_blocks() refuses go to map_rows.

    The same contract as map_rows: `function` treats each row on its own, so the result is the same,
    bit for bit, in any number of blocks. Blocks start on multiples of `align` rows, and a last block
    of fewer than `align` rows goes with the one before it. Inside a block, in_blocks() is False:
    what `function` calls computes its block whole.
    """
    first = arrays[0]
    rows = first.shape[0] if type(first) is np.ndarray and first.ndim else 0
    if not rows or not in_blocks(first, first.size // rows, align):
        return map_rows(function, *arrays, align=align)
    block_rows = max(align, BLOCK_ELEMENTS // max(first.size // rows, 1) // align * align)
    starts = list(range(0, rows, block_rows))
    if len(starts) > 1 and rows - starts[-1] < align:
        starts.pop()
    blocks = list(zip(starts, starts[1:] + [rows]))

    def compute(start, stop):
        _inside.block = True
        try:
            return function(*(a[start:stop] for a in arrays))
        finally:
            _inside.block = False

    (start, stop), rest = blocks[0], blocks[1:]
    first_piece = compute(start, stop)  # the first block says what the results look like
    results = [np.empty((rows,) + p.shape[1:], p.dtype) for p in _as_tuple(first_piece)]
    for result, p in zip(results, _as_tuple(first_piece)):
        result[start:stop] = p
    parts = min(parts_for(first.size), len(rest))

    def part(index):
        for start, stop in rest[len(rest) * index // parts: len(rest) * (index + 1) // parts]:
            for result, p in zip(results, _as_tuple(compute(start, stop))):
                result[start:stop] = p

    run(part, parts)
    return tuple(results) if isinstance(first_piece, tuple) else results[0]


def _as_tuple(piece):
    return piece if isinstance(piece, tuple) else (piece,)


def for_each(function, items, sizes):
    """function(item) for every item, in order within pieces of the list that run at once; `sizes`
    (elements of work per item) balances the pieces. For work on many arrays of their own (an
    optimizer's step over the parameters)."""
    total = sum(sizes)
    parts = min(parts_for(total), len(items))
    if parts <= 1:
        for item in items:
            function(item)
        return
    starts, done = [0], 0
    for index, size in enumerate(sizes):  # cut the list where the running total passes 1/parts, 2/parts, ...
        done += size
        if len(starts) < parts and done * parts >= total * len(starts) and index + 1 < len(items):
            starts.append(index + 1)
    starts.append(len(items))

    def part(index):
        for item in items[starts[index]:starts[index + 1]]:
            function(item)

    run(part, len(starts) - 1)
