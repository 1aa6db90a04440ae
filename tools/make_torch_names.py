"""Write tinyattn/data/pytorch_names.txt: the public names of PyTorch's namespaces, from PyTorch itself.

    python tools/make_torch_names.py        # needs torch installed; the output is committed

The list lets tinyattn tell "a PyTorch name tinyattn does not implement" from a plain typo (see
tinyattn/missing.py), and lets the corpus scanner know torch.Tensor's and torch.nn.Module's methods.
One full dotted name per line, sorted; a line starting with # is a comment.
"""

import pathlib

OUTPUT = pathlib.Path(__file__).resolve().parent.parent / "src" / "tinyattn" / "data" / "pytorch_names.txt"

NAMESPACES = [
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.nn.utils",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torch.utils.data",
    "torch.autograd",
    "torch.linalg",
    "torch.cuda",
    "torch.backends",
    "torch.distributed",
    "torch.multiprocessing",
    "torch.distributions",
    "torch.testing",
]
CLASSES = ["torch.Tensor", "torch.nn.Module"]


def public_names():
    import importlib

    import torch

    names = set()
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        names.update(f"{namespace}.{name}" for name in dir(module) if not name.startswith("_"))
    for dotted in CLASSES:
        module_name, class_name = dotted.rsplit(".", 1)
        cls = getattr(importlib.import_module(module_name), class_name)
        names.update(f"{dotted}.{name}" for name in dir(cls) if not name.startswith("_"))
    return torch.__version__, sorted(names)


if __name__ == "__main__":
    version, names = public_names()
    header = f"# public names of PyTorch {version}, written by tools/make_torch_names.py\n"
    OUTPUT.write_text(header + "".join(name + "\n" for name in names), encoding="utf-8")
    print(f"{len(names)} names -> {OUTPUT}")
