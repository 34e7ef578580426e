"""YAML loading: positions for every node, and the inputs the loader refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memplace import resources, source
from memplace.errors import InputError
from memplace.source import Document, Node, suggest


def test_marks_point_at_keys_and_list_items() -> None:
    doc = Document.from_text("a:\n  b: 1\n  list:\n    - x\n    - y\n", "f.yaml")
    assert str(doc.mark(("a", "b"))) == "f.yaml:2:6"
    assert str(doc.key_mark(("a", "b"))) == "f.yaml:2:3"
    assert str(doc.mark(("a", "list", 1))) == "f.yaml:5:7"
    # A path that does not exist falls back to its nearest ancestor.
    assert str(doc.mark(("a", "b", "c"))) == "f.yaml:2:6"


def test_duplicate_key_is_refused_with_its_position() -> None:
    with pytest.raises(InputError) as caught:
        Document.from_text("name: a\nname: b\n", "f.yaml")
    assert str(caught.value) == "f.yaml:2:1: name: key given twice in one mapping"


def test_python_tags_are_refused() -> None:
    with pytest.raises(InputError, match=r"YAML tag .*python/object.* is not allowed"):
        Document.from_text("x: !!python/object:os.system {}\n", "f.yaml")
    with pytest.raises(InputError, match=r"f\.yaml:1:4: YAML tag"):
        Document.from_text("x: !!python/name:os.system ''\n", "f.yaml")


def test_broken_yaml_names_the_line() -> None:
    with pytest.raises(InputError) as caught:
        Document.from_text("a: [1, 2\nb: 3\n", "f.yaml")
    assert str(caught.value).startswith("f.yaml:2:")
    assert "not valid YAML" in str(caught.value)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read file"):
        Document.from_file(tmp_path / "nope.yaml")


def test_empty_file_is_an_empty_mapping() -> None:
    assert Document.from_text("", "f.yaml").data == {}


@pytest.mark.parametrize(
    ("text", "size"),
    [("4096", 4096), ("16K", 16384), ("2M", 2 * 1024 * 1024), ("0x100", 256)],
)
def test_sizes(text: str, size: int) -> None:
    doc = Document.from_text(f"size: {text}\n", "f.yaml")
    assert Node(doc, ("size",)).size() == size


@pytest.mark.parametrize("text", ["16KB", "-4", "0", "1.5K", "big"])
def test_bad_sizes(text: str) -> None:
    doc = Document.from_text(f"size: {text}\n", "f.yaml")
    with pytest.raises(InputError, match=r"f.yaml:1:7: size: (expected a size|a size must be)"):
        Node(doc, ("size",)).size()


def test_unknown_key_suggests_the_nearest_spelling() -> None:
    doc = Document.from_text("origin: 0\nsise: 4\n", "f.yaml")
    with pytest.raises(InputError) as caught:
        Node(doc).mapping(("origin", "size"))
    assert (
        str(caught.value)
        == "f.yaml:2:1: sise: unknown key; did you mean 'size'? valid: origin, size"
    )


def test_suggest_without_choices() -> None:
    assert suggest("x", []) == "there are none"


def test_a_file_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_bytes(b"name: caf\xc3\xa9\nsummary: \xff\xfe\n")
    with pytest.raises(InputError) as caught:
        Document.from_file(path)
    assert str(caught.value) == (f"{path}:2:10: not UTF-8 text (byte 0xff); save the file as UTF-8")
    assert caught.value.exit_code == 2


def test_a_control_character_names_its_position() -> None:
    with pytest.raises(InputError) as caught:
        Document.from_text("memplace: workload/v1\nname: a\x07b\n", "w.yaml")
    assert str(caught.value) == (
        "w.yaml:2:8: not valid YAML: character #x0007 is not allowed in YAML text "
        "(control characters are not, except tab and line breaks)"
    )


def test_aliases_are_copied_and_a_copy_is_where_its_alias_is() -> None:
    doc = Document.from_text("users: &u [main, npu0]\nbuffer: {users: *u}\n", "f.yaml")
    assert doc.data == {"users": ["main", "npu0"], "buffer": {"users": ["main", "npu0"]}}
    assert doc.data["buffer"]["users"] is not doc.data["users"]
    # What is wrong with a copy (a name used twice) is wrong where the copy is used.
    assert str(doc.mark(("buffer", "users", 1))) == "f.yaml:2:17"
    assert str(doc.mark(("users", 1))) == "f.yaml:1:18"


def test_an_alias_inside_the_value_it_names_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        Document.from_text("a: &a [1, *a]\n", "r.yaml")
    assert str(caught.value) == (
        "r.yaml:1:11: a[1]: alias *a is inside the value it names, so copying it never ends"
    )
    with pytest.raises(InputError, match=r"r.yaml:2:10: a.b.c: alias \*m is inside"):
        Document.from_text("a: &m\n  b: {c: *m}\n", "r.yaml")


def test_aliases_that_copy_too_much_are_refused() -> None:
    # "Billion laughs": nine levels, each nine copies of the one before (9**9 values).
    lines = ["memplace: workload/v1", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 10)]
    with pytest.raises(InputError) as caught:
        Document.from_text("\n".join(lines) + "\n", "bomb.yaml")
    assert re.fullmatch(
        r"bomb\.yaml:\d+:\d+: a\d\[0\]: YAML aliases here copy more than 100000 values; "
        r"write the values out",
        str(caught.value),
    )


def test_merge_keys_and_undefined_aliases_are_refused() -> None:
    with pytest.raises(InputError, match=r"f.yaml:2:5: merge keys \(<<\) are not supported"):
        Document.from_text("a: &a {b: 1}\nc: {<<: *a}\n", "f.yaml")
    with pytest.raises(InputError, match=r"f.yaml:1:4: not valid YAML: found undefined alias"):
        Document.from_text("a: *nope\n", "f.yaml")


def test_nesting_too_deep_is_an_input_error_where_it_goes_too_deep() -> None:
    with pytest.raises(InputError, match=r"f.yaml:3:603: not valid YAML: nested too deeply"):
        Document.from_text("a: 1\nb: '[['\nc: " + "[" * 600 + "]" * 600 + "\n", "f.yaml")
    json_text = '{"a": 1,\n "b": ' + "[" * 600 + "]" * 600 + "}\n"
    with pytest.raises(InputError, match=r"f.json:2:606: not valid YAML: nested too deeply"):
        Document.from_text(json_text, "f.json")


def test_json_with_escaped_surrogate_pairs_is_read() -> None:
    text = json.dumps({"name": "w\U0001f600", "path": "C:\\ud83d\\ude00"})
    assert "\\ud83d\\ude00" in text  # as json.dumps writes a character beyond the BMP
    doc = Document.from_text(text, "f.json")
    assert doc.data == {"name": "w\U0001f600", "path": "C:\\ud83d\\ude00"}


def test_a_part_keeps_positions_and_names_the_whole_key() -> None:
    doc = Document.from_text("top:\n  - {x: 1, y: oops}\n", "f.yaml")
    part = doc.part(("top", 0), {"x": 1, "y": "oops", "added": True})
    assert str(part.mark(("y",))) == "f.yaml:2:15"
    assert str(Node(part, ("y",)).error("bad")) == "f.yaml:2:15: top[0].y: bad"
    # A key the part adds has no position of its own: it is where the part is.
    assert str(part.mark(("added",))) == "f.yaml:2:5"


@pytest.mark.parametrize(("text", "size"), [("0", 0), ("1K", 1024), ("0K", 0)])
def test_sizes_that_may_be_zero(text: str, size: int) -> None:
    doc = Document.from_text(f"size: {text}\n", "f.yaml")
    assert Node(doc, ("size",)).size(allow_zero=True) == size


def test_a_size_that_may_be_zero_is_not_negative() -> None:
    doc = Document.from_text("size: -1\n", "f.yaml")
    with pytest.raises(InputError, match=r"f.yaml:1:7: size: a size must be 0 or more, got -1"):
        Node(doc, ("size",)).size(allow_zero=True)


@pytest.fixture(params=["libyaml", "python"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test below runs with libyaml's parser and with PyYAML's own (the fallback)."""
    if request.param == "python":
        monkeypatch.setattr(source, "_Loader", source._loader(source._PythonParser))
    return str(request.param)


BOARD_TEXT = resources.bundled_boards()["qemu-mps3-an547"].read_text()


def test_both_parsers_read_a_board_to_the_same_data_and_positions(parser: str) -> None:
    doc = Document.from_text(BOARD_TEXT, "b.yaml")
    reference = Document.from_text(BOARD_TEXT, "b.yaml")
    assert doc.data == reference.data and doc.marks == reference.marks
    assert str(doc.mark(("memories", "dtcm", "size"))).startswith("b.yaml:")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: [1\n", "x.yaml:2:1"),
        ("a: 1\n\tb: 2\n", "x.yaml:2:1"),
        ("a: &x [*x]\n", "x.yaml:1:8"),
        ("a: b\x07\n", "x.yaml:1:5"),
    ],
)
def test_both_parsers_place_errors_alike(parser: str, text: str, where: str) -> None:
    with pytest.raises(InputError) as caught:
        Document.from_text(text, "x.yaml")
    assert str(caught.value).startswith(where), (parser, str(caught.value))
