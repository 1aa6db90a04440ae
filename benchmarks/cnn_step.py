"""A training step of small CNNs on MNIST-sized images, tinyattn against PyTorch (CPU).

    python benchmarks/cnn_step.py [--batch 64] [--threads 1] [--rounds 7]

Models (float32, 1 x 28 x 28 inputs, cross-entropy, SGD with momentum):
- LeNet-5: Conv2d(1, 6, 5, padding=2), ReLU, MaxPool2d(2), Conv2d(6, 16, 5), ReLU, MaxPool2d(2),
  Linear(400, 120), ReLU, Linear(120, 84), ReLU, Linear(84, 10);
- the MNIST example's Net (pytorch/examples, mnist/main.py): Conv2d(1, 32, 3), ReLU, Conv2d(32, 64, 3),
  ReLU, MaxPool2d(2), Dropout(0.25), Linear(9216, 128), ReLU, Dropout(0.5), Linear(128, 10).

Each step is zero_grad, forward, loss, backward and optimizer step, on the same batch, both libraries
starting from the same seed. Times are the best of `--rounds` rounds of a few steps, the two libraries
interleaved round by round so that a busy machine slows them alike. Both compute with `--threads`
threads (torch.set_num_threads and tinyattn.set_num_threads).
"""

import argparse
import time

import numpy as np

import tinyattn


def lenet(L):
    nn = L.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def mnist_example_net(L):
    nn = L.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Dropout(0.25), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(128, 10))


def stepper(L, make_model, batch):
    """A function that runs one training step of make_model(L) on a fixed batch."""
    L.manual_seed(0)
    model = make_model(L)
    optimizer = L.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = L.tensor(rng.standard_normal((batch, 1, 28, 28)).astype(np.float32))
    y = L.tensor(rng.integers(0, 10, batch))

    def step():
        optimizer.zero_grad()
        loss = L.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def best_times(steps, rounds, per_round):
    best = {name: float("inf") for name in steps}
    for step in steps.values():
        step()  # warm up
    for _ in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(per_round):
                step()
            best[name] = min(best[name], (time.perf_counter() - start) / per_round)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    tinyattn.set_num_threads(args.threads)
    print(f"batch {args.batch}, {args.threads} thread(s), best of {args.rounds} rounds")
    for name, make_model, per_round in (("LeNet-5", lenet, 5), ("MNIST example Net", mnist_example_net, 2)):
        steps = {"tinyattn": stepper(tinyattn, make_model, args.batch), "torch": stepper(torch, make_model, args.batch)}
        best = best_times(steps, args.rounds, per_round)
        print(f"{name:18s} tinyattn {best['tinyattn'] * 1e3:8.1f} ms   PyTorch {best['torch'] * 1e3:8.1f} ms   "
              f"ratio {best['tinyattn'] / best['torch']:.2f}")


if __name__ == "__main__":
    main()
