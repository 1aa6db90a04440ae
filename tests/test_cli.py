"""The `tinyattn` command: train, resume, generate, and clear one-line messages for bad input."""

import os
import pathlib
import subprocess
import sys

import pytest

from tinyattn.app import cli

TEXT = "When forty winters shall besiege thy brow,\nAnd dig deep trenches in thy beauty's field,\n" * 10
SMALL = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4",
         "--eval-iters", "2", "--eval-interval", "3", "--sample-tokens", "20"]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_bad_input(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert "Traceback" not in err and out == ""  # nothing on stdout: no half-started run


def test_train_then_generate(capsys, tmp_path, corpus):
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "train", "--data", corpus, "--steps", 6, "--out", out_dir, *SMALL)
    assert code == 0, err
    assert "step 6: train loss" in out and "--- sample ---" in out
    assert (out_dir / "ckpt" / "meta.json").exists()
    code, first, _ = run(capsys, "generate", "--ckpt", out_dir, "--prompt", "When", "--tokens", 30, "--seed", 3)
    assert code == 0 and first.startswith("When") and len(first.rstrip("\n")) >= 30
    code, second, _ = run(capsys, "generate", "--ckpt", out_dir / "ckpt", "--prompt", "When", "--tokens", 30,
                          "--seed", 3, "--temperature", 0.8, "--top-k", 5)
    assert code == 0 and second.startswith("When")
    assert run(capsys, "generate", "--ckpt", out_dir, "--prompt", "When", "--tokens", 30, "--seed", 3)[1] == first
    assert run(capsys, "generate", "--out", out_dir, "--prompt", "When", "--tokens", 30, "--seed", 3)[1] == first


def test_resume_continues_and_refuses_changes(capsys, tmp_path, corpus):
    out_dir = tmp_path / "out"
    assert run(capsys, "train", "--data", corpus, "--steps", 3, "--out", out_dir, *SMALL)[0] == 0
    assert_bad_input(capsys, ["train", "--data", corpus, "--steps", 3, "--out", out_dir, *SMALL],
                     "already holds a checkpoint: pass --resume")
    assert_bad_input(capsys, ["train", "--resume", "--out", out_dir, "--n-embd", 32],
                     "--n-embd 32 differs from the checkpoint's 16")
    assert_bad_input(capsys, ["train", "--resume", "--out", out_dir], "already done 3 of 3 steps")
    other = tmp_path / "other.txt"
    other.write_text(TEXT.upper())
    assert_bad_input(capsys, ["train", "--resume", "--out", out_dir, "--data", other, "--steps", 6],
                     "is not the text this run was trained on")
    code, out, err = run(capsys, "train", "--resume", "--out", out_dir, "--steps", 6, "--sample-tokens", 0)
    assert code == 0, err
    assert out.startswith("resuming at step 3") and "step 6: train loss" in out
    code, out, err = run(capsys, "train", "--data", corpus, "--steps", 3, "--out", out_dir, "--force", "--quiet", *SMALL)
    assert code == 0 and "step" not in out


def test_train_without_data_uses_the_bundled_sonnets(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(cli.TRAIN_DEFAULTS, "steps", 2)
    monkeypatch.setitem(cli.TRAIN_DEFAULTS, "eval_iters", 1)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "train", "--n-layer", 1, "--n-embd", 16, "--sample-tokens", 10)
    assert code == 0, err
    assert "data: the bundled sonnets" in out and (tmp_path / "out" / "ckpt" / "meta.json").exists()


@pytest.mark.parametrize("content, message", [
    (None, "does not exist"),
    (b"", "is empty"),
    ("caf\xe9".encode("latin-1"), "is not UTF-8 text"),
    (b"short text", "the text has 10 characters: the training part (9 characters) and the validation part (the "
                    "last 10%: 1 character) each need block_size + 1 = 17, so the text needs at least 161 "
                    "characters. Use a longer text or a smaller --block-size"),
])
def test_bad_data_files(capsys, tmp_path, content, message):
    path = tmp_path / "data.txt"
    if content is not None:
        path.write_bytes(content)
    assert_bad_input(capsys, ["train", "--data", path, "--out", tmp_path / "out", *SMALL], message)
    assert not (tmp_path / "out" / "ckpt").exists()


def test_bad_prompt_and_bad_checkpoints(capsys, tmp_path, corpus):
    out_dir = tmp_path / "out"
    assert run(capsys, "train", "--data", corpus, "--steps", 3, "--out", out_dir, *SMALL)[0] == 0
    assert_bad_input(capsys, ["generate", "--ckpt", out_dir, "--prompt", "Zebra€"],
                     "2 character(s) that are not in the model's vocabulary: 'Z' '€'")
    assert_bad_input(capsys, ["generate", "--ckpt", tmp_path / "nowhere"], "does not exist")
    assert_bad_input(capsys, ["generate", "--ckpt", tmp_path], "is not a checkpoint")

    model = out_dir / "ckpt" / "model.npz"
    data = model.read_bytes()
    model.write_bytes(data[:100] + bytes(len(data) - 100))  # the same size, other bytes
    snapshot = {name: (out_dir / "ckpt" / name).read_bytes() for name in os.listdir(out_dir / "ckpt")}
    assert_bad_input(capsys, ["generate", "--ckpt", out_dir], "does not match the hash")
    assert_bad_input(capsys, ["train", "--resume", "--out", out_dir, "--steps", 9], "does not match the hash")
    assert {name: (out_dir / "ckpt" / name).read_bytes() for name in os.listdir(out_dir / "ckpt")} == snapshot
    assert_bad_input(capsys, ["train", "--resume", "--out", tmp_path / "empty"], "nothing to resume")


@pytest.mark.parametrize("argv", [["train", "--steps", "0"], ["train", "--model", "rnn"], ["generate", "--top-k", "x"],
                                  ["train", "--dropout", "1.5"], ["frobnicate"], ["train", "--seed", str(2**64)],
                                  ["generate", "--seed", "-99999999999999999999"], ["train", "--sample-tokens", "-5"]])
def test_argument_errors_exit_2(capsys, argv):
    code = None
    try:
        code = cli.main(argv)
    except SystemExit as exit:
        code = exit.code
    assert code == 2
    err = capsys.readouterr().err
    assert "error:" in err and len(err.strip().splitlines()) == 1 and "--help" in err, err  # one line, no usage


def test_bad_option_values_get_one_line(capsys, tmp_path, corpus):
    assert_bad_input(capsys, ["train", "--data", corpus, "--n-embd", 10, "--n-head", 3, "--out", tmp_path / "o"],
                     "must be divisible by n_head")
    assert_bad_input(capsys, ["train", "--data", corpus, "--device", "cuda", "--out", tmp_path / "o"],
                     "device 'cuda' is not available")
    for options, message in ((["--min-lr", 1, "--lr", 0.001], "min_lr must be between 0 and lr (0.001)"),
                             (["--warmup-steps", -5], "warmup_steps must be 0 or more"),
                             (["--resume", "--force"], "give one of them")):
        assert_bad_input(capsys, ["train", "--data", corpus, "--out", tmp_path / "o", *options], message)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for out, message in ((a_file, "is a file, not a directory"), (a_file / "sub", "cannot create the output")):
        assert_bad_input(capsys, ["train", "--data", corpus, "--out", out, *SMALL], message)


def test_a_text_without_newlines_trains_and_samples(capsys, tmp_path):
    path = tmp_path / "one_line.txt"
    path.write_text(TEXT.replace("\n", " "), encoding="utf-8")
    code, out, err = run(capsys, "train", "--data", path, "--steps", 2, "--out", tmp_path / "o", *SMALL)
    assert code == 0 and err == "" and "--- sample ---" in out  # the sample starts from the first character


def test_a_diverging_run_stops_with_one_line_and_keeps_no_nan_checkpoint(capsys, tmp_path, corpus):
    code, out, err = run(capsys, "train", "--data", corpus, "--steps", 30, "--out", tmp_path / "o", "--lr", 1e30,
                         "--grad-clip", 0, "--lr-schedule", "constant", "--quiet", *SMALL)
    assert code == 1 and "Traceback" not in err
    (line,) = err.strip().splitlines()  # one line: no NumPy RuntimeWarnings before it
    assert line.startswith("tinyattn train: error: training diverged at step")
    assert line.endswith("no checkpoint was written (the first was due at step 3)")  # it diverged before
    assert not (tmp_path / "o" / "ckpt").exists()


def test_a_resumed_run_that_diverges_keeps_the_checkpoint_it_names(capsys, tmp_path, corpus):
    out_dir = tmp_path / "o"
    assert run(capsys, "train", "--data", corpus, "--steps", 3, "--out", out_dir, "--quiet", *SMALL)[0] == 0
    code, out, err = run(capsys, "train", "--resume", "--out", out_dir, "--steps", 30, "--lr", 1e30,
                         "--grad-clip", 0, "--lr-schedule", "constant", "--quiet")
    (line,) = err.strip().splitlines()
    assert code == 1 and line.endswith(f"the checkpoint of step 3 in {out_dir / 'ckpt'} is kept"), line


def test_resuming_with_another_learning_rate_says_so(capsys, tmp_path, corpus):
    out_dir = tmp_path / "o"
    assert run(capsys, "train", "--data", corpus, "--steps", 3, "--out", out_dir, "--quiet", *SMALL)[0] == 0
    code, out, err = run(capsys, "train", "--resume", "--out", out_dir, "--steps", 6, "--lr", 0.01,
                         "--eval-iters", 3, "--sample-tokens", 0)
    assert code == 0, err
    assert "changed from the checkpoint's settings: --lr 0.001 -> 0.01, --eval-iters 2 -> 3\n" in out
    code, out, err = run(capsys, "train", "--resume", "--out", out_dir, "--steps", 9, "--lr", 0.01, "--sample-tokens", 0)
    assert "changed" not in out  # the checkpoint of step 6 has lr 0.01 already


def test_each_model_has_its_own_defaults(capsys, tmp_path, monkeypatch):
    # The lecture's bigram settings (batch 32, block 8, lr 1e-2): the GPT's defaults left the bigram at
    # a loss of 4.48 (random characters) on the sonnets
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "train", "--model", "bigram", "--steps", 600, "--eval-iters", 20, "--sample-tokens", 0)
    assert code == 0, err
    assert out.startswith("training: bigram, block 8\n  data: the bundled sonnets (37,546 characters)\n"
                          "  600 steps, batch 32, lr 0.01,")
    assert "step 300: train loss" in out  # evaluations every 300 steps
    assert float(out.split("val loss ")[-1].split(";")[0]) < 2.7
    assert_bad_input(capsys, ["train", "--model", "bigram", "--n-layer", 2, "--dropout", 0.1],
                     "--n-layer, --dropout: only the GPT has these settings")
    help_text = subprocess.run([sys.executable, "-m", "tinyattn", "train", "--help"], capture_output=True,
                               text=True).stdout
    assert "Options left unset take the model's defaults" in help_text
    assert "default 0.001, bigram 0.01" in " ".join(help_text.split())


def test_version_and_plurals(capsys, tmp_path, corpus):
    from tinyattn import __version__

    with pytest.raises(SystemExit) as exit:
        cli.main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.startswith(f"tinyattn {__version__} (Python ")
    code, out, err = run(capsys, "train", "--data", corpus, "--steps", 1, "--out", tmp_path / "o", *SMALL)
    assert code == 0, err
    assert "GPT (1 layer, 2 heads, 16 embedding, block 16)" in out and "  1 step, batch 4" in out
    assert "done: 1 step, val loss" in out


def test_without_matplotlib_the_end_of_a_run_says_how_to_get_the_loss_curve(capsys, tmp_path, corpus, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib... raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    code, out, err = run(capsys, "train", "--data", corpus, "--steps", 3, "--out", tmp_path / "o", *SMALL)
    assert code == 0 and not (tmp_path / "o" / "loss.png").exists()
    assert "no loss curve: matplotlib is not installed; pip install matplotlib to get loss.png" in out


def test_commands_of_other_modules_are_delegated(capsys):
    assert cli._delegate("tinyattn.no_such_module", []) == 2
    assert "lacks the module tinyattn.no_such_module" in capsys.readouterr().err


def test_python_dash_m_help():
    result = subprocess.run([sys.executable, "-m", "tinyattn", "train", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "--resume" in result.stdout and "--block-size" in result.stdout


class FakeTerminal:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_bar_draws_one_line_on_a_terminal_and_nothing_elsewhere():
    from tinyattn.app.progress import ProgressBar

    terminal = FakeTerminal(True)
    bar = ProgressBar(10, stream=terminal, min_interval=0.0)
    for step in range(1, 11):
        bar.update(step, 2.5)
    bar.write("step 10: val loss 2.0")
    bar.close()
    assert "\rstep 10/10 [####################]  loss 2.5000 |" in terminal.text and "ETA" in terminal.text
    assert "step 10: val loss 2.0\n" in terminal.text and terminal.text.count("\n") == 1

    log = FakeTerminal(False)
    bar = ProgressBar(10, stream=log)
    for step in range(1, 11):
        bar.update(step, 2.5)
    bar.write("step 10: val loss 2.0")
    bar.close()
    assert log.text == "step 10: val loss 2.0\n"


def test_generate_refuses_a_checkpoint_of_nan_weights(capsys, tmp_path, corpus):
    from tinyattn.app import checkpoint, models

    out_dir = tmp_path / "out"
    assert run(capsys, "train", "--data", corpus, "--steps", 3, "--out", out_dir, *SMALL)[0] == 0
    saved = checkpoint.load_checkpoint(out_dir)
    model = models.build_model(saved.meta["model"]["kind"], **saved.meta["model"]["config"])
    checkpoint.load_model_state(saved, model)
    model.lm_head.weight.detach().fill_(float("nan"))  # what a diverged run would have saved
    meta = {k: v for k, v in saved.meta.items() if k not in ("format", "version", "files")}
    checkpoint.save_checkpoint(out_dir / "ckpt", model, None, meta)
    assert_bad_input(capsys, ["generate", "--ckpt", out_dir], "holds NaN or infinite weights")


def test_generate_needs_no_optimizer_state_and_tampering_is_one_line(capsys, tmp_path, corpus):
    import json

    out_dir = tmp_path / "out"
    assert run(capsys, "train", "--data", corpus, "--steps", 3, "--out", out_dir, *SMALL)[0] == 0
    (out_dir / "ckpt" / "optimizer.npz").unlink()
    code, text, err = run(capsys, "generate", "--ckpt", out_dir, "--prompt", "When", "--tokens", 5)
    assert code == 0 and text.startswith("When"), err
    assert_bad_input(capsys, ["train", "--resume", "--out", out_dir, "--steps", 6], "optimizer.npz': it is missing")
    meta_path = out_dir / "ckpt" / "meta.json"
    meta = json.loads(meta_path.read_text())
    for field, value, message in (("step", -50, "recorded in manifest.json"), ("losses", None, "recorded in manifest.json")):
        meta_path.write_text(json.dumps({**meta, field: value}, indent=1))
        assert_bad_input(capsys, ["generate", "--ckpt", out_dir], message)


# ---------------------------------------------------------------------------------------------
# messages: 80 columns on a terminal, the right --help, the thing passed named for what it is


@pytest.fixture
def terminal_80(monkeypatch):
    """stdout and stderr as an 80-column terminal (what `fit` and argparse look at)."""
    from tinyattn import console

    monkeypatch.setattr(console, "is_terminal", lambda stream: True)
    monkeypatch.setenv("COLUMNS", "80")


def one_message(err, prog):
    """The error on stderr, wrapped to 80 columns on a terminal: its lines, and the message as one line."""
    lines = err.rstrip("\n").splitlines()
    assert lines[0].startswith(f"{prog}: error: ") and all(line.startswith("  ") for line in lines[1:]), err
    assert all(len(line) <= 80 for line in lines), err
    return " ".join(line.strip() for line in lines)


def bad_input(capsys, *argv):
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err, (out, err)
    return err


def test_errors_fit_80_columns_at_words_on_a_terminal(capsys, tmp_path, corpus, terminal_80, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a path as short as a user's (a path longer than a line gets a line of its own)
    out_dir = pathlib.Path("a-run-directory-with-a-long-name") / "out"
    assert run(capsys, "train", "--data", corpus, "--steps", 2, "--out", out_dir, *SMALL)[0] == 0
    err = bad_input(capsys, "train", "--data", corpus, "--out", out_dir, *SMALL)
    message = one_message(err, "tinyattn train")
    assert message == (f"tinyattn train: error: {str(out_dir)!r} already holds a checkpoint: pass --resume to "
                       "continue it, --force to replace it, or --out DIR for a new run")
    assert len(err.splitlines()) > 1  # it was wrapped, each path and option whole on its line
    for whole in (repr(str(out_dir)), "--resume", "--force", "--out"):
        assert any(whole in line for line in err.splitlines()), (whole, err)
    short = bad_input(capsys, "train", "--x")  # 78 characters
    assert len(short.splitlines()) == 1  # a message that fits stays on one line


def test_a_mistyped_option_points_to_the_commands_own_help(capsys, terminal_80):
    for command in ("train", "generate"):
        err = bad_input(capsys, command, "--stpes", "3")
        assert one_message(err, f"tinyattn {command}") == (
            f"tinyattn {command}: error: unrecognized arguments: --stpes 3 (see tinyattn {command} --help)")
        assert f"(see tinyattn {command} --help)" in err  # never cut between its words
    err = bad_input(capsys, "--stpes")
    assert "(see tinyattn --help)" in err


def test_generate_names_a_file_as_a_file(capsys, tmp_path, corpus):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    err = bad_input(capsys, "generate", "--ckpt", notes)
    assert f"{str(notes)!r} is a file, not a checkpoint" in err and "notes.txt/ckpt" not in err
    assert "`tinyattn train --out DIR` writes (pass DIR, or DIR/ckpt)" in err
    assert run(capsys, "train", "--data", corpus, "--steps", 1, "--out", tmp_path / "out", *SMALL)[0] == 0
    err = bad_input(capsys, "generate", "--ckpt", tmp_path / "out" / "ckpt" / "model.npz")
    assert f"is a file of a checkpoint: pass the checkpoint, its directory {str(tmp_path / 'out' / 'ckpt')!r}" in err


def test_generate_samples_other_text_on_each_run_unless_given_a_seed(capsys, tmp_path, corpus):
    out_dir = tmp_path / "out"
    assert run(capsys, "train", "--data", corpus, "--steps", 2, "--out", out_dir, *SMALL)[0] == 0
    texts = [run(capsys, "generate", "--ckpt", out_dir, "--tokens", 200)[1] for _ in range(2)]
    assert texts[0] != texts[1]  # 200 characters drawn twice alike by chance: odds far below 1e-50
    seeded = [run(capsys, "generate", "--ckpt", out_dir, "--tokens", 200, "--seed", 7)[1] for _ in range(2)]
    assert seeded[0] == seeded[1]
    help_text = " ".join(cli.build_parser().commands["generate"].format_help().split())
    assert "the same seed gives the same text (default: a new seed each run" in help_text


def test_a_tiny_data_file_gets_both_limits_in_one_message(capsys, tmp_path):
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("abc")
    for block, shortest in ((64, 641), (1, 11)):
        assert_bad_input(capsys, ["train", "--data", tiny, "--block-size", block, "--out", tmp_path / "o"],
                         f"the text has 3 characters: the training part (2 characters) and the validation part "
                         f"(the last 10%: 1 character) each need block_size + 1 = {block + 1}, so the text needs "
                         f"at least {shortest} characters")
    text = "x" * 640
    assert_bad_input(capsys, ["train", "--data", tiny, "--out", tmp_path / "o"], "at least 641 characters")
    tiny.write_text(text + "y")
    code, _, err = run(capsys, "train", "--data", tiny, "--out", tmp_path / "o", "--steps", 1, "--quiet",
                       "--sample-tokens", 0, "--n-layer", 1, "--n-embd", 16, "--n-head", 2, "--eval-iters", 1)
    assert code == 0, err  # the shortest text it names is long enough


def test_help_wraps_at_spaces_within_80_columns():
    env = {**os.environ, "COLUMNS": "80"}
    for argv in (["train", "--help"], ["generate", "--help"], ["--help"], ["bench", "--help"],
                 ["exercises", "check", "--help"], ["gradcheck", "--help"], ["demo", "--help"]):
        text = subprocess.run([sys.executable, "-m", "tinyattn", *argv], capture_output=True, text=True,
                              env=env).stdout
        assert text and all(len(line) <= 80 for line in text.splitlines()), (argv, text)
        if argv[0] == "train":
            lines = text.splitlines()
            assert any("--eval-interval 250" in line for line in lines)
            url = "https://github.com/karpathy/char-rnn/blob/master/data/tinyshakespeare/input.txt"
            assert url in lines
        if argv[0] == "bench":
            flat = " ".join(text.split())
            for name, letter in (("mha", "a"), ("gpt", "b"), ("overhead", "c"), ("memory", "d"),
                                 ("contended", "e")):
                assert f"{name} ({letter}) " in flat
