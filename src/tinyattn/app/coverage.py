"""`tinyattn coverage NAME...`: whether tinyattn has a PyTorch name, and if not, whether it is left out on
purpose and why, from the lists in tinyattn/missing.py. tools/coverage_report.py uses `tinyattn_object` too.
"""

import importlib

import tinyattn

from ..console import ArgumentParser, fit
from ..missing import COVERAGE_PAGE, _short_name, is_pytorch_name, left_out_reason, pytorch_names


# what a name found in an optional package this machine lacks (tinyattn.utils.tensorboard) stands for
NEEDS_EXTRA = object()

_ALIASES = {"F": "torch.nn.functional", "nn": "torch.nn", "optim": "torch.optim", "tinyattn": "torch"}


def tinyattn_object(name):
    """The tinyattn object for a name spelled `torch.X`, `Tensor.x` or `Module.x`, or raise LookupError."""
    if name.startswith("Tensor."):
        return getattr(tinyattn.Tensor, name[len("Tensor."):])
    if name.startswith("Module."):
        return getattr(tinyattn.nn.Module, name[len("Module."):])
    parts = ["tinyattn"] + name.split(".")[1:]
    obj, i = tinyattn, 1
    while i < len(parts):
        try:
            obj = getattr(obj, parts[i])
        except AttributeError:
            try:  # a submodule not imported by its parent
                obj = importlib.import_module(".".join(parts[: i + 1]))
            except ImportError as error:
                if error.name and not error.name.startswith("tinyattn"):
                    return NEEDS_EXTRA  # it is there, through an optional package this machine lacks
                raise LookupError(name) from error
        i += 1
    return obj

def missing_namespace(torch_name):
    """The PyTorch module that `torch_name` is inside of and tinyattn lacks as a whole (torch.func for
    torch.func.grad), or None: every name inside such a module is one tinyattn does not implement."""
    parts = torch_name.split(".")
    for k in range(len(parts) - 1, 1, -1):  # the longest prefix first; torch itself is not one
        prefix = ".".join(parts[:k])
        if is_pytorch_name(prefix):
            return None if has(prefix) else prefix
    return None


def has(name):
    """Whether tinyattn has `name` (spelled `torch.X`, `Tensor.x` or `Module.x`)."""
    try:
        tinyattn_object(name)
        return True
    except (LookupError, AttributeError):
        return False


def canonical_names(text):
    """The PyTorch names `text` may mean, spelled `torch.X`, `Tensor.x` or `Module.x`: it may be written
    `torch.nn.Conv2d`, `nn.Conv2d`, `F.relu`, `tinyattn.nn.Conv2d`, `torch.Tensor.add_`, `Tensor.add_`,
    `Module.apply`, or a bare name (`median`: every PyTorch name ending so)."""
    text = text.strip()
    head, _, rest = text.partition(".")
    if head in _ALIASES and rest:
        text = f"{_ALIASES[head]}.{rest}"
    if text.startswith(("Tensor.", "Module.")):
        return [text]
    if text.startswith("torch."):
        return [_short_name(text)]
    known = pytorch_names()
    found = sorted(_short_name(name) for name in known if name.endswith("." + text))
    for prefix in ("torch.nn.", "torch.Tensor.", "torch."):  # torch.X first, then Tensor.x, then nn.X
        if prefix + text in known:
            found.remove(_short_name(prefix + text))
            found.insert(0, _short_name(prefix + text))
    return found or [f"torch.{text}"]


def describe(name):
    """(has it, one line) for a name spelled `torch.X`, `Tensor.x` or `Module.x`."""
    full = {"Tensor": "torch.Tensor.", "Module": "torch.nn.Module."}.get(name.partition(".")[0], "")
    full = full + name.partition(".")[2] if full else name
    if has(name):
        if name.startswith(("Tensor.", "Module.")):
            where = f"tinyattn.{'nn.' if name.startswith('Module.') else ''}{name}"
        else:
            where = "tinyattn" + name[len("torch"):]
        return True, f"{full}: tinyattn has it, as {where}"
    reason = left_out_reason(name)
    if reason:
        return False, f"{full}: left out of tinyattn on purpose: {reason}"
    if is_pytorch_name(full):
        return False, f"{full}: a PyTorch name that tinyattn does not implement (yet)"
    namespace = missing_namespace(full) if full.startswith("torch.") else None
    if namespace is not None:
        return False, f"{full}: a PyTorch name that tinyattn does not implement (yet): it has no {namespace}"
    return False, (f"{full}: not one of PyTorch's public names that tinyattn knows (those of the namespaces "
                   "tinyattn follows, from tinyattn/data/pytorch_names.txt); check the spelling")


def main(argv=None):
    """`tinyattn coverage NAME...`: exit status 0 when tinyattn has every name, 1 otherwise."""
    parser = ArgumentParser(
        prog="tinyattn coverage",
        description="Say whether tinyattn has a PyTorch name, and if not, whether it is left out on purpose "
                    "and why. A name may be written torch.nn.Conv2d, nn.Conv2d, F.relu, Tensor.add_, "
                    "Module.apply, or bare (median).",
        epilog=f"The measured coverage of teaching code is on {COVERAGE_PAGE}.")
    # "*" and a check of our own, so that a mistyped option is named before a missing NAME
    parser.add_argument("names", nargs="*", metavar="NAME", help="a PyTorch name")
    args = parser.parse_args(argv)
    if not args.names:
        parser.error("give at least one NAME, as in: tinyattn coverage torch.median")
    all_there = True
    for text in args.names:
        for name in canonical_names(text):
            there, line = describe(name)
            all_there = all_there and there
            print(fit(line))  # wrapped at words to a terminal's width; one line into a pipe
    return 0 if all_there else 1
