"""tinyattn.utils.data against torch.utils.data: the same batches, in the same order, from the same
draws, so that after the same manual_seed everything drawn afterwards is PyTorch's too."""

import collections
import os
import pickle
import random as python_random
import time
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tinyattn
from tinyattn.errors import ShapeError
from tinyattn.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    get_worker_info,
    random_split,
)

seeds = st.integers(0, 2**32 - 1)


def plain(value):
    """A batch as nested Python values, with each tensor's dtype named without its library."""
    if hasattr(value, "dtype") and hasattr(value, "tolist") and not isinstance(value, np.ndarray):
        return ("tensor", str(value.dtype).split(".")[-1], list(value.shape), value.tolist())
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__,) + tuple(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(v) for v in value])
    if isinstance(value, dict):
        return ("dict", {key: plain(v) for key, v in value.items()})
    return value


def both(torch):
    return [(tinyattn, tinyattn.utils.data), (torch, torch.utils.data)]


class Rows:
    """A map-style dataset of (tensor, int, float, str) samples, written for either library."""

    def __init__(self, lib, n):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.lib.tensor([i, -i]), i, i / 2, f"s{i}"


# ---------------------------------------------------------------- batch order, against PyTorch


@st.composite
def sampler_specs(draw, n):
    kind = draw(st.sampled_from(["sequential", "random", "subset", "weighted"]))
    generator = draw(st.none() | seeds)
    if kind == "random":
        return kind, draw(st.booleans()), draw(st.none() | st.integers(1, 3 * n + 5)), generator
    if kind == "subset":
        return kind, draw(st.lists(st.integers(0, n - 1), max_size=n)), generator
    if kind == "weighted":
        replacement = draw(st.booleans())
        weights = draw(st.lists(st.floats(0.1, 10), min_size=n, max_size=n))
        num_samples = draw(st.integers(1, 2 * n if replacement else n))
        return kind, weights, num_samples, replacement, generator
    return (kind,)


@st.composite
def loader_cases(draw):
    n = draw(st.integers(1, 25))
    case = dict(n=n, seed=draw(seeds), epochs=draw(st.integers(1, 2)), generator=draw(st.none() | seeds),
                stop_after=draw(st.none() | st.integers(0, 3)),
                kind=draw(st.sampled_from(["plain", "sampler", "batch_sampler"])))
    if case["kind"] == "plain":
        case["batch_size"] = draw(st.none() | st.integers(1, 8))
        case["shuffle"] = draw(st.booleans())
        case["drop_last"] = case["batch_size"] is not None and draw(st.booleans())
    else:
        case["sampler"] = draw(sampler_specs(n))
        case["batch_size"] = draw(st.integers(1, 8))
        case["drop_last"] = draw(st.booleans())
    return case


def build_loader(lib, data, case, generators):
    dataset = Rows(lib, case["n"])
    loader_generator = None if case["generator"] is None else lib.Generator().manual_seed(case["generator"])
    if loader_generator is not None:
        generators.append(loader_generator)
    if case["kind"] == "plain":
        return data.DataLoader(dataset, batch_size=case["batch_size"], shuffle=case["shuffle"],
                               drop_last=case["drop_last"], generator=loader_generator)
    spec = case["sampler"]
    sampler_generator = None
    if spec[0] != "sequential" and spec[-1] is not None:
        sampler_generator = lib.Generator().manual_seed(spec[-1])
        generators.append(sampler_generator)
    if spec[0] == "sequential":
        sampler = data.SequentialSampler(dataset)
    elif spec[0] == "random":
        sampler = data.RandomSampler(dataset, replacement=spec[1], num_samples=spec[2], generator=sampler_generator)
    elif spec[0] == "subset":
        sampler = data.SubsetRandomSampler(spec[1], generator=sampler_generator)
    else:
        sampler = data.WeightedRandomSampler(spec[1], spec[2], replacement=spec[3], generator=sampler_generator)
    if case["kind"] == "sampler":
        return data.DataLoader(dataset, batch_size=case["batch_size"], sampler=sampler, drop_last=case["drop_last"],
                               generator=loader_generator)
    batches = data.BatchSampler(sampler, case["batch_size"], case["drop_last"])
    return data.DataLoader(dataset, batch_sampler=batches, generator=loader_generator)


def run_case(lib, data, case):
    """Everything the case's loader gives, its length, and what the generators draw afterwards."""
    lib.manual_seed(case["seed"])
    generators = []
    loader = build_loader(lib, data, case, generators)
    epochs = []
    for epoch in range(case["epochs"]):
        batches = []
        for batch in loader:
            if epoch == 0 and case["stop_after"] is not None and len(batches) == case["stop_after"]:
                break  # a loop left early: only what was drawn so far has been drawn
            batches.append(plain(batch))
        epochs.append(batches)
    after = [lib.rand(3).tolist()] + [lib.rand(2, generator=g).tolist() for g in generators]
    return epochs, len(loader), after


@given(case=loader_cases())
def test_dataloader_matches_torch(torch, case):
    got = run_case(tinyattn, tinyattn.utils.data, case)
    want = run_case(torch, torch.utils.data, case)
    assert got[0] == want[0]  # the batches, epoch by epoch
    assert got[1] == want[1]  # len(loader)
    assert got[2] == want[2]  # the default generator and every generator given: in the same state


def test_shuffle_without_generator_draws_two_seeds_from_the_default_stream(torch):
    """An epoch of shuffle=True moves the global stream by two 64-bit seeds (four 32-bit draws):
    the iterator's base seed, then the sampler's seed. Dropout masks drawn afterwards depend on it."""
    for lib in (tinyattn, torch):
        lib.manual_seed(5)
        list(lib.utils.data.DataLoader(list(range(10)), batch_size=3, shuffle=True))
        after_epoch = lib.rand(2).tolist()
        lib.manual_seed(5)
        lib.randint(0, 2, (4,))  # four 32-bit draws
        assert lib.rand(2).tolist() == after_epoch


def test_iterator_draws_its_base_seed_when_made_and_the_sampler_at_the_first_batch(torch):
    results = []
    for lib in (tinyattn, torch):
        lib.manual_seed(11)
        iterator = iter(lib.utils.data.DataLoader(list(range(6)), batch_size=2, shuffle=True))
        between = lib.rand(1).tolist()  # after the base seed, before the sampler's seed
        results.append((between, [b.tolist() for b in iterator], lib.rand(1).tolist()))
    assert results[0] == results[1]


# ---------------------------------------------------------------- the book's ch02 pattern


def token_windows(data):
    """A Dataset of (input, target) windows of `max_length` token ids, `stride` apart, the target
    being the input shifted by one token: the kind of dataset chapter 2 of the book builds."""

    class TokenWindows(data.Dataset):
        def __init__(self, lib, token_ids, max_length, stride):
            starts = range(0, len(token_ids) - max_length, stride)
            self.inputs = [lib.tensor(token_ids[s:s + max_length]) for s in starts]
            self.targets = [lib.tensor(token_ids[s + 1:s + max_length + 1]) for s in starts]

        def __len__(self):
            return len(self.inputs)

        def __getitem__(self, i):
            return self.inputs[i], self.targets[i]

    return TokenWindows


@pytest.mark.parametrize("max_length, stride", [(4, 4), (256, 128), (4, 1)])
def test_token_windows_like_the_book(torch, max_length, stride):
    token_ids = np.random.RandomState(0).randint(0, 50257, size=2000).tolist()
    runs = []
    for lib, data in both(torch):
        dataset = token_windows(data)(lib, token_ids, max_length, stride)
        lib.manual_seed(123)
        loader = data.DataLoader(dataset, batch_size=8, shuffle=True, drop_last=True, num_workers=0)
        epochs = [[(x.tolist(), y.tolist()) for x, y in loader] for _ in range(2)]
        embedding = lib.nn.Embedding(50257, 4)  # what a training script draws next
        runs.append((epochs, len(loader), embedding.weight[:3].tolist(), lib.rand(3).tolist()))
    assert runs[0] == runs[1]
    first_inputs, first_targets = runs[0][0][0][0]
    assert len(first_inputs) == 8 and len(first_inputs[0]) == max_length
    assert all(x[1:] == y[:-1] for x, y in zip(first_inputs, first_targets))


# ---------------------------------------------------------------- collation


Point = collections.namedtuple("Point", ["x", "y"])


def nested_samples(lib, n):
    return [
        {"ids": lib.tensor([i, i + 1]), "pair": (np.array([i, 2 * i], dtype=np.int32), float(i) + 0.5),
         "point": Point(i, np.float32(i) / 4), "name": f"w{i}", "raw": bytes([65 + i]), "flag": i % 2 == 0,
         "nested": [[i, -i], {"deep": np.float64(i)}], "scalar64": np.int64(i), "bools": np.array([True, i > 1])}
        for i in range(n)
    ]


def test_default_collate_of_nested_structures_matches_torch(torch):
    got = plain(default_collate(nested_samples(tinyattn, 3)))
    want = plain(torch.utils.data.default_collate(nested_samples(torch, 3)))
    assert got == want


@pytest.mark.parametrize("batch", [
    [1, 2, 3], [1.5, 2.0], [1, 2.5], [True, False], ["a", "b"], [(1, "a"), (2, "b")], [[1, 2], [3, 4]],
    [np.float32(1), np.float32(2)], [np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]])], [{"a": 1}, {"a": 2}],
    [Point(1.0, 2), Point(3.0, 4)],
])
def test_default_collate_of_simple_batches_matches_torch(torch, batch):
    assert plain(default_collate(batch)) == plain(torch.utils.data.default_collate(batch))


def test_without_batching_numpy_becomes_tensors_and_nothing_is_stacked(torch):
    class Samples:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"x": np.arange(i, i + 2), "label": i, "pair": (np.float64(i), "t")}

    got = [plain(b) for b in DataLoader(Samples(), batch_size=None)]
    want = [plain(b) for b in torch.utils.data.DataLoader(Samples(), batch_size=None)]
    assert got == want


def test_collate_errors_name_what_does_not_fit():
    with pytest.raises(ShapeError, match=r"sample 0 has shape \[3\] and sample 2 has shape \[2\]"):
        default_collate([tinyattn.zeros(3), tinyattn.zeros(3), tinyattn.zeros(2)])
    with pytest.raises(ShapeError, match=r"\[2, 2\].*\[2, 3\]"):
        default_collate([np.zeros((2, 2)), np.zeros((2, 3))])
    with pytest.raises(RuntimeError, match=r"equal size.*lengths \[2, 3\]"):
        default_collate([[1, 2], [1, 2, 3]])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="<U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(KeyError, match="sample 1 of the batch has no key 'b'"):
        default_collate([{"a": 1, "b": 2}, {"a": 3}])


# ---------------------------------------------------------------- datasets and random_split


@given(seed=seeds, n=st.integers(0, 40), lengths=st.lists(st.integers(0, 12), min_size=1, max_size=4),
       use_generator=st.booleans())
def test_random_split_with_lengths_matches_torch(torch, seed, n, lengths, use_generator):
    lengths[-1] = max(0, n - sum(lengths[:-1]))
    results = []
    for lib, data in both(torch):
        lib.manual_seed(seed)
        generator = lib.Generator().manual_seed(seed + 1) if use_generator else None
        call = (lambda: data.random_split(range(n), lengths, generator=generator)) if use_generator \
            else (lambda: data.random_split(range(n), lengths))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # lengths such as [1, 0] read as fractions: a split of 0 warns
                splits = call()
        except ValueError:
            results.append("ValueError")
            continue
        results.append(([list(s) for s in splits], lib.rand(2).tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("fractions", [[0.8, 0.2], [0.3, 0.3, 0.4], [1 / 3] * 3, [0.05, 0.95], [0.5, 0.5, 0.0]])
def test_random_split_with_fractions_matches_torch(torch, fractions):
    results = []
    for lib, data in both(torch):
        lib.manual_seed(42)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a split of length 0 warns, in both
            splits = data.random_split(range(17), fractions)
        results.append(([list(s) for s in splits], [len(s) for s in splits], lib.rand(2).tolist()))
    assert results[0] == results[1]


def test_random_split_errors():
    with pytest.raises(ValueError, match=r"sum to 9, but the dataset has 10 samples"):
        random_split(range(10), [4, 5])
    with pytest.raises(ValueError, match="fraction at index 0 is 1.5, not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])


def test_dataset_wrappers_match_torch(torch):
    results = []
    for lib, data in both(torch):
        t = data.TensorDataset(lib.arange(6), lib.arange(6) * 10)
        concat = data.ConcatDataset([t, data.Subset(t, [5, 0, 3])])
        stack = data.StackDataset(a=range(4), b="wxyz")

        class Numbers(data.IterableDataset):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(self.n))

            def __len__(self):
                return self.n

        chain = Numbers(3) + Numbers(2)
        results.append((len(concat), [plain(concat[i]) for i in range(-len(concat), len(concat))],
                        plain(concat.cumulative_sizes), [plain(stack[i]) for i in range(4)],
                        list(chain), len(chain), plain(data.Subset(t, [4, 1]).__getitems__([1, 0]))))
    assert results[0] == results[1]


def test_tensor_dataset_needs_one_first_dimension():
    with pytest.raises(ShapeError, match=r"\[3\], \[4, 2\]"):
        TensorDataset(tinyattn.zeros(3), tinyattn.zeros(4, 2))


def test_subclassed_dataset_and_getitems():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i * i

        def __getitems__(self, indices):
            return [-i for i in indices]  # used for whole batches, as in PyTorch

    assert [b.tolist() for b in DataLoader(Squares(), batch_size=2)] == [[0, -1], [-2, -3], [-4]]
    assert list(DataLoader(Squares(), batch_size=None)) == [0, 1, 4, 9, 16]  # not batched: no tensors
    with pytest.raises(NotImplementedError, match="__getitem__"):
        Dataset()[0]


# ---------------------------------------------------------------- iterable datasets


class Count(IterableDataset):
    def __init__(self, n, with_len=True):
        self.n, self.with_len = n, with_len

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))  # each worker its share

    def __len__(self):
        if not self.with_len:
            raise TypeError("no length")
        return self.n


@pytest.mark.parametrize("batch_size, drop_last", [(None, False), (1, False), (3, False), (3, True), (4, True)])
def test_iterable_dataset_batches_match_torch(torch, batch_size, drop_last):
    results = []
    for lib, data in both(torch):
        class Stream(data.IterableDataset):
            def __iter__(self):
                return iter(range(10))

        lib.manual_seed(1)
        loader = data.DataLoader(Stream(), batch_size=batch_size, drop_last=drop_last)
        results.append(([plain(b) for b in loader], [plain(b) for b in loader], lib.rand(2).tolist()))
    assert results[0] == results[1]


class TooLong(IterableDataset):
    def __iter__(self):
        return iter(range(8))

    def __len__(self):
        return 5


def test_iterable_dataset_longer_than_its_len_warns():
    assert len(DataLoader(TooLong(), batch_size=2)) == 3
    assert len(DataLoader(TooLong(), batch_size=2, drop_last=True)) == 2
    loader = DataLoader(TooLong(), batch_size=None)
    assert len(loader) == 5
    with pytest.warns(UserWarning, match="reported to be 5"):
        assert len(list(loader)) == 8


# ---------------------------------------------------------------- argument checks, as PyTorch's


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=2, batch_sampler=[[0, 1]]), dict(shuffle=True, batch_sampler=[[0, 1]]),
    dict(drop_last=True, batch_sampler=[[0, 1]]), dict(sampler=[0, 1], shuffle=True),
    dict(batch_size=None, drop_last=True), dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
    dict(persistent_workers=True), dict(multiprocessing_context="fork"), dict(batch_size=0), dict(batch_size=1.5),
])
def test_argument_errors_match_torch(torch, kwargs):
    with pytest.raises(ValueError) as want:
        torch.utils.data.DataLoader(list(range(4)), **kwargs)
    with pytest.raises(type(want.value)):
        DataLoader(list(range(4)), **kwargs)


@pytest.mark.parametrize("kwargs", [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])])
def test_iterable_dataset_refuses_samplers(torch, kwargs):
    for lib, data in both(torch):
        class Stream(data.IterableDataset):
            def __iter__(self):
                return iter(range(3))

        with pytest.raises(ValueError, match="IterableDataset"):
            data.DataLoader(Stream(), **kwargs)


def test_sampler_argument_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(SequentialSampler(range(3)), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(SequentialSampler(range(3)), 2, None)
    with pytest.raises(ValueError, match="empty dataset"):
        list(RandomSampler([], num_samples=3))


def test_loader_attributes_are_fixed_after_init():
    loader = DataLoader(range(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 3
    loader.num_workers = 0  # others may change, as in PyTorch


def test_len_and_reiteration():
    loader = DataLoader(range(10), batch_size=3, drop_last=True)
    assert len(loader) == 3 and len(iter(loader)) == 3
    assert [b.tolist() for b in loader] == [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


def test_pin_memory_is_accepted():
    loader = DataLoader(range(4), batch_size=2, pin_memory=True)
    if tinyattn.cuda.is_available():
        assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
    else:
        with pytest.warns(UserWarning, match="no accelerator is found"):
            assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]


# ---------------------------------------------------------------- worker processes


class NoisyRows:
    """Samples that draw from tinyattn/torch, NumPy and Python's random inside the worker."""

    def __init__(self, lib, n):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = self.lib.utils.data.get_worker_info()
        return (self.lib.tensor([float(i)]) + self.lib.rand(1), info.id, info.seed, float(np.random.rand()),
                python_random.random())


def test_workers_give_torchs_batches_and_per_worker_randomness(torch):
    results = []
    for lib, data in both(torch):
        lib.manual_seed(3)
        epochs = [[plain(b) for b in data.DataLoader(NoisyRows(lib, 11), batch_size=3, shuffle=True, num_workers=2)]
                  for _ in range(2)]
        results.append((epochs, lib.rand(2).tolist()))
    assert results[0] == results[1]


def test_persistent_workers_match_torch(torch):
    results = []
    for lib, data in both(torch):
        lib.manual_seed(8)
        loader = data.DataLoader(NoisyRows(lib, 7), batch_size=2, shuffle=True, num_workers=2,
                                 persistent_workers=True, prefetch_factor=1)
        results.append(([[plain(b) for b in loader] for _ in range(3)], lib.rand(2).tolist()))
        del loader
    assert results[0] == results[1]


@pytest.mark.parametrize("num_workers, batch_size, drop_last",
                         [(2, 2, False), (3, 2, False), (2, 2, True), (2, None, False)])
def test_workers_with_an_iterable_dataset_match_torch(torch, num_workers, batch_size, drop_last):
    results = []
    for lib, data in both(torch):
        class Shares(data.IterableDataset):
            def __iter__(self):
                info = data.get_worker_info()
                return iter(range(info.id, 9 * (info.id + 1), info.num_workers))  # uneven shares

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # more workers than this machine's cores, maybe
            loader = data.DataLoader(Shares(), batch_size=batch_size, drop_last=drop_last, num_workers=num_workers)
            results.append([plain(b) for b in loader])
    assert results[0] == results[1]


def test_the_main_process_has_no_worker_info():
    assert get_worker_info() is None


def test_reachable_as_in_pytorch():
    import tinyattn.utils.data as data_module

    assert tinyattn.utils.data.DataLoader is DataLoader and data_module.default_collate is default_collate


def set_numpy_seed_from_worker(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    np.random.seed(worker_id + 100)


class WorkerIds:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return get_worker_info().id, int(np.random.randint(1000)), os.getpid()


def test_worker_init_fn_runs_in_each_worker_after_seeding():
    batches = list(DataLoader(WorkerIds(), batch_size=2, num_workers=2, worker_init_fn=set_numpy_seed_from_worker))
    assert [b[0].tolist() for b in batches] == [[0, 0], [1, 1]]
    assert batches[0][1].tolist() == np.random.RandomState(100).randint(1000, size=2).tolist()
    assert batches[1][1].tolist() == np.random.RandomState(101).randint(1000, size=2).tolist()
    assert os.getpid() not in [b[2][0].item() for b in batches]


class Failing:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError(f"no sample {i}")
        return i


def test_an_error_in_a_worker_is_raised_with_its_traceback():
    with pytest.raises(KeyError, match=r"(?s)Caught KeyError in DataLoader worker process 1.*no sample 2"):
        list(DataLoader(Failing(), batch_size=2, num_workers=2))


class Unpicklable:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return lambda: i


def test_a_batch_that_cannot_be_pickled_is_an_error_not_a_hang():
    with pytest.raises(Exception, match="Can't pickle.*lambda") as error:
        list(DataLoader(Unpicklable(), batch_size=None, num_workers=1))
    assert "while sending a batch to the main process (the batch must be picklable)" in str(error.value)


class Slow:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(1)
        return i


def test_timeout():
    with pytest.raises(RuntimeError, match="timed out after 0.2 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.2))


class Dying:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        os._exit(3)


def test_a_worker_that_dies_is_reported(monkeypatch):
    monkeypatch.setattr(tinyattn.utils.data.worker, "STATUS_CHECK_INTERVAL", 0.2)
    with pytest.raises(RuntimeError, match=r"pid\(s\) \d+ \(exit code 3\)\) exited unexpectedly"):
        list(DataLoader(Dying(), num_workers=1))


def test_workers_are_stopped_when_a_loop_is_left_early():
    iterator = iter(DataLoader(range(100), batch_size=2, num_workers=2))
    next(iterator)
    workers = iterator._workers
    del iterator
    for w in workers:
        w.join(timeout=10)
    assert not any(w.is_alive() for w in workers)


def test_the_worker_seeds_are_torchs(torch):
    from torch.utils.data._utils.worker import _generate_state

    from tinyattn.utils.data.worker import worker_seeds

    for base_seed, worker_id in [(0, 0), (2**63 - 1, 7), (937055941807507096, 1), (123456789, 3)]:
        seed, numpy_state = worker_seeds(base_seed, worker_id)
        assert seed == base_seed + worker_id
        assert numpy_state.tolist() == _generate_state(base_seed, worker_id)


def test_iterators_cannot_be_pickled():
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(iter(DataLoader(range(3))))


def test_sampler_lengths():
    assert len(RandomSampler(range(5), num_samples=12)) == 12
    assert len(BatchSampler(RandomSampler(range(10)), 3, drop_last=False)) == 4
    assert len(Subset(range(10), [1, 2])) == 2 and ConcatDataset([range(3), range(4)])[-1] == 3
    assert len(DataLoader(Count(7), batch_size=2, drop_last=True)) == 3


def test_spawned_workers_and_what_they_cannot_be_given():
    dataset = TensorDataset(tinyattn.arange(6), tinyattn.arange(6) * 2)
    loader = DataLoader(dataset, batch_size=2, num_workers=2, multiprocessing_context="spawn")
    assert [[x.tolist() for x in batch] for batch in loader] == [[[0, 1], [0, 2]], [[2, 3], [4, 6]], [[4, 5], [8, 10]]]
    dataset.transform = lambda x: x  # spawn pickles the dataset: a lambda cannot go
    with pytest.raises(RuntimeError, match="'spawn' start method pickles the dataset.*cannot be pickled"):
        list(DataLoader(dataset, batch_size=2, num_workers=1, multiprocessing_context="spawn"))
