"""A run without a denylist says so, unless the user states there is none (#29)."""

from optrace.scrub.denylist_file import STATED_NONE, denylist_notice, read_denylist


def test_the_notice_names_the_variable_and_the_way_to_state_none(tmp_path):
    line = denylist_notice({}, "MY_DENYLIST")
    assert line and "$MY_DENYLIST is unset" in line and repr(STATED_NONE) in line and "\n" not in line
    assert denylist_notice({"MY_DENYLIST": str(tmp_path / "d.txt")}, "MY_DENYLIST") is None
    assert denylist_notice({"MY_DENYLIST": STATED_NONE}, "MY_DENYLIST") is None
    assert read_denylist({"MY_DENYLIST": STATED_NONE}, "MY_DENYLIST") == ()
