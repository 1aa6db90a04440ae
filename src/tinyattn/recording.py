"""`tinyattn.replayed(step)`: run a training step's array calls again without the Python around them.

A learner's loop runs the same small step 200,000 times, and on tensors of a few thousand numbers
most of an op's time is Python: checking the arguments, promoting dtypes, building the tensor and its
graph node. `replayed` records the step once as the list of array calls it made and from then on
makes only those calls:

    step = tinyattn.replayed(step)      # or @tinyattn.replayed above `def step():`
    for i in range(200000):
        loss = step()

Call 1 runs the step as usual and records it. Call 2 runs it as usual again and also replays the
recording on copies of everything it touched, then compares the two bit for bit: the returned
tensors, every tensor and `.grad` the step read or wrote, and the random number generator. Only if
all of them agree do calls 3, 4, ... replay. Whatever the recorder cannot repeat (listed below) makes
the step run as usual from then on, with one warning that says why; `strict=True` raises instead.

What a replay repeats: the ops on tensors, forward and backward; in-place writes (`p.data += -lr *
p.grad`, `dC[ix] += demb[k, j]`, also with `ix` a 0-d tensor); `p.grad = None`; and the calls of
the random and creation functions of the `tinyattn` namespace (`tinyattn.randint`, `zeros_like`,
`F.one_hot`, dropout's masks), which draw new numbers each time. The tensors that existed before the
step (parameters, the dataset) are read afresh on every call, so changes made to them between calls
are seen.

What it refuses (the step then runs as usual):
- a tensor's value read into Python inside the step (`.item()`, `if loss > 2:`, `print(x)`,
  `x[i:i + 8]` with `i` a tensor): the Python that follows would not run again;
- a tensor the step makes and keeps after it returns in a list, a dict or a global: a replay could
  not reach it to give it new values (one kept in an attribute, `self.out = x`, is set again on
  each replay, with its grad_fn and the .grad retain_grad() gives it);
- hooks, custom `autograd.Function`s, an explicit `generator=`, GPU arrays;
- work it cannot see, such as an optimizer's `step()`, which updates the parameters' arrays
  directly: the check on call 2 finds the difference. Replay the forward and backward, and call
  `optimizer.step()` after the replayed function.

What it cannot know: Python values that do not come from tensors (a learning rate in a variable, a
step counter, a NumPy array) are read while the step is recorded and stay what they were then. Pass
them as arguments: a call with other Python values, other tensor shapes, another default dtype, with
gradients off, or with a module switched between train() and eval() records the step again.
"""

import functools
import gc
import operator
import threading
import types
import warnings
import weakref

import numpy as np

from . import autograd, backend, dtypes, functions, ops, random, tracing
from .autograd import Node
from .nn import functional as F
from .tensor import _INPLACE_UFUNCS, Tensor

__all__ = ["ReplayError", "Replayed", "replayed"]


class ReplayError(RuntimeError):
    """A step that `replayed` cannot record or replay (raised with strict=True; a warning otherwise)."""


# the functions whose calls a replay makes again (they make new tensors without an op: random draws,
# zeros, one-hot codes); they are found by name in these namespaces while a step is recorded
_FACTORIES = {
    functions: ("randint", "randn", "rand", "randperm", "randn_like", "rand_like",
                "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
                "arange", "linspace", "eye", "tensor"),
    F: ("one_hot", "dropout_mask"),
}
# the Tensor methods that make a tensor without an op (no gradient flows through them): comparisons,
# masks, integer division, arg-max; a replay calls them again
_TENSOR_FACTORIES = ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "eq", "ne", "gt", "lt", "ge",
                     "le", "__and__", "__or__", "__xor__", "__invert__", "__floordiv__", "__rfloordiv__",
                     "__mod__", "__rmod__", "argmax", "argmin", "isnan", "isinf", "isfinite", "logical_not",
                     "any", "all", "argsort")
# the Tensor methods that hand a tensor's values to Python
_TO_PYTHON = ("item", "tolist", "numpy", "__array__", "__bool__", "__int__", "__float__", "__index__",
              "__repr__", "__str__", "__format__", "equal", "allclose")

_patch_lock = threading.Lock()  # one recording at a time patches the Tensor class


def replayed(step=None, *, strict=False):
    """Wrap `step` (a function that runs one training step) so that from its third call on it replays
    the array calls it recorded. Used bare or as a decorator: `@replayed` or `@replayed(strict=True)`."""
    if step is None:
        return lambda fn: Replayed(fn, strict=strict)
    return Replayed(step, strict=strict)


class Replayed:
    """A step with its recording. `state` says what the next call does: "record", "check", "replay",
    or "eager" (the step runs as usual; `reason` says why)."""

    def __init__(self, step, strict=False):
        if not callable(step):
            raise TypeError(f"replayed() takes a function that runs one step, got {type(step).__name__}")
        self.step, self.strict = step, strict
        self.state, self.reason = "record", None
        self._program, self._guard, self._records = None, None, 0

    def __repr__(self):
        why = f": {self.reason}" if self.reason else ""
        return f"<replayed {getattr(self.step, '__name__', 'step')} ({self.state}{why})>"

    def __call__(self, *args):
        if self.state == "eager":
            return self.step(*args)
        guard = _guard_of(args)
        if guard is None:
            return self._give_up("its arguments must be tensors or Python numbers, strings, None", args,
                                 stacklevel=3)
        if guard != self._guard:  # other shapes or Python values than recorded: record again
            self.state, self._guard, self._program = "record", guard, None
        if self.state != "record" and not self._program.holds_for(args):
            self.state = "record"  # a tensor it reads changed shape, dtype or requires_grad...: record again
        if self.state == "replay":
            if autograd.observers:  # a trace or detect_anomaly is watching: it must see the ops run
                return self.step(*args)
            return self._program.run(args)
        if self.state == "record":
            return self._record(args)
        return self._check(args)

    def _record(self, args):
        self._records += 1
        if self._records > 8:
            return self._give_up("it was recorded 8 times (its arguments' shapes or Python values keep "
                                 "changing): each new one records the step again", args)
        recorder = _Recorder(args)
        result = recorder.run(self.step)
        if recorder.refusal:
            self._give_up(recorder.refusal)
        else:
            self._program, self.state = recorder.program(result), "check"
        return result

    def _check(self, args):
        """Run the step as usual and its recording on copies of what it touches; replay from now on
        only if both give the same bits."""
        program = self._program
        program.checked = True
        program.checked_with_other_arguments = any(ref() is not args[i] for i, ref in program.argument_refs)
        before = program.snapshot(args)
        recorder = _Recorder(args)  # the second call is watched too: its refusals count as well
        result = recorder.run(self.step)
        if recorder.refusal:
            self._give_up(recorder.refusal)
            return result
        difference = program.other_steps(recorder.program(result))
        if difference:
            self._give_up(difference)
            return result
        after = random.get_rng_state()
        random.set_rng_state(before.rng)
        try:
            keeps = []
            replayed_result = program.run(before.args, externals=before.externals, keeps=keeps)
            difference = program.difference(args, before, result, replayed_result, after, keeps)
        except Exception as error:  # noqa: BLE001  (any failure of the replay means: do not replay)
            difference = f"its replay failed: {type(error).__name__}: {error}"
        finally:
            random.set_rng_state(after)
        if difference:
            self._give_up(f"the replay of its second call did not give the same bits as running it: {difference}")
        else:
            self.state = "replay"
        return result

    def _give_up(self, reason, args=None, stacklevel=4):
        """Run the step as usual from now on (and now, given `args`), with a warning that says why."""
        self.state, self.reason, self._program = "eager", reason, None
        message = f"replayed({getattr(self.step, '__name__', 'step')}) runs it as usual from now on: {reason}"
        if self.strict:
            raise ReplayError(message)
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)  # (points at the caller's line)
        return None if args is None else self.step(*args)


_PYTHON_VALUES = (int, float, bool, str, type(None))


def _guard_of(args):
    """What must stay the same for a recording to hold: each tensor argument's shape and dtype, every
    other argument's value (None if an argument is neither a tensor nor a plain Python value), whether
    gradients are recorded, and the default float dtype (which factories make)."""
    parts = [autograd.grad_mode.enabled, dtypes.default_float]
    first = {}  # id(array) -> the first argument holding it: step(x, x) is another step than step(x, y)
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            same_as = first.setdefault(id(a.array), i)
            parts.append(("tensor", a.array.shape, a.array.dtype, type(a.array), a._requires_grad, same_as))
        elif type(a) in _PYTHON_VALUES:
            parts.append(("value", type(a), a))
        else:
            return None
    return tuple(parts)


# ---------------------------------------------------------------------------------------------
# recording: one eager call, watched


class _Refused(Exception):
    """Raised inside a watched call to stop recording; the call itself goes on."""


def _hook(method):
    """A recorder's hook: what goes wrong in it stops the recording, never the step being recorded."""

    @functools.wraps(method)
    def hook(recorder, *args):
        try:
            return method(recorder, *args)
        except _Refused as refusal:
            recorder.refuse(str(refusal))
        except Exception as error:  # noqa: BLE001
            recorder.refuse(f"the recorder failed ({type(error).__name__}: {error})")

    return hook


class _Recorder:
    """Watches one call of the step and writes down its array calls.

    Every array the step works with gets a slot number: the step's tensor arguments, the tensors that
    existed before the call (externals), the outputs of ops and factories, gradients after a backward,
    constants in an op's arguments. An event reads and writes slots.
    """

    def __init__(self, args):
        self.thread = threading.get_ident()
        self.args = args
        self.refusal = None
        self.events = []
        self.slot_of = {}  # id(array) -> slot
        self.arrays = []  # slot -> array (kept alive, so that the ids in slot_of stay theirs)
        self.kinds = []  # slot -> ("arg", i) | ("external", i) | ("made",)
        self.externals, self.external_index = [], {}  # tensors from before the call, id -> index
        self.new_tensors = set()  # ids of the tensors made during the call
        self.unrepeatable = {}  # id -> array of the tensors the step made outside ops and known functions
        self.made = []  # weak references to the tensors the step made itself
        self.node_index = {}  # node -> index of its op event
        self.producer = {}  # slot -> the op event that made it
        self.index_values = []  # (position in the key, slot, value) of the ints the next index takes from tensors
        self.modules, self.module_ids = [], set()  # the modules the step called
        self.depth = 0  # > 0 inside a factory or a backward pass: their own inner work is not the step's
        self.graph_nodes = []  # (op event index, node) for nodes with a graph, to read retain_grad from
        self.pending_backward = None  # the backward event being recorded
        self.argument_index = {}  # id(tensor) -> its position among the step's arguments
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                self._new_slot(a.array, ("arg", i))
                self.argument_index.setdefault(id(a), i)

    # --- the watched call ---

    def run(self, step):
        if not _patch_lock.acquire(blocking=False):
            self.refuse("another step is being recorded at the same time (in this thread or another)")
            return step(*self.args)
        try:
            with _Watch(self):
                result = step(*self.args)
        finally:
            _patch_lock.release()
        if self.refusal is None:
            self._check_result(result)
        if self.refusal is None:
            self._check_nothing_kept(result)
        return result

    def refuse(self, reason, where=True):
        if self.refusal is None:
            site = tracing._call_site() if where else None  # the step's line that did it
            if site is not None and site.file:
                reason += f" (at {tracing.short_path(site.file)}:{site.line}: {site.code})"
            self.refusal = reason

    def watching(self):
        return self.refusal is None and self.depth == 0 and threading.get_ident() == self.thread

    # --- slots ---

    def _new_slot(self, array, kind):
        slot = len(self.arrays)
        self.slot_of[id(array)] = slot
        self.arrays.append(array)
        self.kinds.append(kind)
        return slot

    def slot_of_tensor(self, tensor, what):
        slot = self.slot_of.get(id(tensor.array))
        if slot is not None:
            return slot
        if id(tensor) in self.new_tensors:
            raise _Refused(f"{what} is a tensor made by a function it cannot repeat (shape "
                           f"{list(tensor.shape)}); make it with a tinyattn function, outside the step, or pass it in")
        return self._new_slot(tensor.array, ("external", self.external(tensor)))

    def owner(self, tensor):
        """Where a replay finds this tensor: ("arg", i) among its arguments, or ("ext", i) among the
        tensors from before the call."""
        i = self.argument_index.get(id(tensor))
        return ("arg", i) if i is not None else ("ext", self.external(tensor))

    def _owner_of_slot(self, slot):
        """The tensor whose memory a slot is, where that tensor is an argument or from before the call."""
        kind = self.kinds[slot]
        return ("ext", kind[1]) if kind[0] == "external" else ("arg", kind[1]) if kind[0] == "arg" else None

    def external(self, tensor):
        index = self.external_index.get(id(tensor))
        if index is None:
            if type(tensor.array) is not np.ndarray:
                raise _Refused("it works on GPU arrays: replays are made for NumPy arrays")
            index = self.external_index[id(tensor)] = len(self.externals)
            self.externals.append(tensor)
        return index

    def template(self, value, what):
        """An argument as the replay will build it: slots for tensors and their arrays, constants else."""
        if isinstance(value, Tensor):
            return ("slot", self.slot_of_tensor(value, what))
        if hasattr(value, "__cuda_array_interface__"):
            raise _Refused("it works on GPU arrays: replays are made for NumPy arrays")
        if type(value) is np.ndarray:
            slot = self.slot_of.get(id(value))
            if slot is not None:
                return ("array", slot)
            if id(value) in self.unrepeatable:
                raise _Refused(f"{what} comes from a tensor made by a function it cannot repeat "
                               f"(shape {list(value.shape)})")
            return ("const", value)
        if isinstance(value, dict):
            parts = [(key, self.template(v, what)) for key, v in value.items()]
            return ("const", value) if all(p[0] == "const" for _, p in parts) else ("dict", type(value), parts)
        if isinstance(value, (tuple, list)):
            parts = [self.template(v, what) for v in value]
            if all(p[0] == "const" for p in parts):
                return ("const", value)
            if type(value) not in (tuple, list) and not hasattr(value, "_fields"):
                raise _Refused(f"{what} holds tensors in a {type(value).__name__}, which a replay cannot build")
            return ("sequence", type(value), parts)
        if isinstance(value, random.Generator):
            raise _Refused("it passes an explicit generator=: a replay draws from the default generator only")
        if callable(value) and not isinstance(value, type):
            raise _Refused(f"{what} gets a function ({getattr(value, '__name__', value)!r}) it would call again")
        return ("const", value)

    # --- what the watch reports ---

    @_hook
    def on_forward(self, node, args, outputs):
        if not self.watching():
            return
        function = node.function
        if not function.takes_arrays:
            raise _Refused(f"it calls the custom autograd.Function {function.__name__}, whose forward "
                           "is Python on tensors")
        if node.hooks:
            raise _Refused("a tensor it makes has a hook (register_hook)")
        for t in outputs:  # made by this op, so repeatable (an output may be an input's array itself)
            self.unrepeatable.pop(id(t.array), None)
        inputs = [self.template(a, f"an input of {function.__name__}") for a in args]
        if self.index_values:
            inputs[1] = self._key_from_tensors(function, args[1], inputs[1])
        has_graph = hasattr(node, "edges")
        edges = [self._edge(edge) for edge in node.edges] if has_graph else None
        out_slots = [self._new_slot(t.array, ("made",)) for t in outputs]
        event = _OpEvent(len(self.events), function, inputs, node.needs_input_grad, out_slots, has_graph)
        for slot in out_slots:
            self.producer[slot] = event
        if has_graph:
            event.edges, event.input_meta, event.output_meta = edges, node.input_meta, node.output_meta
            event.requires_grad = [t._requires_grad for t in outputs]
            event.name_hint, event.materialize = node.name_hint, node.materialize_grads
            self.graph_nodes.append((len(self.events), node))
        self.node_index[node] = len(self.events)
        self.events.append(event)

    def _key_from_tensors(self, function, key, template):
        """The template of an index key whose ints came from 0-d tensors: those ints are read again."""
        pending, self.index_values = self.index_values, []
        if function not in (ops.Index, ops.IndexPut):
            raise _Refused("an index taken from a tensor reached an op that is not indexing")
        parts = list(key) if isinstance(key, tuple) else [key]
        templates = list(template[2]) if template[0] == "sequence" else [("const", part) for part in parts]
        for position, slot, value in pending:
            if position >= len(parts) or parts[position] != value:
                raise _Refused("an index taken from a tensor did not reach its indexing op")
            templates[position] = ("int_of", slot)
        return ("sequence", tuple, templates) if isinstance(key, tuple) else templates[0]

    def _edge(self, edge):
        if edge is None:
            return None
        target, index = edge
        if type(target) is Node:
            op = self.node_index.get(target)
            if op is None:
                raise _Refused("an op's input comes from a graph made before the step (or from a view "
                               "taken again): the step must build its own graph")
            return ("op", op, index)
        if id(target) in self.new_tensors:
            raise _Refused("it makes a new tensor that requires grad: make the parameters outside the step")
        return ("leaf", self.owner(target))

    @_hook
    def on_backward(self, node, grads_out, grads_in):
        """A node's backward ran: the order they run in is the order a replay runs them in."""
        event = self.pending_backward
        if event is not None and threading.get_ident() == self.thread:
            op = self.node_index.get(node)
            if op is None:
                raise _Refused("its backward runs through ops made before the step")
            event.schedule.append(op)

    @_hook
    def on_index_value(self, tensor, position):
        """An index key holds a 0-d integer tensor, at `position`: the Index or IndexPut op that takes
        the key next gets that int from the tensor's slot on each replay."""
        if self.watching():
            slot = self.slot_of_tensor(tensor, "a tensor used as an index")
            self.index_values.append((position, slot, int(tensor.array)))

    @_hook
    def on_module_enter(self, module):
        if self.watching() and id(module) not in self.module_ids:  # its train()/eval() mode is read again
            self.module_ids.add(id(module))
            self.modules.append(module)

    def on_module_exit(self, module):
        pass

    @_hook
    def on_store(self, tensor, array):
        """An in-place op wrote `array` into `tensor`'s memory."""
        if not self.watching():
            return
        if autograd.grad_mode.enabled and tensor.requires_grad:
            raise _Refused("it changes a tensor that requires grad in place while recording a graph "
                           "(`x += b`: write `x = x + b`)")
        target = self.slot_of_tensor(tensor, "the tensor it changes in place")
        source = self.template(array, "the value it writes in place")
        op = self.producer.get(source[1]) if source[0] == "array" else None
        if op is not None and op.has_graph:
            raise _Refused("it runs an in-place op that records a graph")
        self.events.append(_StoreEvent(target, source, self._owner_of_slot(target)))

    @_hook
    def on_set_grad(self, tensor, value):
        if not self.watching() or id(tensor) in self.new_tensors:
            return
        if value is not None:
            raise _Refused("it sets a .grad to a tensor: only `.grad = None` is repeated")
        self.events.append(_SetGradEvent(self.owner(tensor)))

    @_hook
    def on_to_python(self, tensor, method):
        if self.watching():
            self.refuse(f"it reads a tensor's value into Python ({method} of a tensor of shape "
                        f"{list(tensor.shape)}): the Python that follows would not run again; do that "
                        "outside the step, on what it returns")

    @_hook
    def on_made(self, tensor):
        if threading.get_ident() == self.thread:
            self.new_tensors.add(id(tensor))
            if self.depth == 0:  # made by the step itself: by an op (which then gives its array a slot)
                self.made.append(weakref.ref(tensor))  # or by a function a replay cannot repeat
                self.unrepeatable[id(tensor.array)] = tensor.array

    @_hook
    def on_factory(self, function, args, kwargs, result):
        if not self.watching():
            return
        if result is NotImplemented:  # (Python then tries the other operand's method)
            return
        if not isinstance(result, (Tensor, np.ndarray)):
            raise _Refused(f"{function.__name__} did not return a tensor")
        if isinstance(result, Tensor) and result.requires_grad:
            raise _Refused("it makes a new tensor that requires grad: make the parameters outside the step")
        arg_templates = [self.template(a, f"an argument of {function.__name__}") for a in args]
        kwarg_templates = {k: self.template(v, f"{k}= of {function.__name__}") for k, v in kwargs.items()}
        slot = self._new_slot(result.array if isinstance(result, Tensor) else result, ("made",))
        self.events.append(_FactoryEvent(function, arg_templates, kwarg_templates, slot))

    @_hook
    def on_backward_call(self, tensors, gradient, retain_graph):
        """Returns True if this backward is recorded (then after_backward follows it)."""
        if not self.watching():
            return False
        if not isinstance(tensors, Tensor):
            raise _Refused("it calls backward on several tensors at once")
        op = self.node_index.get(tensors.grad_fn)
        if op is None:
            raise _Refused("it calls backward on a tensor it did not compute")
        grad = None if gradient is None else self.template(gradient, "the gradient given to backward")
        for index, node in self.graph_nodes:
            if node.retained:
                self.events[index].retained = [i for i, ref in node.retained if ref() is not None]
            if node.hooks:
                raise _Refused("a tensor it makes has a hook (register_hook)")
        self.pending_backward = _BackwardEvent(op, tensors.output_nr, grad, bool(retain_graph), self.events)
        return True

    @_hook
    def after_backward(self):
        """The gradients are in .grad now: give each a slot, to be read there after a replay's backward."""
        event = self.pending_backward
        owners = [(("ext", i), t) for i, t in enumerate(self.externals)]
        owners += [(("arg", i), self.args[i]) for i in sorted(set(self.argument_index.values()))]
        for owner, tensor in owners:
            if tensor._hooks:
                raise _Refused("a tensor it uses has a hook (register_hook)")
            if tensor.grad is not None:
                event.grads.append((self._new_slot(tensor.grad.array, ("made",)), owner))
                self.new_tensors.add(id(tensor.grad))
        for index, node in self.graph_nodes:
            for output, ref in node.retained or ():
                tensor = ref()
                if tensor is not None and tensor.grad is not None:
                    event.retained_grads.append((self._new_slot(tensor.grad.array, ("made",)), index, output))
        self.events.append(event)
        self.pending_backward = None

    # --- after the call ---

    @_hook
    def _check_result(self, result):
        """What the step returns, as a replay will build it: tensors from their slots, inside tuples,
        named tuples, lists and dicts; other values as they are."""
        if (isinstance(result, (tuple, list)) and type(result) not in (tuple, list)
                and not hasattr(result, "_fields") and _tensors_in(result)):
            raise _Refused(f"it returns a {type(result).__name__}: return tensors in a tuple, list or dict")
        self.result_template = self.template(result, "what it returns")

    def _check_nothing_kept(self, result):
        """A tensor the step made that lives on after it returns must be an attribute of an object
        (`self.out = x`, `self.attn_weights = w.detach()`), which a replay sets again; anywhere else
        (a list, a dict, a global) a replay could not reach it."""
        returned = {id(t) for t in _tensors_in(result)}
        grads = {id(t.grad) for t in self.externals if t.grad is not None}
        gc.collect()
        for ref in self.made:
            tensor = ref()
            if tensor is None or id(tensor) in returned or id(tensor) in grads:
                continue
            places = self._attributes_holding(tensor)
            if places is None:
                self.refuse(f"it keeps a tensor it made (shape {list(tensor.shape)}) after it returns (in a list, "
                            "a dict, a global): a replay would leave its first values there; return it",
                            where=False)
                return
            if places:  # (none: only views of it hold it, through their _base)
                self.events.append(self._keep_event(tensor, places))

    def _attributes_holding(self, tensor):
        """The (object, attribute name) places that hold `tensor`, where attributes of objects are all
        that hold it (`self.out` of a layer and of the Sequential around it); None otherwise."""
        places = []
        for referrer in gc.get_referrers(tensor):
            if isinstance(referrer, (types.FrameType, Tensor)):  # the recorder's frames; a view's _base
                continue
            if type(referrer) is dict:  # an object's __dict__, or a dict of the user's
                owners = [o for o in gc.get_referrers(referrer) if getattr(o, "__dict__", None) is referrer]
                owner = owners[0] if len(owners) == 1 else None
            else:  # an object holding its attributes without a dict of its own (Python 3.11+)
                owner = referrer if hasattr(referrer, "__dict__") else None
            names = _names_of(tensor, vars(owner)) if owner is not None else []
            if not names:
                return None
            places.extend((owner, name) for name in names)
        return sorted(places, key=lambda place: (id(place[0]), place[1]))  # (the same order in each recording)

    def _keep_event(self, tensor, places):
        slot = self.slot_of.get(id(tensor.array))
        if slot is None:
            owner, name = places[0]
            raise _Refused(f"it keeps a tensor made by a function it cannot repeat in {type(owner).__name__}.{name}")
        op = self.node_index.get(tensor.grad_fn) if tensor.grad_fn is not None else None
        retained = op is not None and any(ref() is tensor for _, ref in tensor.grad_fn.retained or ())
        return _KeepEvent(places, slot, op, tensor.output_nr, tensor._requires_grad, retained)

    def program(self, result):
        return _Program(self.events, self.kinds, self.arrays, self.externals, self.result_template,
                        modules=self.modules, arguments=self.args)


def _names_of(value, namespace):
    """The names under which `namespace` holds `value`. (A function of its own: a comprehension inside
    _holder_of would hold the tensor in a closure cell, one more referrer.)"""
    return [name for name, v in namespace.items() if v is value]


def _tensors_in(value):
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors_in(v)]
    return []


class _Watch:
    """While a step is recorded: observe its ops (autograd.observers) and, by wrapping a few Tensor
    methods and functions for the duration, its in-place writes, `.grad = None`, values read into
    Python, new tensors, factory calls and backward calls. Everything is put back on exit."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.undo = []

    def __enter__(self):
        try:
            self._watch(self.recorder)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _watch(self, recorder):
        autograd.observers.append(recorder)
        self.undo.append(lambda: autograd.observers.remove(recorder))

        store = Tensor._store

        def _store(tensor, array):
            recorder.on_store(tensor, array)
            return store(tensor, array)

        self._set(Tensor, "_store", _store)

        grad_slot = Tensor.__dict__["grad"]  # the slot's own descriptor

        def set_grad(tensor, value):
            try:
                grad_slot.__get__(tensor, Tensor)
            except AttributeError:  # a tensor being made: its first .grad = None is not the step's
                pass
            else:
                recorder.on_set_grad(tensor, value)
            grad_slot.__set__(tensor, value)

        self._set(Tensor, "grad", property(grad_slot.__get__, set_grad))

        for name in _TO_PYTHON:
            self._set(Tensor, name, _to_python_watcher(recorder, getattr(Tensor, name), name))
        for name in _TENSOR_FACTORIES:
            self._set(Tensor, name, _factory_watcher(recorder, getattr(Tensor, name)))

        wrap, from_data = Tensor.__dict__["_wrap"].__func__, Tensor.__dict__["_from_data"].__func__
        init = Tensor.__init__

        def _wrap(cls, *args, **kwargs):
            tensor = wrap(cls, *args, **kwargs)
            recorder.on_made(tensor)
            return tensor

        def _from_data(cls, *args, **kwargs):
            tensor = from_data(cls, *args, **kwargs)
            recorder.on_made(tensor)
            return tensor

        def __init__(tensor, *args, **kwargs):
            init(tensor, *args, **kwargs)
            recorder.on_made(tensor)

        self._set(Tensor, "_wrap", classmethod(_wrap))
        self._set(Tensor, "_from_data", classmethod(_from_data))
        self._set(Tensor, "__init__", __init__)

        backward = autograd.backward

        def watched_backward(tensors, grad_tensors=None, retain_graph=False):
            recorded = recorder.on_backward_call(tensors, grad_tensors, retain_graph)
            recorder.depth += 1
            try:
                result = backward(tensors, grad_tensors, retain_graph)
            finally:
                recorder.depth -= 1
            if recorded:
                recorder.after_backward()
            return result

        self._set(autograd, "backward", watched_backward)

        import tinyattn

        for module, names in _FACTORIES.items():
            for name in names:
                function = getattr(module, name)
                watched = _factory_watcher(recorder, function)
                self._set(module, name, watched)
                if module is functions and getattr(tinyattn, name, None) is function:
                    self._set(tinyattn, name, watched)

    def _set(self, owner, name, value):
        had = name in owner.__dict__ if isinstance(owner, type) else hasattr(owner, name)
        old = owner.__dict__[name] if isinstance(owner, type) and had else getattr(owner, name, None)
        setattr(owner, name, value)
        self.undo.append(lambda: setattr(owner, name, old) if had else delattr(owner, name))

    def __exit__(self, *exc):
        while self.undo:
            self.undo.pop()()
        return False


def _to_python_watcher(recorder, method, name):
    def watched(tensor, *args, **kwargs):
        recorder.on_to_python(tensor, f".{name}()" if not name.startswith("__") else name.strip("_") + "()")
        return method(tensor, *args, **kwargs)

    watched.__name__ = name
    return watched


def _factory_watcher(recorder, function):
    def watched(*args, **kwargs):
        recorder.depth += 1
        try:
            result = function(*args, **kwargs)
        finally:
            recorder.depth -= 1
        recorder.on_factory(function, args, kwargs, result)
        return result

    watched.__name__ = function.__name__
    return watched


# ---------------------------------------------------------------------------------------------
# the program: the recorded events, and their replay
#
# A replay keeps every array of the step in one list, `values`, indexed by slot; each event reads
# its inputs from there and writes its outputs there. `nodes[i]` is the graph node op event i made.


class _Replay:
    """The state of one replay."""

    __slots__ = ("values", "nodes", "externals", "args", "standins", "keeps")

    def __init__(self, values, nodes, externals, args, keeps=None):
        self.values, self.nodes, self.externals, self.args, self.standins = values, nodes, externals, args, {}
        self.keeps = keeps  # a list while checking: the attributes a replay would set

    def tensor(self, owner):
        """An argument ("arg", i) or a tensor from before the call ("ext", i)."""
        return (self.args if owner[0] == "arg" else self.externals)[owner[1]]


class _OpEvent:
    """A built-in op: its forward on the input arrays and, when it recorded a graph, its node."""

    retained = ()  # the outputs whose tensors had retain_grad()

    def __init__(self, index, function, inputs, needs, out_slots, has_graph):
        self.index, self.function, self.inputs, self.needs = index, function, inputs, needs
        self.out_slots, self.has_graph = out_slots, has_graph
        self.gather = None  # set by _Program: itemgetter of the input slots, where every input is one
        if not has_graph:  # no backward will read its ctx: one serves every replay
            self.ctx = Node(function)
            self.ctx.xp, self.ctx.needs_input_grad = backend.numpy_xp, needs

    def run(self, r):
        values = r.values
        if self.has_graph:
            ctx = Node(self.function)
            ctx.xp, ctx.needs_input_grad = backend.numpy_xp, self.needs
        else:
            ctx = self.ctx
        if self.gather is None:
            result = self.function.forward(ctx, *[_build(i, values) for i in self.inputs])
        elif self.single:
            result = self.function.forward(ctx, self.gather(values))
        else:
            result = self.function.forward(ctx, *self.gather(values))
        if len(self.out_slots) == 1:
            values[self.out_slots[0]] = result if type(result) is np.ndarray else np.asarray(result)
        else:
            for slot, array in zip(self.out_slots, result):
                values[slot] = array if type(array) is np.ndarray else np.asarray(array)
        if self.has_graph:
            self._link(ctx, r)

    def _link(self, node, r):
        """Give the node its place in the graph, as Function.apply does."""
        node.sequence = next(autograd._sequence)
        node.input_meta, node.output_meta = self.input_meta, self.output_meta
        node.name_hint, node.materialize_grads = self.name_hint, self.materialize
        node.edges = tuple([None if e is None else (r.nodes[e[1]], e[2]) if e[0] == "op" else (r.tensor(e[1]), 0)
                            for e in self.edges])
        if self.retained:  # the tensors retain_grad() was called on, stood in for, to receive .grad
            kept = []
            for output in self.retained:
                standin = Tensor._wrap(r.values[self.out_slots[output]], True, node, output)
                r.standins[(self.index, output)] = standin
                kept.append((output, weakref.ref(standin)))
            node.retained = tuple(kept)
        r.nodes[self.index] = node


class _StoreEvent:
    """An in-place write of one slot's array (or a constant) into another's memory."""

    def __init__(self, target, source, owner):
        self.target, self.source, self.owner = target, source, owner

    def run(self, r):
        target, source = r.values[self.target], _build(self.source, r.values)
        if source is not target:  # (ops that wrote in place already did)
            target[...] = source
        if self.owner is not None:
            r.tensor(self.owner)._version[0] += 1


class _InplaceEvent:
    """An op and the in-place write of its result, as one NumPy call that writes into the target's
    memory (`p.data += -lr * p.grad`): the same numbers, as Tensor._inplace_direct computes them."""

    def __init__(self, ufunc, target, other, owner):
        self.ufunc, self.target, self.other, self.owner = ufunc, target, other, owner

    def run(self, r):
        target = r.values[self.target]
        self.ufunc(target, _build(self.other, r.values), out=target)
        if self.owner is not None:
            r.tensor(self.owner)._version[0] += 1


class _SetitemEvent:
    """x[key] = value with no graph, written into x's memory, as Tensor._setitem_direct does."""

    def __init__(self, target, key, value, owner):
        self.target, self.key, self.value, self.owner = target, key, value, owner

    def run(self, r):
        values = r.values
        values[self.target][_build(self.key, values)] = _build(self.value, values)
        if self.owner is not None:
            r.tensor(self.owner)._version[0] += 1


class _KeepEvent:
    """`owner.name = x` for a tensor the step made and kept in attributes (`self.out = x`): each set
    again to this replay's tensor (with its graph node, and the .grad retain_grad() gave it)."""

    def __init__(self, places, slot, op, output, requires_grad, retained):
        self.places, self.slot = places, slot  # [(object, attribute name)]
        self.op, self.output, self.requires_grad, self.retained = op, output, requires_grad, retained

    def run(self, r):
        if self.retained:
            tensor = r.standins[(self.op, self.output)]
        elif self.op is not None:
            tensor = Tensor._wrap(r.values[self.slot], self.requires_grad, r.nodes[self.op], self.output)
        else:
            tensor = Tensor._wrap(r.values[self.slot])
        for owner, name in self.places:
            if r.keeps is None:
                setattr(owner, name, tensor)
            else:  # checking: the attribute holds the value the step just gave it, to compare with
                r.keeps.append((owner, name, tensor))


class _SetGradEvent:
    def __init__(self, owner):
        self.owner = owner

    def run(self, r):
        r.tensor(self.owner).grad = None


class _FactoryEvent:
    """A call of a random or creation function, made again (random ones draw new numbers)."""

    def __init__(self, function, args, kwargs, slot):
        self.function, self.args, self.kwargs, self.slot = function, args, kwargs, slot

    def run(self, r):
        values = r.values
        def tensor(slot):  # a factory gets tensors where the step gave it tensors
            return Tensor._wrap(values[slot])

        made = self.function(*[_build(a, values, tensor) for a in self.args],
                             **{k: _build(v, values, tensor) for k, v in self.kwargs.items()})
        values[self.slot] = made.array if isinstance(made, Tensor) else made


class _BackwardEvent:
    """loss.backward(): the nodes' backward calls in the recorded order, then the new .grad arrays
    go to their slots."""

    def __init__(self, op, output, grad, retain_graph, events):
        self.op, self.output, self.grad, self.retain_graph = op, output, grad, retain_graph
        self.events = events  # the program's events, to find each node's edges
        self.grads, self.retained_grads = [], []  # (slot, owner) and (slot, op, output) to read after
        self.schedule = []  # the op events whose backward ran, in the order they ran

    def run(self, r):
        node, root = r.nodes[self.op], r.values[self.events[self.op].out_slots[self.output]]
        if self.grad is None:
            self._backward_as_recorded(r, root)
        else:  # (the engine's own pass, which converts the given gradient as backward(gradient) does)
            gradient = Tensor._wrap(_build(self.grad, r.values))
            autograd.backward(Tensor._wrap(root, True, node, self.output), gradient, retain_graph=self.retain_graph)
        for slot, owner in self.grads:
            r.values[slot] = r.tensor(owner).grad.array
        for slot, op, output in self.retained_grads:
            r.values[slot] = r.standins[(op, output)].grad.array

    def _backward_as_recorded(self, r, root):
        """autograd._run_backward with the order of the nodes known: each node gets the same
        gradients, added up in the same order, and leaves receive theirs the same way."""
        events, nodes = self.events, r.nodes
        buffers = {self.op: [None] * len(events[self.op].output_meta)}
        buffers[self.op][self.output] = np.ones_like(root)
        leaf_grads = {}
        for op in self.schedule:
            node = nodes[op]
            grads = buffers.pop(op)
            if node.retained:
                for index, ref in node.retained:
                    tensor = ref()
                    if tensor is not None and grads[index] is not None:
                        autograd._accumulate(tensor, grads[index])
            input_grads = autograd._call_backward(node, grads)
            if not self.retain_graph:
                node.saved, node.released = (), True
            for edge, g, meta in zip(events[op].edges, input_grads, node.input_meta):
                if edge is None or g is None:
                    continue
                if g.shape != meta[0] or g.dtype != meta[1]:
                    g = autograd._check_grad(node, g, meta)
                if edge[0] == "op":
                    buffer = buffers.get(edge[1])
                    if buffer is None:
                        buffer = buffers[edge[1]] = [None] * len(events[edge[1]].output_meta)
                    index = edge[2]
                    buffer[index] = g if buffer[index] is None else buffer[index] + g
                else:
                    leaf = r.tensor(edge[1])
                    previous = leaf_grads.get(leaf)
                    leaf_grads[leaf] = g if previous is None else previous + g
        for leaf, g in leaf_grads.items():
            for hook in list(leaf._hooks or ()):  # (hooks added since the recording)
                g = autograd._run_hook(hook, g)
            autograd._accumulate(leaf, g)


def _fuse_inplace(events, arrays, result):
    """The events a replay runs: each op + in-place write that Tensor._inplace_direct or
    _setitem_direct would run as one NumPy call becomes that call."""
    used = {}  # slot -> how many times an event or the result reads it
    for slot in _slots_read(events, result):
        used[slot] = used.get(slot, 0) + 1
    steps, i = [], 0
    while i < len(events):
        op, store = events[i], events[i + 1] if i + 1 < len(events) else None
        fusable = (type(op) is _OpEvent and not op.has_graph and type(store) is _StoreEvent
                   and op.inputs[0] == ("slot", store.target) and store.source == ("array", op.out_slots[0])
                   and used.get(op.out_slots[0]) == 1)
        ufunc = _INPLACE_UFUNCS.get(op.function) if fusable else None
        if ufunc is not None:
            target, other = arrays[store.target], op.inputs[1]
            if target.dtype.kind == "f" and (
                    other[0] == "const" and type(other[1]) in (int, float)
                    or other[0] in ("slot", "array") and arrays[other[1]].dtype is target.dtype
                    and arrays[other[1]].ndim <= target.ndim):
                steps.append(_InplaceEvent(ufunc, store.target, other, store.owner))
                i += 2
                continue
        if fusable and op.function is ops.IndexPut:
            steps.append(_SetitemEvent(store.target, op.inputs[1], op.inputs[2], store.owner))
            i += 2
            continue
        steps.append(op)
        i += 1
    return steps


def _slots_read(events, result):
    for event in events:
        kind = type(event)
        if kind is _OpEvent:
            templates = event.inputs
        elif kind is _StoreEvent:
            templates = [event.source]
        elif kind is _FactoryEvent:
            templates = list(event.args) + list(event.kwargs.values())
        elif kind is _BackwardEvent:
            templates = [] if event.grad is None else [event.grad]
        elif kind is _KeepEvent:
            templates = [("slot", event.slot)]
        else:
            templates = []
        for template in templates:
            yield from _slots_in(template)
    yield from _slots_in(result)


def _slots_in(template):
    kind = template[0]
    if kind in ("slot", "array", "int_of"):
        yield template[1]
    elif kind in ("sequence", "dict"):
        for part in template[2]:
            yield from _slots_in(part[1] if kind == "dict" else part)


class _Snapshot:
    """Copies of what a step touches, taken before a call, to replay that call on."""

    def __init__(self, args, externals, rng):
        self.args, self.externals, self.rng = args, externals, rng


def _copy_tensor(tensor):
    copy = Tensor._wrap(tensor.array.copy(), tensor._requires_grad)
    if tensor.grad is not None:
        copy.grad = Tensor._wrap(tensor.grad.array.copy())
    return copy


def _tensor_difference(a, b):
    """"" where two tensors hold the same bits and .grad; else what differs."""
    if not _same_bits(a.array, b.array):
        return "the values differ"
    if (a.grad is None) != (b.grad is None) or a.grad is not None and not _same_bits(a.grad.array, b.grad.array):
        return "the .grad differs"
    return ""


def _same_bits(a, b):
    return (type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype
            and np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8)))


class _Program:
    def __init__(self, events, kinds, arrays, externals, result_template, modules, arguments):
        self.events, self.externals, self.result = events, externals, result_template
        self.made_by = {}  # slot -> (op event, output index): a returned tensor gets its grad_fn from there
        for index, event in enumerate(events):
            if type(event) is _OpEvent:
                for output, slot in enumerate(event.out_slots):
                    self.made_by[slot] = (index, output)
        self.steps = _fuse_inplace(events, arrays, result_template)  # what a replay runs
        self.initial = [None] * len(kinds)  # the values list a replay starts from: constants filled in
        for event in self.steps:
            if type(event) is _OpEvent and all(i[0] in ("slot", "array", "const") for i in event.inputs):
                slots = []
                for kind, value in event.inputs:
                    if kind == "const":  # a constant gets a slot of its own, so that one C call gathers all
                        slots.append(len(self.initial))
                        self.initial.append(value)
                    else:
                        slots.append(value)
                event.gather, event.single = operator.itemgetter(*slots), len(slots) == 1
        self.argument_slots = [(slot, kind[1]) for slot, kind in enumerate(kinds) if kind[0] == "arg"]
        self.external_slots = [(slot, kind[1]) for slot, kind in enumerate(kinds) if kind[0] == "external"]
        self.external_of_slot = dict(self.external_slots)
        self.argument_of_slot = dict(self.argument_slots)
        self.layout = [(t.array.shape, t.array.dtype, t._requires_grad) for t in externals]
        self.argument_refs = [(i, weakref.ref(a)) for i, a in enumerate(arguments) if isinstance(a, Tensor)]
        # whether call 2 was made with other tensor objects as arguments than call 1: then the check
        # saw the step with its arguments replaced (had the step read one of them by name too, its
        # second recording would have read a tensor the first did not)
        self.checked = self.checked_with_other_arguments = False
        self.modes = [(m, m.training) for m in modules]  # dropout and batch norm differ in eval()

    def other_steps(self, other):
        """How another recording differs from this one ("" if it made the same calls, in order, on the
        same tensors)."""
        if len(self.externals) != len(other.externals) or any(
                a is not b for a, b in zip(self.externals, other.externals)):
            return ("its second call read other tensors than its first: one it reads was replaced by a new "
                    "tensor (an attribute the step sets anew, such as `self.running_mean = ...`: change it "
                    "in place under no_grad instead)")
        same = len(self.events) == len(other.events) and all(
            type(a) is type(b) and getattr(a, "function", None) is getattr(b, "function", None)
            and (type(a) is not _KeepEvent or [(id(o), n) for o, n in a.places] == [(id(o), n) for o, n in b.places])
            for a, b in zip(self.events, other.events))
        return "" if same else ("its second call did other work than its first (an `if` or a loop that depends "
                                "on something outside the step)")

    def holds_for(self, args):
        """Whether the recording holds for a call with `args`: the tensors it reads keep their shapes,
        dtypes and requires_grad, and its modules their train()/eval() mode. And if the check was
        made with the same tensor objects as arguments as the recording, a call with other ones
        records again while the recorded ones live: the step might read one of them by name too
        (`step(W)` with `W` also a global), which only a check with other arguments would show."""
        for tensor, (shape, dtype, requires_grad) in zip(self.externals, self.layout):
            array = tensor.array
            if (type(array) is not np.ndarray or array.shape != shape or array.dtype != dtype
                    or tensor._requires_grad != requires_grad):
                return False
        if self.checked and not self.checked_with_other_arguments:
            for index, ref in self.argument_refs:
                recorded = ref()
                if recorded is not None and recorded is not args[index]:
                    return False
        return all(module.training == training for module, training in self.modes)

    def snapshot(self, args):
        copies = [_copy_tensor(t) for t in self.externals]
        for i, tensor in enumerate(self.externals):  # a .grad the step reads as a tensor (p.grad.zero_())
            for j, owner in enumerate(self.externals):
                if owner.grad is tensor:
                    copies[i] = copies[j].grad
        args = tuple(_copy_tensor(a) if isinstance(a, Tensor) else a for a in args)
        return _Snapshot(args, copies, random.get_rng_state())

    def run(self, args, externals=None, keeps=None):
        """One replay: the recorded array calls, on the current values of the arguments and externals
        (or on `externals` given: copies, while checking; `keeps` then receives the attributes it
        would set)."""
        externals = self.externals if externals is None else externals
        values = self.initial.copy()
        for slot, index in self.argument_slots:
            values[slot] = args[index].array
        for slot, index in self.external_slots:
            values[slot] = externals[index].array
        r = _Replay(values, [None] * len(self.events), externals, args, keeps)
        quiet = backend.float_errors_off()  # inf and NaN without NumPy's warnings, as in Function.apply
        try:
            for event in self.steps:
                event.run(r)
        finally:
            backend.float_errors_restore(quiet)
        return _build(self.result, r.values, lambda slot: self._returned_tensor(slot, r))

    def _returned_tensor(self, slot, r):
        """A tensor the step returns: the argument or tensor from before the call it was, or a new
        tensor with its grad_fn."""
        if slot in self.external_of_slot:
            return r.externals[self.external_of_slot[slot]]
        if slot in self.argument_of_slot:
            return r.args[self.argument_of_slot[slot]]
        where = self.made_by.get(slot)
        if where is not None and self.events[where[0]].has_graph:
            op, output = where
            return Tensor._wrap(r.values[slot], self.events[op].requires_grad[output], r.nodes[op], output)
        return Tensor._wrap(r.values[slot])

    def difference(self, args, before, result, replayed_result, rng_after, keeps):
        """What differs between running a call and replaying it on copies ("" when nothing does)."""
        for real, copy in zip(self.externals, before.externals):
            if _tensor_difference(real, copy):
                return f"{_tensor_difference(real, copy)} of a tensor it uses (shape {list(real.shape)})"
        for real, copy in zip(args, before.args):
            if isinstance(real, Tensor) and _tensor_difference(real, copy):
                return f"{_tensor_difference(real, copy)} of a tensor it was given (shape {list(real.shape)})"
        for owner, name, tensor in keeps:
            real = getattr(owner, name, None)
            if not isinstance(real, Tensor) or _tensor_difference(real, tensor):
                return f"the tensor it keeps in {type(owner).__name__}.{name} differs"
        got, expected = _tensors_in(replayed_result), _tensors_in(result)
        if len(got) != len(expected) or not all(_same_bits(a.array, b.array) for a, b in zip(got, expected)):
            return "what it returns differs"
        state = random.get_rng_state()
        if not (_same_bits(state["key"], rng_after["key"]) and state["pos"] == rng_after["pos"]
                and state["has_cached_normal"] == rng_after["has_cached_normal"]
                and state["cached_normal"] == rng_after["cached_normal"]):
            return "it draws random numbers in a way the replay does not repeat"
        return ""


def _build(template, values, tensor=None):
    """A value from its template: a constant, a slot's array, an int read from a 0-d tensor, or a
    tuple, list or dict of them. Where the step passed a tensor, `tensor(slot)` makes it (an op gets
    the array itself)."""
    kind = template[0]
    if kind == "slot":
        return values[template[1]] if tensor is None else tensor(template[1])
    if kind == "array":
        return values[template[1]]
    if kind == "const":
        return template[1]
    if kind == "int_of":  # an index that was a 0-d tensor
        return int(values[template[1]])
    if kind == "dict":
        return template[1]((key, _build(t, values, tensor)) for key, t in template[2])
    parts = [_build(t, values, tensor) for t in template[2]]
    return template[1](*parts) if hasattr(template[1], "_fields") else template[1](parts)  # (a named tuple)
