"""How much of the PyTorch that teaching code uses tinyattn covers: writes docs/coverage.md.

    python tools/coverage_report.py                      # report: from the committed usage files
    python tools/coverage_report.py scan --corpus DIR    # first re-scan every corpus into its usage file
    python tools/coverage_report.py scan --corpus DIR --which intro      # or one corpus
    python tools/coverage_report.py --missing 40         # and list the 40 missing names most used

There are two corpora, each a list of repositories (at a fixed commit, some folders only):
tools/corpus_intro.json (introductory, general PyTorch teaching code) and tools/corpus.json (teaching code
about language models and attention). `scan` reads them from DIR/<owner>__<name>/ (a clone checked out at
that commit; only .py and .ipynb files are read) with tools/scan_pytorch_names.py and writes the names and
counts it found, per repository, to the corpus's usage file (tools/corpus_intro_usage.json,
tools/corpus_usage.json); no code is kept. `report` (the default) needs only those files: it looks every
name up in tinyattn (`torch.nn.X` -> `tinyattn.nn.X`, `Tensor.x` -> `tinyattn.Tensor.x`), checks every
keyword against the signature, writes docs/coverage.md and prints the summary figures.
"""

import argparse
import inspect
import json
import pathlib
import sys
from dataclasses import dataclass

TOOLS = pathlib.Path(__file__).resolve().parent
ROOT = TOOLS.parent
REPORT_FILE = ROOT / "docs" / "coverage.md"

# the names tinyattn leaves out on purpose, and the lookup of a name in tinyattn, are the library's own
# (`tinyattn coverage NAME` uses them too): tinyattn/missing.py and tinyattn/app/coverage.py
from tinyattn.missing import LEFT_OUT, left_out_reason  # noqa: E402,F401
from tinyattn.app.coverage import NEEDS_EXTRA, tinyattn_object  # noqa: E402,F401


@dataclass(frozen=True)
class Corpus:
    key: str          # what `--which` takes
    title: str        # the report's name for it
    about: str        # one sentence for the reader: what code it is
    list_file: pathlib.Path
    usage_file: pathlib.Path


CORPORA = [
    Corpus("intro", "Introductory PyTorch",
           "the official beginner tutorials, a textbook's PyTorch code, CNN and RNN tutorials, university "
           "course notebooks, and autograd-from-scratch courses that compare against PyTorch",
           TOOLS / "corpus_intro.json", TOOLS / "corpus_intro_usage.json"),
    Corpus("attention", "Language models and attention",
           "teaching code about neural language models, attention and transformers",
           TOOLS / "corpus.json", TOOLS / "corpus_usage.json"),
]
CORPUS_LIST = CORPORA[1].list_file     # the first corpus's files, by their original names
USAGE_FILE = CORPORA[1].usage_file

# Keywords that PyTorch itself no longer takes: the code that passes them stops on PyTorch as well.
KEYWORDS_LEFT_OUT = {
    ("torch.optim.lr_scheduler.ReduceLROnPlateau", "verbose"):
        "not in PyTorch either: deprecated in PyTorch 2.2 and since removed",
}


# -- scan -------------------------------------------------------------------------------------------

def scan(corpus_dir, corpus):
    """Scan one corpus's repositories under corpus_dir and write its usage file."""
    sys.path.insert(0, str(TOOLS))
    import scan_pytorch_names

    listing = json.loads(corpus.list_file.read_text(encoding="utf-8"))
    torch_names = scan_pytorch_names.load_torch_names()
    per_repo = {}
    for entry in listing["repositories"]:
        owner, name = entry["repo"].split("/")
        base = pathlib.Path(corpus_dir) / f"{owner}__{name}"
        if not base.is_dir():
            sys.exit(f"{base} is missing: clone https://github.com/{entry['repo']} there and check out "
                     f"{entry['commit']}")
        excluded = {base / path for path in entry.get("exclude", [])}
        files = []
        for folder in entry["folders"]:
            files += [p for p in scan_pytorch_names.source_files(base / folder) if p not in excluded]
        per_repo[entry["repo"]] = scan_pytorch_names.scan_paths(files, torch_names)
    corpus.usage_file.write_text(json.dumps({"repositories": per_repo}, indent=1, sort_keys=True) + "\n",
                                 encoding="utf-8")
    print(f"{len(per_repo)} repositories scanned -> {corpus.usage_file.relative_to(ROOT)}")


# -- look names up in tinyattn -------------------------------------------------------------------------

def is_covered(name):
    try:
        tinyattn_object(name)
        return True
    except (LookupError, AttributeError):
        return False


def accepts_keyword(name, keyword):
    """True when tinyattn's version of name takes keyword (or **kwargs, or has no signature to read)."""
    try:
        obj = tinyattn_object(name)
    except (LookupError, AttributeError):
        return False
    if obj is NEEDS_EXTRA:
        return True
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return True
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_KEYWORD:
            return True
        if parameter.name == keyword and parameter.kind is not parameter.POSITIONAL_ONLY:
            return True
    return False


# -- report -------------------------------------------------------------------------------------------

def tally(usage):
    """{name: (repositories, occurrences)} and {(name, keyword): (repositories, occurrences)}."""
    names, keywords = {}, {}
    for repo_usage in usage["repositories"].values():
        for name, count in repo_usage["names"].items():
            repos, occurrences = names.get(name, (0, 0))
            names[name] = (repos + 1, occurrences + count)
        for name, kw_counts in repo_usage["keywords"].items():
            for keyword, count in kw_counts.items():
                repos, occurrences = keywords.get((name, keyword), (0, 0))
                keywords[(name, keyword)] = (repos + 1, occurrences + count)
    return names, keywords


def status_of(name, covered):
    if covered:
        return "covered"
    reason = left_out_reason(name)
    return f"left out: {reason}" if reason else "**not covered**"


def percent(part, whole):
    return f"{100 * part / whole:.1f}%" if whole else "-"


class Figures:
    """One corpus's tallies and what tinyattn covers of them."""

    def __init__(self, corpus, usage):
        self.corpus = corpus
        self.listing = json.loads(corpus.list_file.read_text(encoding="utf-8"))
        self.repositories = len(usage["repositories"])
        self.names, self.keywords = tally(usage)
        self.covered = {name: is_covered(name) for name in self.names}
        self.kw_covered = {key: accepts_keyword(*key) for key in self.keywords}
        self.total = sum(occ for _, occ in self.names.values())
        self.total_covered = sum(occ for name, (_, occ) in self.names.items() if self.covered[name])
        self.left_out = sorted(name for name in self.names if not self.covered[name] and left_out_reason(name))
        self.missing = sorted((name for name in self.names if not self.covered[name] and not left_out_reason(name)),
                              key=lambda n: (-self.names[n][0], -self.names[n][1], n))
        self.counted = self.total - sum(self.names[name][1] for name in self.left_out)
        self.kw_total = sum(occ for _, occ in self.keywords.values())
        self.kw_total_covered = sum(occ for key, (_, occ) in self.keywords.items() if self.kw_covered[key])
        self.kw_two = [key for key, (repos, _) in self.keywords.items() if repos >= 2]
        self.kw_missing2 = sorted(key for key in self.kw_two if not self.kw_covered[key])

    def used_by(self, min_repos):
        """The names used by min_repos or more repositories, and those of them tinyattn lacks."""
        chosen = [name for name, (repos, _) in self.names.items() if repos >= min_repos]
        return chosen, sorted(name for name in chosen if not self.covered[name])

    def summary(self):
        three, missing3 = self.used_by(3)
        two, missing2 = self.used_by(2)
        return [
            f"repositories: {self.repositories}",
            f"distinct names: {len(self.names)}; occurrences: {self.total}",
            f"occurrences covered: {self.total_covered} of {self.total} ({percent(self.total_covered, self.total)}); "
            f"of those not left out on purpose: {percent(self.total_covered, self.counted)}",
            f"names used by 3 or more repositories: {len(three) - len(missing3)} of {len(three)} covered",
            f"names used by 2 or more repositories: {len(two) - len(missing2)} of {len(two)} covered",
            f"keyword occurrences accepted: {self.kw_total_covered} of {self.kw_total} "
            f"({percent(self.kw_total_covered, self.kw_total)})",
            f"keywords used by 2 or more repositories: {len(self.kw_two) - len(self.kw_missing2)} of "
            f"{len(self.kw_two)} accepted",
        ]

    def keyword_status(self, key):
        if not self.covered.get(key[0], False):
            return status_of(key[0], False).replace("not covered", "name not covered")
        if not self.kw_covered[key] and key in KEYWORDS_LEFT_OUT:
            return f"left out: {KEYWORDS_LEFT_OUT[key]}"
        return "accepted" if self.kw_covered[key] else "**not accepted**"


def load_usages():
    return {corpus.key: json.loads(corpus.usage_file.read_text(encoding="utf-8")) for corpus in CORPORA}


def uses(repos, occurrences):
    return f"{repos} ({occurrences} {'use' if occurrences == 1 else 'uses'})"


def glance_table(all_figures):
    """The first table a reader sees: one column per corpus."""
    def row(label, cells):
        return f"| {label} | " + " | ".join(cells) + " |"

    def fraction(covered, of):
        return f"{covered} of {of}"

    lines = [row("", [f.corpus.title for f in all_figures]), "|---|" + "---:|" * len(all_figures)]
    lines.append(row("repositories read", [str(f.repositories) for f in all_figures]))
    lines.append(row("uses of PyTorch names that run", [
        f"**{percent(f.total_covered, f.total)}** ({fraction(f.total_covered, f.total)})" for f in all_figures]))
    lines.append(row("... not counting names left out on purpose",
                     [percent(f.total_covered, f.counted) for f in all_figures]))
    for min_repos in (2, 3):
        cells = []
        for f in all_figures:
            chosen, missing = f.used_by(min_repos)
            cells.append(fraction(len(chosen) - len(missing), len(chosen)))
        lines.append(row(f"names used by {min_repos} or more repositories that tinyattn has", cells))
    lines.append(row("distinct names used", [str(len(f.names)) for f in all_figures]))
    lines.append(row("keyword arguments accepted", [
        f"{percent(f.kw_total_covered, f.kw_total)} ({fraction(f.kw_total_covered, f.kw_total)})"
        for f in all_figures]))
    lines.append(row("keywords used by 2 or more repositories that tinyattn accepts", [
        fraction(len(f.kw_two) - len(f.kw_missing2), len(f.kw_two)) for f in all_figures]))
    return lines


def missing_section(all_figures):
    """What tinyattn lacks, in every corpus, most used first; then what it leaves out on purpose, by reason."""
    titles = [f.corpus.title for f in all_figures]
    lines = ["## What is missing, and why", "", "### Not in tinyattn yet", ""]
    missing = sorted({name for f in all_figures for name in f.missing},
                     key=lambda n: (-sum(f.names.get(n, (0, 0))[0] for f in all_figures),
                                    -sum(f.names.get(n, (0, 0))[1] for f in all_figures), n))
    if missing:
        lines += ["A program that reaches for one of these names stops with an `AttributeError` that says",
                  "`tinyattn does not implement torch.X (yet)`. Each column gives the repositories that use",
                  "the name and, in brackets, its uses.", "",
                  "| name | " + " | ".join(titles) + " |", "|---|" + "---:|" * len(titles)]
        for name in missing:
            cells = [uses(*f.names[name]) if name in f.names else "-" for f in all_figures]
            lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    else:
        lines.append("Every name the corpora use is in tinyattn, or left out on purpose (below).")
    kw_missing = sorted({key for f in all_figures for key in f.keywords
                         if f.covered[key[0]] and not f.kw_covered[key] and key not in KEYWORDS_LEFT_OUT},
                        key=lambda k: (-sum(f.keywords.get(k, (0, 0))[0] for f in all_figures), k))
    lines += ["", "Keyword arguments of names tinyattn has that its signature does not accept: "
              + (", ".join(f"`{name}({keyword}=)`" for name, keyword in kw_missing) if kw_missing else "none")
              + ".", ""]
    lines += ["### Left out on purpose", "",
              "These names belong to parts of PyTorch that tinyattn does not set out to have.", "",
              "| why | names |", "|---|---|"]
    by_reason = {}
    for f in all_figures:
        for name in f.left_out:
            by_reason.setdefault(left_out_reason(name), set()).add(name)
        for key in f.keywords:
            if key in KEYWORDS_LEFT_OUT and not f.kw_covered[key]:
                by_reason.setdefault(KEYWORDS_LEFT_OUT[key], set()).add(f"{key[0]}({key[1]}=)")
    for reason in sorted(by_reason):
        lines.append(f"| {reason} | " + ", ".join(f"`{name}`" for name in sorted(by_reason[reason])) + " |")
    return lines + [""]


def repository_list(f):
    lines = []
    for entry in f.listing["repositories"]:
        repo, commit = entry["repo"], entry["commit"]
        folders = ", ".join(f"`{folder}`" for folder in entry["folders"]) if entry["folders"] != [""] else "all"
        lines.append(f"- [{repo}](https://github.com/{repo}) at commit "
                     f"[`{commit[:10]}`](https://github.com/{repo}/tree/{commit}): {entry['why']}. "
                     f"Read: {folders}.")
    return lines


def corpus_section(f):
    title = f.corpus.title
    lines = [f"## {title}", "", f"{title}: {f.corpus.about}.", "", f"### {title}: the repositories", ""]
    lines += repository_list(f)
    lines += ["", f"### {title}: names", "",
              "| name | repositories | uses | status |", "|---|---:|---:|---|"]
    for name in sorted(f.names, key=lambda n: (-f.names[n][0], -f.names[n][1], n)):
        repos, occ = f.names[name]
        lines.append(f"| `{name}` | {repos} | {occ} | {status_of(name, f.covered[name])} |")
    lines += ["", f"### {title}: keyword arguments", "",
              "| call | keyword | repositories | uses | status |", "|---|---|---:|---:|---|"]
    for key in sorted(f.keywords, key=lambda k: (-f.keywords[k][0], -f.keywords[k][1], k)):
        repos, occ = f.keywords[key]
        lines.append(f"| `{key[0]}` | `{key[1]}` | {repos} | {occ} | {f.keyword_status(key)} |")
    return lines + [""]


def build_report(usages=None):
    """The page (text) and the summary figures of every corpus (lines to print)."""
    usages = usages or load_usages()
    all_figures = [Figures(corpus, usages[corpus.key]) for corpus in CORPORA]
    lines = [
        "# PyTorch coverage",
        "",
        "How much of the PyTorch that real teaching programs use runs on tinyattn. Two bodies of public",
        "teaching code were read and every PyTorch name they use was counted: "
        + " and ".join(f"*{f.corpus.title}* ({f.corpus.about})" for f in all_figures) + ".",
        "A name *runs* when tinyattn has it under the same name (`torch.nn.Linear` as `tinyattn.nn.Linear`,",
        "a tensor's `x.view(...)` as `tinyattn.Tensor.view`); a keyword argument when the signature takes it.",
        "To run a PyTorch program on tinyattn, see",
        "[Run PyTorch code with the import swapped](how-to/pytorch-coverage.md).",
        "",
        "## At a glance",
        "",
    ]
    lines += glance_table(all_figures) + [""]
    lines += missing_section(all_figures)
    for f in all_figures:
        lines += corpus_section(f)
    lines += [
        "## About this page",
        "",
        "This page is generated by `python tools/coverage_report.py`; do not edit it by hand. Run that",
        "command after a change to tinyattn's names (`tests/test_coverage_report.py` fails while the page is",
        "out of date). The corpora are listed, each repository at a fixed commit, in "
        + " and ".join(f"`{f.corpus.list_file.relative_to(ROOT).as_posix()}`" for f in all_figures) + ";",
        "`tools/scan_pytorch_names.py` read their `.py` files and notebooks' code cells and counted every",
        "PyTorch name, the keywords passed to each, and the `Tensor` and `nn.Module` methods called. Only",
        "names and counts are kept, in "
        + " and ".join(f"`{f.corpus.usage_file.relative_to(ROOT).as_posix()}`" for f in all_figures) + ";",
        "`python tools/coverage_report.py scan --corpus DIR` reads them again from clones in `DIR`.",
        "The scanner does not know a receiver's type: `a.sum()` counts as a tensor's method whether `a` is",
        "a tensor or a NumPy array, and `optimizer.zero_grad()` counts as `Module.zero_grad`.",
    ]
    summary = []
    for f in all_figures:
        summary += [f"{f.corpus.title}:"] + [f"  {line}" for line in f.summary()]
    return "\n".join(lines) + "\n", summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", choices=["report", "scan"], default="report")
    parser.add_argument("--corpus", help="folder holding <owner>__<name>/ clones (scan mode)")
    parser.add_argument("--which", choices=["all"] + [corpus.key for corpus in CORPORA], default="all",
                        help="the corpus to scan (scan mode; default: all)")
    parser.add_argument("--output", default=str(REPORT_FILE), help="where to write the report")
    parser.add_argument("--missing", type=int, default=0, metavar="N",
                        help="also print the N names not covered (nor left out) used by the most repositories")
    args = parser.parse_args(argv)
    if args.mode == "scan":
        if not args.corpus:
            parser.error("scan needs --corpus DIR")
        for corpus in CORPORA:
            if args.which in ("all", corpus.key):
                scan(args.corpus, corpus)
    report, summary = build_report()
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report, encoding="utf-8")
    print("\n".join(summary))
    print(f"-> {output}")
    if args.missing:
        for corpus, usage in zip(CORPORA, load_usages().values()):
            names, _ = tally(usage)
            missing = [name for name in names if not is_covered(name) and not left_out_reason(name)]
            missing.sort(key=lambda n: (-names[n][0], -names[n][1], n))
            print(f"\n{corpus.title}: not covered, by repositories (occurrences):")
            for name in missing[:args.missing]:
                print(f"  {name}  {names[name][0]} ({names[name][1]})")


if __name__ == "__main__":
    main()
