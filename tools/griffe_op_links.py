"""A Griffe extension for the reference (mkdocs.yml loads it): what a learner looking a method up needs.

- Each Tensor method, and each function of tinyattn and nn.functional, that runs a differentiable
  op gets a line linking to that op's class, where the reference shows its forward and backward side
  by side: the ops page for the `tinyattn/ops/` package, the fused ops of nn (`CrossEntropyOp`)
  included. The ops are read from the function's own source (`ops.Exp.apply(...)`,
  `self._inplace(ops.Add, ...)`, `ops.CrossEntropyOp.apply(...)`) or, where it names none, from the
  source of the Tensor method or the function of tinyattn it calls (`def exp(input): return
  input.exp()`), so the links follow the code as it changes.
- A slot attribute (`Tensor.grad`, `.grad_fn`, `.array`, `.output_nr`) shows its docstring (from the
  `__slots__` dict) and no value; Python's `<member 'grad' of 'Tensor' objects>` says nothing.
- An attribute whose value is a number, a string, a tuple, a dict, ... (`Conv2d.dims = 2`) shows its value and
  no docstring: the one inspection finds is its type's (`int([x]) -> integer`), which says nothing about it.
"""

import inspect
import re
import types

import griffe

OP_USED = re.compile(r"\bops\.([A-Z]\w*)\b")
METHOD_CALLED = re.compile(r"(?:\bself|\binput|\))\.(\w+)\(")
FUNCTION_CALLED = re.compile(r"(?<![\w.])(\w+)\(")


def _linked(runtime):
    """Whether a routine gets its op links: a Tensor method (in the class or one of its mixins, tinyattn/tensor/),
    a torch.* function (tinyattn/functions/, or defined beside the methods in tinyattn/tensor/) or a function of
    nn.functional; not a private helper."""
    module = getattr(runtime, "__module__", None) or ""
    qualname = getattr(runtime, "__qualname__", "")
    if module == "tinyattn.nn.functional" or module == "tinyattn.functions" or module.startswith("tinyattn.functions."):
        return True
    return module.startswith("tinyattn.tensor.") and not qualname.startswith("_")


# operators on self, which run the Tensor methods of these names
OPERATORS = [(re.compile(r"-self\b"), "__neg__"), (re.compile(r"\bself\s*\+"), "__add__"),
             (re.compile(r"\bself\s*-\s"), "__sub__"), (re.compile(r"\bself\s*\*\*"), "__pow__"),
             (re.compile(r"\bself\s*\*(?!\*)"), "__mul__"), (re.compile(r"\bself\["), "__getitem__"),
             (re.compile(r"\bself\s*/(?!/)"), "__truediv__"), (re.compile(r"\s@\s"), "__matmul__")]


def _source(function):
    """The code of a function without its docstring and comments."""
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return ""
    source = re.sub(r'"""(.|\n)*?"""', "", source)
    return re.sub(r"#.*", "", source)


def _named_ops(source):
    """The op classes a source names (`ops.Exp`, `ops.CrossEntropyOp`), as their dotted paths."""
    return [f"tinyattn.ops.{name}" for name in OP_USED.findall(source)]


def _ops_run_by(function):
    """The dotted paths of the op classes (autograd.Function subclasses) a function runs, in order."""
    import importlib

    from tinyattn import autograd
    from tinyattn.tensor import Tensor

    source = _source(function)
    paths = _named_ops(source)
    if not paths:  # one step down: x.view_as(y) runs what x.view runs, exp(x) what x.exp() runs
        methods = [name for used, name in OPERATORS if used.search(source)] + METHOD_CALLED.findall(source)
        if set(methods) - {"to"}:  # `input.to(dtype).softmax(dim)`: the op is softmax, not the cast
            methods = [method for method in methods if method != "to"]
        for method in methods:
            paths += _named_ops(_source(getattr(Tensor, method, None)))
        for called in FUNCTION_CALLED.findall(source):  # x.matmul(y) runs what matmul(x, y) runs
            callee = getattr(function, "__globals__", {}).get(called)
            if inspect.isfunction(callee) and callee.__module__.startswith("tinyattn"):
                paths += _named_ops(_source(callee))
    found = []
    for path in paths:
        module, name = path.rsplit(".", 1)
        op = getattr(importlib.import_module(module), name, None)
        if isinstance(op, type) and issubclass(op, autograd.Function) and path not in found:
            found.append(path)
    return found


def _doc_is_its_types(value):
    """Whether a value's __doc__ is only its type's (`(2, 3).__doc__` is tuple's: "Built-in immutable
    sequence..."), not its own (a function's, a class's, a module's)."""
    if inspect.isroutine(value) or inspect.isclass(value) or inspect.ismodule(value):
        return False
    own = getattr(value, "__doc__", None)
    return own is not None and own == getattr(type(value), "__doc__", None)  # (a built-in's is a new str each time)


class OpLinks(griffe.Extension):
    def on_function_instance(self, *, node, func, agent, **kwargs):
        runtime = getattr(node, "obj", None)
        if not _linked(runtime):
            return  # the Tensor methods and the functions of tinyattn and nn.functional
        paths = _ops_run_by(runtime)
        if not paths:
            return
        links = ", ".join(f"[`{path.removeprefix('tinyattn.').removeprefix('nn.')}`][{path}]" for path in paths)
        line = f"Forward and backward: {links}."
        if func.docstring is None:
            func.docstring = griffe.Docstring(line, parent=func)
        else:
            func.docstring.value = func.docstring.value.rstrip() + "\n\n" + line

    def on_attribute_instance(self, *, node, attr, agent, **kwargs):
        value = getattr(node, "obj", None)
        if attr.docstring is not None and _doc_is_its_types(value):
            attr.docstring = None
        slot = value
        if isinstance(slot, types.MemberDescriptorType):
            attr.value = None
            doc = inspect.getdoc(slot)  # found in the class's __slots__ dict (the slot's own __doc__ is None)
            if doc and attr.docstring is None:
                attr.docstring = griffe.Docstring(doc, parent=attr)
            attr.labels.discard("class-attribute")
            attr.labels.add("instance-attribute")
