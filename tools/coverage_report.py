"""How much of the PyTorch that teaching code uses tinyattn covers: writes docs/coverage.md.

    python tools/coverage_report.py                      # report: from tools/corpus_usage.json
    python tools/coverage_report.py scan --corpus DIR    # first re-scan the corpus into corpus_usage.json
    python tools/coverage_report.py --missing 40         # and list the 40 missing names most used

The corpus is the list of repositories in tools/corpus.json (each at a fixed commit, some folders only).
`scan` reads them from DIR/<owner>__<name>/ (a clone checked out at that commit; only .py and .ipynb
files are read) with tools/scan_pytorch_names.py and writes the names and counts it found, per
repository, to tools/corpus_usage.json; no code is kept. `report` (the default) needs only that file:
it looks every name up in tinyattn (`torch.nn.X` -> `tinyattn.nn.X`, `Tensor.x` -> `tinyattn.Tensor.x`),
checks every keyword against the signature, writes docs/coverage.md and prints the summary figures.
"""

import argparse
import inspect
import json
import pathlib
import sys
from collections import Counter

TOOLS = pathlib.Path(__file__).resolve().parent
ROOT = TOOLS.parent
CORPUS_LIST = TOOLS / "corpus.json"
USAGE_FILE = TOOLS / "corpus_usage.json"
REPORT_FILE = ROOT / "docs" / "coverage.md"

# the names tinyattn leaves out on purpose, and the lookup of a name in tinyattn, are the library's own
# (`tinyattn coverage NAME` uses them too): tinyattn/missing.py
from tinyattn.missing import LEFT_OUT, NEEDS_EXTRA, left_out_reason, tinyattn_object  # noqa: E402,F401


# -- scan -------------------------------------------------------------------------------------------

def scan(corpus_dir):
    sys.path.insert(0, str(TOOLS))
    import scan_pytorch_names

    corpus = json.loads(CORPUS_LIST.read_text(encoding="utf-8"))
    torch_names = scan_pytorch_names.load_torch_names()
    per_repo = {}
    for entry in corpus["repositories"]:
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
    USAGE_FILE.write_text(json.dumps({"repositories": per_repo}, indent=1, sort_keys=True) + "\n",
                          encoding="utf-8")
    print(f"{len(per_repo)} repositories scanned -> {USAGE_FILE.relative_to(ROOT)}")


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


def build_report(usage):
    names, keywords = tally(usage)
    covered = {name: is_covered(name) for name in names}
    kw_covered = {key: accepts_keyword(*key) for key in keywords}
    total = sum(occ for _, occ in names.values())
    total_covered = sum(occ for name, (_, occ) in names.items() if covered[name])
    left_out = {name for name in names if not covered[name] and left_out_reason(name)}
    counted = total - sum(names[name][1] for name in left_out)

    def group(min_repos):
        chosen = [name for name, (repos, _) in names.items() if repos >= min_repos]
        missing = sorted(name for name in chosen if not covered[name])
        return chosen, missing

    three, missing3 = group(3)
    two, missing2 = group(2)
    kw_two = [key for key, (repos, _) in keywords.items() if repos >= 2]
    kw_missing2 = sorted(key for key in kw_two if not kw_covered[key])
    kw_total = sum(occ for _, occ in keywords.values())
    kw_total_covered = sum(occ for key, (_, occ) in keywords.items() if kw_covered[key])

    summary = [
        f"repositories: {len(usage['repositories'])}",
        f"distinct names: {len(names)}; occurrences: {total}",
        f"occurrences covered: {total_covered} of {total} ({percent(total_covered, total)}); "
        f"of those not left out on purpose: {percent(total_covered, counted)}",
        f"names used by 3 or more repositories: {len(three) - len(missing3)} of {len(three)} covered",
        f"names used by 2 or more repositories: {len(two) - len(missing2)} of {len(two)} covered",
        f"keyword occurrences accepted: {kw_total_covered} of {kw_total} ({percent(kw_total_covered, kw_total)})",
        f"keywords used by 2 or more repositories: {len(kw_two) - len(kw_missing2)} of {len(kw_two)} accepted",
    ]

    corpus = json.loads(CORPUS_LIST.read_text(encoding="utf-8"))
    lines = [
        "# PyTorch coverage on a corpus of teaching code",
        "",
        "Generated by `python tools/coverage_report.py` from `tools/corpus_usage.json`; do not edit by hand.",
        "The corpus (`tools/corpus.json`) is PyTorch teaching code about language models, attention and",
        "transformers; `tools/scan_pytorch_names.py` counted every PyTorch name it uses, the keywords passed",
        "to each, and the `Tensor` and `nn.Module` methods it calls. A name is *covered* when tinyattn has it",
        "(`torch.nn.X` as `tinyattn.nn.X`, `Tensor.x` as `tinyattn.Tensor.x`), a keyword when the signature",
        "takes it. How to run PyTorch code on tinyattn: [how-to/pytorch-coverage.md](how-to/pytorch-coverage.md).",
        "",
        "## Summary",
        "",
    ]
    lines += [f"- {line}" for line in summary]
    lines += ["", "Names used by 2 or more repositories that tinyattn lacks: "
              + (", ".join(f"`{name}`" for name in missing2) if missing2 else "none") + ".", ""]
    lines += ["Keywords used by 2 or more repositories that tinyattn does not accept: "
              + (", ".join(f"`{name}({keyword}=)`" for name, keyword in kw_missing2) if kw_missing2 else "none")
              + ".", ""]
    lines += ["## Repositories", "", "| repository | commit | folders |", "|---|---|---|"]
    for entry in corpus["repositories"]:
        folders = ", ".join(f"`{f}`" for f in entry["folders"]) if entry["folders"] != [""] else "all"
        lines.append(f"| [{entry['repo']}](https://github.com/{entry['repo']}) | `{entry['commit'][:10]}` | "
                     f"{folders} |")
    lines += ["", "## Names", "", "| name | repositories | occurrences | status |", "|---|---:|---:|---|"]
    order = sorted(names, key=lambda n: (-names[n][0], -names[n][1], n))
    for name in order:
        repos, occ = names[name]
        lines.append(f"| `{name}` | {repos} | {occ} | {status_of(name, covered[name])} |")
    lines += ["", "## Keyword arguments", "", "| call | keyword | repositories | occurrences | status |",
              "|---|---|---:|---:|---|"]
    for key in sorted(keywords, key=lambda k: (-keywords[k][0], -keywords[k][1], k)):
        repos, occ = keywords[key]
        status = "accepted" if kw_covered[key] else status_of(key[0], False).replace("not covered", "not accepted")
        if not covered.get(key[0], True) or not is_covered(key[0]):
            status = status_of(key[0], False).replace("not covered", "name not covered")
        lines.append(f"| `{key[0]}` | `{key[1]}` | {repos} | {occ} | {status} |")
    return "\n".join(lines) + "\n", summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", choices=["report", "scan"], default="report")
    parser.add_argument("--corpus", help="folder holding <owner>__<name>/ clones (scan mode)")
    parser.add_argument("--output", default=str(REPORT_FILE), help="where to write the report")
    parser.add_argument("--missing", type=int, default=0, metavar="N",
                        help="also print the N names not covered (nor left out) used by the most repositories")
    args = parser.parse_args(argv)
    if args.mode == "scan":
        if not args.corpus:
            parser.error("scan needs --corpus DIR")
        scan(args.corpus)
    usage = json.loads(USAGE_FILE.read_text(encoding="utf-8"))
    report, summary = build_report(usage)
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report, encoding="utf-8")
    print("\n".join(summary))
    print(f"-> {output}")
    if args.missing:
        names, _ = tally(usage)
        missing = [name for name in names if not is_covered(name) and not left_out_reason(name)]
        missing.sort(key=lambda n: (-names[n][0], -names[n][1], n))
        print(f"\nnot covered, by repositories (occurrences):")
        for name in missing[:args.missing]:
            print(f"  {name}  {names[name][0]} ({names[name][1]})")


if __name__ == "__main__":
    main()
