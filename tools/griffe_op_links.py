"""A Griffe extension for the reference (mkdocs.yml loads it): what a learner looking a method up needs.

- Each Tensor method, and each tinyattn function, that runs a differentiable op of `tinyattn/ops.py`
  gets a line linking to that op's class on the reference's ops page, where its forward and backward
  are shown side by side. The ops are read from the method's own source (`ops.Exp.apply(...)`,
  `self._inplace(ops.Add, ...)`) or, where it names none, from the source of the Tensor method or
  the function of tinyattn it calls (`def exp(input): return input.exp()`), so the links follow the
  code as it changes.
- A slot attribute (`Tensor.grad`, `.grad_fn`, `.array`, `.output_nr`) shows its docstring (from the
  `__slots__` dict) and no value; Python's `<member 'grad' of 'Tensor' objects>` says nothing.
"""

import inspect
import re
import types

import griffe

OP_USED = re.compile(r"\bops\.([A-Z]\w*)\b")
METHOD_CALLED = re.compile(r"\b(?:self|input)\.(\w+)\(")
FUNCTION_CALLED = re.compile(r"(?<![\w.])(\w+)\(")
LINKED = {"tinyattn.tensor": "Tensor.", "tinyattn.functions": "", "tinyattn.nn.functional": ""}


# operators on self, which run the Tensor methods of these names
OPERATORS = [(re.compile(r"-self\b"), "__neg__"), (re.compile(r"\bself\s*\+"), "__add__"),
             (re.compile(r"\bself\s*-\s"), "__sub__"), (re.compile(r"\bself\s*\*\*"), "__pow__"),
             (re.compile(r"\bself\s*\*(?!\*)"), "__mul__"), (re.compile(r"\bself\["), "__getitem__"),
             (re.compile(r"\s@\s"), "__matmul__")]


def _source(function):
    """The code of a function without its docstring and comments."""
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return ""
    source = re.sub(r'"""(.|\n)*?"""', "", source)
    return re.sub(r"#.*", "", source)


def _ops_run_by(function):
    """The names of the op classes (tinyattn.ops.Function subclasses) a function runs, in order."""
    from tinyattn import autograd, ops
    from tinyattn.tensor import Tensor

    source = _source(function)
    names = OP_USED.findall(source)
    if not names:  # one step down: x.view_as(y) runs what x.view runs, exp(x) what x.exp() runs
        methods = METHOD_CALLED.findall(source) + [name for used, name in OPERATORS if used.search(source)]
        for method in methods:
            names += OP_USED.findall(_source(getattr(Tensor, method, None)))
        for called in FUNCTION_CALLED.findall(source):  # x.matmul(y) runs what matmul(x, y) runs
            helper = getattr(function, "__globals__", {}).get(called)
            if inspect.isfunction(helper) and helper.__module__.startswith("tinyattn"):
                names += OP_USED.findall(_source(helper))
    found = []
    for name in names:
        op = getattr(ops, name, None)
        if isinstance(op, type) and issubclass(op, autograd.Function) and name not in found:
            found.append(name)
    return found


class OpLinks(griffe.Extension):
    def on_function_instance(self, *, node, func, agent, **kwargs):
        runtime = getattr(node, "obj", None)
        prefix = LINKED.get(getattr(runtime, "__module__", None))
        if prefix is None or not getattr(runtime, "__qualname__", "").startswith(prefix):
            return  # the Tensor methods and the functions of tinyattn and nn.functional
        names = _ops_run_by(runtime)
        if not names:
            return
        links = ", ".join(f"[`ops.{name}`][tinyattn.ops.{name}]" for name in names)
        line = f"Forward and backward: {links}."
        if func.docstring is None:
            func.docstring = griffe.Docstring(line, parent=func)
        else:
            func.docstring.value = func.docstring.value.rstrip() + "\n\n" + line

    def on_attribute_instance(self, *, node, attr, agent, **kwargs):
        slot = getattr(node, "obj", None)
        if isinstance(slot, types.MemberDescriptorType):
            attr.value = None
            doc = inspect.getdoc(slot)  # found in the class's __slots__ dict (the slot's own __doc__ is None)
            if doc and attr.docstring is None:
                attr.docstring = griffe.Docstring(doc, parent=attr)
            attr.labels.discard("class-attribute")
            attr.labels.add("instance-attribute")
