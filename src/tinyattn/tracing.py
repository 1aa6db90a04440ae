"""See inside a forward and backward pass: op traces with shapes, graph drawings, anomaly detection.

    with tinyattn.trace(name="mha") as tr:
        out = mha(x)
        out.sum().backward()
    print(tr)                          # one row per op: module, op, shapes, dtype, bytes, source line
    tr.forward, tr.backward            # the two passes separately
    tr.filter(op="matmul", module="mha")
    tinyattn.draw_graph(out, "mha")    # the graph as Graphviz DOT (and SVG when Graphviz is installed)

    with tinyattn.trace(name="mha", values=True) as tr:   # also copies of the values and gradients
        ...
    tr.to_html("step.html")            # one page to open in a browser (tinyattn.tracing_page)

    with tinyattn.detect_anomaly():    # stop at the first op that makes a NaN or an inf
        loss.backward()

All three plug into `autograd.observers`: the engine calls `on_forward` after every op, `on_backward`
after every node's backward, and `on_module_enter`/`on_module_exit` around every module call. While no
trace is active that list is empty and the engine pays one `if` per op. Each observer sees only the
ops of the thread that entered it.

Which source line is shown: the innermost caller outside the engine, that is outside the package's
files except its model code (nn/attention.py, app/models.py, app/demo.py). So an op in your script shows your
line, an op in `MultiHeadAttention.forward` shows its line in `tinyattn/nn/attention.py`, the matmul
inside a Linear layer shows the line that called the layer (`keys = self.W_key(x)`), and the ops of
an optimizer step show the line `optimizer.step()`.

One file of about 1,000 lines, because its three tools are one idea: each is an observer of the
engine, and they share the rows a trace records (which op, which module, which source line).
"""

import dataclasses
import itertools
import linecache
import os
import re
import shutil
import subprocess
import sys
import threading
import weakref

import numpy as np

from . import autograd, backend
from .autograd import Node
from .console import fill, format_bytes, plural, short_path, terminal_width
from .tensor import Tensor

__all__ = ["AnomalyError", "OpRecord", "OpTable", "TensorSummary", "Trace", "detect_anomaly", "draw_graph",
           "label_tokens", "trace"]


# ---------------------------------------------------------------------------------------------
# where an op was called from


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# the files of the package whose lines a student wants to see: the model code. Frames in every other
# file of the package (the engine: tensor, ops, autograd, layers, optimizers, ...) are skipped when
# looking for the line that called an op.
_MODEL_FILES = frozenset(
    os.path.join(_PACKAGE_DIR, *name.split("/")) for name in ("nn/attention.py", "app/models.py", "app/demo.py")
)
_is_engine_file = {}  # co_filename -> bool (a cache: the test runs once per file)
_INPLACE_CODE = Tensor._inplace.__code__  # the frame of an in-place op (x.masked_fill_(...))


def _engine(filename):
    answer = _is_engine_file.get(filename)
    if answer is None:
        path = os.path.abspath(filename)
        answer = path.startswith(_PACKAGE_DIR + os.sep) and path not in _MODEL_FILES
        _is_engine_file[filename] = answer
    return answer


class _Site:
    """Where an op was called: file, line, the text of the line; and the in-place method if any."""

    __slots__ = ("file", "line", "inplace", "target")

    def __init__(self, file, line, inplace=None, target=None):
        self.file, self.line, self.inplace, self.target = file, line, inplace, target

    @property
    def code(self):
        return linecache.getline(self.file, self.line).strip() if self.file else ""


def _call_site():
    """The innermost frame outside the engine, and whether the op runs in place (and on what)."""
    frame = sys._getframe(2)
    inplace = target = None
    while frame is not None:
        code = frame.f_code
        if code is _INPLACE_CODE:
            inplace = frame.f_back.f_code.co_name if frame.f_back else "_inplace"
            target = frame.f_locals.get("self")
        elif not _engine(code.co_filename):
            return _Site(code.co_filename, frame.f_lineno, inplace, target)
        frame = frame.f_back
    return _Site("", 0, inplace, target)


# ---------------------------------------------------------------------------------------------
# op names as a student writes them


_OP_NAMES = {
    "LinearOp": "linear", "EmbeddingOp": "embedding", "DropoutOp": "dropout", "LayerNormOp": "layer_norm",
    "GeluOp": "gelu", "CrossEntropyOp": "cross_entropy", "MaxAlongDim": "max",
    "MaxAll": "max", "Index": "getitem", "IndexPut": "index_put", "ToDtype": "to", "ToDevice": "to",
}
_op_name_cache = {}


def op_name(function):
    """`GeluOp` -> "gelu", `Matmul` -> "matmul", `MyFunction` -> "my_function"."""
    name = _op_name_cache.get(function)
    if name is None:
        cls = function.__name__
        name = _OP_NAMES.get(cls)
        if name is None:
            name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls).lower()
            if name.endswith("_op") and name != "_op":
                name = name[:-3]
        _op_name_cache[function] = name
    return name


def _inplace_name(function, method):
    if method == "__setitem__":
        return "index_put_"  # x[key] = value
    if function.__name__ == "CopySlices":
        return "copy_slices"  # an in-place op on a view, written into the view's base
    return method if method.endswith("_") else op_name(function) + "_"


# ---------------------------------------------------------------------------------------------
# shapes, dtypes and bytes of what an op saw


def _arrays(values):
    """The arrays among an op's arguments or results (tensors unwrapped; None and scalars skipped)."""
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v.array)
        elif v is not None and hasattr(v, "shape") and hasattr(v, "dtype"):
            out.append(v)
    return out


def _dtype_name(array):
    try:
        return backend.dtype_of(array).name
    except TypeError:
        return str(array.dtype)


def _nbytes(array):
    try:
        itemsize = backend.dtype_of(array).itemsize
    except TypeError:
        itemsize = getattr(array.dtype, "itemsize", 0)
    size = 1
    for n in array.shape:
        size *= n
    return size * itemsize


def _new_bytes(node, out, inputs):
    """Bytes of new memory `out` holds: 0 for a view that shares memory with an input."""
    if isinstance(out, np.ndarray):
        for a in inputs:
            if isinstance(a, np.ndarray) and np.may_share_memory(out, a):
                return 0
        return out.nbytes
    if getattr(node.function, "is_view", False) and not getattr(node, "copied", False):
        return 0  # other array libraries: trust the op (a view op sets ctx.copied when it had to copy)
    return _nbytes(out)


def format_shape(shape):
    if shape is None:
        return "None"
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------------------------------------
# what every observer here shares: the module stack and the module names


class _Observer:
    """Follows which module is running and gives every module a dotted name (`mha.W_query`)."""

    def __init__(self, name=None):
        self.name = name
        self._stack = []  # (module, dotted name) of the modules running now
        self._module_names = {}  # id(module) -> dotted name
        self._tensor_names = {}  # id(parameter or buffer) -> (weakref, dotted name)
        self._roots = []  # the root modules (kept alive so that their ids stay theirs)

    # --- the context manager ---

    def __enter__(self):
        self.thread = threading.get_ident()  # it sees the ops of this thread only (see autograd.observers)
        if not any(o is self for o in autograd.observers):
            autograd.observers.append(self)
        return self

    def __exit__(self, *exc):
        for i, o in enumerate(autograd.observers):
            if o is self:
                del autograd.observers[i]
                break
        self._stack.clear()
        return False

    # --- modules ---

    def on_module_enter(self, module):
        name = self._module_names.get(id(module))
        if name is None:
            name = self._name_new_module(module)
        self._stack.append((module, name))

    def on_module_exit(self, module):
        while self._stack:
            if self._stack.pop()[0] is module:
                break

    def _name_new_module(self, module):
        if self._stack:  # a module not registered in its parent: parent name + class name
            parent, parent_name = self._stack[-1]
            attribute = next((n for n, m in parent._modules.items() if m is module), type(module).__name__)
            root = f"{parent_name}.{attribute}"
        else:  # a root: the trace's name for the first one, its class name for the others
            root = self.name if self.name and not self._roots else type(module).__name__
            self._roots.append(module)
        for sub, m in module.named_modules():
            self._module_names.setdefault(id(m), f"{root}.{sub}" if sub else root)
        for named in (module.named_parameters(prefix=root), module.named_buffers(prefix=root)):
            for tensor_name, t in named:
                self._tensor_names.setdefault(id(t), (weakref.ref(t), tensor_name))
        return self._module_names[id(module)]

    @property
    def module(self):
        """The dotted name of the module running now ("" outside any module)."""
        return self._stack[-1][1] if self._stack else ""

    def tensor_name(self, tensor):
        entry = self._tensor_names.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1]
        return None

    def on_forward(self, node, args, outputs):
        pass

    def on_backward(self, node, grads_out, grads_in):
        pass


# the forward site of every node a trace recorded, for draw_graph's labels
_node_info = weakref.WeakKeyDictionary()


# ---------------------------------------------------------------------------------------------
# the trace


@dataclasses.dataclass
class OpRecord:
    """One op of a trace: a forward op, or the backward of one."""

    step: int  # position in the trace, from 1
    phase: str  # "forward" or "backward"
    op: str  # "linear", "matmul", "masked_fill_" (in place), ...
    function: str  # the Function class: "LinearOp", "Matmul", ...
    module: str  # dotted name of the innermost module running ("" outside any module)
    input_shapes: tuple  # forward: the arguments that are tensors or arrays; backward: the incoming gradients
    output_shapes: tuple  # forward: the results; backward: the gradients for the inputs (None: none)
    dtype: str  # "float32", ...
    nbytes: int  # bytes of new memory the results hold (0 for views and in-place ops)
    inplace: bool
    file: str  # the source file that called the op ("" if unknown)
    line: int
    code: str  # the text of that line
    parents: tuple = ()  # forward: for each input, ("op", step, output index) or ("leaf", key, name, shape)
    view: bool = False  # forward: the output shares its input's memory (view, transpose, ...)
    forward_step: int = 0  # backward: the step of its forward op (0: the forward ran outside the trace)
    # with trace(values=True) only:
    saved: tuple = ()  # forward: what it saved for backward: ("input", i), ("output", i) or ("array", shape, dtype)
    input_args: tuple = ()  # forward: the position of each input among the op's arguments (its gradient's)
    # forward: the values of the inputs and outputs; backward: the gradients arriving at the forward
    # op's outputs and the gradients it sends to the inputs. Each a NumPy copy, a TensorSummary past
    # the trace's values_limit, or None (no tensor; an unused output's gradient)
    input_values: tuple = dataclasses.field(default=(), repr=False)
    output_values: tuple = dataclasses.field(default=(), repr=False)

    @property
    def label(self):
        """The op's name, with " (backward)" for the backward of one."""
        return self.op + (" (backward)" if self.phase == "backward" else "")

    @property
    def location(self):
        """The source file and line that called the op (`tinyattn/nn/attention.py:159`)."""
        return f"{short_path(self.file)}:{self.line}" if self.file else "?"

    def shapes(self):
        """The shapes in and out, as `(1, 3, 6), (6, 6) -> (1, 3, 6)`."""
        inputs = ", ".join(format_shape(s) for s in self.input_shapes)
        outputs = ", ".join(format_shape(s) for s in self.output_shapes if s is not None) or "-"
        return f"{inputs} -> {outputs}"


class OpTable(list):
    """A list of OpRecords that prints as a table and can be filtered."""

    def filter(self, op=None, module=None, phase=None, file=None):
        """The records of op(s) `op`, inside module `module` (and its submodules), of one phase.

        `op` is a name ("matmul"), a Function class name ("Matmul") or a collection of them;
        `module="mha"` keeps mha and mha.W_query, ...; `file` matches the end of the source path.
        """
        ops = None if op is None else ({op} if isinstance(op, str) else set(op))

        def keep(r):
            return (
                (ops is None or r.op in ops or r.function in ops)
                and (module is None or r.module == module or r.module.startswith(module + "."))
                and (phase is None or r.phase == phase)
                and (file is None or r.file.replace(os.sep, "/").endswith(file))
            )

        return OpTable(r for r in self if keep(r))

    def table(self, code=False, width=None):
        """The records as a text table; with code=True also the text of each source line.

        `width`: the columns the table must fit in; by default the terminal's when stdout is one, and
        no limit otherwise (a file, a pipe, a notebook: one line per op). A table wider than that
        takes two lines per op: the op and its shapes (wrapped if need be), then its dtype, bytes,
        source and code, cut at the width.
        """
        if not self:
            return "(no ops recorded)"
        width = terminal_width() if width is None else width
        head = ["step", "module", "op", "shapes (inputs -> outputs)", "dtype", "bytes", "source"]
        if code:
            head.append("code")
        rows = []
        for r in self:
            star = " *" if r.inplace and r.phase == "forward" else ""
            row = [str(r.step), r.module or "-", r.label + star, r.shapes(), r.dtype, format_bytes(r.nbytes),
                   r.location]
            if code:
                row.append(r.code if len(r.code) <= 60 else r.code[:57] + "...")
            rows.append(row)
        widths = [max(len(x) for x in column) for column in zip(head, *rows)]
        if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
            lines = self._two_line_rows(head, rows, widths, width)
        else:
            def line(cells):  # step and bytes right-aligned, the rest left-aligned
                padded = (c.rjust(w) if i in (0, 5) else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
                return ["  ".join(padded).rstrip()]

            lines = [line(head), line(["-" * w for w in widths])] + [line(row) for row in rows]
        out = lines[0] + lines[1]
        phase = None
        for r, row_lines in zip(self, lines[2:]):
            if r.phase != phase and len({x.phase for x in self}) > 1:
                phase = r.phase
                ops = [x for x in self if x.phase == phase]
                out.append(f"-- {phase}: {plural(len(ops), 'op')}, {format_bytes(sum(x.nbytes for x in ops))}")
            out.extend(row_lines)
        if any(r.inplace and r.phase == "forward" for r in self):
            out.append("* in place: the op wrote into its input's memory")
        return "\n".join(out)

    def _two_line_rows(self, head, rows, widths, width):
        """The narrow layout: for the header, the rule and each row, its lines.

        First line: step, module, op and shapes, the shapes wrapped to the width left (never inside a
        shape); second line, under the module: dtype, bytes, source and code, cut at the width.
        """
        step_w, module_w, op_w = widths[:3]
        indent = " " * (step_w + 2)
        shapes_w = max(width - (step_w + module_w + op_w + 6), 24)
        details_w = widths[4:]

        def details(cells):
            padded = [c.rjust(w) if i == 1 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, details_w))]
            return _cut(indent + "  ".join(padded).rstrip(), width)

        def first(cells, shapes):
            return ("  ".join([cells[0].rjust(step_w), cells[1].ljust(module_w), cells[2].ljust(op_w)])
                    + "  " + shapes).rstrip()

        out = [[first(head, head[3]), details(head[4:])],
               [first(["-" * step_w, "-" * module_w, "-" * op_w], "-" * min(shapes_w, widths[3]))]]
        for r, row in zip(self, rows):
            shape_lines = _wrap_shapes(r, shapes_w)
            lines = [first(row, shape_lines[0])]
            lines += [" " * (step_w + module_w + op_w + 6) + more for more in shape_lines[1:]]
            out.append(lines + [details(row[4:])])
        return out

    def __str__(self):
        return self.table()

    def __repr__(self):
        return self.table()

    def to_dot(self, path=None, format="svg", title="tinyattn"):
        """The forward records as Graphviz DOT text: one node per op and per leaf tensor.

        With `path`, written (and rendered when Graphviz is installed) as by `draw_graph`.
        """
        return _save(_trace_dot(self, title), path, format)


def _wrap_shapes(record, width):
    """The shapes text of a record in lines of at most `width` characters, broken between shapes."""
    inputs = [format_shape(s) for s in record.input_shapes]
    outputs = [format_shape(s) for s in record.output_shapes if s is not None] or ["-"]
    pieces = [s + "," for s in inputs[:-1]] + [(inputs[-1] if inputs else "") + " ->"]
    pieces += [s + "," for s in outputs[:-1]] + [outputs[-1]]
    return fill(pieces, width)


def _cut(text, width):
    return text if len(text) <= width else text[:max(width - 3, 0)] + "..."


# what trace(values=True) copies at most, in bytes, before it keeps summaries instead
VALUES_LIMIT = 64 * 2**20


@dataclasses.dataclass
class TensorSummary:
    """What a trace keeps of a tensor once its copies reach the values limit: the shape, the dtype,
    statistics of the finite values, how many are zero, NaN and infinite, and a histogram."""

    shape: tuple
    dtype: str
    min: float
    max: float
    mean: float
    std: float
    zeros: int
    nans: int
    infs: int
    counts: tuple  # the histogram: how many finite values fall between edges[i] and edges[i + 1]
    edges: tuple

    @classmethod
    def of(cls, array, bins=24):
        """The summary of an array (NumPy or on a device)."""
        host = backend.to_host(array)
        values = host.astype(np.float64, copy=False).ravel() if host.dtype != np.float64 else host.ravel()
        finite = values[np.isfinite(values)]
        nans = int(np.isnan(values).sum())
        if finite.size:
            counts, edges = np.histogram(finite, bins=bins)
            low, high, mean, std = finite.min(), finite.max(), finite.mean(), finite.std()
        else:
            counts, edges, low, high, mean, std = np.zeros(0), np.zeros(0), *(float("nan"),) * 4
        return cls(tuple(host.shape), _dtype_name(array), float(low), float(high), float(mean), float(std),
                   int((values == 0).sum()), nans, int(values.size - finite.size - nans),
                   tuple(int(c) for c in counts), tuple(float(e) for e in edges))


class Trace(_Observer):
    """Records every op of the forward and backward passes run inside `with trace() as tr:`.

    `name` names the first module called (default: its class name); its submodules get dotted
    names (`mha.W_query`). Print `tr` for the table; `tr.forward`, `tr.backward`, `tr.filter(...)`
    select records (OpRecord dataclasses); `tr.to_dot()` draws the forward graph; `tr.to_html(path)`
    writes the page that shows the step in a browser.

    With `values=True` each record also keeps copies of its tensors (`input_values`,
    `output_values`; for a backward record, the gradients) until the copies reach `values_limit`
    bytes; past that, a `TensorSummary` of each. An input that a traced op made is that op's output
    copy, not a second one.
    """

    def __init__(self, name=None, values=False, values_limit=VALUES_LIMIT):
        super().__init__(name)
        if not isinstance(values, bool):
            raise TypeError(f"trace: values must be True or False, got {values!r}")
        if isinstance(values_limit, bool) or not isinstance(values_limit, int) or values_limit < 0:
            raise ValueError(f"trace: values_limit is a number of bytes >= 0, got {values_limit!r}")
        self.keeps_values = values
        self.values_limit = values_limit
        self.values_kept = 0  # bytes of the copies kept so far
        self.tokens = None  # the labels of the token positions (label_tokens)
        self.records = OpTable()
        self._by_node = weakref.WeakKeyDictionary()  # node -> its forward record
        self._producers = {}  # id(tensor) -> (weakref to it, step of the op that made it, output index)
        self._leaves = {}  # id(leaf tensor) -> (weakref, key) for tensors no traced op made
        self._leaf_keys = itertools.count()  # leaf0, leaf1, ...
        self._leaf_values = {}  # leaf key -> its copy (values=True)

    # --- the observer ---

    def on_forward(self, node, args, outputs):
        """Records a forward op (the engine calls it for every op while the trace is active)."""
        site = _call_site()
        function = node.function
        inputs = _arrays(args)
        out_arrays = [t.array for t in outputs]
        inplace = site.inplace is not None
        if inplace:
            nbytes = 0
        else:
            nbytes = sum(_new_bytes(node, a, inputs) for a in out_arrays)
        step = len(self.records) + 1
        record = OpRecord(
            step=step,
            phase="forward",
            op=_inplace_name(function, site.inplace) if inplace else op_name(function),
            function=function.__name__,
            module=self.module,
            input_shapes=tuple(tuple(a.shape) for a in inputs),
            output_shapes=tuple(tuple(a.shape) for a in out_arrays),
            dtype=_dtype_name(out_arrays[0]) if out_arrays else "",
            nbytes=nbytes,
            inplace=inplace,
            file=site.file,
            line=site.line,
            code=site.code,
            parents=tuple(self._parent(a) for a in args if isinstance(a, Tensor) or _arrays([a])),
            view=function.is_view and not getattr(node, "copied", False),
        )
        if self.keeps_values:
            self._keep_forward(record, node, args, outputs)
        self.records.append(record)
        if getattr(node, "sequence", None) is not None:  # a recorded node: its backward may run
            self._by_node[node] = record
            _node_info[node] = (record.op, record.module, record.location)
        producers = self._producers
        for index, t in enumerate(outputs):  # the tensor, and its array for ops that receive the raw array (a mask)
            producers[id(t)] = (weakref.ref(t), step, index)
            producers[id(t.array)] = (weakref.ref(t.array), step, index)
        t = site.target
        if t is not None:  # in place: the target tensor now holds this op's (only) result
            producers[id(t)] = (weakref.ref(t), step, 0)
            producers[id(t.array)] = (weakref.ref(t.array), step, 0)

    # --- values (trace(values=True)) ---

    def _keep(self, array):
        """A host copy of `array` while the copies stay under values_limit, past it a TensorSummary."""
        if array is None or not hasattr(array, "shape"):
            return None
        nbytes = _nbytes(array)
        if self.values_kept + nbytes > self.values_limit:
            return TensorSummary.of(array)
        self.values_kept += nbytes
        return np.array(backend.to_host(array), copy=True)

    def _keep_forward(self, record, node, args, outputs):
        """The values of an op's inputs (an earlier op's output copy where a traced op made the input)
        and outputs, and what the op saved for backward."""
        inputs = []
        record.input_args = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) or _arrays([a]))
        for parent, value in zip(record.parents, (args[i] for i in record.input_args)):
            if parent[0] == "op":
                inputs.append(self.records[parent[1] - 1].output_values[parent[2]])
            else:
                if parent[1] not in self._leaf_values:
                    self._leaf_values[parent[1]] = self._keep(_arrays([value])[0])
                inputs.append(self._leaf_values[parent[1]])
        record.input_values = tuple(inputs)
        record.output_values = tuple(self._keep(t.array) for t in outputs)
        saved = []
        for item in getattr(node, "saved", ()) or ():
            if item is None:
                continue
            where = next((("input", i) for i, a in enumerate(args)
                          if item is a or (isinstance(a, Tensor) and item is a.array)), None)
            where = where or next((("output", i) for i, t in enumerate(outputs) if item is t or item is t.array), None)
            if where is None and hasattr(item, "shape"):
                array = item.array if isinstance(item, Tensor) else item
                where = ("array", tuple(array.shape), _dtype_name(array))
            if where is not None:
                saved.append(where)
        record.saved = tuple(saved)

    def label_tokens(self, tokens):
        """Name the token positions (`["Your", "journey", "starts"]`): the page's attention heatmaps
        label their rows and columns with them. Returns the trace."""
        if isinstance(tokens, str) or not hasattr(tokens, "__iter__"):
            raise TypeError("label_tokens takes a list of labels, one per token position, e.g. "
                            f"['Your', 'journey', 'starts'] (got {type(tokens).__name__}); "
                            "for the characters of a string: list(text)")
        self.tokens = [str(t) for t in tokens]
        return self

    def summary_of(self, array):
        """What the trace keeps of an array past its values limit: a TensorSummary. The page
        (tinyattn.tracing_page) summarises a tensor too big for its tables with it too."""
        return TensorSummary.of(array)

    def to_html(self, path, title=None, **options):
        """Write the page that shows this trace in a browser: one HTML file that opens offline.

        The graph of the forward and backward pass, each op's values and gradients (when traced with
        values=True), the attention heatmaps and a step control. `names=globals()` shows your tensors
        under their variables' names; see tinyattn.tracing_page.write_page for the size limits and
        the other options. Returns the path written.
        """
        from .tracing_page import write_page  # the page and its scripts are loaded only when asked for

        return write_page(self, path, title=title, **options)

    def _parent(self, value):
        """("op", step) of the traced op that made a tensor or array, or ("leaf", key, name, shape)."""
        for candidate in (value, value.array) if isinstance(value, Tensor) else (value,):
            entry = self._producers.get(id(candidate))
            if entry is not None and entry[0]() is candidate:
                return ("op", entry[1], entry[2])
        leaf = self._leaves.get(id(value))
        if leaf is None or leaf[0]() is not value:
            leaf = self._leaves[id(value)] = (weakref.ref(value), f"leaf{next(self._leaf_keys)}")
        if isinstance(value, Tensor):
            name = self.tensor_name(value) or ("parameter" if value.requires_grad else "tensor")
        else:
            name = "array"
        return ("leaf", leaf[1], name, tuple(_arrays([value])[0].shape))

    def on_backward(self, node, grads_out, grads_in):
        """Records the backward of an op (the engine calls it while the trace is active)."""
        forward = self._by_node.get(node)
        grads_in = [g.array if isinstance(g, Tensor) else g for g in grads_in]
        nbytes = 0
        for g in grads_in:
            if g is not None and not any(g is o for o in grads_out):  # a gradient passed on as is costs nothing
                nbytes += _new_bytes(node, g, grads_out)
        first = next((g for g in (*grads_in, *grads_out) if g is not None), None)
        self.records.append(OpRecord(
            step=len(self.records) + 1,
            phase="backward",
            op=forward.op if forward else op_name(node.function),
            function=node.function.__name__,
            module=forward.module if forward else "",
            input_shapes=tuple(None if g is None else tuple(g.shape) for g in grads_out),  # None: unused output
            output_shapes=tuple(None if g is None else tuple(g.shape) for g in grads_in),
            dtype=_dtype_name(first) if first is not None else "",
            nbytes=nbytes,
            inplace=forward.inplace if forward else False,
            file=forward.file if forward else "",
            line=forward.line if forward else 0,
            code=forward.code if forward else "",
            forward_step=forward.step if forward else 0,
        ))
        if self.keeps_values:
            record = self.records[-1]
            record.input_values = tuple(self._keep(g) for g in grads_out)
            record.output_values = tuple(self._keep(g) for g in grads_in)

    # --- reading the records ---

    @property
    def forward(self):
        """The records of the forward ops."""
        return OpTable(r for r in self.records if r.phase == "forward")

    @property
    def backward(self):
        """The records of the backward ops."""
        return OpTable(r for r in self.records if r.phase == "backward")

    def filter(self, op=None, module=None, phase=None, file=None):
        """The records of op(s) `op`, inside module `module` (and its submodules), of one phase (see OpTable.filter)."""
        return self.records.filter(op, module, phase, file)

    def table(self, code=False, width=None):
        """The records as a table, fitting `width` columns (two lines per op where it must)."""
        return self.records.table(code, width)

    def to_dot(self, path=None, format="svg", title="tinyattn"):
        """The forward graph as Graphviz DOT text; written to `path` (and rendered) when given."""
        return self.records.to_dot(path, format, title)

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __getitem__(self, index):
        return self.records[index]

    def __str__(self):
        return self.records.table()

    def __repr__(self):
        return self.records.table()


def trace(name=None, values=False, values_limit=VALUES_LIMIT):
    """A context manager that records every op run inside it: `with tinyattn.trace() as tr: ...`.

    `name` names the first module called inside (e.g. "mha"); by default it is the module's class
    name. Traces nest: an inner trace records its ops in both.

    `values=True` also keeps a copy of every op's inputs and outputs and of every gradient of the
    backward pass (`record.input_values`, `record.output_values`), for `tr.to_html()`'s page, until
    the copies reach `values_limit` bytes (64 MiB by default); each tensor past that is kept as a
    `TensorSummary` (statistics and a histogram). Without it a trace copies nothing: shapes only.

    Given a 2-D tensor instead, it is PyTorch's `torch.trace(matrix)`: the sum of the diagonal, so
    that code written for PyTorch keeps working.
    """
    if isinstance(name, Tensor):
        return _matrix_trace(name)
    return Trace(name, values=values, values_limit=values_limit)


def label_tokens(tokens):
    """Name the token positions for every trace active in this thread (see Trace.label_tokens): what
    a script run by `tinyattn see` calls, since it holds no trace of its own. Without one, nothing."""
    for observer in autograd.observers_here():
        if isinstance(observer, Trace):
            observer.label_tokens(tokens)


def _matrix_trace(matrix):
    return matrix.trace()  # the Tensor method: one implementation, with its checks


# ---------------------------------------------------------------------------------------------
# anomaly detection


class AnomalyError(RuntimeError, FloatingPointError):
    """An op produced NaN or inf (raised by detect_anomaly); says which op, shapes and source line."""

    def __init__(self, message, op=None, phase=None, file="", line=0):
        super().__init__(message)
        self.op, self.phase, self.file, self.line = op, phase, file, line


def _count(xp, test):
    return int(backend.to_host(xp.sum(xp.astype(test, xp.int64))))


class detect_anomaly(_Observer):
    """Check every forward result and every backward gradient for NaN and inf; raise at the first.

    What counts: any NaN; an inf in a forward result only when none of the op's arguments held an
    inf (so the -inf that a causal mask writes with masked_fill, and what follows from it, is fine,
    while exp() overflowing or log(0) is caught); any NaN or inf in a gradient. The error names the
    op, its shapes, the module and the source line of the forward op, also for a backward failure.
    Checking costs a pass over every result: use it to find a bug, not for training.
    """

    def __init__(self):
        super().__init__()
        self._sites = weakref.WeakKeyDictionary()  # node -> (file, line, in-place method, module) of its forward

    def on_forward(self, node, args, outputs):
        """Checks a forward result for NaN and for an inf its inputs did not hold."""
        site = None
        if getattr(node, "sequence", None) is not None:  # keep the site for the backward messages
            site = _call_site()
            self._sites[node] = (site.file, site.line, site.inplace, self.module)
        for index, out in enumerate(outputs):
            a = out.array
            if not backend.is_float(a):
                continue
            xp = backend.namespace(a)  # not node.xp: a copy to another device has its output there
            nans = _count(xp, xp.isnan(a))
            infs = 0 if nans else _count(xp, xp.isinf(a))
            if nans or (infs and not _holds_inf(args)):
                site = site or _call_site()
                what = f"{nans} NaN" if nans else f"{infs} inf"
                self._raise(node, "forward", site.file, site.line, site.inplace, self.module,
                            f"produced {what} in its output {index}", _arrays(args), [t.array for t in outputs])

    def on_backward(self, node, grads_out, grads_in):
        """Checks the gradients an op's backward returned for NaN and inf."""
        for index, g in enumerate(grads_in):
            if g is None:
                continue
            a = g.array if isinstance(g, Tensor) else g
            if not backend.is_float(a):
                continue
            xp = backend.namespace(a)
            nans = _count(xp, xp.isnan(a))
            infs = _count(xp, xp.isinf(a))
            if nans or infs:
                file, line, inplace, module = self._sites.get(node, ("", 0, None, ""))
                what = " and ".join(x for x in (f"{nans} NaN" if nans else "", f"{infs} inf" if infs else "") if x)
                self._raise(node, "backward", file, line, inplace, module,
                            f"returned {what} in the gradient for its input {index}",
                            [g for g in grads_out if g is not None], [x for x in _arrays(grads_in)])

    def _raise(self, node, phase, file, line, inplace, module, problem, inputs, outputs):
        name = _inplace_name(node.function, inplace) if inplace else op_name(node.function)
        label = name + (" (backward)" if phase == "backward" else "")
        shapes = (", ".join(format_shape(a.shape) for a in inputs) + " -> "
                  + ", ".join(format_shape(a.shape) for a in outputs))
        where = f"{short_path(file)}:{line}" if file else "an unknown line (its forward ran outside detect_anomaly)"
        code = linecache.getline(file, line).strip() if file else ""
        what = "gradients in -> gradients out" if phase == "backward" else "inputs -> outputs"
        message = (
            f"detect_anomaly: {label} ({node.function.__name__}) {problem}\n"
            f"  {what}: {shapes}\n"
            + (f"  module: {module}\n" if module else "")
            + f"  {'the forward op was called' if phase == 'backward' else 'called'} at {where}"
            + (f"\n    {code}" if code else "")
        )
        raise AnomalyError(message, op=name, phase=phase, file=file, line=line)


def _holds_inf(args):
    """Whether any argument of an op (a tensor, an array or a number) is or holds an inf."""
    for a in args:
        if isinstance(a, float):
            if a in (float("inf"), float("-inf")):
                return True
            continue
        arrays = _arrays([a])
        if arrays and backend.is_float(arrays[0]):
            xp = backend.namespace(arrays[0])
            if _count(xp, xp.isinf(arrays[0])):
                return True
    return False


# ---------------------------------------------------------------------------------------------
# drawing the graph as Graphviz DOT


class DotGraph(str):
    """DOT text (a str); `.path` is the file written (the rendered image, or the .dot file)."""

    path = None


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_OP_STYLE = 'shape=box, style="rounded,filled", fillcolor="#dbe8fb"'
_LEAF_STYLE = 'shape=ellipse, style=filled, fillcolor="#fde9c9"'
_PARAM_STYLE = 'shape=ellipse, style=filled, fillcolor="#d7f0d2"'
_OUT_STYLE = 'shape=doubleoctagon, style=filled, fillcolor="#eeeeee"'


def _dot(title, nodes, edges):
    lines = [f"digraph {_quote(title)} {{", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10];']
    lines += [f"  {key} [label={_quote(label)}, {style}];" for key, label, style in nodes]
    lines += [f"  {a} -> {b};" for a, b in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _param_names(params):
    """id(tensor) -> name, from a Module, a dict name -> tensor or an iterable of (name, tensor)."""
    if params is None:
        return {}
    if hasattr(params, "named_parameters"):
        items = list(params.named_parameters()) + list(params.named_buffers())
    elif isinstance(params, dict):
        items = params.items()
    else:
        items = params
    return {id(t): name for name, t in items}


def draw_graph(tensor, path=None, format="svg", params=None):
    """The computation graph that produced `tensor`, as Graphviz DOT text (a str).

    One box per op (its name and output shape, and the module and source line when a trace saw it)
    and one ellipse per leaf tensor; `params` (a Module, or a dict name -> tensor such as
    `dict(mha.named_parameters())`) names the parameters. With `path`, the DOT text is written to
    `path` with the suffix .dot and, when Graphviz's `dot` program is installed, rendered to
    `format` (svg, png, pdf); otherwise the message says how to render it. Needs no Python package.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"draw_graph draws the graph behind a tensor, got {type(tensor).__name__}")
    names = _param_names(params)
    node_keys = {}
    nodes, edges = [], []

    def op_key(node):
        key = node_keys.get(node)
        if key is None:
            key = node_keys[node] = f"op{len(node_keys)}"
            info = _node_info.get(node) or (op_name(node.function),)  # a trace saw it: its name, module, line
            label = info[0] + "\n" + format_shape(node.output_meta[0][0]) + "".join("\n" + x for x in info[1:] if x)
            nodes.append((key, label, _OP_STYLE))
            pending.append(node)
        return key

    leaf_keys = {}

    def leaf_key(t):
        key = leaf_keys.get(id(t))
        if key is None:
            key = leaf_keys[id(t)] = f"leaf{len(leaf_keys)}"
            name = names.get(id(t))
            kind = name or ("parameter" if type(t).__name__ == "Parameter" else "leaf")
            nodes.append((key, f"{kind}\n{format_shape(t.array.shape)}", _PARAM_STYLE if name else _LEAF_STYLE))
        return key

    pending = []
    nodes.append(("output", f"output\n{format_shape(tensor.array.shape)}", _OUT_STYLE))
    if tensor.grad_fn is None:
        edges.append((leaf_key(tensor), "output"))
    else:
        edges.append((op_key(tensor.grad_fn), "output"))
    while pending:
        node = pending.pop()
        for edge in getattr(node, "edges", ()):
            if edge is None:
                continue
            source = op_key(edge[0]) if type(edge[0]) is Node else leaf_key(edge[0])
            edges.append((source, node_keys[node]))
    return _save(DotGraph(_dot("tinyattn", nodes, edges)), path, format)


def _trace_dot(records, title):
    nodes, edges, leaves = [], [], {}
    for r in records:
        if r.phase != "forward":
            continue
        label = f"{r.label}\n{', '.join(format_shape(s) for s in r.output_shapes)}"
        label += "".join("\n" + x for x in (r.module, r.location) if x)
        nodes.append((f"op{r.step}", label, _OP_STYLE))
        for parent in r.parents:
            if parent[0] == "op":
                edges.append((f"op{parent[1]}", f"op{r.step}"))
            else:
                _, key, name, shape = parent
                if key not in leaves:
                    leaves[key] = True
                    style = _LEAF_STYLE if name in ("tensor", "parameter", "array") else _PARAM_STYLE
                    nodes.append((key, f"{name}\n{format_shape(shape)}", style))
                edges.append((key, f"op{r.step}"))
    return DotGraph(_dot(title, nodes, edges))


_FORMATS = ("svg", "png", "pdf")


def _save(graph, path, format):
    """Write the DOT text next to `path` and render it with Graphviz when its `dot` is installed."""
    if path is None:
        return graph
    path = os.fspath(path)
    base, ext = os.path.splitext(path)
    if ext.lstrip(".") in _FORMATS:
        format = ext.lstrip(".")
    elif ext != ".dot":
        base = path
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {', '.join(_FORMATS)}, got {format!r}")
    folder = os.path.dirname(os.path.abspath(base))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write the graph to {path!r}: the folder {folder!r} does not exist")
    dot_path, out_path = base + ".dot", f"{base}.{format}"
    with open(dot_path, "w") as f:
        f.write(graph)
    graph.path = dot_path
    program = shutil.which("dot")
    if program is None:
        print(f"wrote {dot_path}; Graphviz's `dot` program is not installed here. "
              f"Install Graphviz and render it with: dot -T{format} {dot_path} -o {out_path}")
        return graph
    subprocess.run([program, f"-T{format}", dot_path, "-o", out_path], check=True)
    graph.path = out_path
    print(f"wrote {out_path} (and its source {dot_path})")
    return graph

