"""Gate `verbatim`: quoted code is the packet's code, whole lines, in order.

Every line of `implementation.snippet` and `dispatch_snippet` must be a whole line of the packet's
code file -- for a `.diff` including its `+`, `-` or space prefix -- and the lines must appear in the
file's order (a selection of lines, never a re-arrangement). Trailing whitespace is ignored (editors
strip it); blank lines carry no code and may separate the selected lines. A diff's snippet quotes the
step's change: at least one added (`+`) line when the diff adds any (else one removed `-` line), so
the lines the step deleted, or unchanged context alone, are never presented as what it implemented.
The format must name what was quoted: `unified-diff` for a `.diff`, `source` for a `.py`. The reference
accepted any line of 12+ characters that was a substring of the code, so fragments, lines without their
diff marker and short invented lines all passed.

A diff's snippet quotes the new side of each hunk it draws on as one run: a `+` or context line that carries
code, left out between two lines it quotes of the same hunk, makes the quoted code another one (a dropped
barrier); removed lines may be left out.

What the quoted code is (optrace.kernelcode reads it the drafter's way):
- a diff's snippet is mostly the step's own additions: of its changed lines that carry code (a `+` or
  `-` line with only white space, a brace or a comment carries none), at least half are `+` lines -- or, for a diff that
  removes more than it adds, at least the diff's own share -- so removed lines with one short `+` line,
  or context with a blank `+` line, are not what the step implemented;
- a source snippet is the whole kernel: the span of its core kernel function as one run of lines (each
  as often as the source has it), or the whole file when the file has no kernel function of the
  record's DSL;
- core_kernel_name is a kernel function of that source (a `@*.jit` / `@*.kernel` function or a CUDA
  `__global__`), never a helper such as `run`;
- dispatch_snippet is host code that launches it: no line of a kernel function (its signature
  included), and a line that launches the core kernel (`name[grid](`, `name<<<`, `name(...).launch(`);
- a reference kernel whose source has a kernel function of its DSL names it (core_kernel_name).
A diff is read on its new side (context and `+` lines) the same way: core_kernel_name is a kernel function
the diff shows, dispatch_snippet is host code of it that launches one, and when the step added code inside
a kernel function the snippet quotes at least one such line (a host `return` or launch line alone is not
the kernel change).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise

from optrace.gates.store.model import Gate, RecordView, obj
from optrace.gates.trace.model import PacketEvidence, needs_packet
from optrace.kernelcode import _CUDA_ENTRY, kernel_functions, launch_lines, own_kernels

CODE_FIELDS = ("snippet", "dispatch_snippet")
FORMAT_OF_SUFFIX = {".diff": "unified-diff", ".py": "source"}


def line_positions(code: str) -> dict[str, list[int]]:
    """Each distinct (right-stripped) line of the code -> the line numbers it occurs at, ascending."""
    positions: dict[str, list[int]] = {}
    for i, line in enumerate(code.splitlines()):
        positions.setdefault(line.rstrip(), []).append(i)
    return positions


def placed(snippet: str, code: str) -> Iterator[tuple[int, str, int | None, str]]:
    """(snippet line number, line, its code line number or None, why not) of each non-blank snippet line,
    each placed at its first occurrence after the line before it."""
    positions = line_positions(code)
    after = -1
    for n, line in enumerate(snippet.splitlines(), 1):
        line = line.rstrip()
        if not line:
            continue
        found = positions.get(line)
        if found is None:
            yield n, line, None, "is not a whole line of"
            continue
        i = bisect_right(found, after)
        if i == len(found):
            yield n, line, None, "is out of order with respect to"
            continue
        after = found[i]
        yield n, line, after, ""


def first_unquoted(snippet: str, code: str) -> tuple[int, str, str] | None:
    """(snippet line number, line, why) of the first line that breaks the rule, or None."""
    return next(((n, line, why) for n, line, at, why in placed(snippet, code) if at is None), None)


_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*)")
_CODE_CHAR = re.compile(r"\w")


def carries_code(text: str) -> bool:
    """A line with a word of code: not white space, a brace or bracket alone, nor a comment alone."""
    return bool(_CODE_CHAR.search(text)) and not _COMMENT.match(text)


def changed_lines(code: str, mark: str) -> list[str]:
    """The `+` (or `-`) lines that carry code: not a file header, not white space, punctuation or a
    comment alone (a `+}` or a `+ # note` implements nothing)."""
    return [
        line
        for line in code.splitlines()
        if line.startswith(mark) and not line.startswith(mark * 3) and carries_code(line[1:])
    ]


def diff_problem(snippet: str, code: str) -> str | None:
    """Why a diff snippet is not the step's change (see the module doc), or None."""
    added, removed = len(changed_lines(code, "+")), len(changed_lines(code, "-"))
    s_added, s_removed = len(changed_lines(snippet, "+")), len(changed_lines(snippet, "-"))
    if added and not s_added:
        return "quotes none of the lines this step added (a blank `+` line adds nothing)"
    if not added and removed and not s_removed:
        return "quotes none of the lines this step removed"
    share = min(0.5, added / (added + removed)) if added else 0.0
    if s_added < share * (s_added + s_removed):
        return f"is mostly removed lines ({s_added} added of {s_added + s_removed} changed): not what the step added"
    return None


def dropped_change(snippet: str, code: str) -> str | None:
    """New-side code of the diff (a context or `+` line) left out between two lines the snippet quotes
    from one hunk (a `__syncthreads()` dropped from the middle makes it other code), or None. Quoted
    lines are where `placed` puts them."""
    lines = code.splitlines()
    quoted = [at for _, _, at, _ in placed(snippet, code) if at is not None]
    for p, q in pairwise(quoted):
        gap = lines[p + 1 : q]
        if any(g.startswith("@@") for g in gap):
            continue  # the next hunk: a snippet may quote some hunks and not others
        # the new side (context and `+` lines) is the code the step ran; its removed lines may go
        left_out = next((g for g in gap if g[:1] in "+ " and g[:3] != "+++" and carries_code(g[1:])), None)
        if left_out is not None:
            return f"leaves out {left_out.strip()[:80]!r}, code between two lines it quotes of one hunk"
    return None


def _holds_run(lines: list[str], run: list[str]) -> bool:
    """Whether `run` stands in `lines` as consecutive lines (blank lines aside)."""
    n = len(run)
    return n == 0 or any(lines[i : i + n] == run for i in range(len(lines) - n + 1))


def source_problems(impl: dict, snippet: str, code: str, dsl: object) -> list[str]:
    """A reference kernel's source is the whole kernel; its core is a kernel function of it; its dispatch
    launches it from host code."""
    lines = code.splitlines()
    spans = kernel_functions(lines)
    mine = own_kernels(spans, str(dsl))
    name = impl.get("core_kernel_name")
    core = [s for s in mine if s.name == name] if isinstance(name, str) else mine[:1]
    out = []
    if isinstance(name, str) and not core:
        kinds = ", ".join(sorted({s.name for s in mine})) or "none"
        out.append(f"core_kernel_name: {name[:60]!r} is not a kernel function of the source (its kernels: {kinds})")
    if name is None and mine:
        out.append(f"core_kernel_name: missing, but the source's kernel is {mine[0].name!r}")
    quoted = [line.rstrip() for line in snippet.splitlines() if line.strip()]
    whole = [line.rstrip() for line in (lines[core[0].start : core[0].end] if core else lines) if line.strip()]
    # one run of lines, each as often as the source has it: a second `__syncthreads();` left out is a
    # line left out, though the first still stands in the snippet
    if not _holds_run(quoted, whole):
        what = f"the whole span of kernel {core[0].name}" if core else "the whole kernel file"
        missing = sum((Counter(whole) - Counter(quoted)).values())
        out.append(f"snippet: not {what} ({missing or 'some'} of its lines left out or apart)")
    dispatch = impl.get("dispatch_snippet")
    if isinstance(dispatch, str) and dispatch.strip():
        inside = {lines[j].rstrip() for s in spans for j in range(s.start, s.end) if lines[j].strip()}
        host = {line.rstrip() for line in dispatch.splitlines() if line.strip()}
        launches = {lines[j].rstrip() for c in core for j in launch_lines(lines, c.name)}
        if host & inside:
            out.append("dispatch_snippet: quotes a kernel function's body, not the host code that launches it")
        elif not host & launches:
            out.append("dispatch_snippet: has no line that launches the core kernel")
    return [f"payload.implementation.{m}" for m in out]


def kernel_lines_of_diff(code: str) -> tuple[set[int], set[str]]:
    """(diff line numbers inside a kernel function, kernel names) of a diff, read hunk by hunk on its new
    side (context and `+` lines): a kernel span never runs past its hunk, and a hunk that opens inside the
    kernel the previous hunk left open is that kernel's body up to its first top-level line (a `}` included)."""
    inside: set[int] = set()
    names: set[str] = set(_CUDA_ENTRY.findall(code))
    diff_lines, open_kernel = code.splitlines(), False
    starts = [i for i, line in enumerate(diff_lines) if line.startswith("@@")] + [len(diff_lines)]
    for a, b in pairwise(starts):
        hunk = [i for i in range(a + 1, b) if diff_lines[i][:1] in " +" and not diff_lines[i].startswith("+++")]
        text = [diff_lines[i][1:] for i in hunk]
        spans = kernel_functions(text)
        if open_kernel:
            first = spans[0].start if spans else len(text)
            top = next((j for j in range(first) if text[j].strip() and not text[j][0].isspace()), first)
            close = top + 1 if top < first and text[top].rstrip() == "}" else top
            inside.update(hunk[j] for j in range(close))
        for sp in spans:
            names.add(sp.name)
            inside.update(hunk[j] for j in range(sp.start, sp.end))
        open_kernel = bool(spans) and spans[-1].end == len(text) and text[-1].rstrip() != "}"
    return inside, names


def diff_code_problems(impl: dict, code: str) -> list[str]:
    """What a diff record's code fields claim about kernels, against the kernels the diff shows."""
    body, names = kernel_lines_of_diff(code)
    out = []
    name = impl.get("core_kernel_name")
    if isinstance(name, str) and name not in names:
        shown = ", ".join(sorted(names)) or "none"
        out.append(f"core_kernel_name: {name[:60]!r} is not a kernel function the diff shows (its kernels: {shown})")
    diff_lines = code.splitlines()
    kernel_added = {
        diff_lines[i].rstrip() for i in body if diff_lines[i].startswith("+") and carries_code(diff_lines[i][1:])
    }
    snippet = impl.get("snippet")
    if kernel_added and isinstance(snippet, str) and not kernel_added & {x.rstrip() for x in snippet.splitlines()}:
        out.append("snippet: quotes no line the step added inside a kernel function (host lines alone)")
    dispatch = impl.get("dispatch_snippet")
    if isinstance(dispatch, str) and dispatch.strip():
        host = {x.rstrip() for x in dispatch.splitlines() if x.strip()}
        if host & {diff_lines[i].rstrip() for i in body}:
            out.append("dispatch_snippet: quotes a kernel function's lines, not the host code that launches it")
        else:
            alt = "|".join(map(re.escape, names)) or "(?!)"
            launch = re.compile(
                rf"(?<![\w.])(?:{alt})\s*(?:\[[^\]]*\]\s*\(|<<<|\(.*\)\s*\.launch\s*\()|launch\w*\(\s*(?:{alt})\b"
            )
            launches = {x.rstrip() for i, x in enumerate(diff_lines) if i not in body and launch.search(x)}
            if not host & launches:
                out.append("dispatch_snippet: has no line of the diff that launches a kernel it shows")
    return [f"payload.implementation.{m}" for m in out]


@needs_packet
def check(view: RecordView, ev: PacketEvidence) -> list[str]:
    impl = obj(view.record, "payload", "implementation")
    quoted = [(k, impl[k]) for k in CODE_FIELDS if isinstance(impl.get(k), str) and impl[k].strip()]
    if not quoted:
        return []
    rel, packet = view.relpath, ev.packet
    if packet.code is None:
        return [f"{rel}: payload.implementation.{k}: quotes code, but the packet has no code file" for k, _ in quoted]
    out = []
    is_diff = (packet.code_file or "").endswith(".diff")
    for key, snippet in quoted:
        problem = diff_problem(snippet, packet.code) if is_diff else None
        if is_diff and key == "snippet" and problem is None:
            problem = dropped_change(snippet, packet.code)
        if problem:
            out.append(f"{rel}: payload.implementation.{key}: {problem} in {packet.code_file}")
        bad = first_unquoted(snippet, packet.code)
        if bad is not None:
            n, line, why = bad
            out.append(f"{rel}: payload.implementation.{key} line {n}: {line[:100]!r} {why} {packet.code_file}")
    if is_diff:
        out += [f"{rel}: {m}" for m in diff_code_problems(impl, packet.code)]
    name = impl.get("core_kernel_name")
    if name is not None and not (
        isinstance(name, str)
        and re.fullmatch(r"\w+", name)
        and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", packet.code)
    ):
        out.append(
            f"{rel}: payload.implementation.core_kernel_name: {str(name)[:80]!r} is not an identifier of "
            f"{packet.code_file}"
        )
    snippet = impl.get("snippet")
    if not is_diff and isinstance(snippet, str) and snippet.strip():
        dsl = obj(packet.target, "scope").get("dsl")
        out += [f"{rel}: {m}" for m in source_problems(impl, snippet, packet.code, dsl)]
    kind = next((k for suffix, k in FORMAT_OF_SUFFIX.items() if (packet.code_file or "").endswith(suffix)), None)
    fmt = impl.get("format")
    if kind and isinstance(fmt, str) and not fmt.startswith(kind):
        out.append(f"{rel}: payload.implementation.format: {fmt!r} for code quoted from {packet.code_file}")
    return out


GATE = Gate("verbatim", "quoted code is whole lines of the packet's .diff (with +/-) or .py, in order", check=check)
