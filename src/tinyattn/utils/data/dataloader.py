"""DataLoader: batches from a dataset, in the order a sampler gives, as PyTorch's DataLoader makes them.

    loader = DataLoader(dataset, batch_size=8, shuffle=True, drop_last=True)
    for inputs, targets in loader:      # a new shuffle every time the loader is iterated
        ...

What is drawn from the random generators, and when, is PyTorch's, so that the batches, and every
number drawn after them, agree with PyTorch after the same `manual_seed`:

1. making an iterator (`iter(loader)`, the start of a `for` loop) draws a base seed for the workers
   from `generator` (the default generator when None), as PyTorch does even with `num_workers=0`;
2. the first batch starts the sampler (see sampler.py: `shuffle=True` without a generator draws a
   seed from the default generator and shuffles with a generator of its own).

With `num_workers > 0` batches are loaded in worker processes exactly as PyTorch loads them: the
batches of indices are handed to the workers in turn, at most `prefetch_factor * num_workers` ahead,
and come back in order; each worker is seeded as PyTorch seeds its workers (worker.py). The batches
are the ones `num_workers=0` gives.
"""

import itertools
import math
import multiprocessing
import numbers
import os
import pickle
import queue
import warnings
import weakref

from ... import backend, random
from . import worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .fetch import create_fetcher
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class _InfiniteConstantSampler(Sampler):
    """The sampler behind an IterableDataset: None forever (the dataset decides where it ends)."""

    def __iter__(self):
        return itertools.repeat(None)


class DataLoader:
    """Batches of samples from a map-style or iterable-style dataset.

    PyTorch's arguments and defaults: `dataset, batch_size=1, shuffle=None, sampler=None,
    batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
    timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None, *,
    prefetch_factor=None, persistent_workers=False, pin_memory_device="", in_order=True`.
    """

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral) or num_workers < 0:
            raise ValueError(f"num_workers option should be a non-negative int, got {num_workers!r}; "
                             f"use num_workers=0 to load in the main process")
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing: let "
                             "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor <= 0:
            raise ValueError(f"prefetch_factor option should be positive, got {prefetch_factor}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = int(num_workers)
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            # the stream decides the order: no shuffling or custom sampler
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")

        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called = None
        self._iterator = None
        self._initialized = True
        self._check_worker_number()

    @property
    def multiprocessing_context(self):
        """The multiprocessing context of the worker processes (None: the default)."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method "
                                     f"in {methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a "
                                f"string naming a start method, but got multiprocessing_context={context}")
        self._multiprocessing_context = context

    def __setattr__(self, name, value):
        if self._initialized and name in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized: "
                             f"make a new DataLoader")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterator takes indices from: the batch sampler when batching, else the sampler."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self._check_worker_number()
        return _MultiProcessingDataLoaderIter(self)

    def __len__(self):
        if not self._is_iterable:
            return len(self._index_sampler)
        # an IterableDataset's own length, in batches; the iterator warns if it yields more
        length = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
        return length

    def _check_worker_number(self):
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if self.num_workers and cpus and self.num_workers > cpus:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. Our "
                          f"suggested max number of worker in current system is {cpus}, which is smaller than "
                          f"what this DataLoader is going to create. Please be aware that excessive worker "
                          f"creation might get DataLoader running slow or even freeze, lower the worker "
                          f"number to avoid potential slowness/freeze if necessary.", stacklevel=3)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._collate_fn = loader.collate_fn
        self._timeout = loader.timeout
        self._persistent_workers = loader.persistent_workers
        if loader.pin_memory and not backend.cuda_is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device "
                          "pinned memory won't be used.", stacklevel=3)
        self._sampler_iter = iter(self._index_sampler)
        # drawn even when no worker uses it, as PyTorch does: it moves the generator on
        generator = random.default_generator if loader.generator is None else loader.generator
        self._base_seed = generator.draw_seed()
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._is_iterable and self._IterableDataset_len_called is not None \
                and self._num_yielded > self._IterableDataset_len_called:
            warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be "
                          f"{self._IterableDataset_len_called} (when accessing len(dataloader)), but "
                          f"{self._num_yielded} samples have been fetched.", stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise TypeError(f"{type(self).__name__} cannot be pickled: iterate the DataLoader where it was made")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._dataset_fetcher = create_fetcher(self._is_iterable, self._dataset, self._auto_collation,
                                               self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        return self._dataset_fetcher.fetch(index)  # may raise StopIteration


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Loads batches in `num_workers` processes, with PyTorch's bookkeeping.

    Tasks (one batch of indices each) are numbered in the order the sampler gives them and sent to
    the active workers in turn, at most `prefetch_factor * num_workers` outstanding; answers that
    arrive early wait in `_task_info` until the ones before them have been returned. A worker whose
    copy of an IterableDataset is exhausted answers IterableDatasetStopIteration and gets no more tasks.
    """

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._worker_result_queue = context.Queue()
        self._workers_done_event = context.Event()
        self._index_queues, self._workers, self._workers_status = [], [], []
        # Stops the workers when the iterator is done with, garbage or not, or when Python exits. It
        # holds the queues itself: were they part of the iterator's garbage, their pipes might be
        # closed before the workers are told to stop.
        self._stop_workers = weakref.finalize(self, _stop_workers, self._workers, self._index_queues,
                                              self._worker_result_queue, self._workers_done_event)
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()
            process = context.Process(
                target=worker.worker_loop, daemon=True,
                args=(self._is_iterable, self._dataset, index_queue, self._worker_result_queue,
                      self._workers_done_event, self._auto_collation, self._collate_fn, self._drop_last,
                      self._base_seed, loader.worker_init_fn, worker_id, self._num_workers))
            try:
                process.start()
            except (TypeError, AttributeError, pickle.PicklingError) as error:
                self._shutdown_workers()
                raise RuntimeError(f"could not start DataLoader worker {worker_id}: the '{context.get_start_method()}' "
                                   f"start method pickles the dataset, collate_fn and worker_init_fn, and one of "
                                   f"them cannot be pickled ({error}); define them at module level, or use "
                                   f"multiprocessing_context='fork' where it is available") from error
            self._index_queues.append(index_queue)
            self._workers.append(process)
            self._workers_status.append(True)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader)
        self._send_idx = 0  # number of the next task to send
        self._rcvd_idx = 0  # number of the next task to return
        self._task_info = {}  # task -> (worker,) while outstanding, (worker, data) once it came back early
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: restart their datasets, and wait until they have
            for index_queue in self._index_queues:
                index_queue.put(worker.ResumeIteration())
            resumed = 0
            while resumed < self._num_workers:
                task, _ = self._get_data()
                resumed += isinstance(task, worker.ResumeIteration)
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout=None):
        try:
            message = self._worker_result_queue.get(timeout=timeout or worker.STATUS_CHECK_INTERVAL)
            return True, pickle.loads(message)
        except queue.Empty:
            failed = [w for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
            if failed:
                for i, w in enumerate(self._workers):
                    if w in failed:
                        self._mark_worker_as_unavailable(i)
                pids = ", ".join(f"{w.pid} (exit code {w.exitcode})" for w in failed)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
            return False, None

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if not success:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self):
        while True:
            # skip tasks whose worker ended its stream (their answers will never come)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:  # it came back early
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            task, data = self._get_data()
            if isinstance(data, worker.IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if task != self._rcvd_idx:
                self._task_info[task] += (data,)
            else:
                worker_id = self._task_info.pop(task)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._send_idx += 1

    def _process_data(self, data, worker_id):
        self._try_put_index()
        if isinstance(data, worker.ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id):
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        self._stop_workers()  # runs once


def _stop_workers(workers, index_queues, result_queue, done_event):
    """Tell every worker to stop, wait a while for it, and end it if it has not stopped by then."""
    done_event.set()
    for process, index_queue in zip(workers, index_queues):
        if process.is_alive():
            index_queue.put(None)
    for process in workers:
        process.join(timeout=worker.STATUS_CHECK_INTERVAL)
    for index_queue in index_queues:
        index_queue.cancel_join_thread()
        index_queue.close()
    for process in workers:
        if process.is_alive():
            process.terminate()
            process.join(timeout=worker.STATUS_CHECK_INTERVAL)
