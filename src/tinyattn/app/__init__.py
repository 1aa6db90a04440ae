"""The app built on the library: the `tinyattn` commands and what they run.

    cli            the `tinyattn` command line (train, generate, and the commands below)
    training       the training loop of `tinyattn train` (train_config: its settings)
    checkpoint     the checkpoint directory `tinyattn train` writes and `generate` reads
    models         the small language models: a bigram model and a GPT
    text_data      text for them: the bundled corpus, a character tokenizer, batches
    run_log        the run's log (CSV, optionally TensorBoard); progress: the progress bar
    demo           `tinyattn demo`: attention demos with traced shapes
    selfcheck      `tinyattn gradcheck`: every op and layer against finite differences
    bench          `tinyattn bench`: micro-benchmarks against NumPy and PyTorch, with the training
                   loops a lecture writes (learner_loops) and their PyTorch twins (torch_twins)

The library never imports this package: `import tinyattn` does not load it, and its modules import
the library like any program does. `python -m tinyattn` runs `cli.main`.
"""
