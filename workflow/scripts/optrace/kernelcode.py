"""What a packet's code is: a unified diff's hunks and size, a kernel file's kernel functions and the host
code that launches them. Shared by the drafter (snippets, cost, the reference kernel's source) and the
gates that check what a record quotes (verbatim, layout, structured-facts), so both read code one way.

    diff_hunks(diff) -> [[line]]                     hunks of a unified diff, file headers dropped
    edit_scope(diff) -> one-line | kernel-rewrite | architecture
    cost_of(diff, status) -> {edit_scope, risk, risk_basis}
    kernel_functions(code) -> [Span]                 every @*.jit / @*.kernel Python function (CuTe DSL: its
                                                     @cute.kernel only), every __global__
    kernel_source(code, dsl) -> (snippet, core name) a reference kernel: the file without another DSL's kernels
    launch_lines(code, name) -> [line index]         host lines that launch kernel `name`
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_SNIPPET_CHARS = 6000  # the store's snippets: median ~0.8 KB, p99 ~11 KB
MAX_REFERENCE_CHARS = 20_000  # a reference kernel is its whole source (the packet caps kernels at 40 000)
SMALL_EDIT_LINES = 12  # changed lines up to which an edit is small (low risk when it passed correctness)

# --- diffs --------------------------------------------------------------------------------------------


def diff_hunks(code: str | None) -> list[list[str]]:
    """The hunks of a unified diff (file headers dropped: they name a trace file)."""
    hunks: list[list[str]] = []
    for line in (code or "").splitlines():
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
    return hunks


def within_budget(lines: list[str], budget: int = MAX_SNIPPET_CHARS) -> str:
    """Whole lines, as many as fit the budget (always at least one)."""
    out: list[str] = []
    size = 0
    for line in lines:
        size += len(line) + 1
        if out and size > budget:
            break
        out.append(line)
    return "\n".join(out)


def diff_snippet(code: str | None) -> str | None:
    """Whole hunks, in order, while they fit the budget; the first hunk is cut at whole lines if it alone is too big."""
    hunks = diff_hunks(code)
    if not hunks:
        return None
    taken: list[str] = []
    size = 0
    for hunk in hunks:
        size += sum(len(line) + 1 for line in hunk)
        if taken and size > MAX_SNIPPET_CHARS:
            break
        taken += hunk
    return within_budget(taken)


def is_added(line: str) -> bool:
    return line.startswith("+") and not line.startswith("+++")


def is_removed(line: str) -> bool:
    return line.startswith("-") and not line.startswith("---")


def diff_size(code: str | None) -> tuple[int, int]:
    """(changed lines, lines of context + changes) of a unified diff."""
    lines = [line for hunk in diff_hunks(code) for line in hunk[1:]]
    changed = max(sum(map(is_added, lines)), sum(map(is_removed, lines)))
    return changed, len(lines)


def edit_scope(code: str | None) -> str:
    """one-line when at most one line went out and one came in; a diff that replaces most of what it shows
    is a new architecture; anything between rewrites the kernel."""
    changed, shown = diff_size(code)
    if changed <= 1:
        return "one-line"
    unchanged = shown - sum(1 for hunk in diff_hunks(code) for line in hunk[1:] if line[:1] in "+-")
    return "architecture" if changed > 3 * SMALL_EDIT_LINES and unchanged < changed else "kernel-rewrite"


def cost_of(code: str | None, status: str | None) -> dict[str, str]:
    """Scope from the diff's shape, risk from its size and whether the step passed its correctness check."""
    changed, _ = diff_size(code)
    scope = edit_scope(code)
    if status != "PASS":
        return {
            "edit_scope": scope,
            "risk": "high",
            "risk_basis": "no passing correctness check is recorded for this step",
        }
    small = changed <= SMALL_EDIT_LINES
    return {
        "edit_scope": scope,
        "risk": "low" if small else "med",
        "risk_basis": "a small edit that passed the harness's correctness check"
        if small
        else "a large edit; it passed the harness's correctness check",
    }


# --- kernel files ----------------------------------------------------------------------------------

_JIT_DECORATOR = re.compile(r"^\s*@([\w.]*)(?:jit|kernel)\b")
_PY_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)")
# `__global__ void __launch_bounds__(256, 2) sgemm_warptile(`: the name is the word before the argument list,
# never the qualifier's
_CUDA_ENTRY = re.compile(
    r"__global__\s+(?:(?:void|static|inline|__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\))\s+)*(\w+)\s*\("
)


@dataclass(frozen=True)
class Span:
    """A kernel function: lines [start, end) of its file, the DSL it compiles for, its name."""

    start: int
    end: int
    dsl: str
    name: str


def _block_end_python(lines: list[str], start: int) -> int:
    """End of a decorated function: decorators and header at its indent, then its indented body."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    seen_def, j = False, start + 1
    while j < len(lines):
        stripped = lines[j].strip()
        lead = len(lines[j]) - len(lines[j].lstrip())
        if stripped and lead <= indent:
            if not seen_def and (stripped.startswith("@") or _PY_DEF.match(lines[j])):
                seen_def = seen_def or bool(_PY_DEF.match(lines[j]))
            elif not stripped.startswith((")", "]", "}")):
                break
        j += 1
    return j


def _block_end_c(lines: list[str], start: int) -> int:
    indent = len(lines[start]) - len(lines[start].lstrip())
    for j in range(start + 1, len(lines)):
        if lines[j].strip() == "}" and len(lines[j]) - len(lines[j].lstrip()) <= indent:
            return j + 1
    return len(lines)


def jit_dsl(decorator_prefix: str) -> str:
    """The DSL a jit decorator compiles for: `gluon.` -> gluon, `cute.` -> cutedsl, else triton."""
    prefix = decorator_prefix.lower()
    return "gluon" if "gluon" in prefix else "cutedsl" if "cute" in prefix else "triton"


def kernel_functions(lines: list[str]) -> list[Span]:
    """Every jit-compiled Python function and every CUDA __global__ kernel, in file order."""
    out: list[Span] = []
    i = 0
    while i < len(lines):
        jit = _JIT_DECORATOR.match(lines[i])
        cuda = _CUDA_ENTRY.search(lines[i])
        if jit and jit_dsl(jit.group(1)) == "cutedsl" and not lines[i].strip().startswith(f"@{jit.group(1)}kernel"):
            jit = (
                None  # a CuTe DSL `@cute.jit` function is host or device-side helper code; `@cute.kernel` is the kernel
            )
        if jit:
            end = _block_end_python(lines, i)
            name = next((m.group(1) for m in map(_PY_DEF.match, lines[i:end]) if m), None)
            if name:
                out.append(Span(i, end, jit_dsl(jit.group(1)), name))
            i = end
        elif cuda:
            end = _block_end_c(lines, i)
            out.append(Span(i, end, "cuda", cuda.group(1)))
            i = end
        else:
            i += 1
    return out


def _trim_blank(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def own_kernels(spans: list[Span], dsl: str) -> list[Span]:
    """The kernels of the record's DSL (a CUDA extension's __global__ kernels for cuda)."""
    return [s for s in spans if s.dsl == dsl] or ([s for s in spans if s.dsl == "cuda"] if dsl == "cuda" else [])


def kernel_source(code: str | None, dsl: str) -> tuple[str | None, str | None]:
    """(snippet, core kernel name) of a reference kernel: the whole source, without the kernels of another
    jit DSL (a Gluon kernel's Triton fallback is not part of it), and the largest kernel of the record's
    own DSL as its core; a source too big to file whole is its core kernel's span, whole (never a
    truncated one)."""
    lines = (code or "").splitlines()
    if not any(line.strip() for line in lines):
        return None, None
    spans = kernel_functions(lines)
    mine = own_kernels(spans, dsl)
    foreign = [s for s in spans if s.dsl != dsl and s.dsl != "cuda"] if mine else []
    drop = {j for s in foreign for j in range(s.start, s.end)}
    kept = _trim_blank([line for j, line in enumerate(lines) if j not in drop])
    core = max(mine, key=lambda s: s.end - s.start) if mine else None
    if sum(len(line) + 1 for line in kept) > MAX_REFERENCE_CHARS and core is not None:
        kept = lines[core.start : core.end]  # too big to file whole: its core kernel, whole
    if sum(len(line) + 1 for line in kept) > MAX_REFERENCE_CHARS:
        return None, None  # not even one whole kernel fits: no reference kernel to file
    return "\n".join(kept), core.name if core else None


def launch_lines(lines: list[str], name: str) -> list[int]:
    """Lines outside every kernel function that launch `name`: `name[grid](...)` (Triton, Gluon),
    `name<<<...>>>` (CUDA), `name(...).launch(` / `cute.launch(name` (CuTe DSL)."""
    inside = {j for s in kernel_functions(lines) for j in range(s.start, s.end)}
    n = re.escape(name)
    launch = re.compile(
        rf"(?<![\w.]){n}\s*(?:\[[^\]]*\]\s*\(|<<<)|(?<![\w.]){n}\s*\(.*\)\s*\.launch\s*\(|launch\w*\(\s*{n}\b"
    )
    return [j for j, line in enumerate(lines) if j not in inside and launch.search(line)]
