"""Gate `anonymization`: nothing in served text identifies people, machines, pages or runs.

Served text = payload, retrieval (locator and links included), evidence.summary and worth.gain; in
code only comments and string literals are read. Local paths, e-mails and markdown pages fail
everywhere. A trace's version ids and commit hashes fail in records mined from a trace (raw names
their repo, version or commit): the curated documentation records of the shipped store legitimately
discuss their own revision history ("the v43 pattern", "commit a65a3a4") and were never under the
mining brief's rule. Denylisted terms (file in $ATREX_WIKI_DENYLIST) fail anywhere in the record,
raw provenance and file path included.
"""

from __future__ import annotations

from ..anonymize_patterns import find_leaks
from .model import Gate, GateContext, RecordView, TextBlob, verbatim


def check(view: RecordView, ctx: GateContext) -> list[str]:
    blob = view.served_text
    out = [f"{view.relpath}: {blob.where(leak.start)}: {leak.kind} {leak.token!r}"
           for leak in find_leaks(blob.text, trace_ids=view.from_trace)]
    if ctx.denylist is not None:
        whole = TextBlob(((("<file path>",), view.relpath), ((), view.record)), code=verbatim)
        out += [f"{view.relpath}: {whole.where(m.start())}: denylisted term {m.group(0)!r}"
                for m in ctx.denylist.finditer(whole.text)]
    return out


GATE = Gate("anonymization", "no paths, e-mails, pages, version ids, hashes or denylisted terms served",
            check=check)
