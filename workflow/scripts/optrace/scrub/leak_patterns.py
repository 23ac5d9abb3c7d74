"""What counts as a leak, in one place (the API of `optrace.scrub`'s rule modules): the store gates detect these
and the packet scrubber removes them.

Everything here is a pure function of text. Served text is the part of a record an agent sees; what
leaks there either names something the agent cannot reach (a local path, a wiki page, another
record) or identifies people and runs (an e-mail, a trace's version ids and commit hashes, terms of
the private denylist). Code is prose only inside its comments and string literals: that is where a
scrubber rewrites leaks and where a gate looks for them. A denylisted term is a leak anywhere, code
identifiers included, in any case and as any substring.
"""

from __future__ import annotations

from optrace.scrub.denylist import (
    DeniedMatch,
    Denylist,
    compile_denylist,
    denylist_pattern,
)
from optrace.scrub.denylist_file import (
    DENYLIST_ENV,
    add_denylist_argument,
    read_denylist,
)
from optrace.scrub.finders import (
    HARDWARE_NAMES,
    Leak,
    emails,
    find_cross_references,
    find_identifying_leaks,
    find_leaks,
    hex_ids,
    hex_runs,
    local_paths,
    markdown_pages,
    outermost,
    record_ids,
    store_paths,
    uuids,
    version_ids,
)
from optrace.scrub.folding import (
    CONFUSABLES,
    compat,
    fold,
)
from optrace.scrub.prose_spans import (
    PROSE_IN_CODE,
    PYTHON_DSLS,
    code_language,
    prose_spans,
)

__all__ = [
    "CONFUSABLES",
    "DENYLIST_ENV",
    "HARDWARE_NAMES",
    "PROSE_IN_CODE",
    "PYTHON_DSLS",
    "DeniedMatch",
    "Denylist",
    "Leak",
    "add_denylist_argument",
    "code_language",
    "compat",
    "compile_denylist",
    "denylist_pattern",
    "emails",
    "find_cross_references",
    "find_identifying_leaks",
    "find_leaks",
    "fold",
    "hex_ids",
    "hex_runs",
    "local_paths",
    "markdown_pages",
    "outermost",
    "prose_spans",
    "read_denylist",
    "record_ids",
    "store_paths",
    "uuids",
    "version_ids",
]
