"""The CuPy backend on a real GPU (skipped without CuPy and a CUDA device).

The same ops run under array_api_strict in the rest of the suite; these tests check what only a GPU
shows: results equal to the CPU's, errors instead of CuPy's silent wrap-around, training on cuda.
"""

import numpy as np
import pytest

import tinyattn
from tinyattn import nn, optim
from tinyattn.app import models

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not tinyattn.cuda.is_available(), reason="needs CuPy and a CUDA GPU"),
]


def host(t):
    return t.detach().cpu().numpy()


def test_multihead_attention_forward_and_backward_match_the_cpu():
    tinyattn.manual_seed(0)
    mha = nn.MultiHeadAttention(16, 16, 12, 0.0, 4)
    x = tinyattn.randn(3, 12, 16, requires_grad=True)
    mha(x).sum().backward()
    cpu_grads = [host(p.grad) for p in mha.parameters()] + [host(x.grad)]
    cpu_out = host(mha(x))

    mha.zero_grad()
    mha.to("cuda")
    xc = x.detach().to("cuda").requires_grad_()
    out = mha(xc)
    assert out.device == "cuda:0"
    out.sum().backward()
    np.testing.assert_allclose(host(out), cpu_out, rtol=1e-4, atol=1e-5)
    for got, want in zip([host(p.grad) for p in mha.parameters()] + [host(xc.grad)], cpu_grads):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_seeded_initialisation_is_the_same_on_both_devices():
    tinyattn.manual_seed(789)
    cpu = nn.Linear(3, 2)
    tinyattn.manual_seed(789)
    gpu = nn.Linear(3, 2, device="cuda")
    np.testing.assert_array_equal(host(gpu.weight), host(cpu.weight))


def test_dropout_on_the_gpu_keeps_about_1_minus_p():
    tinyattn.manual_seed(0)
    y = nn.functional.dropout(tinyattn.ones(1000, 1000, device="cuda"), 0.3)
    kept = float((y != 0).float().mean())
    assert abs(kept - 0.7) < 0.01
    assert np.allclose(np.unique(host(y)), [0.0, 1 / 0.7])


def test_out_of_range_ids_and_indices_raise_instead_of_wrapping():
    emb = nn.Embedding(5, 3).to("cuda")
    with pytest.raises(IndexError, match="out of range"):
        emb(tinyattn.tensor([[1, 5]], device="cuda"))
    x = tinyattn.zeros(3, device="cuda")
    with pytest.raises(IndexError, match="out of bounds"):
        x[tinyattn.tensor([3], device="cuda")]


def test_mixing_devices_is_an_error():
    with pytest.raises(tinyattn.DeviceError, match="same device"):
        tinyattn.ones(2) + tinyattn.ones(2, device="cuda")


def test_a_gpt_trains_on_the_gpu():
    tinyattn.manual_seed(0)
    config = models.GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16, dropout=0.1)
    model = models.GPT(config).to("cuda")
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    x = tinyattn.randint(0, 11, (4, 8), device="cuda")
    losses = []
    for _ in range(30):
        _, loss = model(x, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.5


def test_cupy_arrays_become_gpu_tensors():
    import cupy

    t = tinyattn.tensor(cupy.arange(3.0))
    assert t.device == "cuda:0" and t.dtype is tinyattn.float64 and t.tolist() == [0.0, 1.0, 2.0]
    assert (tinyattn.ones(3, device="cuda", dtype=tinyattn.float64) + cupy.ones(3)).tolist() == [2.0] * 3


def test_detect_anomaly_follows_a_copy_off_the_gpu():
    x = tinyattn.ones(3, device="cuda", requires_grad=True)
    with tinyattn.detect_anomaly():
        y = x.cpu() * 2  # the copy's input is on the GPU, its output on the host
        y.sum().backward()
    assert x.grad.device == "cuda:0" and host(x.grad).tolist() == [2.0] * 3


def test_only_cupys_current_gpu_is_used():
    import cupy

    other = cupy.cuda.Device().id + 1
    with pytest.raises(tinyattn.DeviceError, match="CUDA_VISIBLE_DEVICES"):
        tinyattn.zeros(2, device=f"cuda:{other}")


def test_clamp_clipping_and_layer_norm_match_the_cpu():
    tinyattn.manual_seed(0)
    x = tinyattn.randn(4, 8) * 3
    xc = x.to("cuda")
    np.testing.assert_array_equal(host(xc.clamp(-1.0, 2.0)), host(x.clamp(-1.0, 2.0)))
    np.testing.assert_array_equal(host(xc.clamp(max=0.5)), host(x.clamp(max=0.5)))
    for dev in ("cpu", "cuda"):
        tinyattn.manual_seed(1)
        norm = nn.LayerNorm(8).to(dev)
        norm(x.to(dev) * 100).pow(2).sum().backward()
        total = nn.utils.clip_grad_norm_(norm.parameters(), 1.0)
        if dev == "cpu":
            want = [host(p.grad) for p in norm.parameters()], total.item()
    np.testing.assert_allclose(total.item(), want[1], rtol=1e-5)
    for got, expected in zip([host(p.grad) for p in norm.parameters()], want[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_a_zero_dim_cpu_tensor_works_with_gpu_tensors_as_a_number_does():
    x = tinyattn.ones(3, device="cuda", requires_grad=True)
    scale = tinyattn.tensor(2.0, requires_grad=True)  # 0-d, on the CPU
    y = x * scale
    assert y.device == "cuda:0" and (x > tinyattn.tensor(0.5)).all().item()
    y.sum().backward()
    assert scale.grad.device == "cpu" and scale.grad.item() == 3.0
    with pytest.raises(tinyattn.DeviceError, match="same device"):
        x + tinyattn.ones(3)  # a CPU tensor with dims is still an error
