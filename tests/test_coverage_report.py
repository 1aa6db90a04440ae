"""The corpus scanner (tools/scan_pytorch_names.py) and the coverage report it feeds (docs/coverage.md)."""

import importlib.util
import json
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"


def load_tool(name):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


scanner = load_tool("scan_pytorch_names")
coverage_report = load_tool("coverage_report")


def test_the_committed_report_is_current():
    report, _ = coverage_report.build_report()
    committed = coverage_report.REPORT_FILE.read_text(encoding="utf-8")
    assert report == committed, "docs/coverage.md is out of date: run `python tools/coverage_report.py`"


@pytest.mark.parametrize("corpus", coverage_report.CORPORA, ids=[c.key for c in coverage_report.CORPORA])
def test_the_corpus_list_and_the_usage_name_the_same_repositories(corpus):
    listing = json.loads(corpus.list_file.read_text(encoding="utf-8"))
    usage = json.loads(corpus.usage_file.read_text(encoding="utf-8"))
    repos = [entry["repo"] for entry in listing["repositories"]]
    assert sorted(repos) == sorted(usage["repositories"])
    assert len(repos) >= 15 and len(set(repos)) == len(repos)
    assert all(len(entry["commit"]) == 40 for entry in listing["repositories"])
    assert all(entry["why"] and entry["folders"] for entry in listing["repositories"])


@pytest.mark.parametrize("corpus", coverage_report.CORPORA, ids=[c.key for c in coverage_report.CORPORA])
def test_each_corpus_meets_the_targets(corpus):
    """Every name used by two or more repositories is in tinyattn or left out on purpose, and 99% of
    all uses of PyTorch names run."""
    figures = coverage_report.Figures(corpus, json.loads(corpus.usage_file.read_text(encoding="utf-8")))
    _, missing2 = figures.used_by(2)
    assert [name for name in missing2 if not coverage_report.left_out_reason(name)] == []
    assert figures.total_covered >= 0.99 * figures.total, (figures.total_covered, figures.total)


def test_the_page_puts_the_readers_questions_first():
    page = coverage_report.REPORT_FILE.read_text(encoding="utf-8")
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## At a glance", "## What is missing, and why"]
    assert headings[-1] == "## About this page"
    assert page.index("do not edit it by hand") > page.index("## About this page")
    for corpus in coverage_report.CORPORA:
        assert f"| {corpus.title} " in page.split("## What is missing")[0]   # a column of the first table


def test_the_page_has_no_link_that_shows_a_file_name_and_no_commit_in_a_table():
    page = coverage_report.REPORT_FILE.read_text(encoding="utf-8")
    assert not re.search(r"\[[^\]]*\.(md|json|py|ipynb)\]\(", page)
    commits = {entry["commit"][:10] for corpus in coverage_report.CORPORA
               for entry in json.loads(corpus.list_file.read_text(encoding="utf-8"))["repositories"]}
    for line in page.splitlines():
        if line.startswith("|"):
            assert not any(commit in line for commit in commits), line
    assert all(commit in page for commit in commits)


SAMPLE = '''
import torch
import torch.nn as nn
from torch import optim
import torch.nn.functional as F
from torch.nn import functional as G
from torch.utils.data import DataLoader, Dataset
import torch.multiprocessing as mp
import torch.utils.data as data
import numpy as np

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4, bias=False)
        self.register_buffer("mask", torch.ones(3))

    def forward(self, x):
        y = self.view(x)                        # the module's own method: not a tensor method
        return F.relu(self.fc(x)).sum(1, keepdims=True).view(-1) + G.gelu(y)

def collate(data):                              # a parameter that hides the module alias
    return data.sort()

x = torch.randn(2, 3, requires_grad=True)
x.masked_fill_(x > 0, 0.0)
print(x.shape, np.sum([1, 2]), "a b".split(), [3].index(3))
line = "a b"
fields, columns = line.split(), line.split(",")          # a str's split
halves = x.split(1, dim=1)                               # a tensor's
words = []
words.append("a")
opt = optim.SGD(Net().parameters(), lr=0.1, momentum=0.9)
loader = DataLoader(data.TensorDataset(x), batch_size=2, shuffle=True)
mp.set_start_method("spawn")
ax.scatter(x[:, 0], x[:, 1], c=labels, cmap="viridis")     # matplotlib's scatter
train_data, valid_data = train_data.split(split_ratio=0.8)  # a torchtext dataset's split
torch.backends.cudnn.deterministic = True               # binds no name
optim = optim.Adam(Net().parameters())                   # rebinds the imported name
optim.step()
from torch import optim
optim.RMSprop
'''


def test_the_scanner_resolves_aliases_keywords_and_tensor_methods():
    usage = scanner.scan_source(SAMPLE)
    names, keywords = usage["names"], usage["keywords"]
    assert names["torch.nn.functional.relu"] == 1 and names["torch.nn.functional.gelu"] == 1
    assert names["torch.nn.Linear"] == 1 and names["torch.nn.Module"] == 1
    assert names["torch.optim.SGD"] == 1 and names["torch.utils.data.DataLoader"] == 1
    assert names["torch.optim.Adam"] == 1 and names["torch.optim.RMSprop"] == 1 and "torch.optim.step" not in names
    assert "Tensor.scatter" not in names and "Tensor.scatter" not in keywords
    assert names["torch.backends.cudnn.deterministic"] == 1 and names["torch.ones"] == 1
    assert names["torch.utils.data.TensorDataset"] == 1
    assert names["torch.utils.data.Dataset"] == 1          # imported, never used: the import must still work
    assert names["torch.multiprocessing"] == 1 and names["torch.multiprocessing.set_start_method"] == 1
    assert keywords["torch.optim.SGD"] == {"lr": 1, "momentum": 1}
    assert keywords["torch.nn.Linear"] == {"bias": 1}
    assert keywords["torch.utils.data.DataLoader"] == {"batch_size": 1, "shuffle": 1}
    assert keywords["Tensor.sum"] == {"keepdims": 1}
    assert names["Tensor.sum"] == 1 and names["Tensor.view"] == 1 and names["Tensor.masked_fill_"] == 1
    assert names["Tensor.shape"] == 1 and names["Tensor.sort"] == 1   # data.sort() in collate: a tensor's
    assert names["Module.register_buffer"] == 1 and names["Module.parameters"] == 2
    assert names["Tensor.split"] == 1 and keywords["Tensor.split"] == {"dim": 1}   # not line.split(), "a b".split()
    assert "Tensor.index" not in names                    # [3].index(3)
    assert not any(name.startswith(("numpy", "np.")) for name in names)
    assert "torch.utils.data.sort" not in names            # the parameter `data`, not the module


def test_the_scanner_reads_notebook_code_cells():
    cells = [
        {"cell_type": "markdown", "source": ["import torch.nn as nn\n", "nn.Flatten()"]},
        {"cell_type": "code", "source": ["!pip install torch\n", "%matplotlib inline\n", "import torch\n"]},
        {"cell_type": "code", "source": "print 'python 2 does not parse'"},
        {"cell_type": "code", "source": ["a = torch.zeros(2, dtype=torch.long)\n", "a.float().mean()\n"]},
    ]
    usage = scanner.scan_source(json.dumps({"cells": cells}), notebook=True)
    assert usage["names"] == {"torch.zeros": 1, "torch.long": 1, "Tensor.float": 1, "Tensor.mean": 1}
    assert usage["keywords"] == {"torch.zeros": {"dtype": 1}}


def test_scan_paths_reads_py_and_ipynb_files(tmp_path):
    (tmp_path / "a.py").write_text("import torch\ntorch.tanh(torch.ones(1))\n")
    notebook = {"cells": [{"cell_type": "code", "source": "import torch\ntorch.tanh(1)"}]}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.ipynb").write_text(json.dumps(notebook))
    (tmp_path / "c.txt").write_text("torch.tanh")
    usage = scanner.scan_paths([tmp_path])
    assert usage["names"] == {"torch.tanh": 2, "torch.ones": 1}


@pytest.mark.parametrize("name, expected", [
    ("torch.nn.Linear", True),
    ("Tensor.view", True),
    ("Module.parameters", True),
    ("torch.utils.data.DataLoader", True),
    ("torch.no_such_name", False),
    ("torch.nn.functional.no_such_name", False),
    ("torch.no_such_module.thing", False),
])
def test_names_are_looked_up_in_tinyattn(name, expected):
    assert coverage_report.is_covered(name) is expected


def test_keywords_are_checked_against_the_signature():
    assert coverage_report.accepts_keyword("torch.nn.Linear", "bias")
    assert not coverage_report.accepts_keyword("torch.nn.Linear", "no_such_keyword")
    assert not coverage_report.accepts_keyword("torch.no_such_name", "dim")


def test_left_out_names_give_their_reason():
    assert "one process" in coverage_report.left_out_reason("torch.distributed.init_process_group")
    assert coverage_report.left_out_reason("torch.nn.Linear") is None
