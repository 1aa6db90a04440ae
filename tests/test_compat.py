"""The names PyTorch programs use that a CPU engine only accepts: they behave as PyTorch's do on a
machine without CUDA, or refuse with a message that says what to do.

backends (flags kept, changing nothing), compile (the model itself), amp (autocast disabled with a
warning; GradScaler rule for rule against PyTorch's), cuda (CPU answers), distributed and
DistributedDataParallel (one process), DataParallel, half-precision dtypes (names whose tensors are
refused), from_numpy of a memmap, pin_memory and to(...) keywords, the optimizers' signatures, and a
training step written as nanoGPT writes it.
"""

import inspect
import sys
import types
import warnings
from contextlib import nullcontext

import numpy as np
import pytest

import tinyattn
import tinyattn.nn as nn
from tinyattn.errors import DeviceError

no_gpu = pytest.mark.skipif(tinyattn.cuda.is_available(), reason="tests the answers of a machine without a GPU")


# ---------------------------------------------------------------------------------------------
# backends, compile, set_float32_matmul_precision


def test_backend_flags_keep_what_is_set_and_start_from_pytorchs_defaults(torch):
    for path in ("cuda.matmul.allow_tf32", "cudnn.allow_tf32", "cudnn.benchmark", "cudnn.deterministic",
                 "cudnn.enabled", "cuda.matmul.allow_fp16_reduced_precision_reduction"):
        ours, theirs = tinyattn.backends, torch.backends
        for part in path.split("."):
            ours, theirs = getattr(ours, part), getattr(theirs, part)
        assert ours == theirs, path
    assert tinyattn.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert tinyattn.backends.cudnn.is_available() is False
    before = tinyattn.backends.cuda.matmul.allow_tf32
    try:
        tinyattn.backends.cuda.matmul.allow_tf32 = True
        tinyattn.backends.cudnn.benchmark = True
        assert tinyattn.backends.cuda.matmul.allow_tf32 is True and tinyattn.backends.cudnn.benchmark is True
        with pytest.raises(AttributeError, match="Unknown attribute allow_tf23"):  # a typo is not kept
            tinyattn.backends.cuda.matmul.allow_tf23 = True
    finally:
        tinyattn.backends.cuda.matmul.allow_tf32 = before
        tinyattn.backends.cudnn.benchmark = False


def test_float32_matmul_precision_is_kept_and_changes_no_number():
    a, b = tinyattn.randn(16, 16), tinyattn.randn(16, 16)
    exact = (a @ b).numpy()
    assert tinyattn.get_float32_matmul_precision() == "highest"
    try:
        tinyattn.set_float32_matmul_precision("high")
        assert tinyattn.get_float32_matmul_precision() == "high"
        np.testing.assert_array_equal((a @ b).numpy(), exact)
        with pytest.raises(ValueError, match="'low' is not one of"):
            tinyattn.set_float32_matmul_precision("low")
    finally:
        tinyattn.set_float32_matmul_precision("highest")


def test_compile_returns_the_model_itself():
    model = nn.Linear(2, 3)
    assert tinyattn.compile(model) is model
    assert tinyattn.compile(model, mode="max-autotune", fullgraph=True, dynamic=False) is model

    @tinyattn.compile
    def double(x):
        return 2 * x

    @tinyattn.compile(mode="reduce-overhead")
    def triple(x):
        return 3 * x

    assert double(tinyattn.ones(1)).item() == 2 and triple(tinyattn.ones(1)).item() == 3
    assert not tinyattn.compiler.is_compiling()
    with pytest.raises(RuntimeError, match="Unrecognized mode='fastest'"):
        tinyattn.compile(model, mode="fastest")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        tinyattn.compile(model, mode="default", options={})


# ---------------------------------------------------------------------------------------------
# half-precision dtypes: names that exist, tensors that are refused


def test_half_precision_dtypes_exist_print_and_compare_like_pytorchs(torch):
    assert repr(tinyattn.float16) == "tinyattn.float16" and repr(tinyattn.bfloat16) == "tinyattn.bfloat16"
    assert tinyattn.half is tinyattn.float16 and tinyattn.float16 != tinyattn.bfloat16
    assert (tinyattn.float16.itemsize, tinyattn.bfloat16.itemsize) == (torch.float16.itemsize, torch.bfloat16.itemsize)
    assert tinyattn.float16.is_floating_point and tinyattn.bfloat16.is_floating_point
    table = {"float32": tinyattn.float32, "bfloat16": tinyattn.bfloat16, "float16": tinyattn.float16}
    assert table["float16"] is tinyattn.float16  # nanoGPT's lookup


@pytest.mark.parametrize("make", [
    lambda dt: tinyattn.zeros(2, dtype=dt),
    lambda dt: tinyattn.tensor([1.0], dtype=dt),
    lambda dt: tinyattn.randn(3, dtype=dt),
    lambda dt: tinyattn.arange(3, dtype=dt),
    lambda dt: tinyattn.ones(2).to(dt),
    lambda dt: tinyattn.ones(2).to("cpu", dt),
    lambda dt: nn.Linear(2, 2).to(dt),
])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_tensors_are_refused_with_what_to_do(make, dtype):
    with pytest.raises(TypeError, match=f"float32 and float64 only, so it cannot make a {dtype} tensor: use "
                                        r"float32 \(for a script with a --dtype option, run it with --dtype=float32\)"):
        make(getattr(tinyattn, dtype))


def test_half_methods_are_refused_and_leave_the_module_as_it_was():
    layer = nn.Linear(2, 2)
    weight = layer.weight.detach().clone()
    for convert in (layer.half, layer.bfloat16, tinyattn.ones(2).half, tinyattn.ones(2).bfloat16):
        with pytest.raises(TypeError, match="cannot make a"):
            convert()
    assert layer.weight.dtype is tinyattn.float32 and bool((layer.weight == weight).all())


# ---------------------------------------------------------------------------------------------
# from_numpy, pin_memory, to(...)


def test_from_numpy_takes_a_memmap_and_shares_its_memory(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(10, dtype=np.uint16).tofile(path)
    data = np.memmap(path, dtype=np.uint16, mode="r")
    window = data[2:6].astype(np.int64)  # a memmap still: nanoGPT's get_batch
    assert isinstance(window, np.memmap)
    x = tinyattn.from_numpy(window)
    assert x.tolist() == [2, 3, 4, 5] and (x + 1).tolist() == [3, 4, 5, 6]
    assert tinyattn.stack([tinyattn.from_numpy(data[i:i + 2].astype(np.int64)) for i in (0, 3)]).tolist() == [[0, 1], [3, 4]]
    writable = np.memmap(tmp_path / "w.bin", dtype=np.float32, mode="w+", shape=(3,))
    tinyattn.from_numpy(writable)[1] = 7.0  # the write reaches the file's memory, as in PyTorch
    assert writable.tolist() == [0.0, 7.0, 0.0]
    with pytest.raises(TypeError, match="tinyattn has no dtype uint16"):
        tinyattn.from_numpy(data)
    with pytest.raises(TypeError, match="from_numpy expects a NumPy array, got list"):
        tinyattn.from_numpy([1, 2])


@no_gpu
def test_pin_memory_raises_without_an_accelerator_as_pytorch_does(torch):
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available.") as ours:
        tinyattn.ones(2).pin_memory()
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(2).pin_memory()
    assert str(ours.value) == str(theirs.value)
    assert tinyattn.ones(2).is_pinned() is False


def test_to_takes_pytorchs_keywords():
    x = tinyattn.ones(2)
    assert x.to("cpu", non_blocking=True) is x and x.to(tinyattn.float32, non_blocking=False) is x
    copied = x.to("cpu", copy=True)
    assert copied is not x and copied.tolist() == [1.0, 1.0]
    assert x.to(dtype=tinyattn.float64, copy=True).dtype is tinyattn.float64
    assert nn.Linear(2, 2).to("cpu", non_blocking=True).weight.device == "cpu"
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtpye'"):
        x.to(dtpye=tinyattn.float64)
    with pytest.raises(TypeError, match="unexpected keyword argument 'copy'"):
        nn.Linear(2, 2).to("cpu", copy=True)


# ---------------------------------------------------------------------------------------------
# cuda, distributed, parallel


@no_gpu
def test_cuda_answers_as_pytorch_without_cuda(torch):
    for name in ("is_available", "is_bf16_supported", "device_count", "memory_allocated", "max_memory_allocated",
                 "memory_reserved", "empty_cache"):
        assert getattr(tinyattn.cuda, name)() == getattr(torch.cuda, name)(), name
    tinyattn.cuda.reset_peak_memory_stats()  # nothing to reset (PyTorch's CPU build fails inside here)
    for name in ("synchronize", "current_device", "get_device_name", "get_device_capability"):
        with pytest.raises(DeviceError, match=f"tinyattn.cuda.{name}\\(\\) needs a CUDA GPU and none is available"):
            getattr(tinyattn.cuda, name)()
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            getattr(torch.cuda, name)()


@no_gpu
def test_cuda_answers_from_cupy_where_it_sees_a_gpu(monkeypatch):
    """With a stand-in for CuPy (this machine has no GPU): the answers come from CuPy's calls."""
    calls = []

    class Device:
        def __init__(self, index=1):
            self.id, self.compute_capability = index, "90"

        def synchronize(self):
            calls.append(("synchronize", self.id))

    pool = types.SimpleNamespace(used_bytes=lambda: 1024, total_bytes=lambda: 4096,
                                 free_all_blocks=lambda: calls.append("free"))
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 2,
                                    getDeviceProperties=lambda index: {"name": f"GPU {index}".encode()})
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(Device=Device, runtime=runtime)
    cupy.get_default_memory_pool = lambda: pool
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(tinyattn.backend, "cuda_is_available", lambda: True)
    cuda = tinyattn.cuda
    assert cuda.is_available() and cuda.device_count() == 2 and cuda.current_device() == 1
    assert cuda.get_device_name() == "GPU 1" and cuda.get_device_name("cuda:0") == "GPU 0"
    assert cuda.get_device_capability() == (9, 0) and cuda.is_bf16_supported() is False
    cuda.synchronize()
    cuda.empty_cache()
    assert calls == [("synchronize", 1), "free"]
    assert (cuda.memory_allocated(), cuda.memory_reserved()) == (1024, 4096)
    with pytest.raises(NotImplementedError, match="CuPy keeps no peak"):
        cuda.max_memory_allocated()
    x = tinyattn.ones(2)
    assert x.pin_memory() is x


def test_cuda_manual_seed_leaves_the_cpu_stream_alone(torch):
    for lib in (tinyattn, torch):
        lib.manual_seed(0)
        first = lib.rand(2).tolist()
        lib.manual_seed(0)
        lib.cuda.manual_seed(123)
        lib.cuda.manual_seed_all(7)
        assert lib.rand(2).tolist() == first


def test_distributed_is_importable_and_refuses_a_process_group(torch):
    from tinyattn.distributed import destroy_process_group, init_process_group
    from tinyattn.nn.parallel import DistributedDataParallel as DDP

    assert tinyattn.distributed.is_available() is False and tinyattn.distributed.is_initialized() is False
    with pytest.raises(RuntimeError, match="tinyattn trains in one process.*without torchrun"):
        init_process_group(backend="nccl")
    for call in (destroy_process_group, tinyattn.distributed.get_rank, tinyattn.distributed.barrier,
                 lambda: tinyattn.distributed.all_reduce(tinyattn.ones(1), op=tinyattn.distributed.ReduceOp.SUM)):
        with pytest.raises(RuntimeError, match="no process group has been initialized"):
            call()
    with pytest.raises(RuntimeError, match="DistributedDataParallel needs a process group"):
        DDP(nn.Linear(2, 2), device_ids=[0])
    assert tinyattn.nn.parallel.DistributedDataParallel is DDP


def test_data_parallel_runs_the_module_and_prefixes_its_keys(torch):
    tinyattn.manual_seed(0)
    layer = nn.Linear(3, 2)
    wrapped = nn.parallel.DataParallel(layer)
    x = tinyattn.randn(4, 3)
    assert bool((wrapped(x) == layer(x)).all())
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert list(wrapped.state_dict()) == list(theirs.state_dict()) == ["module.weight", "module.bias"]


# ---------------------------------------------------------------------------------------------
# amp: autocast


@pytest.mark.parametrize("device_type, dtype, reason", [
    ("cpu", None, "tinyattn has no bfloat16 arithmetic"),
    ("cpu", "float16", "tinyattn has no float16 arithmetic"),
    pytest.param("cuda", "float16", "CUDA is not available.", marks=no_gpu),
])
def test_autocast_is_disabled_with_a_warning(device_type, dtype, reason):
    dtype = None if dtype is None else getattr(tinyattn, dtype)
    x = tinyattn.randn(3, 3)
    with pytest.warns(UserWarning, match=f"{reason}.*Disabling autocast: the region computes in the tensors' own dtypes"):
        context = tinyattn.autocast(device_type=device_type, dtype=dtype)
    with context:
        y = x @ x
        assert not tinyattn.is_autocast_enabled()
    assert y.dtype is tinyattn.float32
    assert tinyattn.amp.autocast is tinyattn.autocast


def test_autocast_disabled_by_the_caller_says_nothing_and_decorates():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scope = tinyattn.amp.autocast("cpu", enabled=False)

        @scope
        def square(x):
            return x * x

        assert square(tinyattn.tensor(3.0)).item() == 9.0
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        tinyattn.autocast(tinyattn.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'mps'"):
        tinyattn.autocast("mps")
    with pytest.raises(TypeError, match="requires a callable"):
        scope(3)


# ---------------------------------------------------------------------------------------------
# amp: GradScaler


@no_gpu
def test_gradscaler_for_cuda_without_cuda_disables_itself_with_pytorchs_warnings(torch):
    with pytest.warns() as ours:
        scaler = tinyattn.cuda.amp.GradScaler(enabled=True)
    with pytest.warns() as theirs:
        torch.cuda.amp.GradScaler(enabled=True)
    assert [w.category for w in ours] == [w.category for w in theirs] == [FutureWarning, UserWarning]
    assert str(ours[1].message) == str(theirs[1].message).replace("torch.", "tinyattn.")
    assert "Please use `tinyattn.amp.GradScaler('cuda', args...)` instead." in str(ours[0].message)
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    loss = tinyattn.tensor(2.0, requires_grad=True)
    assert scaler.scale(loss) is loss
    layer = nn.Linear(2, 1)
    optimizer = tinyattn.optim.SGD(layer.parameters(), lr=0.1)
    layer(tinyattn.ones(1, 2)).sum().backward()
    before = layer.weight.detach().clone()
    scaler.unscale_(optimizer)
    assert scaler.step(optimizer) is None  # optimizer.step()'s result
    scaler.update()
    np.testing.assert_allclose(layer.weight.detach().numpy(), (before - 0.1).numpy())


def scaled_training(lib, steps, **scaler_options):
    """A few SGD steps through an enabled GradScaler; some scales make the gradients overflow."""
    lib.manual_seed(0)
    model = lib.nn.Linear(4, 3)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", **scaler_options)
    x = lib.tensor(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32))
    record = []
    for step in range(steps):
        loss = (model(x) ** 2).mean() * (1e36 if step in (1, 2) else 1.0)  # overflows when scaled
        scaler.scale(loss).backward()
        if step % 2:
            scaler.unscale_(optimizer)  # the clipping pattern: unscale, clip, step
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        record.append((scaler.get_scale(), scaler.state_dict(), [p.detach().numpy().copy() for p in model.parameters()]))
    return record


def test_enabled_gradscaler_follows_pytorchs_rules(torch):
    options = dict(init_scale=2.0**100, growth_factor=3.0, backoff_factor=0.25, growth_interval=2)
    with np.errstate(over="ignore", invalid="ignore"):  # the overflows are the point (NumPy would warn)
        ours = scaled_training(tinyattn, 7, **options)
    theirs = scaled_training(torch, 7, **options)
    for (our_scale, our_state, our_params), (scale, state, params) in zip(ours, theirs):
        assert our_scale == scale and our_state == state
        for mine, reference in zip(our_params, params):
            np.testing.assert_allclose(mine, reference, rtol=1e-6, atol=1e-7)
    assert len({r[0] for r in ours}) > 2  # the scale went down and up


def test_gradscaler_state_and_misuse_as_in_pytorch(torch):
    for lib, misuse in ((tinyattn, RuntimeError), (torch, AssertionError)):  # PyTorch asserts here
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0)
        assert scaler.is_enabled() and scaler.get_scale() == 8.0
        assert scaler.state_dict() == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                       "growth_interval": 2000, "_growth_tracker": 0}
        model = lib.nn.Linear(2, 1)
        optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
        with pytest.raises(misuse, match="Attempted step but _scale is None"):
            scaler.step(optimizer)
        scaler.scale(model(lib.ones(1, 2)).sum()).backward()
        scaler.unscale_(optimizer)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            scaler.unscale_(optimizer)
        scaler.step(optimizer)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            scaler.step(optimizer)
        scaler.update(new_scale=4.0)
        other = lib.amp.GradScaler("cpu")
        other.load_state_dict(scaler.state_dict())
        assert other.get_scale() == 4.0
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            other.load_state_dict({})


# ---------------------------------------------------------------------------------------------
# optimizers: PyTorch's signatures


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_optimizer_signatures_and_groups_are_pytorchs(torch, name):
    ours = inspect.signature(getattr(tinyattn.optim, name)).parameters
    theirs = inspect.signature(getattr(torch.optim, name)).parameters
    assert list(ours) == list(theirs)
    assert all(ours[n].default == theirs[n].default for n in ours if n != "params"), name
    group = getattr(tinyattn.optim, name)([nn.Parameter(tinyattn.zeros(2))]).param_groups[0]
    reference = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    assert list(group) == list(reference)
    assert {k: v for k, v in group.items() if k != "params"} == {k: v for k, v in reference.items() if k != "params"}


def test_nanogpts_fused_check_and_implementation_options():
    assert "fused" in inspect.signature(tinyattn.optim.AdamW).parameters
    params = [nn.Parameter(tinyattn.ones(2))]
    assert tinyattn.optim.AdamW(params, fused=True, capturable=True).param_groups[0]["fused"] is True
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        tinyattn.optim.AdamW(params, fused=True, foreach=True)
    with pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        tinyattn.optim.SGD(params, differentiable=True)


def test_adam_with_decoupled_weight_decay_is_adamw(torch):
    results = []
    for lib in (tinyattn, torch):
        lib.manual_seed(0)
        a, b = lib.nn.Linear(3, 2), lib.nn.Linear(3, 2)
        b.load_state_dict(a.state_dict())
        opt_a = lib.optim.Adam(a.parameters(), lr=0.1, weight_decay=0.5, decoupled_weight_decay=True)
        opt_b = lib.optim.AdamW(b.parameters(), lr=0.1, weight_decay=0.5)
        for model, opt in ((a, opt_a), (b, opt_b)):
            for _ in range(3):
                model(lib.ones(1, 3)).sum().backward()
                opt.step()
                opt.zero_grad()
        results.append([p.detach().numpy().copy() for p in (*a.parameters(), *b.parameters())])
    ours, theirs = results
    for mine, twin in zip(ours[:2], ours[2:]):
        np.testing.assert_array_equal(mine, twin)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# a training step as nanoGPT writes it


def nanogpt_steps(lib, compat):
    """Three steps of a tiny model, with nanoGPT's calls (compat=True) or without them."""
    lib.manual_seed(1337)
    model = lib.nn.Sequential(lib.nn.Embedding(10, 8), lib.nn.Linear(8, 10))
    optimizer = lib.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.99))
    if compat:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the GradScaler's warnings, tested above
            scaler = lib.cuda.amp.GradScaler(enabled=True)
        model = lib.compile(model)
        ctx = nullcontext()
    losses = []
    for step in range(3):
        ix = lib.randint(10, (4, 5))
        with ctx if compat else nullcontext():
            logits = model(ix)
            loss = lib.nn.functional.cross_entropy(logits.view(-1, 10), ix.view(-1), ignore_index=-1)
        if compat:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


@no_gpu
def test_nanogpts_training_calls_change_nothing_and_match_pytorch(torch):
    plain = nanogpt_steps(tinyattn, compat=False)
    assert nanogpt_steps(tinyattn, compat=True) == plain
    np.testing.assert_allclose(plain, nanogpt_steps(torch, compat=False), rtol=1e-5)
    assert hasattr(tinyattn.nn.functional, "scaled_dot_product_attention")
