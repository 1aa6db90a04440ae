"""tinyattn's names against PyTorch's own: programs written for PyTorch find what they call.

- every Tensor method that PyTorch also has as a `torch.*` function is a `tinyattn.*` function, and
  every `tinyattn.*` function that PyTorch also has as a Tensor method is a method;
- the function forms take PyTorch's argument names (read from PyTorch's signatures, or from the first
  lines of their docstrings where the function is built in);
- `tinyattn.nn.functional` and the `tinyattn.nn` layers take PyTorch's argument names, in PyTorch's
  order, with PyTorch's defaults; the PyTorch arguments they lack are listed below, each on purpose.

The lists are computed from PyTorch's namespaces (`dir(torch)`, `dir(torch.Tensor)`, ...), so a method
added later without its function form fails here. The `torch` fixture skips these tests without PyTorch.
"""

import ast

import pytest
import inspect
import re

import tinyattn
from tinyattn import nn
from tinyattn.nn import functional as F

# names that are deliberately something else in tinyattn
DIFFERENT_MEANING = {
    "trace": "tinyattn.trace is the op tracer (tinyattn.tracing.trace); the matrix trace is Tensor.trace()",
}

# argument names of function forms that differ from PyTorch's documented ones, each on purpose
ACCEPTED_ARGUMENTS = {
    "var": {"unbiased"},  # PyTorch's older overload, var(input, dim, unbiased, keepdim), still accepted
    "std": {"unbiased"},
    "scatter": {"value", "reduce"},  # PyTorch's other overloads: scatter(input, dim, index, value, *, reduce)
    "from_numpy": {"array"},  # PyTorch's takes it positionally only
    "load": {"max_bytes"},  # tinyattn's own: the size limit for an untrusted file (see "Saving and loading")
    "set_num_threads": {"n"},  # positional only, as PyTorch's (which names it `int`)
    "bernoulli": {"p"},  # PyTorch's other overload, bernoulli(input, p), absent from its docstring
    "normal": {"dtype", "device", "requires_grad"},  # normal(mean, std, size) takes a factory's keywords too
}

# NumPy's names that PyTorch's argument parser takes for dim and keepdim in the functions it writes in C++,
# though its signatures never show them (tests/test_numpy_names.py runs them against PyTorch)
NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}

# PyTorch's arguments that tinyattn's functional forms and layers leave out
DEPRECATED = {"size_average", "reduce"}  # PyTorch's deprecated loss arguments (use reduction)
LEFT_OUT = {
    "scaled_dot_product_attention": {"enable_gqa"},  # expand the keys and values to the query heads first
}


def is_function(obj):
    return callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj)


def public(names):
    return {n for n in names if not n.startswith("_")}


def test_every_method_pytorch_has_as_a_function_is_a_function(torch):
    methods = public(dir(tinyattn.Tensor))
    torch_functions = {n for n in public(dir(torch)) if is_function(getattr(torch, n))}
    missing = sorted(n for n in methods & torch_functions if not is_function(getattr(tinyattn, n, None)))
    assert not missing, f"tensor methods without the function form PyTorch has: {missing}"


def test_every_function_pytorch_has_as_a_method_is_a_method(torch):
    functions = {n for n in public(dir(tinyattn)) if is_function(getattr(tinyattn, n))}
    torch_methods = public(dir(torch.Tensor))
    missing = sorted(n for n in functions & torch_methods if not hasattr(tinyattn.Tensor, n))
    assert not missing, f"functions without the tensor method PyTorch has: {missing}"


def test_trace_is_the_tracer_and_the_method_is_the_matrix_trace():
    from tinyattn import tracing

    assert tinyattn.trace is tracing.trace
    assert tinyattn.tensor([[1.0, 2.0], [3.0, 4.0]]).trace().item() == 5.0


def test_the_new_names_are_there():
    """What the book, nanoGPT, minGPT and RoPE / top-p code call, spelled as they spell it."""
    for name in ["sin", "cos", "pow", "neg", "negative", "square", "rsqrt", "log1p", "expm1", "log2", "log10",
                 "exp2", "reciprocal", "sign", "floor", "ceil", "round", "trunc", "erf", "sort", "argsort", "prod",
                 "amax", "amin", "norm", "outer", "addmm", "baddbmm", "masked_select", "index_select",
                 "repeat_interleave", "roll", "flip", "triu_indices", "tril_indices", "ones_like", "zeros_like",
                 "full_like", "arange", "where", "all", "any", "cumprod", "scatter", "scatter_add", "nonzero",
                 "einsum"]:
        assert is_function(getattr(tinyattn, name)), name
    for name in ["silu", "softplus", "leaky_relu", "elu", "normalize", "pad", "tanh", "sigmoid"]:
        assert is_function(getattr(F, name)), name
    for name in ["SiLU", "LeakyReLU", "ELU", "Softplus"]:
        assert issubclass(getattr(nn, name), nn.Module), name
    assert is_function(tinyattn.linalg.vector_norm)
    for name in ["scatter_", "scatter_add_", "type_as", "neg", "clamp_min", "clamp_max"]:
        assert is_function(getattr(tinyattn.Tensor, name)), name


# ---------------------------------------------------------------------------------------------
# argument names


def documented_parameters(function, name):
    """[[(name, default, keyword_only)], ...]: one list per signature PyTorch shows for `function`.

    From inspect where PyTorch's function is Python; for a built-in, from the signature lines of its
    docstring ("sort(input, dim=-1, descending=False, *, stable=False, out=None) -> ...").
    """
    try:
        parameters = list(inspect.signature(function).parameters.values())
        if not any(p.kind is p.VAR_POSITIONAL for p in parameters):
            return [[(p.name, p.default, p.kind is p.KEYWORD_ONLY) for p in parameters if p.name != "self"]]
    except (TypeError, ValueError):
        pass
    signatures = []
    doc = function.__doc__ or ""
    for match in re.finditer(rf"^\s*(?:\.\. function:: )?(?:torch\.)?{re.escape(name)}\(", doc, re.MULTILINE):
        depth, end = 1, match.end()
        while depth and end < len(doc):  # to the closing parenthesis, over line breaks
            depth += {"(": 1, ")": -1}.get(doc[end], 0)
            end += 1
        signatures.append(_parse_parameters(doc[match.end():end - 1]))
    return signatures


def _parse_parameters(text):
    parameters, keyword_only, depth, part = [], False, 0, ""
    for ch in text + ",":
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch != "," or depth:
            part += ch
            continue
        part, piece = "", part.strip()
        if piece in ("*", "/", ""):
            keyword_only = keyword_only or piece == "*"
            continue
        name, _, default = piece.lstrip("*").partition("=")
        try:
            value = ast.literal_eval(default.strip()) if default else inspect.Parameter.empty
        except (ValueError, SyntaxError):
            value = default.strip()  # torch.strided and the like: not compared
        parameters.append((name.split(":")[0].strip(), value, keyword_only))
    return parameters


def our_parameters(function):
    return [(p.name, p.default, p.kind is p.KEYWORD_ONLY)
            for p in inspect.signature(function).parameters.values() if p.name != "self"]


def test_function_forms_take_pytorchs_argument_names(torch):
    names = sorted(n for n in public(dir(tinyattn))
                   if is_function(getattr(tinyattn, n)) and is_function(getattr(torch, n, None))
                   and n not in DIFFERENT_MEANING)
    problems, checked = [], 0
    for name in names:
        signatures = documented_parameters(getattr(torch, name), name)
        if not signatures:  # PyTorch shows none (some in-place forms): nothing to compare with
            continue
        checked += 1
        theirs = {p[0] for signature in signatures for p in signature}
        unknown = [p[0] for p in our_parameters(getattr(tinyattn, name))
                   if p[0] not in theirs and p[0] not in ACCEPTED_ARGUMENTS.get(name, ())
                   and NUMPY_NAMES.get(p[0]) not in theirs]
        if unknown:
            problems.append(f"{name}: {unknown} not among PyTorch's {sorted(theirs)}")
    assert checked > 100  # the check is not silently empty
    assert not problems, "\n".join(problems)


def check_like_pytorch(ours, theirs, name):
    """Our parameters, in order, a subsequence of PyTorch's, with the same defaults and kinds; PyTorch's
    parameters that we lack must be deprecated, private or listed in LEFT_OUT. Returns the problems."""
    problems = []
    their_names = [p[0] for p in theirs]
    position = 0
    for parameter, default, keyword_only in ours:
        if parameter not in their_names:
            problems.append(f"{name}: argument {parameter!r} is not PyTorch's ({their_names})")
            continue
        index = their_names.index(parameter)
        if index < position:
            problems.append(f"{name}: argument {parameter!r} comes in another order than in PyTorch ({their_names})")
        position = index
        _, their_default, their_keyword_only = theirs[index]
        if default != their_default and isinstance(their_default, (int, float, str, bool, type(None), tuple)):
            problems.append(f"{name}: {parameter}={default!r}, PyTorch's default is {their_default!r}")
        if keyword_only != their_keyword_only:
            problems.append(f"{name}: {parameter!r} is {'' if keyword_only else 'not '}keyword-only here")
    ours_names = {p[0] for p in ours}
    lacking = [n for n in their_names
               if n not in ours_names and not n.startswith("_") and n not in DEPRECATED | {"out", "device", "dtype"}
               and n not in LEFT_OUT.get(name, ())]
    if lacking:
        problems.append(f"{name}: PyTorch's arguments {lacking} are missing (add them, or list them in LEFT_OUT)")
    return problems


def test_functional_takes_pytorchs_arguments(torch):
    names = sorted(n for n in public(dir(F)) if is_function(getattr(F, n))
                   and is_function(getattr(torch.nn.functional, n, None)))
    assert len(names) >= 20
    problems = []
    for name in names:
        (theirs, *_) = documented_parameters(getattr(torch.nn.functional, name), name)
        problems += check_like_pytorch(our_parameters(getattr(F, name)), theirs, name)
    assert not problems, "\n".join(problems)


def test_layers_take_pytorchs_arguments(torch):
    names = sorted(n for n in public(dir(nn)) if inspect.isclass(getattr(nn, n))
                   and issubclass(getattr(nn, n), nn.Module) and inspect.isclass(getattr(torch.nn, n, None)))
    assert len(names) >= 20
    problems = []
    for name in names:
        ours, theirs = getattr(nn, name).__init__, getattr(torch.nn, name).__init__
        if ours is object.__init__ or ours is nn.Module.__init__:  # nn.Tanh(): no arguments of its own
            continue
        if any(p.kind is p.VAR_POSITIONAL for f in (ours, theirs) for p in inspect.signature(f).parameters.values()):
            continue  # nn.Identity(*args, **kwargs), torch.nn.Tanh(*args, **kwargs): nothing to compare
        problems += check_like_pytorch(our_parameters(ours), documented_parameters(theirs, name)[0], name)
    assert not problems, "\n".join(problems)


# --- dir() of a namespace lists its public names, not the helpers it imports ---

PUBLIC_NAMESPACES = ["tinyattn", "tinyattn.nn", "tinyattn.nn.functional", "tinyattn.nn.init", "tinyattn.nn.utils",
                     "tinyattn.nn.utils.rnn", "tinyattn.optim", "tinyattn.optim.lr_scheduler",
                     "tinyattn.distributions", "tinyattn.linalg", "tinyattn.utils", "tinyattn.utils.data",
                     "tinyattn.autograd", "tinyattn.cuda", "tinyattn.amp", "tinyattn.backends", "tinyattn.random",
                     "tinyattn.distributed", "tinyattn.multiprocessing", "tinyattn.accelerator",
                     "tinyattn.compiler", "tinyattn.serialization"]


@pytest.mark.parametrize("name", PUBLIC_NAMESPACES)
def test_dir_of_a_namespace_lists_its_public_names_only(name):
    import importlib
    import sys
    import types

    module = importlib.import_module(name)
    listed = dir(module)
    assert listed == sorted(listed)
    public = [n for n in listed if not n.startswith("_")]
    for n in public:
        value = getattr(module, n)  # everything listed is there
        if isinstance(value, types.ModuleType) and name != "tinyattn.multiprocessing":
            # a submodule, importable by that name (tinyattn.cuda is tinyattn/compat/cuda, bound so)
            assert sys.modules.get(f"{name}.{n}") is value, f"{name} lists {n}, the module {value.__name__} it imports"
    assert not {"np", "numpy", "math", "F", "dtypes", "backend", "functions"} & set(public) - {
        n for n in public if isinstance(getattr(module, n), types.ModuleType)
        and sys.modules.get(f"{name}.{n}") is getattr(module, n)}
    # what the module defines itself (its classes and functions) is listed: a name added later shows up
    own = [n for n, v in vars(module).items() if not n.startswith("_") and isinstance(v, (type, types.FunctionType))
           and getattr(v, "__module__", None) in (name, module.__name__)]
    if not hasattr(module, "__all__"):
        assert set(own) <= set(public), sorted(set(own) - set(public))
    assert {"__name__", "__doc__"} <= set(listed)  # the dunders stay, as Python lists them


def test_dir_of_distributions_is_what_the_issue_named():
    import tinyattn.distributions as distributions

    assert not {"np", "F", "dtypes", "functions", "Tensor", "Size", "no_grad", "enable_grad"} & set(dir(distributions))
    assert "Categorical" in dir(distributions)


def test_dir_keeps_what_pytorch_has_in_the_namespace_though_defined_elsewhere():
    assert {"Variable", "gradcheck", "detect_anomaly", "Function", "no_grad"} <= set(dir(tinyattn.autograd))
    assert {"Tensor", "float32", "pi", "nn", "optim", "manual_seed", "save", "load"} <= set(dir(tinyattn))
    assert "math" not in dir(tinyattn) and "numbers" not in dir(tinyattn)
    assert "vector_norm" in dir(tinyattn.linalg) and "LBFGS" in dir(tinyattn.optim)
