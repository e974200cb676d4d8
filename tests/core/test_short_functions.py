"""The run and the jobs read in short functions: none over 60 lines (issue #63), each doing one thing."""

from __future__ import annotations

import ast
from pathlib import Path

import style_studio

#: The most lines a function may have, from its ``def`` to its last line.
LONGEST = 60
PACKAGES = ("core/run", "core/jobs")


def functions(folder: Path) -> list[tuple[str, int]]:
    """Every function and method under ``folder`` as (file:line name, its length in lines)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                where = f"{path.relative_to(folder.parent.parent)}:{node.lineno} {node.name}"
                found.append((where, node.end_lineno - node.lineno + 1))
    return found


def test_no_function_in_the_run_or_the_jobs_is_over_60_lines():
    root = Path(style_studio.__file__).parent
    long = [f"{where} ({length} lines)" for package in PACKAGES for where, length in functions(root / package)
            if length > LONGEST]  # fmt: skip
    assert not long, "split by what the code does: " + "; ".join(long)


def test_the_count_runs_from_def_to_the_last_line(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    body = "\n".join(f"    x{n} = {n}" for n in range(LONGEST))
    (tmp_path / "pkg" / "sub" / "a.py").write_text(f"@decorated\ndef long():\n{body}\n\n\ndef short():\n    pass\n")
    assert dict(functions(tmp_path / "pkg" / "sub")) == {
        "pkg/sub/a.py:2 long": LONGEST + 1,
        f"pkg/sub/a.py:{LONGEST + 5} short": 2,
    }
