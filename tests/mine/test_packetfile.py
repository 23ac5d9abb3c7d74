"""The packets file (optrace.mine.packetfile): one trace's packets in one file, read back as written, and
a damaged or hostile one refused in one line naming it."""

from __future__ import annotations

import json

import pytest

from optrace.errors import InputError
from optrace.mine import packetfile
from optrace.mine.packetfile import read_packet_file, write_packet_file

MANIFEST = {"slug": "s", "head_sha": "a" * 40, "count": 1, "packets": [{"seg_id": "strategy-1", "id": "x"}]}
FILES = {"strategy-1.json": '{"seg_id": "strategy-1"}', "strategy-1.diff": "--- a\n+++ b\n+x\n"}


def test_a_packets_file_reads_back_as_written_and_unpacks_into_the_old_folder(tmp_path):
    path = tmp_path / "s.json"
    write_packet_file(path, MANIFEST, FILES)
    packets = read_packet_file(path)
    assert packets.manifest == MANIFEST and dict(packets.files) == FILES
    assert packets.data("strategy-1.diff") == FILES["strategy-1.diff"].encode()
    folder = packets.unpack(tmp_path / "out")
    assert json.loads((folder / "manifest.json").read_text()) == MANIFEST
    assert {p.name: p.read_text() for p in folder.iterdir() if p.name != "manifest.json"} == FILES


@pytest.mark.parametrize("name", ["../escape.json", "a/b.json", "", "..", "manifest.json", "x\0.json"])
def test_a_file_name_that_is_not_a_plain_packet_name_is_refused(tmp_path, name):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**MANIFEST, "files": {name: "{}"}}))
    with pytest.raises(InputError, match="not a plain packet file name") as err:
        read_packet_file(path)
    assert err.value.where == str(path)
    assert not (tmp_path / "escape.json").exists()


@pytest.mark.parametrize(
    "doc",
    [
        {**MANIFEST, "packets": [{"seg_id": "/abs/evil", "id": "x"}]},
        {**MANIFEST, "packets": [{"seg_id": "../../x", "id": "x"}]},
        {**MANIFEST, "packets": [{"seg_id": "s", "id": "x", "code_file": "../s.diff"}]},
        {**MANIFEST, "slug": "../.."},
    ],
    ids=["absolute-seg-id", "climbing-seg-id", "climbing-code-file", "climbing-slug"],
)
def test_a_manifest_name_a_reader_turns_into_a_path_is_a_plain_name(tmp_path, doc):
    """distill opens `<seg_id>.json` in the folder it unpacks and keeps its journal under the slug."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**doc, "files": FILES}))
    with pytest.raises(InputError, match="not a plain packet file name"):
        read_packet_file(path)


@pytest.mark.parametrize("files", [{"a.diff": "\ud800"}, {"\udcff.json": "{}"}], ids=["text", "name"])
def test_a_lone_surrogate_escape_is_one_line_not_a_traceback(tmp_path, files):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**MANIFEST, "files": files}))
    with pytest.raises(InputError, match="not UTF-8"):
        read_packet_file(path)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("{not json", "packets file: not valid JSON"),
        (json.dumps(MANIFEST), "no `files` object of texts"),
        (json.dumps([1]), "no `files` object of texts"),
        (json.dumps({**MANIFEST, "files": {"a.json": 3}}), "no `files` object of texts"),
    ],
)
def test_a_damaged_packets_file_is_one_line_naming_it(tmp_path, text, problem):
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(InputError, match=problem):
        read_packet_file(path)


def test_a_file_missing_from_the_bundle_or_past_the_cap_is_named_with_the_bundle(tmp_path, monkeypatch):
    path = tmp_path / "s.json"
    write_packet_file(path, MANIFEST, FILES)
    packets = read_packet_file(path)
    with pytest.raises(InputError, match="is not in the packets file") as err:
        packets.data("strategy-2.json")
    assert err.value.where == f"{path} (strategy-2.json)"
    monkeypatch.setattr(packetfile, "MAX_FILE_BYTES", 8)
    with pytest.raises(InputError, match="over the 8-byte limit"):
        packets.data("strategy-1.diff")
