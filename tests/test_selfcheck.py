"""`tinyattn gradcheck` (tinyattn.app.selfcheck): every op and layer against finite differences, as a table.

The finite-difference check itself, with the Functions whose backwards are deliberately wrong, is
tested in test_gradient_check.py; here the command that runs it over the catalog of checks.
"""

import contextlib
import io
import re

import pytest
from test_gradient_check import Square, WrongSquare, random_leaf

from tinyattn.app import selfcheck


def test_main_checks_every_op_and_layer(capsys):
    assert selfcheck.main([]) == 0
    out = capsys.readouterr().out
    names = [c.name for c in selfcheck.op_checks() + selfcheck.module_checks()]
    lines = out.splitlines()
    for name in names:
        assert any(line.startswith(name + " ") and line.rstrip().endswith("PASS") for line in lines), name
    assert sum(line.rstrip().endswith("PASS") for line in lines) == len(names)
    assert f"all {len(names)} checks passed" in out
    for expected in ("matmul vector @ vector", "index_put slices", "safe_softmax fully masked row",
                     "cross_entropy ignore_index", "sdpa causal dropout 0.5", "MultiHeadAttention dropout 0.5",
                     "CausalAttention dropout 0.5", "Embedding", "LayerNorm"):
        assert expected in names


def test_main_filter_and_fast_mode(capsys):
    assert selfcheck.main(["-k", "softmax", "--fast"]) == 0
    out = capsys.readouterr().out
    assert "log_softmax" in out and "matmul" not in out and "fast mode" in out
    for argv, message in ((["-k", "no such check"], "no check matches 'no such check'"),
                          (["--eps", "0"], "eps must be a small positive step"), (["--atol", "-1"], "atol must be")):
        with pytest.raises(SystemExit) as exit:  # bad input: exit status 2 and one line, like other commands
            selfcheck.main(argv)
        err = capsys.readouterr().err
        assert exit.value.code == 2 and message in err and len(err.splitlines()) == 1


def test_main_reports_a_failure(capsys, monkeypatch):
    x = random_leaf(3)
    wrong = selfcheck.Check("wrong square", WrongSquare.apply, (x,))
    monkeypatch.setattr(selfcheck, "op_checks", lambda: [wrong])
    monkeypatch.setattr(selfcheck, "module_checks", lambda: [])
    assert selfcheck.main([]) == 1
    out = capsys.readouterr().out
    assert re.search(r"wrong square\s+\[3\]\s+\S+\s+FAIL", out)
    assert "1 of 1 check FAILED" in out and "Jacobian mismatch" in out


def test_ctrl_c_ends_the_table_with_the_checks_done(capsys, monkeypatch):
    checks = [selfcheck.Check(f"square {i}", Square.apply, (random_leaf(3),)) for i in range(4)]
    monkeypatch.setattr(selfcheck, "op_checks", lambda: checks)
    monkeypatch.setattr(selfcheck, "module_checks", lambda: [])
    real, calls = selfcheck.check_gradients, []

    def interrupted_at_the_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(selfcheck, "check_gradients", interrupted_at_the_third)
    assert selfcheck.main([]) == 130
    out, err = capsys.readouterr()
    assert "square 0" in out and "square 1" in out and "square 2" not in out
    assert "2 of 4 checks passed" in out
    assert err.splitlines() == ["tinyattn gradcheck: interrupted during the check 'square 2', after 2 of 4 checks"]


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_table_fits_an_80_column_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = Terminal()
    with contextlib.redirect_stdout(out):
        assert selfcheck.main(["-k", "attention"]) == 0
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    # a long name and a long list of shapes wrap inside their columns, between words and shapes
    row = next(i for i, line in enumerate(lines) if line.startswith("attention context and weights,"))
    assert lines[row].rstrip().endswith("PASS") and "[2, 3, 2]," in lines[row]
    assert lines[row + 1].startswith("bias, shared keys")
