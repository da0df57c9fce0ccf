#!/usr/bin/env python3
"""Summarises llvm-cov output for scripts/coverage.sh (see FUZZING.md, "Coverage").

Reads `llvm-cov export -summary-only` JSON (all targets together and each target alone) and the
`llvm-cov show -show-line-counts` text of ProfileDropCore, and prints:
  - line and region coverage per module, with one column per target;
  - line and region coverage per file of each module;
  - Core's line coverage over the lines peer input can reach (the exclusions file lists the rest);
  - whether each ExchangeState handler and each frame type's receive path runs.
"""

import argparse
import json
import re
import sys
from pathlib import Path

# Report modules, in order, and how to recognise their files.
MODULES = [
    ("Core", ("/Sources/ProfileDropCore/",)),
    ("Noise", ("/Sources/ProfileDropNoise/",)),
    ("Crypto", ("/Sources/ProfileDropCrypto/",)),
    ("JSON", ("/Sources/ProfileDropJSON/",)),
    ("CardFile", ("/Sources/ProfileDropCardFile/",)),
    ("Capture", ("/Sources/ProfileDropCapture/",)),
    ("Simulator", ("/Sources/ProfileDropSimulator/",)),
    ("CLI", ("/Sources/ProfileDropCLI/",)),
]

# The ExchangeState handlers: every function of the live states and of the session that
# dispatches to them.
STATE_FILES = [
    "Session/HandshakingState.swift",
    "Session/RangingState.swift",
    "Session/ConsentingState.swift",
    "Session/TransferringState.swift",
    "Session/ClosingState.swift",
    "Session/ExchangeSession.swift",
    "Session/ExchangeSession+Cancel.swift",
]
# Where an authenticated frame is received: the cases of Link.absorb.
FRAME_FILE = "Session/Link.swift"
FRAME_FUNCTION = "func absorb("


def module_of(filename):
    for name, markers in MODULES:
        if any(marker in filename for marker in markers):
            return name
    return None


def load_files(path):
    with open(path) as handle:
        return json.load(handle)["data"][0]["files"]


def totals(files):
    """Per module: [lines covered, lines, regions covered, regions] and per file."""
    modules, per_file = {}, {}
    for entry in files:
        module = module_of(entry["filename"])
        if module is None:
            continue
        summary = entry["summary"]
        figures = [
            summary["lines"]["covered"],
            summary["lines"]["count"],
            summary["regions"]["covered"],
            summary["regions"]["count"],
        ]
        short = short_name(entry["filename"])
        if short in per_file:  # the same file seen through two paths: keep the better
            figures = max(figures, per_file[short][1])
        per_file[short] = (module, figures)
    for module, figures in per_file.values():
        sums = modules.setdefault(module, [0, 0, 0, 0])
        for index, value in enumerate(figures):
            sums[index] += value
    return modules, per_file


def short_name(filename):
    if "/Sources/" in filename:
        return filename.split("/Sources/", 1)[1]
    return filename


def percent(covered, count):
    return "   -  " if count == 0 else f"{100.0 * covered / count:5.1f}%"


def parse_show(path):
    """{short file name: {line number: count or None}} from `llvm-cov show` text."""
    files, current = {}, None
    line_pattern = re.compile(r"^\s*(\d+)\|\s*([0-9.]+[kMGE]?)?\|(.*)$")
    for raw in open(path, errors="replace"):
        raw = raw.rstrip("\n")
        if raw.endswith(".swift:") and not raw.startswith(" "):
            current = files.setdefault(short_name(raw[:-1]), {})
            continue
        match = line_pattern.match(raw)
        if current is None or not match:
            continue
        number, count, text = int(match.group(1)), match.group(2), match.group(3)
        value = None
        if count:
            value = 0 if count == "0" else 1
        previous = current.get(number)
        if previous is None or (value is not None and value > (previous[0] or 0)):
            current[number] = (value, text)
    return files


def read_exclusions(path, root):
    """{short file name: set of excluded line numbers} from the exclusions file, whose lines are
    `file FILE  reason`, `function FILE NAME  reason` (every `func NAME(` or `var NAME` of the
    file, to its closing brace) or `pattern TEXT  reason` (every Core line containing TEXT); FILE as
    `ProfileDropCore/Dir/File.swift`."""
    excluded = {}
    if not Path(path).exists():
        return excluded
    sources = {}

    def source(name):
        if name not in sources:
            sources[name] = (Path(root) / "Sources" / name).read_text().splitlines()
        return sources[name]

    for raw in open(path):
        raw = raw.rstrip("\n")
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        kind, _, rest = raw.partition(" ")
        if kind == "file":
            name = rest.split()[0]
            excluded.setdefault(name, set()).update(range(1, len(source(name)) + 1))
        elif kind == "function":
            name, function = rest.split()[:2]
            lines = source(name)
            for index, text in enumerate(lines, start=1):
                if re.search(r"\b(func " + re.escape(function) + r"\(|var " + re.escape(function) + r"\b)", text):
                    indent = len(text) - len(text.lstrip())
                    end = next(
                        (i for i in range(index, len(lines) + 1) if lines[i - 1] == " " * indent + "}"),
                        index,
                    )
                    excluded.setdefault(name, set()).update(range(index, end + 1))
        elif kind == "pattern":
            text = rest.split("  ")[0].strip()
            for path in sorted((Path(root) / "Sources/ProfileDropCore").rglob("*.swift")):
                name = str(path.relative_to(Path(root) / "Sources"))
                for index, line in enumerate(source(name), start=1):
                    if text in line:
                        excluded.setdefault(name, set()).add(index)
        else:
            raise SystemExit(f"coverage: unknown exclusion {raw!r}")
    return excluded


def reachable_core(show, exclusions):
    covered = count = excluded = 0
    misses = {}
    for name, lines in show.items():
        if not name.startswith("ProfileDropCore/"):
            continue
        skip = exclusions.get(name, set())
        for number, (value, _) in lines.items():
            if value is None:
                continue
            if number in skip:
                excluded += 1
                continue
            count += 1
            covered += value
            if value == 0:
                misses.setdefault(name, []).append((number, lines[number][1]))
    return covered, count, excluded, misses


def excluded_covered(show, exclusions):
    return sum(
        value
        for name, lines in show.items()
        for number, (value, _) in lines.items()
        if value and number in exclusions.get(name, set())
    )


def handler_reach(show, root):
    """[(file, function line, signature, reached)] for the state handlers."""
    rows = []
    for relative in STATE_FILES:
        name = "ProfileDropCore/" + relative
        lines = show.get(name, {})
        source = (Path(root) / "Sources" / name).read_text().splitlines()
        for index, text in enumerate(source, start=1):
            match = re.search(r"\bfunc (\w+)\(", text)
            if not match:
                continue
            # The count of the body's first executable line: a signature may span lines.
            value = None
            for number in range(index, min(index + 6, len(source)) + 1):
                entry = lines.get(number)
                if entry and entry[0] is not None:
                    value = entry[0]
                    break
            owner = enclosing_type(source, index)
            rows.append((relative.split("/")[-1], f"{owner}.{match.group(1)}", index, value))
    return rows


def enclosing_type(source, index):
    for text in reversed(source[: index - 1]):
        match = re.match(r"^(?:extension|(?:\w+ )*(?:struct|enum|class)) (\w+)", text)
        if match:
            return match.group(1)
    return "?"


def frame_reach(show, root):
    name = "ProfileDropCore/" + FRAME_FILE
    lines = show.get(name, {})
    source = (Path(root) / "Sources" / name).read_text().splitlines()
    start = next(i for i, text in enumerate(source, start=1) if FRAME_FUNCTION in text)
    rows = []
    for index in range(start, len(source) + 1):
        text = source[index - 1]
        if index > start and text == "    }":  # the function ended
            break
        match = re.match(r"^\s*case ((?:\.\w+(?:\([^)]*\))?,?\s*)+):", text)
        if not match:
            continue
        types = re.findall(r"\.(\w+)", match.group(1))
        value = None
        for number in (index, index + 1):
            entry = lines.get(number)
            if entry and entry[0] is not None:
                value = entry[0] if value is None else max(value, entry[0])
        rows.append((", ".join(types), index, value))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--exclusions", required=True)
    parser.add_argument("--all", required=True)
    parser.add_argument("--core", required=True, help="llvm-cov show text of ProfileDropCore")
    parser.add_argument("--unreached", help="write every unreached, counted Core line here")
    parser.add_argument("--target", action="append", default=[], help="NAME=export.json")
    arguments = parser.parse_args()

    all_modules, all_files = totals(load_files(arguments.all))
    per_target = []
    for item in arguments.target:
        name, _, path = item.partition("=")
        per_target.append((name, totals(load_files(path))[0]))

    print("Line coverage per module (all targets, then each target alone); regions in brackets")
    header = f"{'module':<10} {'lines':>13} {'all':>7} {'regions':>7}"
    for name, _ in per_target:
        header += f" {name:>7}"
    print(header)
    for module, _ in MODULES:
        if module not in all_modules:
            continue
        lc, ln, rc, rn = all_modules[module]
        row = f"{module:<10} {lc:>6}/{ln:<6} {percent(lc, ln)} {'(' + percent(rc, rn).strip() + ')':>9}"
        for _, modules in per_target:
            figures = modules.get(module, [0, 0, 0, 0])
            row += f" {percent(figures[0], figures[1])}"
        print(row)

    print()
    print("Per file (all targets): lines, regions")
    for module, _ in MODULES[:6]:
        print(f"{module}:")
        for short, (owner, figures) in sorted(all_files.items()):
            if owner == module:
                lc, ln, rc, rn = figures
                print(f"  {short:<58} {percent(lc, ln)} of {ln:>4}  {percent(rc, rn)} of {rn:>4}")

    show = parse_show(arguments.core)
    exclusions = read_exclusions(arguments.exclusions, arguments.root)
    covered, count, excluded, misses = reachable_core(show, exclusions)
    print()
    print(
        f"Core, lines peer input can reach: {covered}/{count} = {percent(covered, count).strip()}; "
        f"without exclusions {covered + excluded_covered(show, exclusions)}/{count + excluded} "
        f"({excluded} lines excluded by {Path(arguments.exclusions).name}; executable lines as "
        "llvm-cov show counts them)"
    )
    print("  files with the most unreached lines:")
    for name, missed in sorted(misses.items(), key=lambda item: -len(item[1]))[:12]:
        print(f"    {len(missed):>4}  {name}")
    if arguments.unreached:
        with open(arguments.unreached, "w") as out:
            for name, missed in sorted(misses.items()):
                for number, text in sorted(missed):
                    out.write(f"{name}:{number}: {text.strip()}\n")

    print()
    print("ExchangeState handlers (reached: the body runs for some input)")
    for file_name, function, line, value in handler_reach(show, arguments.root):
        state = "n/a" if value is None else ("yes" if value else "NO")
        print(f"  {state:<4} {function} ({file_name}:{line})")
    print()
    print("Frame receive paths (the cases of Link.absorb)")
    for types, line, value in frame_reach(show, arguments.root):
        state = "n/a" if value is None else ("yes" if value else "NO")
        print(f"  {state:<4} {types} (Link.swift:{line})")


if __name__ == "__main__":
    sys.exit(main())
