"""What runs in a DataLoader worker process, and what the worker and the main process send each other.

Each worker is seeded as PyTorch seeds its workers, from the loader's base seed (drawn when the
iterator is made) and the worker's id:

    seed = base_seed + worker_id          -> tinyattn.manual_seed, Python's random.seed
    NumPy's legacy global generator       -> np.random.seed(SeedSequence([worker_id, base_seed % 2**32,
                                             base_seed // 2**32, 0]).generate_state(4))

so random augmentations drawn in a worker are PyTorch's too. The worker then calls
`worker_init_fn(worker_id)`, and fetches the batches whose indices it is sent, until it is told to stop.
"""

import dataclasses
import os
import pickle
import queue
import random as python_random
import traceback

import numpy as np

from ... import random
from .fetch import create_fetcher

STATUS_CHECK_INTERVAL = 5.0  # seconds between checks that the other side is still alive


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: its id, the number of workers, its seed
    and its own copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info = None


def get_worker_info():
    """The `WorkerInfo` of the DataLoader worker this runs in; None in the main process."""
    return _worker_info


def worker_seeds(base_seed, worker_id):
    """The seed for tinyattn and Python's random, and the state NumPy's global generator is seeded with."""
    numpy_state = np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]).generate_state(4)
    return base_seed + worker_id, numpy_state


@dataclasses.dataclass(frozen=True)
class IterableDatasetStopIteration:
    """A worker's answer when its copy of an IterableDataset is exhausted."""

    worker_id: int


@dataclasses.dataclass(frozen=True)
class ResumeIteration:
    """Sent to persistent workers when a new epoch starts: restart the dataset's iteration."""


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process and raised there again with
    the worker's traceback in its message."""

    def __init__(self, error, where):
        self.type_name = type(error).__name__
        self.exc_type = type(error) if _picklable(type(error)) else RuntimeError  # e.g. a class made in a function
        self.where = where
        self.traceback = "".join(traceback.format_exception(error))

    def reraise(self):
        message = f"Caught {self.type_name} {self.where}.\nOriginal {self.traceback}"
        try:
            error = self.exc_type(message)
        except Exception:
            raise RuntimeError(message) from None
        raise error


def _picklable(value):
    try:
        pickle.dumps(value)
        return True
    except Exception:
        return False


def pack(message, worker_id):
    """A worker's answer as bytes, pickled here so that data which cannot be pickled becomes an
    error in the main process (a queue's background thread would drop it, and the main process
    would wait forever)."""
    try:
        return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        wrapped = ExceptionWrapper(error, f"in DataLoader worker process {worker_id} while sending a batch "
                                          f"to the main process (the batch must be picklable)")
        return pickle.dumps((message[0], wrapped), protocol=pickle.HIGHEST_PROTOCOL)


def worker_loop(is_iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    """The body of a worker process: answer `(task, indices)` with `(task, batch)` until told to stop."""
    global _worker_info
    try:
        seed, numpy_state = worker_seeds(base_seed, worker_id)
        python_random.seed(seed)
        random.manual_seed(seed)
        np.random.seed(numpy_state)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_error = fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception as error:
            init_error = ExceptionWrapper(error, where)

        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:  # stop if the main process died
            try:
                message = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(message, ResumeIteration):
                data_queue.put(pack((message, None), worker_id))
                iteration_end = False
                fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if message is None:  # told to stop
                break
            if done_event.is_set() or iteration_end:
                continue  # nothing more to fetch; wait for the stop message
            task, indices = message
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(indices)
                except Exception as error:
                    if isinstance(error, StopIteration) and is_iterable:
                        data = IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(error, where)
            data_queue.put(pack((task, data), worker_id))
            del data, indices, message  # let go of the batch before waiting for the next task
    except KeyboardInterrupt:
        pass  # the main process sees it and shuts the workers down
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
