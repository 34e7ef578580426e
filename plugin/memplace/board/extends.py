"""Which file a board argument names, and `extends:`: a board file read over the board it
names, mappings merged key by key, each node keeping the file and line it came from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memplace import resources
from memplace.board.checks import check_version
from memplace.errors import InputError, Mark
from memplace.source import Document, Node, suggest


def board_path(spec: str | Path) -> Path:
    text = str(spec)
    bundled = resources.bundled_boards()
    if text in bundled:
        return bundled[text]
    path = Path(text)
    if path.suffix in (".yaml", ".yml", ".json") or "/" in text:
        if not path.is_file():
            raise InputError(f"no board file at {text}", key="BOARD")
        return path
    raise InputError(f"no bundled board {text!r}; {suggest(text, bundled)}", key="BOARD")


def load_with_extends(path: Path, seen: tuple[Path, ...]) -> Document:
    doc = Document.from_file(path)
    node = Node(doc)
    if not isinstance(doc.data, dict):
        raise node.error("a board file is a mapping")
    check_version(node)
    parent = node.get("extends")
    if parent is None:
        return doc
    spec = parent.string()
    bundled = resources.bundled_boards()
    base_path = bundled.get(spec) or (path.parent / spec)
    if not base_path.is_file():
        raise parent.error(
            f"no board {spec!r} to extend (no bundled board and no file {base_path}); "
            f"{suggest(spec, bundled)}"
        )
    if base_path.resolve() in seen:
        raise parent.error("boards extend each other in a circle")
    if not node.has("name"):
        raise node.error("a board that extends another needs a name of its own")
    base = load_with_extends(base_path, (*seen, path.resolve()))
    del doc.data["extends"]
    return _merge(base, doc)


def _merge(base: Document, top: Document) -> Document:
    """`top` over `base`: mappings merge key by key, a key set to null in `top` removes it,
    anything else is replaced. Every node keeps the position of the file it came from."""

    def merge(low: Any, high: Any) -> Any:
        if isinstance(low, dict) and isinstance(high, dict):
            merged = {**low, **{key: merge(low.get(key), value) for key, value in high.items()}}
            return {key: value for key, value in merged.items() if value is not None}
        return high

    merged = Document(data=merge(base.data, top.data), file=top.file)
    for path in _paths(merged.data, ()):
        source = top if path in top.marks else base
        merged.marks[path] = source.marks.get(path, Mark(source.file, 1, 1))
        if path in source.key_marks:
            merged.key_marks[path] = source.key_marks[path]
    return merged


def _paths(data: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str | int, ...]]:
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*path, index))
