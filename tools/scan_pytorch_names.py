"""List the PyTorch names a body of Python code uses, with counts: a scanner built on `ast`.

    python tools/scan_pytorch_names.py FILE_OR_FOLDER ...      # prints the counts as JSON

It reads `.py` files and the code cells of `.ipynb` notebooks (a cell that does not parse is skipped;
`!shell` and `%magic` lines are dropped first). For each file it resolves the import aliases
(`import torch.nn as nn`, `from torch import nn, optim`, `import torch.nn.functional as F`,
`from torch.utils.data import DataLoader`, ...) and records:

- names: every use of a PyTorch name, written out in full (`F.relu` -> `torch.nn.functional.relu`),
  and every `torch` module imported (`import torch.multiprocessing as mp` -> `torch.multiprocessing`);
- keywords: the keyword arguments passed in each call of a PyTorch name;
- tensor methods: calls `x.foo(...)` (and attributes `x.shape`) whose name is one of `torch.Tensor`'s
  own (from `tinyattn/data/pytorch_names.txt`, taken from PyTorch), written `Tensor.foo`; the receiver
  must be neither `self` nor an imported module (`np.sum` is not a tensor method);
- module methods: calls `x.foo(...)` of names that `torch.nn.Module` has and `torch.Tensor` has not
  (`model.apply`, `self.register_buffer`), written `Module.foo`; `optimizer.zero_grad()` counts here
  too, as `Module.zero_grad`, since the receiver's type is not known.

The receiver's type is not known to `ast`: `a.sum()` counts as a tensor method whether `a` is a tensor
or a NumPy array. A few names are left out because they are nearly always a list's, dict's or
str's (`index`, `values`, `keys`, `items`, `indices`, `sort(key=...)`, `split()` without arguments or
with a string, `ax.scatter(x, y, c=..., marker=...)` with matplotlib's keywords, `data.split(split_ratio=...)`
with a torchtext dataset's), and attributes that are not called count only for a short list (`shape`, `T`,
`grad`, `data`, `dtype`, `device`, ...). A module-level assignment to an imported name
(`optim = torch.optim.SGD(...)` in a file that also says `from torch import optim`) hides the import from
there until the name is imported again.
"""

import ast
import json
import pathlib
import sys
from collections import Counter, defaultdict

TORCH_NAMES_FILE = pathlib.Path(__file__).resolve().parent.parent / "src" / "tinyattn" / "data" / "pytorch_names.txt"

# torch.Tensor's names that in teaching code are nearly always a list's, a dict's or a str's method
# (`vocab.index(w)`, `counts.values()`): not counted as tensor methods
NOT_TENSOR_METHODS = {"index", "values", "keys", "items", "indices"}
# the attributes (not calls) counted as tensor attributes; others (`.name`, `.data` of a dataset...) are
# too often something else's
# keywords that show a call is not the tensor method of that name: matplotlib's `ax.scatter(x, y, c=labels)`,
# a torchtext dataset's `train.split(split_ratio=0.8, random_state=...)`
NOT_TENSOR_KEYWORDS = {
    "scatter": {"c", "cmap", "marker", "label", "s", "alpha", "color", "edgecolor", "edgecolors"},
    "split": {"split_ratio", "random_state", "stratified", "strata_field"},
}
TENSOR_ATTRIBUTES = {"shape", "T", "mT", "grad", "data", "dtype", "device", "requires_grad", "is_leaf", "ndim",
                     "grad_fn", "is_cuda"}


def load_torch_names(path=TORCH_NAMES_FILE):
    """torch.Tensor's and torch.nn.Module's public attribute names, from the committed list of PyTorch's names."""
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    names = {"Tensor": set(), "Module": set()}
    for line in lines:
        for cls, prefix in (("Tensor", "torch.Tensor."), ("Module", "torch.nn.Module.")):
            if line.startswith(prefix):
                names[cls].add(line[len(prefix):])
    return names


def notebook_sources(text):
    """The code cells of a notebook, each as one string with `!` and `%` lines removed."""
    notebook = json.loads(text)
    sources = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("!", "%"))]
        sources.append("\n".join(lines))
    return sources


def parse_sources(path):
    """The parsed trees of one file: one for a .py file, one per parseable code cell of a notebook."""
    path = pathlib.Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    sources = notebook_sources(text) if path.suffix == ".ipynb" else [text]
    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(source))
        except (SyntaxError, ValueError):
            continue  # Python 2 code, or a cell of shell commands: nothing to learn from it
    return trees


class Usage:
    """Counts of names, keywords per name, tensor methods and module methods in some code."""

    def __init__(self):
        self.names = Counter()
        self.keywords = defaultdict(Counter)

    def to_json(self):
        return {
            "names": dict(sorted(self.names.items())),
            "keywords": {name: dict(sorted(kw.items())) for name, kw in sorted(self.keywords.items())},
        }


def import_aliases(trees):
    """{local name: dotted module or object} for every import in the trees; torch and others alike."""
    aliases = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:  # `import torch.nn` binds `torch`
                        top = alias.name.split(".")[0]
                        aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def bound_names(target):
    """The names an assignment target binds: `a`, `a, b`, `[a, *b]`; not `torch.x` or `d[k]`, which bind none."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in bound_names(element)]
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return []


class _Scanner(ast.NodeVisitor):
    def __init__(self, aliases, usage, torch_names):
        self.aliases = aliases
        self.usage = usage
        self.tensor_methods = set(torch_names["Tensor"])
        self.module_methods = set(torch_names["Module"]) - self.tensor_methods
        self.used_locals = set()
        self.shadowed = [set()]  # per enclosing function: its parameters and local variables
        self.rebound = set()  # imported names that a module-level assignment has rebound, until imported again

    def visit_FunctionDef(self, node):
        local_names = {arg.arg for arg in ast.walk(node.args) if isinstance(arg, ast.arg)}
        local_names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.shadowed.append(self.shadowed[-1] | local_names)
        self.generic_visit(node)
        self.shadowed.pop()

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def dotted(self, node):
        """The full dotted name an expression stands for (through the aliases), or None."""
        if isinstance(node, ast.Name):
            if node.id in self.shadowed[-1]:  # `def collate_fn(data)` hides `import torch.utils.data as data`
                return None
            if node.id in self.rebound and len(self.shadowed) == 1:  # `optim = torch.optim.SGD(...)`
                return None
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def torch_name(self, node):
        name = self.dotted(node)
        if name and (name == "torch" or name.startswith("torch.")):
            return name
        return None

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name.startswith("torch."):
                self.usage.names[alias.name] += 1
            self.rebound.discard(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node):
        if node.module and node.level == 0 and (node.module == "torch" or node.module.startswith("torch.")):
            if node.module != "torch":
                self.usage.names[node.module] += 1
        for alias in node.names:
            self.rebound.discard(alias.asname or alias.name)

    def visit_Assign(self, node):
        self.generic_visit(node)  # the value is computed before the names are bound
        if len(self.shadowed) == 1:  # at module level
            for target in node.targets:
                for name in bound_names(target):
                    if name in self.aliases:
                        self.rebound.add(name)

    def visit_Name(self, node):
        name = self.torch_name(node)
        if name and name != "torch":
            self.usage.names[name] += 1
            self.used_locals.add(node.id)

    def visit_Attribute(self, node):
        name = self.torch_name(node)
        if name:
            self.usage.names[name] += 1
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            self.used_locals.add(root.id)
            return  # the whole chain is one name: torch.nn.functional.relu, not also torch.nn
        if node.attr in TENSOR_ATTRIBUTES and self.is_tensor_receiver(node.value):
            self.usage.names[f"Tensor.{node.attr}"] += 1
        self.generic_visit(node)

    def is_tensor_receiver(self, value):
        if isinstance(value, ast.Name):
            if value.id in ("self", "cls") or (value.id in self.aliases and value.id not in self.shadowed[-1]):
                return False
            return True
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            return False
        if isinstance(value, (ast.Constant, ast.JoinedStr, ast.List, ast.Dict, ast.Set, ast.Tuple,
                              ast.ListComp, ast.DictComp, ast.SetComp)):
            return False
        return self.dotted(value) is None  # np.random is a module, not a tensor

    @staticmethod
    def is_builtin_call(method, node, keywords):
        """`line.split()`, `line.split(",")`, `names.sort(key=len)`: a str's or a list's method, not a tensor's;
        `ax.scatter(x, y, c=labels)`: matplotlib's (NOT_TENSOR_KEYWORDS)."""
        if NOT_TENSOR_KEYWORDS.get(method, set()) & set(keywords):
            return True
        if method == "split":
            return not node.args and not keywords or (
                bool(node.args) and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))
        if method == "sort":
            return bool({"key", "reverse"} & set(keywords))
        return False

    def visit_Call(self, node):
        func = node.func
        keywords = [kw.arg for kw in node.keywords if kw.arg]
        name = self.torch_name(func)
        if name:
            for kw in keywords:
                self.usage.keywords[name][kw] += 1
        elif isinstance(func, ast.Attribute):
            method = func.attr
            receiver_is_self = isinstance(func.value, ast.Name) and func.value.id == "self"
            if method in self.tensor_methods and self.is_tensor_receiver(func.value):
                if method not in NOT_TENSOR_METHODS and not self.is_builtin_call(method, node, keywords):
                    self.usage.names[f"Tensor.{method}"] += 1
                    for kw in keywords:
                        self.usage.keywords[f"Tensor.{method}"][kw] += 1
            elif method in self.module_methods and (receiver_is_self or self.is_tensor_receiver(func.value)):
                self.usage.names[f"Module.{method}"] += 1  # keywords not kept: trainer.train(epochs=...) is no Module
        self.generic_visit(node)


def scan_trees(trees, usage, torch_names):
    """Add the PyTorch names used in the parsed trees (one file's) to usage."""
    aliases = import_aliases(trees)
    scanner = _Scanner(aliases, usage, torch_names)
    for tree in trees:
        scanner.visit(tree)
    # `from torch.utils.data import DataLoader` that is never used still has to import
    for local, target in aliases.items():
        if target.startswith("torch.") and local not in scanner.used_locals and "." in target:
            if local != target.split(".")[0]:
                usage.names[target] += 1


def scan_source(source, torch_names=None, notebook=False):
    """The usage in one piece of source text (a .py file's, or a notebook's JSON when notebook=True)."""
    torch_names = torch_names or load_torch_names()
    sources = notebook_sources(source) if notebook else [source]
    trees = []
    for text in sources:
        try:
            trees.append(ast.parse(text))
        except (SyntaxError, ValueError):
            continue
    usage = Usage()
    scan_trees(trees, usage, torch_names)
    return usage.to_json()


def source_files(root):
    root = pathlib.Path(root)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.suffix in (".py", ".ipynb") and p.is_file())


def scan_paths(paths, torch_names=None):
    """The usage in every .py and .ipynb file under the given files or folders."""
    torch_names = torch_names or load_torch_names()
    usage = Usage()
    for root in paths:
        for path in source_files(root):
            scan_trees(parse_sources(path), usage, torch_names)
    return usage.to_json()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python tools/scan_pytorch_names.py FILE_OR_FOLDER ...")
    print(json.dumps(scan_paths(sys.argv[1:]), indent=1))
