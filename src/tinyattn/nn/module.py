"""`Module`, `Parameter` and the containers (Sequential, ModuleList, ModuleDict, ParameterList,
ParameterDict): how layers hold their weights and sub-layers.

A Module registers every `Parameter`, sub-`Module` and buffer assigned to it as an attribute, so that
`parameters()`, `state_dict()`, `to(device)` and `train()/eval()` reach them all, under the dotted
names PyTorch uses (`W_query.weight`, `heads.0.mask`).
"""

import collections
import itertools

import numpy as np

from .. import autograd, backend, dtypes
from ..tensor import Tensor, parse_to_args


class Parameter(Tensor):
    """A tensor that a Module registers as a weight: it requires grad unless told otherwise."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = Tensor._from_data(np.zeros(0, dtype=np.float32))
        parameter = Tensor._wrap.__func__(cls, data.array)  # shares memory with `data`, like PyTorch
        parameter.requires_grad = requires_grad
        return parameter

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happened in __new__

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__  # print(parameter) shows the header too, as in PyTorch

    def __deepcopy__(self, memo):
        copy = Parameter(Tensor._wrap(backend.namespace(self.array).asarray(self.array, copy=True)),
                         self.requires_grad)
        memo[id(self)] = copy
        return copy


class _ModuleHook:
    """One registered module hook and its options (compared by identity, so removing one of two
    registrations of the same function removes that one)."""

    __slots__ = ("function", "with_kwargs", "always_call")

    def __init__(self, function, with_kwargs=False, always_call=False):
        self.function, self.with_kwargs, self.always_call = function, with_kwargs, always_call


class _IdentityWithHook(autograd.Function):
    """The identity on some tensors, whose backward hands their gradients to `on_grads` (which may
    replace them): how a full backward hook sees the gradients of a module's inputs and outputs."""

    takes_arrays = True

    @staticmethod
    def forward(ctx, on_grads, *arrays):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(False)
        return tuple(a[...] for a in arrays)  # views: new tensors of the same memory, recorded in the graph

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.on_grads(grads))


class _BackwardHookState:
    """The full backward hooks of one call of a module: the inputs and outputs are passed through
    _IdentityWithHook; the outputs' gradients are kept, and the hooks run on the inputs' gradients
    (or, when no input needs a gradient, as soon as the outputs' gradients are there)."""

    def __init__(self, module, hooks, args):
        self.module, self.hooks = module, hooks
        self.count = len(args)
        self.input_places = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        self.grad_output = None

    def wrap_inputs(self, args):
        if not self.input_places or not autograd.is_grad_enabled():
            return args
        wrapped = _IdentityWithHook.apply(self.on_input_grads, *(args[i] for i in self.input_places))
        args = list(args)
        for place, tensor in zip(self.input_places, wrapped if isinstance(wrapped, tuple) else (wrapped,)):
            args[place] = tensor
        return tuple(args)

    def wrap_outputs(self, output):
        single = isinstance(output, Tensor)
        outputs = (output,) if single else output
        if not isinstance(outputs, tuple) or not autograd.is_grad_enabled():
            return output
        places = [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]
        if not places:
            return output
        self.output_count = len(outputs)
        self.output_places = places
        wrapped = _IdentityWithHook.apply(self.on_output_grads, *(outputs[i] for i in places))
        outputs = list(outputs)
        for place, tensor in zip(places, wrapped if isinstance(wrapped, tuple) else (wrapped,)):
            outputs[place] = tensor
        return outputs[0] if single else tuple(outputs)

    def on_output_grads(self, grads):
        full = [None] * self.output_count
        for place, g in zip(self.output_places, grads):
            full[place] = None if g is None else Tensor._wrap(g)
        self.grad_output = tuple(full)
        if not self.input_places:  # nothing upstream to wait for: the hooks run now, on no input gradients
            self.run_hooks((None,) * self.count)
        return grads

    def on_input_grads(self, grads):
        full = [None] * self.count
        for place, g in zip(self.input_places, grads):
            full[place] = None if g is None else Tensor._wrap(g)
        full = self.run_hooks(tuple(full))
        return tuple(None if full[place] is None else full[place].array for place in self.input_places)

    def run_hooks(self, grad_input):
        for entry in self.hooks:
            result = entry.function(self.module, grad_input, self.grad_output or ())
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(f"a backward hook returned {len(result)} gradients, but the module has "
                                       f"{len(grad_input)} inputs")
                grad_input = result
        return grad_input


# what a PyTorch module keeps in its __dict__ for hooks: tinyattn keeps its hooks in other places
_TORCH_HOOK_REGISTRIES = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
                          "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                          "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                          "_load_state_dict_post_hooks")


def _state_from_torch(state):
    """A PyTorch module's pickled __dict__ in tinyattn's layout: the same registries of parameters,
    buffers and submodules (each member also a plain attribute, as tinyattn keeps them), and no hooks."""
    state = dict(state)
    hooks = [name for name in _TORCH_HOOK_REGISTRIES if state.pop(name, None)]
    if hooks:
        raise ValueError(f"the pickled PyTorch module has hooks ({', '.join(hooks)}), which are PyTorch "
                         "functions tinyattn does not carry over: remove them before torch.save, or save the "
                         "state_dict() and load it into a tinyattn model")
    state.pop("_is_full_backward_hook", None)
    state["_non_persistent"] = set(state.pop("_non_persistent_buffers_set"))
    for registry in ("_parameters", "_buffers", "_modules"):
        state[registry] = dict(state.get(registry) or {})
        state.update(state[registry])
    return state


class _IncompatibleKeys(collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys the module has that the state dict lacks, and the keys
    the state dict has that the module lacks; it prints as PyTorch's does."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class Module:
    """Base class of every layer: subclass it, assign layers and Parameters in __init__, write forward."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", {})

    # --- pickling: tinyattn.save(model), and tinyattn.load(f, weights_only=False) of a file you trust ---

    def __setstate__(self, state):
        """Restore a pickled module from its __dict__: tinyattn's own, or a PyTorch module's (a file that
        torch.save(model) wrote), whose registries are put in tinyattn's layout."""
        if "_non_persistent_buffers_set" in state:
            state = _state_from_torch(state)
        self.__dict__.update(state)

    # --- registration ---
    # PyTorch's rules: assigning a Parameter or a Module registers it (in place of a same-named member of
    # another kind); a name that holds a parameter or a submodule only takes one of its kind or None
    # afterwards. Re-assigning a member keeps its place in the order (of parameters(), state_dict()).

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError(
                    f"cannot assign {type(value).__name__} '{name}' before Module.__init__(): "
                    "call super().__init__() first in your __init__"
                )
            object.__setattr__(self, name, value)
        elif isinstance(value, Parameter):
            self._forget(name, keep=self._parameters)
            if name not in self._parameters:
                self.__dict__.pop(name, None)  # a plain attribute or a former buffer or submodule makes way
            self.register_parameter(name, value)
        elif name in self._parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' (nn.Parameter or None "
                    f"expected): wrap a tensor in nn.Parameter(...), or delattr(module, '{name}') first to "
                    "use the name for something else"
                )
            self.register_parameter(name, None)
        elif isinstance(value, Module):
            self._forget(name, keep=self._modules)
            self._modules[name] = value
            object.__setattr__(self, name, value)
        elif name in self._modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' (nn.Module or None "
                    f"expected): assign a Module or None, or delattr(module, '{name}') first to use the name "
                    "for something else"
                )
            self._modules[name] = None
            object.__setattr__(self, name, None)
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(Tensor or None expected)")
            self._buffers[name] = value
            object.__setattr__(self, name, value)
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._forget(name)
        object.__delattr__(self, name)

    def _forget(self, name, keep=None):
        """Unregister `name` from the parameters, buffers and submodules, except from the registry `keep`."""
        for registry in (self._parameters, self._buffers, self._modules):
            if registry is not keep:
                registry.pop(name, None)
        if keep is not self._buffers:
            self._non_persistent.discard(name)

    def _check_new_name(self, kind, name, registry):
        """The names PyTorch refuses for a new parameter, buffer or submodule."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if "." in name:
            raise KeyError(f"{kind} name can't contain \".\", got {name!r}: dots separate the parts of "
                           "dotted names such as 'blocks.0.weight'")
        if name == "":
            raise KeyError(f"{kind} name can't be empty string \"\"")
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists: choose another name for the {kind}")

    def register_parameter(self, name, parameter):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot register a parameter before Module.__init__(): "
                                 "call super().__init__() first")
        self._check_new_name("parameter", name, self._parameters)
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"register_parameter('{name}', ...) expects a Parameter or None, got "
                            f"{type(parameter).__name__}: wrap a tensor in nn.Parameter(...)")
        self._parameters[name] = parameter
        object.__setattr__(self, name, parameter)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that belongs to the module but is not trained (e.g. the causal mask)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot register a buffer before Module.__init__(): "
                                 "call super().__init__() first")
        self._check_new_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer('{name}', ...) expects a Tensor or None, "
                            f"got {type(tensor).__name__}")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def add_module(self, name, module):
        if "_modules" not in self.__dict__:
            raise AttributeError("cannot add a module before Module.__init__(): call super().__init__() first")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module('{name}', ...) expects a Module or None, got {type(module).__name__}")
        self._check_new_name("module", name, self._modules)
        self._modules[name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    # --- running ---

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks or self._forward_hooks or self._backward_hooks:
            return self._call_with_hooks(args, kwargs)
        return self._run_forward(args, kwargs)

    def _run_forward(self, args, kwargs):
        if autograd.observers:  # a trace is recording: tell it which module is running
            watching = autograd.observers_here()
            for observer in watching:
                observer.on_module_enter(self)
            try:
                return self.forward(*args, **kwargs)
            finally:
                for observer in watching:
                    observer.on_module_exit(self)
        return self.forward(*args, **kwargs)

    # --- hooks: functions called around forward (and backward), as PyTorch's ---
    # Kept in lists on the instance (created on first use); the class-level empty tuples make the
    # check in __call__ cheap for the modules that have none.

    _forward_pre_hooks = _forward_hooks = _backward_hooks = ()

    def _add_hook(self, registry, hook, prepend, **options):
        if not callable(hook):
            raise TypeError(f"a hook must be callable, got {type(hook).__name__}")
        if registry not in self.__dict__:
            object.__setattr__(self, registry, [])
        hooks = self.__dict__[registry]
        entry = _ModuleHook(hook, **options)
        hooks.insert(0, entry) if prepend else hooks.append(entry)
        return autograd.RemovableHandle(hooks, entry)

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call hook(module, args) before each forward (hook(module, args, kwargs) with_kwargs=True).

        A hook that returns something other than None replaces the positional arguments (a single
        value counts as a 1-tuple), or, with_kwargs, returns (args, kwargs). Returns a handle:
        handle.remove() takes the hook away. prepend=True runs it before the hooks already there.
        """
        return self._add_hook("_forward_pre_hooks", hook, prepend, with_kwargs=with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """Call hook(module, args, output) after each forward (hook(module, args, kwargs, output)
        with_kwargs=True); a hook that returns something other than None replaces the output.
        always_call=True: called even when forward raised (with output None; the error goes on)."""
        return self._add_hook("_forward_hooks", hook, prepend, with_kwargs=with_kwargs, always_call=always_call)

    def register_full_backward_hook(self, hook, prepend=False):
        """Call hook(module, grad_input, grad_output) when the gradients of the module's inputs are
        computed: grad_input holds one gradient per positional argument (None for one that is not a
        tensor needing grad), grad_output one per tensor output. A hook that returns a tuple replaces
        grad_input. Called once all the output gradients have arrived."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def _call_with_hooks(self, args, kwargs):
        for entry in tuple(self._forward_pre_hooks):
            if entry.with_kwargs:
                result = entry.function(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("a forward pre-hook with with_kwargs=True must return None or a tuple "
                                           f"(new_args, new_kwargs), got {type(result).__name__}")
                    args, kwargs = result
            else:
                result = entry.function(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hooks = tuple(self._backward_hooks)
        if backward_hooks:
            watch = _BackwardHookState(self, backward_hooks, args)
            args = watch.wrap_inputs(args)
        try:
            output = self._run_forward(args, kwargs)
        except Exception:
            for entry in tuple(self._forward_hooks):
                if entry.always_call:
                    try:
                        entry.function(self, args, kwargs, None) if entry.with_kwargs else entry.function(self, args,
                                                                                                          None)
                    except Exception:
                        pass  # the forward's error is the one to see
            raise
        for entry in tuple(self._forward_hooks):
            result = (entry.function(self, args, kwargs, output) if entry.with_kwargs
                      else entry.function(self, args, output))
            if result is not None:
                output = result
        if backward_hooks:
            output = watch.wrap_outputs(output)
        return output

    def train(self, mode=True):
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.array[...] = 0

    # --- walking the tree ---

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module and every submodule; a module reachable under several
        names is listed once, under its first name, unless remove_duplicate=False (PyTorch's rule)."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        return (module for _, module in self.named_modules())

    def named_children(self):
        """(name, submodule) for each direct submodule; one held under two names is listed once."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        return (m for _, m in self.named_children())

    def _named_members(self, registry, prefix, recurse, remove_duplicate):
        """(dotted name, tensor) of every parameter or buffer; a shared one is listed once unless
        remove_duplicate=False."""
        seen = set()
        if recurse:
            modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            modules = [(prefix, self)]
        for module_name, module in modules:
            for name, t in getattr(module, registry).items():
                if t is None or id(t) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(t))
                yield (f"{module_name}.{name}" if module_name else name), t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no submodule '{part}'")
            module = module._modules[part]
        return module

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # --- saving and loading ---

    def state_dict(self, prefix=""):
        """Every parameter and persistent buffer under its dotted name (sharing memory, no graph).

        As in PyTorch, a module or parameter shared by two attributes is listed under both names.
        """
        state = collections.OrderedDict()
        for module_name, module in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            for name, p in itertools.chain(module._parameters.items(), module._buffers.items()):
                if p is not None and name not in module._non_persistent:
                    state[f"{module_name}.{name}" if module_name else name] = p.detach()
        return state

    def load_state_dict(self, state_dict, strict=True):
        """Copy tensors (or NumPy arrays) into this module's parameters and buffers, in place.

        With strict=True (the default) missing and unexpected keys are errors; a shape mismatch is
        always an error. Nothing is changed unless every entry fits.
        """
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems = []
        if strict and unexpected:
            problems.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
        if strict and missing:
            problems.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        for key, target in own.items():
            if key in state_dict:
                shape = tuple(getattr(state_dict[key], "shape", ()))
                if shape != tuple(target.shape):
                    problems.append(
                        f"size mismatch for {key}: copying a param with shape {list(shape)} from "
                        f"checkpoint, the shape in current model is {list(target.shape)}."
                    )
        if problems:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(problems)
            )
        with autograd.no_grad():
            for key, target in own.items():
                if key in state_dict:
                    value = state_dict[key]
                    values = backend.to_host(value.array) if isinstance(value, Tensor) else backend.host_values(value)
                    target.array[...] = backend.from_host(values.astype(target.dtype.name), target.device)
                    target._bump_version()
        return _IncompatibleKeys(missing, unexpected)

    # --- moving ---

    def to(self, *args, **kwargs):
        """Move (or cast) parameters and buffers in place; Parameter objects stay the same objects.

        A dtype applies to floating point tensors only: integer and bool buffers keep theirs.
        """
        device, dtype = parse_to_args(args, kwargs)
        if dtype is not None:
            dtypes.computable(dtype)  # refused before anything moves

        def moved(t):
            return t.detach().to(device=device, dtype=dtype if t.dtype.is_floating_point else None)

        for module in self.modules():
            for p in module._parameters.values():
                if p is not None:
                    p.array = moved(p).array
                    if p.grad is not None:
                        p.grad = moved(p.grad)
            for name, b in module._buffers.items():
                if b is not None:
                    module._buffers[name] = moved(b)
                    object.__setattr__(module, name, module._buffers[name])
        return self

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return self.to(dtypes.float32)

    def double(self):
        return self.to(dtypes.float64)

    def half(self):  # refused with a message that says what to do (see dtypes.computable)
        return self.to(dtypes.float16)

    def bfloat16(self):
        return self.to(dtypes.bfloat16)

    # --- printing ---

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        for name, module in self._modules.items():
            child = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{type(self).__name__}(\n  {body}\n)"

    def __dir__(self):
        return sorted(set(super().__dir__()))


class Sequential(Module):
    """Modules run one after the other: Sequential(Linear(4, 8), ReLU(), Linear(8, 2))."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            modules = modules[0].items()
        else:
            modules = ((str(i), m) for i, m in enumerate(modules))
        for name, module in modules:
            self.add_module(name, module)

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x

    def __getitem__(self, index):
        if isinstance(index, slice):  # the layers keep their names, as in PyTorch: (a, b, c)[1:] has 1 and 2
            return Sequential(collections.OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[index]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules whose parameters the parent module sees (e.g. the heads of the wrapper)."""

    def __init__(self, modules=None):
        super().__init__()
        for module in modules or []:
            self.append(module)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def __getitem__(self, index):
        items = list(self._modules.values())
        return ModuleList(items[index]) if isinstance(index, slice) else items[index]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __repr__(self):
        # as PyTorch prints it: a run of identical modules (a model's blocks, the heads) is one line
        children = [repr(module).replace("\n", "\n  ") for module in self]
        if not children:
            return "ModuleList()"
        lines, start = [], 0
        for end in range(1, len(children) + 1):
            if end == len(children) or children[end] != children[start]:
                count = end - start
                if count == 1:
                    lines.append(f"({start}): {children[start]}")
                else:
                    lines.append(f"({start}-{end - 1}): {count} x {children[start]}")
                start = end
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """Submodules held in a dict by name, registered so that their parameters are found."""

    def __init__(self, modules=None):
        super().__init__()
        for name, module in (modules or {}).items():
            self.add_module(name, module)

    def __getitem__(self, name):
        return self._modules[name]

    def __setitem__(self, name, module):
        self.add_module(name, module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()


class ParameterList(Module):
    """A list of parameters that the module registers (named "0", "1", ...), so that
    `model.parameters()` and the optimizer see them. Plain tensors are wrapped in Parameter."""

    def __init__(self, values=None):
        super().__init__()
        for value in values or []:
            self.append(value)

    def append(self, value):
        self.register_parameter(str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def __getitem__(self, index):
        items = list(self._parameters.values())
        return ParameterList(items[index]) if isinstance(index, slice) else items[index]

    def __setitem__(self, index, value):
        name = str(range(len(self))[index])
        self._parameters[name] = _as_parameter(value)
        object.__setattr__(self, name, self._parameters[name])

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def extra_repr(self):
        return "\n".join(f"({name}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                         for name, p in self._parameters.items())


class ParameterDict(Module):
    """A dict of parameters that the module registers under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        for key, value in dict(parameters or {}).items():
            self[key] = value

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        if key in self._parameters:
            self._parameters[key] = _as_parameter(value)
            object.__setattr__(self, key, self._parameters[key])
        else:
            self.register_parameter(key, _as_parameter(value))

    def __contains__(self, key):
        return key in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        for key, value in dict(parameters).items():
            self[key] = value

    def extra_repr(self):
        return "\n".join(f"({key}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                         for key, p in self._parameters.items())


def _as_parameter(value):
    return value if isinstance(value, Parameter) else Parameter(value)
