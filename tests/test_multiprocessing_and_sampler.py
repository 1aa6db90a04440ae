"""tinyattn.multiprocessing and tinyattn.utils.data.distributed.DistributedSampler, as PyTorch's."""

import multiprocessing as python_multiprocessing

import pytest

import tinyattn
import tinyattn.multiprocessing as tmp
from tinyattn.utils.data import DataLoader
from tinyattn.utils.data.distributed import DistributedSampler


def test_multiprocessing_is_pythons_with_pytorchs_additions():
    assert tinyattn.multiprocessing is tmp
    for name in ["set_start_method", "get_start_method", "cpu_count", "Process", "Queue", "Pool", "get_context",
                 "Manager", "current_process", "freeze_support"]:
        assert getattr(tmp, name) is getattr(python_multiprocessing, name), name
    assert tmp.cpu_count() == python_multiprocessing.cpu_count()
    assert tmp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    tmp.set_sharing_strategy("file_system")
    assert tmp.get_sharing_strategy() == "file_system"
    tmp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="unknown sharing strategy 'shared'"):
        tmp.set_sharing_strategy("shared")


def test_multiprocessing_names_match_pytorchs(torch):
    import torch.multiprocessing as torch_mp

    wanted = {n for n in torch_mp.__all__} if hasattr(torch_mp, "__all__") else set()
    wanted |= {"spawn", "start_processes", "set_sharing_strategy", "get_sharing_strategy",
               "get_all_sharing_strategies", "set_start_method", "cpu_count"}
    missing = sorted(n for n in wanted if not hasattr(tmp, n))
    assert not missing, missing


def write_rank(rank, folder, text):
    (folder / f"rank{rank}.txt").write_text(f"{text} {rank}")


def fail_on_rank_one(rank):
    if rank == 1:
        raise SystemExit(3)


def test_spawn_runs_fn_with_the_process_index(tmp_path):
    tmp.spawn(write_rank, args=(tmp_path, "hello"), nprocs=2, start_method="fork")
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["hello 0", "hello 1"]


def test_spawn_says_which_process_failed():
    with pytest.raises(RuntimeError, match="process 1 of 2 .*fail_on_rank_one.* exited with code 3"):
        tmp.spawn(fail_on_rank_one, nprocs=2, start_method="fork")


def test_spawn_without_join_returns_the_processes(tmp_path):
    processes = tmp.spawn(write_rank, args=(tmp_path, "x"), nprocs=1, join=False, start_method="fork")
    for process in processes:
        process.join()
    assert (tmp_path / "rank0.txt").read_text() == "x 0"


CASES = [(n, replicas, shuffle, drop_last) for n in [1, 5, 10, 13] for replicas in [1, 2, 3, 4]
         for shuffle in [True, False] for drop_last in [True, False]]


@pytest.mark.parametrize("n, replicas, shuffle, drop_last", CASES)
def test_distributed_sampler_gives_pytorchs_indices(torch, n, replicas, shuffle, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=shuffle, seed=5,
                                  drop_last=drop_last)
        theirs = TorchSampler(data, num_replicas=replicas, rank=rank, shuffle=shuffle, seed=5, drop_last=drop_last)
        for epoch in [0, 1, 7]:
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs), (rank, epoch)
            assert len(ours) == len(theirs)


def test_one_process_without_num_replicas_and_rank(torch):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    data = list(range(11))
    ours = DistributedSampler(data)
    assert ours.num_replicas == 1 and ours.rank == 0
    assert list(ours) == list(TorchSampler(data, num_replicas=1, rank=0))
    assert sorted(ours) == data


def test_the_shards_cover_the_dataset_and_the_epoch_changes_the_order():
    data = list(range(10))
    shards = [list(DistributedSampler(data, num_replicas=3, rank=r, seed=1)) for r in range(3)]
    assert all(len(shard) == 4 for shard in shards)
    assert set(sum(shards, [])) == set(data)
    sampler = DistributedSampler(data, seed=1)
    first = list(sampler)
    assert list(sampler) == first  # same epoch, same order
    sampler.set_epoch(1)
    assert list(sampler) != first and sorted(sampler) == data


def test_bad_rank_and_num_replicas_say_what_is_wrong():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="num_replicas must be an integer >= 1, got 0"):
        DistributedSampler(range(4), num_replicas=0, rank=0)


def test_a_dataloader_takes_it_as_its_sampler():
    data = tinyattn.arange(8.0)
    loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, num_replicas=2, rank=1, shuffle=False))
    assert [batch.tolist() for batch in loader] == [[1.0, 3.0], [5.0, 7.0]]
