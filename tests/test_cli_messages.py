"""What the commands print at the edges: Ctrl-C in bench and gradcheck on a terminal, a usage error of
`exercises check`, and a figure of bench's per-op table that a busy machine put far off the others."""

import io

import pytest

from tinyattn.app import bench, selfcheck
from tinyattn.exercises import command as exercises_command


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_bench_ctrl_c_message_wraps_at_words(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "run", interrupted)
    monkeypatch.setattr(bench, "_import_torch", lambda: None)
    monkeypatch.setenv("COLUMNS", "40")
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert bench.main(["--what", "overhead", "--no-torch"]) == 130
    lines = [line for line in terminal.getvalue().splitlines() if line.strip()]
    assert len(lines) > 1 and all(len(line) < 40 for line in lines)
    words = " ".join(line.strip() for line in lines).split()
    assert "figures" in words and "measured" in words  # no word cut in two across lines


def test_gradcheck_after_ctrl_c_puts_its_closing_line_below_the_echoed_c(monkeypatch):
    calls = []

    def check(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return selfcheck.Report()

    monkeypatch.setattr(selfcheck, "check_gradients", check)
    for stdout, blank in ((Terminal(), True), (io.StringIO(), False)):
        calls.clear()
        monkeypatch.setattr("sys.stdout", stdout)
        assert selfcheck.main(["-k", "mul"]) == 130
        lines = stdout.getvalue().splitlines()
        closing = max(i for i, line in enumerate(lines) if set(line) == {"-"})
        # on a terminal ^C was echoed where the next row would start: the separator goes on a line of its own
        assert (lines[closing - 1] == "") is blank, lines


def test_exercises_check_without_a_folder_names_only_the_folder(capsys):
    with pytest.raises(SystemExit) as exit:
        exercises_command.main(["check"])
    err = capsys.readouterr().err
    assert exit.value.code == 2
    assert "the following arguments are required: DIR (see tinyattn exercises check --help)" in err
    args = exercises_command.build_parser().parse_args(["check", "course"])
    assert args.names == []  # still optional, and a list


def test_far_off_figures_are_flagged(monkeypatch, capsys):
    tame = {"add": {"tinyattn": 15.6e-6, "numpy": 1.0e-6, "torch": 5.8e-6},
            "mul": {"tinyattn": 18.0e-6, "numpy": 1.0e-6, "torch": 6.1e-6},
            "matmul": {"tinyattn": 23.9e-6, "numpy": 2.9e-6, "torch": 6.4e-6},
            "sum": {"tinyattn": 22.7e-6, "numpy": 1.8e-6, "torch": 5.6e-6}}
    assert bench.far_off(tame) == {}
    busy = {**tame, "sum": {"tinyattn": 22.7e-6, "numpy": 1.8e-6, "torch": 560e-6}}  # 100x the column's median
    assert bench.far_off(busy) == {"sum": {"torch"}}
    assert bench.far_off({"add": tame["add"], "sum": busy["sum"]}) == {}  # two figures: no median to go by

    monkeypatch.setattr(bench, "overhead_contenders", lambda torch, rounds, on_round: iter(busy.items()))
    assert bench.main(["--what", "overhead", "--no-torch"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()[:1] and line.split()[0] in busy}
    assert "560.0 us!" in rows["sum"] and "0.04" in rows["sum"]
    assert "!" not in rows["add"] + rows["mul"] + rows["matmul"]
    assert "! over 10x its column's median: the machine was busy then; run it again" in out

    # the far-off row first, before there are three figures to compare it with
    first = {"sum": busy["sum"], **{name: row for name, row in tame.items() if name != "sum"}}
    monkeypatch.setattr(bench, "overhead_contenders", lambda torch, rounds, on_round: iter(first.items()))
    assert bench.main(["--what", "overhead", "--no-torch"]) == 0
    out = capsys.readouterr().out
    assert "! over 10x its column's median (also sum's torch (560.0 us)): the machine was busy then" in out
