"""Grades from the checker's results, for a program to read: tinyattn's JSON, and Gradescope's
results.json.

The score of an exercise is never higher than what was checked:

- a pass with its random cases run: its points (1 unless the exercise says otherwise);
- a pass on the fixed cases alone (`--examples 0`, or Hypothesis not installed): half its points;
- anything else (FAIL, not done yet, a file that does not load or is missing): 0.
"""

from . import checker, report

SCHEMA = "tinyattn-exercises-results"
VERSION = 1


def score(result):
    """(score, max score) of one exercise's Result."""
    points = float(result.exercise.points)
    if not result.passed:
        return 0.0, points
    return (points if result.random_cases else points / 2), points


def output(result):
    """The report of one exercise as the text the learner reads (the headline, then the details)."""
    lines = report.block(result)
    if result.passed and not result.random_cases:
        lines.append("  The random cases did not run: half marks (run with random cases for full marks).")
    return "\n".join(lines)


def to_json(results, folder, course=None, examples=checker.EXAMPLES, seed=checker.SEARCH_SEED):
    """The results as tinyattn's JSON (see docs/reference/exercises.md for the schema)."""
    entries = []
    for result in results:
        exercise = result.exercise
        got, most = score(result)
        found = result.finding if not result.passed and result.status != "not done yet" else None
        entries.append({
            "number": exercise.number,
            "name": exercise.name,
            "track": exercise.track,
            "file": exercise.file_name,
            "status": result.status,
            "passed": result.passed,
            "score": got,
            "max_score": most,
            "phase": None if result.passed or result.status in ("not done yet", "missing", "error") else result.phase,
            "finding": None if found is None else {"id": found.id, "title": found.title, "note": found.note,
                                                   "explanation": found.explanation},
            "evidence": list(result.lines),
            "case": None if (result.case is None and result.case_text is None) or result.passed
            else report.case_text(result),
            "checked": result.checked,
            "random_cases": result.random_cases,
            "seed": result.seed,
        })
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "folder": str(folder),
        "course": None if course is None else str(course),
        "examples": examples,
        "seed": seed,
        "hypothesis": checker.hypothesis_installed(),
        "passed": sum(result.passed for result in results),
        "total": len(results),
        "score": sum(score(result)[0] for result in results),
        "max_score": sum(score(result)[1] for result in results),
        "exercises": entries,
    }


def to_gradescope(results, execution_time=None):
    """The results as Gradescope's results.json: one test per exercise, with its score, max_score,
    status ("passed" for full marks only), name, number and output (the learner's report)."""
    tests = []
    for result in results:
        got, most = score(result)
        exercise = result.exercise
        tests.append({
            "name": f"{exercise.number:02d} {exercise.name}: {exercise.title}",
            "number": str(exercise.number),
            "score": got,
            "max_score": most,
            "status": "passed" if got == most else "failed",
            "output": output(result),
            "tags": [exercise.track],
        })
    graded = {
        "score": sum(test["score"] for test in tests),
        "output": report.summary(results),
        "tests": tests,
    }
    if execution_time is not None:
        graded["execution_time"] = int(round(execution_time))
    return graded
