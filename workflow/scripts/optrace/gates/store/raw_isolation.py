"""Gate `raw-isolation`: human-only data never reaches what is served to the agent.

The served projection is id, type, level, retrieval without locator/links, payload, evidence.summary,
worth.rank.{score, tier} and worth.gain. It must carry no key named raw, locator or links at any depth
(open maps such as bottleneck_evidence could smuggle one in), and no raw provenance value (repo,
detail file, commit, file paths) may appear in it as a whole token. Values are compared as keys and
tokens, not substrings, so a tag named "raw" or a commit "a" cannot fire; a value made only of
letters (a repo called "softmax") identifies nothing and is not searched for.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from optrace.gates.store.model import Gate, GateContext, RecordView, TextBlob, format_loc, keys_named, obj, verbatim

ENGINE_ONLY_KEYS = ("raw", "locator", "links")
PROVENANCE_KEYS = ("source_repo", "detail_file", "git_commit")
MIN_TOKEN = 4


def served_projection(record: dict) -> dict:
    retrieval = {k: v for k, v in obj(record, "retrieval").items() if k not in ("locator", "links")}
    rank = obj(record, "worth", "rank")
    return {
        "id": record.get("id"),
        "type": record.get("type"),
        "level": record.get("level"),
        "retrieval": retrieval,
        "payload": record.get("payload"),
        "evidence": {"summary": obj(record, "evidence").get("summary")},
        "worth": {
            "rank": {"score": rank.get("score"), "tier": rank.get("tier")},
            "gain": obj(record, "worth").get("gain"),
        },
    }


def provenance_values(raw: dict) -> list[tuple[str, str]]:
    values = [(f"raw.{k}", raw.get(k)) for k in PROVENANCE_KEYS]
    paths = raw.get("file_paths")
    values += [("raw.file_paths", p) for p in (paths if isinstance(paths, list) else [])]
    return [(where, v) for where, v in values if distinctive(v)]


def distinctive(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and len(value) >= MIN_TOKEN and not value.replace(" ", "").isalpha()


def check(view: RecordView, ctx: GateContext) -> list[str]:
    served = served_projection(view.record)
    out = [
        f"{view.relpath}: {format_loc(path)}: engine-only key {path[-1]!r} in the served projection"
        for path in keys_named(served, ENGINE_ONLY_KEYS)
    ]
    values = provenance_values(view.raw)
    if values:
        blob = TextBlob((((), served),), code=verbatim)
        for where, value in values:
            at = whole_token_at(blob.text, value)
            if at is not None:
                out.append(f"{view.relpath}: {blob.where(at)}: {where} value {value!r} is served")
    return out


def whole_token_at(text: str, value: str) -> int | None:
    """Where `value` first occurs as a whole token (no word character on either side), or None.
    A plain find plus a neighbour check: a per-record compiled regex dominated this gate's cost."""
    start = text.find(value)
    while start != -1:
        end = start + len(value)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return start
        start = text.find(value, start + 1)
    return None


GATE = Gate("raw-isolation", "human-only provenance stays out of the served projection", check=check)
