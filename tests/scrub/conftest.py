import pytest

from optrace.scrub.denylist import compile_denylist
from optrace.scrub.folding import _compat_char, _fold_char


@pytest.fixture(autouse=True)
def fresh_denylists():
    """Every test compiles and folds anew: a Denylist remembers what it matched (`Denylist.spans`) and
    compiled lists are shared (`compile_denylist`), so without this a test may read an earlier test's
    answer instead of computing its own (mutation testing forks after a first run and would then call
    a broken matcher fine; docs/mutation.md)."""
    for cached in (compile_denylist, _fold_char, _compat_char):
        cached.cache_clear()
