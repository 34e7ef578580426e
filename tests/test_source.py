"""YAML loading: positions for every node, and the inputs the loader refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

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
