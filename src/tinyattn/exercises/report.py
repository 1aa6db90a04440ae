"""The checker's reports as text that fits an 80-column terminal: a table, and a block per failure."""

import textwrap

WIDTH = 80
_NAME, _STATUS = 20, 12
_FINDING = WIDTH - (2 + 2 + _NAME + 2 + _STATUS + 2)


def table_header():
    return [f"{'#':>2}  {'exercise':<{_NAME}}  {'result':<{_STATUS}}  finding",
            f"{'--':>2}  {'-' * _NAME}  {'-' * _STATUS}  {'-' * _FINDING}"]


def table_row(result):
    exercise = result.exercise
    title = "" if result.finding is None or result.status == "not done yet" else result.finding.title
    if len(title) > _FINDING:
        title = title[: _FINDING - 3] + "..."
    return f"{exercise.number:>2}  {exercise.name:<{_NAME}}  {result.status:<{_STATUS}}  {title}".rstrip()


def headline(result):
    exercise = result.exercise
    name = f"{exercise.number:02d} {exercise.name}"
    if result.passed:
        return f"{name}: pass ({result.checked})" if result.checked else f"{name}: pass"
    if result.status == "not done yet" or result.finding is None:
        return f"{name}: {result.status}"
    return f"{name}: {result.status} - {result.finding.title}"


def details(result):
    """The lines under the headline: where it failed, why, and the evidence."""
    if result.passed or result.status == "not done yet":
        return []
    exercise, paragraphs = result.exercise, []
    if result.phase == "random case":
        special = exercise.edge(result.case) if exercise.edge else ""
        found = f" ({special})" if special else ""
        paragraphs.append(f"The example passes, but this case fails{found}, the smallest Hypothesis found: "
                          f"{case_text(result)}")
    elif result.phase == "edge case":
        special = exercise.edge(result.case) if exercise.edge else ""
        found = f" ({special})" if special else ""
        paragraphs.append(f"The example passes, but this fixed case fails{found}: "
                          f"{case_text(result)}")
    elif result.phase == "example" and (result.case is not None or result.case_text) \
            and hasattr(exercise, "describe"):
        # a task's example is not in the learner's file: say what it is
        paragraphs.append(f"On the example: {case_text(result)}")
    elif result.phase == "large inputs":
        paragraphs.append(f"The example passes, but large inputs ({exercise.large_case_text}) fail, in float64.")
    if result.finding.explanation:
        paragraphs.append(result.finding.explanation)
    lines = []
    for paragraph in paragraphs:
        lines += textwrap.wrap(paragraph, WIDTH - 2, initial_indent="  ", subsequent_indent="  ",
                               break_on_hyphens=False)
    for line in result.lines:
        indent = "  " + " " * (len(line) - len(line.lstrip(" ")))
        lines += textwrap.wrap(line.strip(), WIDTH - 2, initial_indent=indent, subsequent_indent=indent + "  ",
                               break_on_hyphens=False)
    return lines


def case_text(result):
    """The case a result failed on, as text."""
    return result.case_text if result.case_text is not None else result.exercise.describe_case(result.case)


def block(result):
    """A result in full: its headline and details (what the notebook prints for one check)."""
    return [headline(result)] + details(result)


def summary(results):
    counts = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    parts = [f"{counts.pop('pass', 0)} of {len(results)} pass"]
    parts += [f"{count} {'fail' if status == 'FAIL' else status}" for status, count in counts.items()]
    return ", ".join(parts)
