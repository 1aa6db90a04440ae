"""A trace as one HTML page that opens offline: the graph of the forward and backward pass, every
op's values and gradients, the attention heads as heatmaps, and a control that steps through it.

    with tinyattn.trace(name="mha", values=True) as tr:
        mha(x).sum().backward()
    tr.label_tokens(["Your", "journey", "starts"])
    tr.to_html("step.html")            # = tinyattn.tracing_page.write_page(tr, "step.html")

The page is the template page.html with its style (page.css), its script (page.js), the graph
layout library and the trace's data written into it: no file beside it, no network. The layout is
dagre (vendor/dagre.min.js, MIT, see vendor/LICENSE-dagre.txt); the page draws the graph itself
in SVG.

What a page holds is bounded by the limits of `write_page` below and by the trace's own
`values_limit`: a tensor of more than `table_limit` numbers is shown by its statistics and a
histogram, not its numbers.
"""

import html
import json
import linecache
import os
import pathlib

import numpy as np

from ..tensor import Tensor
from ..console import format_bytes, short_path

__all__ = ["page_data", "write_page"]

_HERE = pathlib.Path(__file__).parent
TABLE_LIMIT = 1024  # tensors of at most this many numbers are shown as tables of numbers
HEATMAP_ITEMS = 4  # batch items drawn per attention-weights tensor
HEATMAP_TOKENS = 128  # query and key positions drawn per heatmap
MAX_OPS = 4000  # records on a page; a longer trace keeps its first ones
CONTEXT_LINES = 3  # lines of code shown above and below an op's source line


def _number(x):
    """A float as the page shows it: 6 significant digits (NaN and infinities kept)."""
    return float(f"{x:.6g}") if np.isfinite(x) else float(x)


class _Tensors:
    """The tensors of the page, each once (an input that is an earlier op's output is that output)."""

    def __init__(self, table_limit, summary_of):
        self.table_limit = table_limit
        self.summary_of = summary_of  # the trace's: a TensorSummary of an array
        self.items = []
        self._index = {}  # id(value) -> index
        self._keep = []  # the values, so that their ids stay theirs while the page is made

    def add(self, value):
        if value is None:
            return None
        index = self._index.get(id(value))
        if index is not None:
            return index
        if not isinstance(value, np.ndarray):  # a TensorSummary: the trace kept no copy, past its values_limit
            item = {"shape": list(value.shape), "dtype": value.dtype, "summary": _summary(value), "why": "trace"}
        else:
            item = {"shape": list(value.shape), "dtype": str(value.dtype)}
            if value.size <= self.table_limit:
                flat = value.ravel()
                if value.dtype == np.bool_:
                    item["data"] = [int(v) for v in flat]
                elif value.dtype.kind in "iu":
                    item["data"] = [int(v) for v in flat]
                else:
                    item["data"] = [_number(v) for v in flat.astype(np.float64)]
            else:
                item["summary"], item["why"] = _summary(self.summary_of(value)), "page"
        index = self._index[id(value)] = len(self.items)
        self.items.append(item)
        self._keep.append(value)
        return index


def _summary(s):
    return {"min": _number(s.min), "max": _number(s.max), "mean": _number(s.mean), "std": _number(s.std),
            "zeros": s.zeros, "nans": s.nans, "infs": s.infs, "counts": list(s.counts),
            "edges": [_number(e) for e in s.edges]}


def _leaf_module(name, modules):
    """The module a named parameter or buffer belongs to (`mha.W_query.weight` -> `mha.W_query`)."""
    while "." in name:
        name = name.rsplit(".", 1)[0]
        if name in modules:
            return name
    return ""


def _heatmap(record, index, blocked, items, tokens_limit):
    """The attention weights of output `index` of a record for the page, or None where not kept."""
    weights = record.output_values[index] if index < len(record.output_values) else None
    if not isinstance(weights, np.ndarray) or weights.ndim < 2:
        return None
    w = weights.reshape((1,) * (4 - weights.ndim) + weights.shape) if weights.ndim < 4 else \
        weights.reshape((weights.shape[0], -1) + weights.shape[-2:])
    b, h, rows, cols = w.shape
    w = w[:items, :, :tokens_limit, :tokens_limit].astype(np.float64)
    out = {"step": record.step, "output": index, "shape": list(weights.shape), "items": int(w.shape[0]),
           "batch": int(b), "heads": int(h), "rows": int(w.shape[2]), "cols": int(w.shape[3]),
           "allRows": int(rows), "allCols": int(cols),
           "data": [round(float(v), 4) for v in w.ravel()]}
    if isinstance(blocked, np.ndarray) and blocked.dtype == np.bool_ and blocked.shape[-2:] == weights.shape[-2:]:
        out["blocked"] = [int(v) for v in blocked.reshape(blocked.shape[-2:])[:tokens_limit, :tokens_limit].ravel()] \
            if blocked.ndim == 2 or blocked.size == blocked.shape[-1] * blocked.shape[-2] else None
    return out


def _attention(record, items, tokens_limit):
    """The heatmaps of a forward record that makes attention weights (None for other ops)."""
    if record.phase != "forward":
        return None
    if record.op == "attention" and len(record.output_shapes) == 2:
        blocked = None
        if 3 in record.input_args:  # AttentionOp(q, k, v, blocked, ...): the mask
            blocked = record.input_values[record.input_args.index(3)] if record.input_values else None
        return _heatmap(record, 1, blocked, items, tokens_limit)
    shape = record.output_shapes[0] if record.output_shapes else ()
    if record.op in ("softmax", "softmax_op") and len(shape) >= 3 and shape[-1] == shape[-2]:
        return _heatmap(record, 0, None, items, tokens_limit)
    return None


def page_data(trace, title=None, table_limit=TABLE_LIMIT, heatmap_items=HEATMAP_ITEMS,
              heatmap_tokens=HEATMAP_TOKENS, max_ops=MAX_OPS, problem=None, names=None):
    """What the page shows, as plain data (dicts, lists, numbers): the ops, leaves, tensors, source
    lines and heatmaps of `trace`. See write_page for the limits, `problem` and `names`."""
    # (read as what it does, not by its class: this package is below tinyattn.tracing, whose traces it shows)
    if not (hasattr(trace, "records") and hasattr(trace, "summary_of")):
        raise TypeError(f"a page shows a tinyattn.trace(), got {type(trace).__name__}")
    for name, value in (("table_limit", table_limit), ("heatmap_items", heatmap_items),
                        ("heatmap_tokens", heatmap_tokens), ("max_ops", max_ops)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "table_limit" else 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    records = list(trace.records)[:max_ops]
    kept = {r.step for r in records}
    tensors = _Tensors(table_limit, trace.summary_of)
    files, file_index = [], {}
    backward_of = {r.forward_step: r for r in records if r.phase == "backward" and r.forward_step in kept}
    modules = {r.module for r in records if r.module}
    for m in list(modules):  # every enclosing module is a group too
        while "." in m:
            m = m.rsplit(".", 1)[0]
            modules.add(m)

    def source(r):
        if not r.file:
            return -1
        index = file_index.get(r.file)
        if index is None:
            index = file_index[r.file] = len(files)
            files.append({"path": short_path(r.file), "lines": {}})
        lines = files[index]["lines"]
        for n in range(max(1, r.line - CONTEXT_LINES), r.line + CONTEXT_LINES + 1):
            text = linecache.getline(r.file, n)
            if text:
                lines[n] = text.rstrip("\n")
        return index

    own_names = {}  # leaf key -> the variable that holds it (names=globals())
    if names:
        by_id = {}
        for k, v in names.items():
            if isinstance(v, Tensor) and not k.startswith("_"):
                by_id.setdefault(id(v), k)
                by_id.setdefault(id(v.array), k)  # ops that take a raw array (an index) see that
        for ref, key in list(trace._leaves.values()):
            tensor = ref()
            if tensor is not None and id(tensor) in by_id:
                own_names[key] = by_id[id(tensor)]
    ops, leaves, leaf_index, attention = [], [], {}, []
    for r in records:
        op = {"step": r.step, "phase": r.phase, "op": r.op, "fn": r.function, "module": r.module,
              "in": [None if s is None else list(s) for s in r.input_shapes],
              "out": [None if s is None else list(s) for s in r.output_shapes],
              "dtype": r.dtype, "bytes": r.nbytes, "inplace": r.inplace, "view": r.view,
              "file": source(r), "line": r.line, "vin": [tensors.add(v) for v in r.input_values],
              "vout": [tensors.add(v) for v in r.output_values]}
        if r.phase == "forward":
            parents = []
            for p in r.parents:
                if p[0] == "op":
                    parents.append(f"f{p[1]}" if p[1] in kept else None)
                else:
                    _, key, name, shape = p
                    if key not in leaf_index:
                        leaf_index[key] = len(leaves)
                        named = name not in ("tensor", "parameter", "array")
                        # a module's parameter or buffer, or a leaf that requires grad
                        param = named or name == "parameter"
                        if not named and key in own_names:
                            name = f"{own_names[key]} ({name})"
                        leaves.append({"id": key, "name": name, "shape": list(shape), "named": named, "param": param,
                                       "module": _leaf_module(name, modules) if named else "", "users": [],
                                       "value": None, "grad": None, "gradParts": []})
                    else:  # seen first before its module ran (an initialisation): the module's name now
                        leaf = leaves[leaf_index[key]]
                        if not leaf["named"] and name not in ("tensor", "parameter", "array"):
                            leaf.update(name=name, named=True, param=True, module=_leaf_module(name, modules))
                    parents.append(key)
            op["parents"] = parents
            op["args"] = list(r.input_args)
            op["saved"] = [list(x) if x[0] != "array" else ["array", list(x[1]), x[2]] for x in r.saved]
            back = backward_of.get(r.step)
            op["bwd"] = back.step if back is not None else None
            for j, p in enumerate(parents):
                if p in leaf_index:
                    leaf = leaves[leaf_index[p]]
                    leaf["users"].append(r.step)
                    if leaf["value"] is None and j < len(r.input_values):
                        leaf["value"] = tensors.add(r.input_values[j])
                    if back is not None and r.input_args and j < len(r.input_args):
                        position = r.input_args[j]
                        if position < len(back.output_values) and back.output_values[position] is not None:
                            leaf["gradParts"].append((back.step, back.output_values[position]))
            heat = _attention(r, heatmap_items, heatmap_tokens)
            if heat is not None:
                attention.append(heat)
        else:
            op["fwd"] = r.forward_step if r.forward_step in kept else None
        ops.append(op)
    for leaf in leaves:  # a leaf's gradient: what the backward ops of its users sent it, added up
        parts = leaf.pop("gradParts")
        leaf["gradFrom"] = [step for step, _ in parts]
        arrays = [g for _, g in parts]
        if arrays and all(isinstance(g, np.ndarray) and g.shape == arrays[0].shape for g in arrays):
            leaf["grad"] = tensors.add(arrays[0] if len(arrays) == 1 else np.sum(arrays, axis=0))
    forward = [r for r in records if r.phase == "forward"]
    backward = [r for r in records if r.phase == "backward"]
    return {
        "title": title or (f"tinyattn trace: {trace.name}" if trace.name else "tinyattn trace"),
        "tokens": trace.tokens,
        "values": trace.keeps_values,
        "valuesKept": format_bytes(trace.values_kept),
        "valuesLimit": format_bytes(trace.values_limit),
        "limits": {"table": table_limit, "heatmapItems": heatmap_items, "heatmapTokens": heatmap_tokens,
                   "maxOps": max_ops},
        "leftOut": len(trace.records) - len(records),
        "counts": {"forward": len(forward), "backward": len(backward), "leaves": len(leaves),
                   "forwardBytes": format_bytes(sum(r.nbytes for r in forward)),
                   "backwardBytes": format_bytes(sum(r.nbytes for r in backward))},
        "ops": ops, "leaves": leaves, "tensors": tensors.items, "files": files, "attention": attention,
        "error": problem,
    }


def _script(text):
    """Text to put inside <script>: no `</` that would end it early."""
    return text.replace("</", "<\\/")


def write_page(trace, path, title=None, table_limit=TABLE_LIMIT, heatmap_items=HEATMAP_ITEMS,
               heatmap_tokens=HEATMAP_TOKENS, max_ops=MAX_OPS, problem=None, names=None):
    """Write the page of `trace` to `path` (one self-contained HTML file); returns the path.

    Limits: a tensor of at most `table_limit` numbers (1024) is shown as a table of its numbers, a
    larger one by its statistics and histogram; an attention-weights tensor is drawn for its first
    `heatmap_items` batch items (4) and up to `heatmap_tokens` query and key positions (128); a
    trace of more than `max_ops` ops (4000) shows its first ones. Values appear only for a trace
    made with values=True, within its values_limit. `problem`: a line the page shows at its top in
    red (what went wrong while the traced code ran: `tinyattn see` says where a script failed).
    `names`: a namespace (`globals()`, `vars()`): the tensors no op made (inputs, parameters that
    are no module's) are shown under the names that hold them there (`W1 (parameter)`).
    """
    data = page_data(trace, title, table_limit, heatmap_items, heatmap_tokens, max_ops, problem, names)
    path = pathlib.Path(os.fspath(path))
    folder = path.resolve().parent
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write the page to {str(path)!r}: the folder {str(folder)!r} does not exist")
    page = (_HERE / "page.html").read_text(encoding="utf-8")
    parts = {
        "/*TITLE*/": html.escape(data["title"]),
        "/*STYLE*/": (_HERE / "page.css").read_text(encoding="utf-8"),
        "/*DAGRE*/": _script((_HERE / "vendor" / "dagre.min.js").read_text(encoding="utf-8")),
        "/*DATA*/": _script(json.dumps(data, separators=(",", ":"))),
        "/*PAGE*/": _script((_HERE / "page.js").read_text(encoding="utf-8")),
    }
    for mark, text in parts.items():
        before, found, after = page.partition(mark)
        assert found, f"page.html lacks {mark}"
        page = before + text + after
    path.write_text(page, encoding="utf-8")
    return path
