"""The README's Python examples run as shown (each block in a fresh namespace)."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code, tmp_path, monkeypatch, capsys):
    if re.search(r"^import torch\b", code, flags=re.M):
        pytest.importorskip("torch")  # a round trip through PyTorch itself
    monkeypatch.chdir(tmp_path)  # examples may write files (draw_graph)
    namespace = {"__name__": "__readme__"}
    exec(compile(code, str(README), "exec"), namespace)
    printed = capsys.readouterr().out
    # a comment "# tensor(...)" after a print shows what it prints
    for expected in re.findall(r"print\(.*?\)\s+# (tensor\(.*?\)|tinyattn\.Size\(.*?\))(?: |$)", code, flags=re.M):
        assert expected.split(", grad_fn")[0].rstrip(")") in printed
