"""Fetching one batch (or one sample) from a dataset, the same in the main process and in workers."""


class MapDatasetFetcher:
    """Reads `dataset[i]` for each index of a batch (or `dataset.__getitems__(indices)` where the
    dataset has it) and collates them; without batching, reads one index."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if getattr(self.dataset, "__getitems__", None):
            return self.collate_fn(self.dataset.__getitems__(index))
        return self.collate_fn([self.dataset[i] for i in index])


class IterableDatasetFetcher:
    """Takes the next `len(index)` samples from the dataset's iterator (one without batching);
    raises StopIteration when the stream is done, or when it left a short batch and drop_last is set."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        samples = []
        for _ in index:
            try:
                samples.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not samples or (self.drop_last and len(samples) < len(index)):
            raise StopIteration
        return self.collate_fn(samples)


def create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last):
    fetcher = IterableDatasetFetcher if is_iterable else MapDatasetFetcher
    return fetcher(dataset, auto_collation, collate_fn, drop_last)
