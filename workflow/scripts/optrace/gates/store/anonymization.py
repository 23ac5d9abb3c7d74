"""Gate `anonymization`: nothing in a record identifies people, machines, pages or runs.

Every string and every object key of the record is read, and its file path:
- local paths and e-mails fail anywhere (evidence.raw and payload.config included), markdown pages
  in served text (raw provenance names the curated records' source page); in code fields (snippets)
  only comments and string literals are read for them, since `x@self.w` or `a / home` are code;
- denylisted terms (file in $ATREX_WIKI_DENYLIST) fail anywhere, code identifiers and raw provenance
  included, in any case, as any substring and in any spelling `anonymize_patterns.Denylist` folds
  (separators, zero-width and combining characters, look-alike and full-width letters, escapes,
  base64/base32/hex);
- a trace's version ids, commit hashes and uuids fail in served text (payload, retrieval,
  evidence.summary, worth.gain) of records mined from a trace (raw names their repo, version or
  commit). Raw provenance itself must name its version and commit, so it is exempt from this rule,
  and the curated documentation records of the shipped store legitimately discuss their own revision
  history ("the v43 pattern", "commit a65a3a4") and were never under the mining brief's rule.
"""

from __future__ import annotations

from optrace.gates.store.model import Gate, GateContext, RecordView, TextBlob, verbatim
from optrace.scrub.leak_patterns import find_identifying_leaks, find_leaks

SERVED = {"payload": None, "retrieval": None, "evidence": "summary", "worth": "gain"}  # key -> served part


def unserved_parts(record: dict) -> tuple[tuple[tuple[str, ...], object], ...]:
    """Every part of the record `RecordView.served_text` leaves out, with the keys that name them."""
    parts: list[tuple[tuple[str, ...], object]] = []
    keys: list[str] = []
    for key, value in record.items():
        keys.append(key)
        if key not in SERVED:
            parts.append(((key,), value))
        elif SERVED[key] is not None:
            if isinstance(value, dict):
                keys += list(value)
                parts += [((key, k), v) for k, v in value.items() if k != SERVED[key]]
            else:
                parts.append(((key,), value))
    return tuple(parts) + ((("<keys>",), keys),)


def check(view: RecordView, ctx: GateContext) -> list[str]:
    served = view.served_text
    out = [
        f"{view.relpath}: {served.where(leak.start)}: {leak.kind} {leak.token!r}"
        for leak in find_leaks(served.text, trace_ids=view.from_trace)
    ]
    rest = TextBlob(unserved_parts(view.record), code=view.code_prose)
    out += [
        f"{view.relpath}: {rest.where(leak.start)}: {leak.kind} {leak.token!r}"
        for leak in find_identifying_leaks(rest.text)
    ]
    if ctx.denylist is not None:
        whole = TextBlob(((("<file path>",), view.relpath), ((), view.record)), code=verbatim)
        # the message names the term by its place in the denylist: reports must not repeat it
        out += [
            f"{view.relpath}: {whole.where(m.start())}: denylisted {ctx.denylist.label(m.group(0))}"
            for m in ctx.denylist.finditer(whole.text)
        ]
    return out


GATE = Gate(
    "anonymization", "no paths, e-mails, pages, version ids, hashes or denylisted terms in any field", check=check
)
