"""A reference kernel: the final kernel (or a snapshot materially different from its neighbours), whole,
said to be what it is."""

from __future__ import annotations

from optrace.distill.claims import Claims, Said, Sources, said, servable
from optrace.distill.common import correctness, first_sentences, measured, measured_effect, operator_name, problem
from optrace.distill.draft import Draft
from optrace.kernelcode import kernel_source

SOURCE_FORMAT = "source (verbatim)"


def draft(packet: dict, code: str | None, src: Sources, claims: Claims) -> Draft | str:
    a = packet["agent_facing"]
    snippet, name = kernel_source(code, packet["target"]["scope"]["dsl"])
    if snippet is None:
        return "no kernel source in the packet"
    approach = said([i for i in src.first("change", "subject")]) or next(iter(first_sentences(src.of("body"))), None)
    if approach is None:
        return "nothing servable says what this kernel does"
    where = [i for i in src.of("segment") if servable(i["text"])][:1]
    # "the final kernel: the fastest version this run kept; the norm operator on ..." -> its first part
    what = where[0]["text"].split(";", 1)[0] if where else None
    goal = (
        Said(f"{what[0].upper()}{what[1:]}, for {operator_name(packet)} on {a['operator']['gpu']}.", (where[0]["id"],))
        if what
        else approach
    )
    implementation = {"format": SOURCE_FORMAT, "snippet": snippet, **({"core_kernel_name": name} if name else {})}
    payload = {
        "goal": claims.put("payload.goal", [goal]),
        "problem": problem(packet, src, claims),
        "trace": {"builds_on": {"approach": claims.put("payload.trace.builds_on.approach", [approach])}},
        "implementation": implementation,
    }
    gain = {
        "basis": "measured" if measured(packet) else "qualitative",
        "kind": "none",
        "pct": None,
        "metrics": [],
        **correctness(a["measurements"]),
    }
    return Draft(payload, gain, measured_effect(packet), [] if name else ["implementation.core_kernel_name"])
