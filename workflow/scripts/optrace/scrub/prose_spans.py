"""Code: where prose lives (comments and string literals), per language family."""

from __future__ import annotations

import re

# Comment and string-literal syntax per language family. Python-hosted DSLs: `#` comments and
# (triple-)quoted strings, `//` is floor division. CUDA C++: `//` and `/* */`. Unknown: both.
_STRINGS = r'"""[\s\S]*?(?:"""|$)|\'\'\'[\s\S]*?(?:\'\'\'|$)|"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?'
_C_STRINGS = r'"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?'
PROSE_IN_CODE = {
    "python": re.compile(rf"#[^\n]*|{_STRINGS}"),
    "c": re.compile(rf"//[^\n]*|/\*[\s\S]*?(?:\*/|$)|{_C_STRINGS}"),
    "any": re.compile(rf"#[^\n]*|//[^\n]*|/\*[\s\S]*?(?:\*/|$)|{_STRINGS}"),
}
PYTHON_DSLS = ("triton", "gluon", "cutedsl", "flydsl", "aiter", "helion")


def code_language(dsl: object) -> str:
    if dsl == "cuda":
        return "c"
    return "python" if dsl in PYTHON_DSLS else "any"


def prose_spans(code: str, language: str) -> list[tuple[int, int]]:
    """(start, end) of every comment and string literal in `code`."""
    return [m.span() for m in PROSE_IN_CODE[language].finditer(code)]


# Code: Python-hosted DSLs read `#` comments and strings (`//` is floor division). CUDA is C++
# (`//`, `/* */`, strings) unless the source shows it is Python passing CUDA to load_inline; a trace's
# kernel.py usually is, and a diff hunk may show neither its imports nor its quotes, so CUDA that
# shows no Python also has its `#` lines read.
_PYTHON_HOST = re.compile(
    r"\bload_inline\b|\bcpp_extension\b|\"{3}|'{3}"
    r"|^[ +-]?[ \t]*(?:import [\w.]+|from [\w.]+ import\b|def \w+\(|@\w)",
    re.M,
)


def shown_language(source: str) -> str:
    return "python" if _PYTHON_HOST.search(source) else "any"


def source_language(source: str, dsl: str) -> str:
    """Which `PROSE_IN_CODE` syntax holds the prose of `source`, a kernel of `dsl` (or a diff of one)."""
    if dsl == "cuda":
        return shown_language(source)
    if dsl in PYTHON_DSLS or dsl == "any":
        return "python"
    raise ValueError(f"unknown dsl {dsl!r}")
