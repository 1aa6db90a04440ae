"""The `tinyattn` command (also `python -m tinyattn`).

    tinyattn train                           # a small GPT on the bundled sonnets, under a minute
    tinyattn train --data input.txt --steps 2000 --out out-shakespeare
    tinyattn train --resume --out out-shakespeare --steps 4000
    tinyattn generate --ckpt out-shakespeare --prompt "ROMEO:" --tokens 500 --temperature 0.8
    tinyattn gradcheck ... | demo ... | bench ... | coverage NAME...

Bad input (a missing data file, a prompt with unknown characters, a corrupt checkpoint, an unknown
option) exits with status 2 and a one-line message on stderr. Ctrl-C keeps what was done (a checkpoint,
the text generated so far, the figures measured), says so in one line and exits with status 130.
Every command stops quietly with status 141 when the reader of its output goes away (`| head -5`);
a training run saves its checkpoint first.
"""

import argparse
import contextlib
import dataclasses
import importlib
import os
import pathlib
import sys
import threading
import _thread

from .checkpoint import CheckpointError
from ..console import (EXIT_BAD_INPUT, EXIT_INTERRUPTED, ArgumentParser, add_threads_option, error_text, fit,
                      plural, positive_int, stdout_closed)
from .text_data import DataError
from .training import GPT_ONLY, MODEL_DEFAULTS, TrainConfig, TrainingDiverged

# commands that other modules implement: name -> the module whose main(argv) runs it
DELEGATED = {"gradcheck": "tinyattn.app.selfcheck", "demo": "tinyattn.app.demo", "bench": "tinyattn.app.bench",
             "exercises": "tinyattn.exercises", "coverage": "tinyattn.app.coverage"}
DELEGATED_HELP = {"gradcheck": "check gradients by finite differences (see `tinyattn gradcheck --help`)",
                  "demo": "attention demos with traced shapes (see `tinyattn demo --help`)",
                  "bench": "micro-benchmarks against NumPy and PyTorch (see `tinyattn bench --help`)",
                  "exercises": "backward-pass exercises and their checker (see `tinyattn exercises --help`)",
                  "coverage": "whether tinyattn has a PyTorch name, or why not (`tinyattn coverage torch.median`)"}

# what `tinyattn train` uses for an option the command line does not give (the GPT's; the bigram's
# differ where training.MODEL_DEFAULTS says)
TRAIN_DEFAULTS = {field.name: field.default for field in dataclasses.fields(TrainConfig)}

# options that define the model or the data: a resumed run must keep the checkpoint's
ARCHITECTURE = ("model", "block_size", "n_layer", "n_head", "n_embd", "train_fraction")


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


THREADS_HELP = ("threads to compute with (default 1: the same numbers on any machine, and no waiting for a "
                "core that another busy program holds)")


@contextlib.contextmanager
def _computing_threads(args):
    """Compute with --threads threads (default: threads.COMMAND_DEFAULT) inside, and with the count
    from before after (cli.main may be called from a program or a test)."""
    from ..backend import threads

    if not threads.can_set_num_threads():
        if args.threads is not None:
            raise UsageError("--threads needs threadpoolctl to set the threads of NumPy's BLAS: "
                             "pip install threadpoolctl")
        yield
        return
    with threads.using(args.threads or threads.COMMAND_DEFAULT):
        if args.threads is not None:
            _say_what_threads_do(args.threads, threads.get_num_threads(), threads.available_cores())
        yield


def _say_what_threads_do(asked, got, cores):
    """--threads N where the BLAS runs fewer, or the machine has fewer cores: a line on stderr says so."""
    if asked == got and asked <= cores:
        return
    said = f"--threads {asked}: "
    if got != asked:
        said += f"NumPy's BLAS runs at most {got} threads, so {plural(got, 'thread')} compute"
    else:
        said += f"{plural(got, 'thread')} compute"
    if got > cores:
        said += (f", on {plural(cores, 'core')} (threads beyond the cores wait on each other: --threads {cores} "
                 "or fewer is as fast or faster)")
    print(fit(said, sys.stderr), file=sys.stderr)


def _int_option(what, low, high=None):
    """An argparse type: an int from `low` up to (not including) `high`, `what` naming it in errors."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < low or (high is not None and value >= high):
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


_non_negative_int = _int_option("an integer >= 0", 0)
_seed = _int_option("a seed in [-2**63, 2**64)", -(2**63), 2**64)


def _non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def _probability(text):
    value = _non_negative_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1), got {text}")
    return value


_Parser = ArgumentParser  # argparse's errors in one line, exit status 2


def _version():
    import numpy
    from .. import __version__

    return f"tinyattn {__version__} (Python {sys.version.split()[0]}, NumPy {numpy.__version__})"


def build_parser():
    parser = _Parser(prog="tinyattn", description="tinyattn: tensors, autograd and attention from scratch.")
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    t = commands.add_parser(
        "train", help="train a character-level language model (bigram or GPT)",
        description="Train a character-level language model. Without --data it trains a small GPT on "
                    "Shakespeare's sonnets, which ship with tinyattn. Checkpoints go to OUT/ckpt every "
                    "--eval-interval steps; Ctrl-C saves one and stops; --resume continues exactly. "
                    "Options left unset take the model's defaults: the GPT's are nanoGPT's CPU model, the "
                    "bigram's those of the 'Let's build GPT' lecture's bigram.py.",
        epilog="nanoGPT's CPU run: tinyattn train --data input.txt --steps 2000 --eval-interval 250 "
               "(the defaults are its model: block 64, batch 12, 4 layers, 4 heads, 128 embedding). "
               "Tiny Shakespeare (input.txt, 1.1 MB; the page's Download button saves it): "
               "https://github.com/karpathy/char-rnn/blob/master/data/tinyshakespeare/input.txt")
    def option(flag, text, **kwargs):
        """A training option whose defaults (shown in --help) are TRAIN_DEFAULTS' and the bigram's."""
        name = flag[2:].replace("-", "_")
        default = TRAIN_DEFAULTS[name]
        if name in GPT_ONLY:
            shown = f"default {default}; GPT only"
        elif name in MODEL_DEFAULTS["bigram"]:
            shown = f"default {default}, bigram {MODEL_DEFAULTS['bigram'][name]}"
        else:
            shown = f"default {default}"
        t.add_argument(flag, help=f"{text} ({shown})", **kwargs)

    t.add_argument("--data", metavar="FILE", help="UTF-8 text file to train on (default: the bundled sonnets)")
    option("--model", "model kind", choices=("bigram", "gpt"))
    option("--steps", "optimizer steps in total", type=positive_int)
    option("--batch-size", "sequences per step", type=positive_int)
    option("--block-size", "context length in characters", type=positive_int)
    option("--n-layer", "transformer blocks", type=positive_int)
    option("--n-head", "attention heads per block", type=positive_int)
    option("--n-embd", "embedding size", type=positive_int)
    option("--dropout", "dropout probability", type=_probability)
    option("--lr", "peak learning rate", type=_non_negative_float)
    option("--min-lr", "learning rate at the end of the cosine", type=_non_negative_float)
    option("--warmup-steps", "linear warmup steps", type=int)
    option("--lr-schedule", "learning-rate schedule", choices=("cosine", "constant"))
    option("--weight-decay", "AdamW weight decay", type=_non_negative_float)
    option("--grad-clip", "max gradient norm, 0 = off", type=_non_negative_float)
    option("--eval-interval", "steps between loss estimates and checkpoints", type=positive_int)
    option("--eval-iters", "batches per loss estimate", type=positive_int)
    option("--device", "'cpu' or 'cuda'")
    option("--seed", "random seed for weights and batches", type=_seed)
    t.add_argument("--out", metavar="DIR", default="out", help="output directory (default: out)")
    t.add_argument("--resume", action="store_true", help="continue the run saved in --out")
    t.add_argument("--force", action="store_true", help="start a new run even if --out holds a checkpoint")
    t.add_argument("--sample-tokens", type=_non_negative_int, default=300,
                   help="characters to generate at the end (default 300, 0 = none)")
    t.add_argument("--quiet", action="store_true", help="no progress bar and no loss lines")
    t.add_argument("--log", action="append", choices=("csv", "tensorboard"), metavar="{csv,tensorboard}",
                   help="also log each step's loss and learning rate and every loss estimate: csv (OUT/log.csv) "
                        "or tensorboard (OUT/tensorboard, read by tensorboard --logdir OUT; needs the "
                        "tensorboard extra); give it twice for both")
    add_threads_option(t, THREADS_HELP)

    g = commands.add_parser("generate", help="generate text from a trained checkpoint",
                            description="Sample text from a checkpoint written by `tinyattn train`.")
    g.add_argument("--ckpt", "--out", dest="ckpt", metavar="DIR", default="out",  # --out: as train names it
                   help="checkpoint (or the train --out directory; default: out)")
    g.add_argument("--prompt", default="", help="text to continue (default: a newline)")
    g.add_argument("--tokens", type=int, default=500, help="characters to generate (default 500)")
    g.add_argument("--temperature", type=float, default=1.0, help="< 1 safer, > 1 more surprising (default 1.0)")
    g.add_argument("--top-k", type=positive_int, help="sample only among the k most likely characters")
    g.add_argument("--seed", type=_seed, help="random seed: the same seed gives the same text (default: a new "
                                              "seed each run, so each run samples other text)")
    g.add_argument("--device", default="cpu", help="'cpu' or 'cuda' (default cpu)")
    add_threads_option(g, THREADS_HELP)

    # listed in --help; main() hands their arguments to the module that owns them
    for name, text in DELEGATED_HELP.items():
        commands.add_parser(name, help=text, add_help=False)
    parser.commands = {"train": t, "generate": g}
    return parser


# ---------------------------------------------------------------------------------------------
# train


def _new_run_defaults(args):
    """The defaults of the model --model asks for (the GPT's, or the bigram's where they differ)."""
    model = args.model or TRAIN_DEFAULTS["model"]
    if model == "bigram":
        given = [name for name in GPT_ONLY if getattr(args, name, None) is not None]
        if given:
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            raise UsageError(f"{flags}: only the GPT has {'these settings' if len(given) > 1 else 'this setting'} "
                             "(the bigram model is one embedding table): leave it out, or train --model gpt")
    return {**TRAIN_DEFAULTS, **MODEL_DEFAULTS[model]}


def _train_config(args, base):
    """A TrainConfig from `base` (defaults or a checkpoint's) updated with the options given."""
    values = dict(base)
    for name in TRAIN_DEFAULTS:
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    try:
        return TrainConfig(**values)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None


def _shown(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


def _check_out_dir(out):
    """The output directory exists (made if need be) and can be written to, or a UsageError."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} is a file, not a directory: give a directory for the run")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create the output directory {str(out)!r}: {error.strerror}") from None
    if not os.access(out, os.W_OK):
        raise UsageError(f"cannot write to the output directory {str(out)!r}: choose another --out")


def _read_data(args, resume_meta=None):
    """(text, source) for --data, the checkpoint's data on --resume, or the bundled corpus."""
    from .text_data import default_corpus, load_text

    if args.data is not None:
        return load_text(args.data), str(pathlib.Path(args.data).resolve())
    source = (resume_meta or {}).get("data", {}).get("source", "bundled")
    if source in (None, "bundled"):
        return default_corpus(), "bundled"
    return load_text(source), source


def command_train(args):
    from . import checkpoint as ckpt
    from ..backend import threads
    from .training import check_text, sample_stream, text_fingerprint, train

    out = pathlib.Path(args.out)
    resume = None
    if args.resume and args.force:
        raise UsageError("--resume continues the run in --out and --force starts it over: give one of them")
    if args.resume:
        if not out.exists():
            raise UsageError(f"nothing to resume: {str(out)!r} does not exist (train without --resume first)")
        resume = ckpt.load_checkpoint(out)
        _note_recovery(resume)
        saved = resume.meta.get("train")
        if not isinstance(saved, dict):
            raise CheckpointError(f"{str(resume.path / ckpt.META_FILE)!r} has no training configuration to resume")
        for name in ARCHITECTURE:
            given = getattr(args, name, None)
            if given is not None and given != saved.get(name):
                raise UsageError(
                    f"--{name.replace('_', '-')} {given} differs from the checkpoint's {saved.get(name)}: "
                    "a resumed run keeps its model; start a new run with another --out to change it"
                )
        config = _train_config(args, {**TRAIN_DEFAULTS, **saved})
        changed = [f"--{name.replace('_', '-')} {_shown(saved.get(name))} -> {_shown(getattr(config, name))}"
                   for name in TRAIN_DEFAULTS
                   if name not in ARCHITECTURE + ("steps",) and getattr(args, name, None) is not None
                   and getattr(config, name) != saved.get(name)]
        text, source = _read_data(args, resume.meta)
        if text_fingerprint(text) != resume.meta.get("data", {}).get("sha256"):
            raise UsageError(
                f"the data ({source}) is not the text this run was trained on: resume with the same "
                "file, or start a new run with another --out"
            )
        if resume.step >= config.steps:
            raise UsageError(
                f"the run in {str(out)!r} has already done {resume.step} of {config.steps} steps: "
                f"pass --steps larger than {resume.step} to train longer"
            )
    else:
        changed = []
        config = _train_config(args, _new_run_defaults(args))
        text, source = _read_data(args)  # a bad data file is the first thing to report
        if ckpt.has_checkpoint(out / "ckpt") and not args.force:
            raise UsageError(
                f"{str(out)!r} already holds a checkpoint: pass --resume to continue it, --force to "
                "replace it, or --out DIR for a new run"
            )

    if config.device != "cpu":
        from .. import backend

        try:
            backend.namespace_for(config.device)
        except Exception as error:
            raise UsageError(f"device {config.device!r} is not available: {error}") from None

    check_text(config, text)  # before anything is printed or written
    _check_out_dir(out)  # now, not at the first checkpoint after minutes of training
    run_log = _open_run_log(args.log, out, config)
    quiet = args.quiet
    if not quiet:
        where = "the bundled sonnets" if source == "bundled" else source
        what = f"bigram, block {config.block_size}" if config.model == "bigram" else (
            f"GPT ({plural(config.n_layer, 'layer')}, {plural(config.n_head, 'head')}, {config.n_embd} embedding, "
            f"block {config.block_size})")
        start = f"resuming at step {resume.step}" if resume else "training"
        # three short lines, so that an 80-column terminal (or page) shows each whole; in one write, so
        # that a reader that takes one line and goes away (`| head -1`) is met by the training's output
        header = [f"{start}: {what}", f"  data: {where} ({plural(len(text), 'character')})",
                  f"  {plural(config.steps, 'step')}, batch {config.batch_size}, lr {config.lr:g}, device {config.device}"
                  + (f", {plural(threads.get_num_threads(), 'thread')}" if config.device == "cpu" else "")]
        sys.stdout.write("".join(fit(line) + "\n" for line in header))
        sys.stdout.flush()
    if changed:  # never silently: the rest of the run differs from what the checkpoint was trained with
        print(fit(f"changed from the checkpoint's settings: {', '.join(changed)}"), flush=True)
    try:
        result = train(config, text, out=out, resume=resume, data_source=source, quiet=quiet,
                       callback=run_log and run_log.step, on_evaluation=run_log and run_log.evaluation)
    finally:
        if run_log is not None:
            run_log.close()
    if result.output_closed:  # the checkpoint is saved; main() ends the command as for any closed pipe
        print(fit(f"tinyattn train: the output was closed: stopped at step {result.step} of {config.steps}; the "
                  f"checkpoint is in {out / 'ckpt'}. Continue with: tinyattn train --resume --out {out}",
                  sys.stderr), file=sys.stderr)
        raise BrokenPipeError
    if result.interrupted:
        print("\n" + fit(f"stopped at step {result.step} of {config.steps}; the checkpoint is in {out / 'ckpt'}. "
                         f"Continue with: tinyattn train --resume --out {out}", sys.stderr), file=sys.stderr)
        return EXIT_INTERRUPTED
    if not quiet:
        final = result.history[-1] if result.history else None
        if final is not None:
            curve = (f", loss curve in {out / 'loss.png'}" if (out / "loss.png").exists() else
                     " (no loss curve: matplotlib is not installed; pip install matplotlib to get loss.png)")
            logged = f"; log in {run_log.where()}" if run_log is not None else ""
            print(fit(f"done: {plural(result.step, 'step')}, val loss {final['val_loss']:.4f}; checkpoint in "
                      f"{out / 'ckpt'}{curve}{logged}"))
    if args.sample_tokens > 0:
        if not quiet:
            print("\n--- sample ---")
        _stream(sample_stream(result.model, result.tokenizer, tokens=args.sample_tokens, seed=config.seed))
    return 0


def _open_run_log(kinds, out, config):
    """The logs --log asks for (None without it), or a UsageError before any training."""
    if not kinds:
        return None
    from .run_log import RunLog

    try:
        return RunLog(kinds, out, config.lr_at)
    except ImportError as error:
        if error.name != "tensorboard":
            raise
        raise UsageError("--log tensorboard writes through the tensorboard package, which is not installed: "
                         "pip install tensorboard (TensorFlow is not needed; --log csv needs nothing)") from None
    except OSError as error:
        raise UsageError(f"cannot write the log in {str(out)!r}: {error.strerror or error}") from None


def _note_recovery(checkpoint):
    if checkpoint.path.name.startswith("."):
        print(fit(f"note: using {str(checkpoint.path)!r}, the newest complete checkpoint, left by an interrupted "
                  "save", sys.stderr), file=sys.stderr)


def _stream(pieces):
    """Print the text as it is sampled, each character at once (a Ctrl-C keeps what was printed)."""
    for piece in pieces:
        sys.stdout.write(piece)
        sys.stdout.flush()
    sys.stdout.write("\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------------
# generate


def command_generate(args):
    from . import checkpoint as ckpt
    from .text_data import CharTokenizer
    from .models import build_model
    from .training import sample_stream

    checkpoint = ckpt.load_checkpoint(args.ckpt, optimizer=False)  # sampling needs no optimizer state
    _note_recovery(checkpoint)
    if args.tokens < 0:
        raise UsageError(f"--tokens must be >= 0, got {args.tokens}")
    if not args.temperature > 0:
        raise UsageError(f"--temperature must be > 0, got {args.temperature}")
    try:
        tokenizer = CharTokenizer.from_dict(checkpoint.meta["tokenizer"])
        model = build_model(checkpoint.meta["model"]["kind"], **checkpoint.meta["model"]["config"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{str(checkpoint.path / ckpt.META_FILE)!r}: cannot rebuild the model ({error})") from None
    unknown = tokenizer.unknown(args.prompt)
    if unknown:
        shown = " ".join(repr(c) for c in unknown[:10])
        raise UsageError(
            f"the prompt has {len(unknown)} character(s) that are not in the model's vocabulary: {shown} "
            f"(the model knows: {''.join(tokenizer.chars)!r})"
        )
    ckpt.load_model_state(checkpoint, model)
    if not all(bool(p.isfinite().all()) for p in model.parameters()):
        raise CheckpointError(f"{str(checkpoint.path)!r} holds NaN or infinite weights: the run that wrote it "
                              "diverged; train again with a lower --lr")
    try:
        model.to(args.device)
    except Exception as error:
        raise UsageError(f"device {args.device!r} is not available: {error}") from None
    # sampling is drawing: without --seed each run draws other text (as `train`'s sample, a given seed repeats)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little")
    _stream(sample_stream(model, tokenizer, prompt=args.prompt, tokens=args.tokens, temperature=args.temperature,
                          top_k=args.top_k, seed=seed))
    return 0


# ---------------------------------------------------------------------------------------------
# see: a script's step as a page (tinyattn.tracing_page.see)

DELEGATED["see"] = "tinyattn.tracing_page.see"
DELEGATED_HELP["see"] = ("run a script under a trace and write the page of its step "
                         "(`tinyattn see SCRIPT --html PAGE`)")


# ---------------------------------------------------------------------------------------------


def _delegate(module_name, argv, command=None):
    """Run another module's main(argv) (gradcheck, demo, bench), imported only when asked for.

    command: the command's name in messages (default: the module's last name)."""
    command = command or module_name.rsplit(".", 1)[-1]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        print(error_text(f"tinyattn {command}", f"this installation lacks the module {module_name} that the "
                         "command needs (reinstall tinyattn, or use `tinyattn train` / `tinyattn generate`)"),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return module.main(argv)
    except KeyboardInterrupt:  # the commands keep what they did on Ctrl-C themselves; this is the last resort
        print(f"\ntinyattn {command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def main(argv=None):
    """Run a `tinyattn` command; its exit status. The one place where a closed output ends a command."""
    try:
        with ctrl_c_never_lost():
            try:
                return _run(argv)
            finally:  # also after --help's SystemExit
                sys.stdout.flush()  # a reader gone at the very end shows here, where it can still be handled
    except BrokenPipeError:
        return stdout_closed()


@contextlib.contextmanager
def ctrl_c_never_lost():
    """A Ctrl-C that lands in code Python cannot raise from (a garbage collector's callback, such as
    Hypothesis keeps, or a __del__) would be printed as "Exception ignored" with a traceback, and then
    lost: the command would go on. Inside this block it is raised again in the main thread, where the
    command stops as on any Ctrl-C, with one line."""
    previous = sys.unraisablehook

    def again_soon():
        # a moment later, from another thread: raised at once, it would land in this hook, where it
        # would be lost again (if it lands in another callback, the hook sees it and tries again)
        threading.Timer(0.01, _thread.interrupt_main).start()

    def hook(unraisable):
        try:
            if unraisable.exc_type is KeyboardInterrupt:
                again_soon()
            else:
                previous(unraisable)
        except KeyboardInterrupt:  # the one sent again arrived while this hook ran
            again_soon()

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _run(argv):
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    # the delegated commands parse their own options, so pass everything after the name through
    if argv and argv[0] in DELEGATED:
        return _delegate(DELEGATED[argv[0]], argv[1:], command=argv[0])
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser, so that the message points to `tinyattn train --help`
        parser.commands.get(args.command, parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        from ..serialization import get_max_load_bytes

        try:
            get_max_load_bytes()
        except ValueError as error:  # TINYATTN_MAX_LOAD_BYTES set to something else than a size
            raise UsageError(str(error)) from None
        with _computing_threads(args):
            if args.command == "train":
                return command_train(args)
            return command_generate(args)
    except (UsageError, DataError, CheckpointError) as error:
        print(error_text(f"tinyattn {args.command}", error), file=sys.stderr)
        return EXIT_BAD_INPUT
    except TrainingDiverged as error:
        print(error_text(f"tinyattn {args.command}", error), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # what was printed (the text generated so far, a checkpoint's path) stays
        sys.stdout.write("\n")
        sys.stdout.flush()
        print(f"tinyattn {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
