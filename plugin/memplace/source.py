"""Loading YAML (and JSON) with positions, so that every error can name file:line:col.

The loader is safe: it builds only plain scalars, lists and mappings, refuses tags such as
`!!python/object`, and refuses a key repeated in one mapping.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memplace.errors import InputError, Mark

Path_ = tuple[str | int, ...]

_SIZE = re.compile(r"^\s*(\d+)\s*([KM]?)\s*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class Document:
    """Plain data from one file (or several merged), with the position of every node."""

    data: Any
    marks: dict[Path_, Mark] = field(default_factory=dict)
    file: str = "<data>"
    key_marks: dict[Path_, Mark] = field(default_factory=dict)

    @classmethod
    def from_data(cls, data: Any, file: str = "<data>") -> Document:
        return cls(data=data, marks={}, file=file)

    @classmethod
    def from_file(cls, path: Path) -> Document:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", Mark(str(path), 1, 1)) from exc
        return cls.from_text(text, str(path))

    @classmethod
    def from_text(cls, text: str, file: str) -> Document:
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = Mark(file, mark.line + 1, mark.column + 1) if mark else Mark(file, 1, 1)
            raise InputError(f"not valid YAML: {exc.problem or exc.context}", where) from exc
        doc = cls(data=None, marks={}, file=file)
        if node is None:
            doc.data = {}
            doc.marks[()] = Mark(file, 1, 1)
            return doc
        doc.data = doc._build(node, ())
        return doc

    def _build(self, node: yaml.Node, path: Path_) -> Any:
        self.marks[path] = self._mark(node)
        if isinstance(node, yaml.MappingNode):
            self._check_tag(node, "map")
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self._scalar(key_node)
                if not isinstance(key, str | int):
                    raise InputError("keys must be names", self._mark(key_node))
                key = str(key)
                if key in result:
                    raise InputError(
                        "key given twice in one mapping",
                        self._mark(key_node),
                        self.key_name((*path, key)),
                    )
                self.key_marks[(*path, key)] = self._mark(key_node)
                result[key] = self._build(value_node, (*path, key))
            return result
        if isinstance(node, yaml.SequenceNode):
            self._check_tag(node, "seq")
            return [self._build(item, (*path, index)) for index, item in enumerate(node.value)]
        return self._scalar(node)

    def _check_tag(self, node: yaml.Node, expected: str) -> None:
        if node.tag != f"tag:yaml.org,2002:{expected}":
            raise InputError(f"YAML tag {node.tag!r} is not allowed", self._mark(node))

    def _scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise InputError("expected a plain value here", self._mark(node))
        if node.tag.startswith("tag:yaml.org,2002:") and node.tag.rsplit(":", 1)[1] in _SAFE_TAGS:
            return _CONSTRUCTOR.construct_object(node, deep=True)
        raise InputError(f"YAML tag {node.tag!r} is not allowed", self._mark(node))

    def _mark(self, node: yaml.Node) -> Mark:
        return Mark(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def mark(self, path: Path_) -> Mark:
        """The position of the value at `path`, or of its nearest ancestor that has one."""
        for cut in range(len(path), -1, -1):
            found = self.marks.get(path[:cut])
            if found:
                return found
        return Mark(self.file, 1, 1)

    def key_mark(self, path: Path_) -> Mark:
        """The position of the key that names `path` (of the value, for list items)."""
        return self.key_marks.get(path) or self.mark(path)

    @staticmethod
    def key_name(path: Path_) -> str:
        parts: list[str] = []
        for part in path:
            if isinstance(part, int):
                parts.append(f"[{part}]")
            else:
                parts.append(("." if parts else "") + part)
        return "".join(parts)

    def error(self, path: Path_, message: str, at_key: bool = False) -> InputError:
        mark = self.key_mark(path) if at_key else self.mark(path)
        return InputError(message, mark, self.key_name(path) or None)


_SAFE_TAGS = {"str", "int", "float", "bool", "null"}
_CONSTRUCTOR = yaml.SafeLoader("")


def is_identifier(text: str) -> bool:
    return bool(_IDENTIFIER.match(text))


def suggest(name: str, valid: Iterable[str]) -> str:
    """A hint naming the valid choices, nearest spelling first."""
    choices = sorted(valid)
    if not choices:
        return "there are none"
    close = difflib.get_close_matches(name, choices, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}valid: {', '.join(choices)}"


class Node:
    """A cursor into a Document: typed reads that fail with the node's file:line:col."""

    def __init__(self, doc: Document, path: Path_ = ()) -> None:
        self.doc = doc
        self.path = path
        self.value: Any = doc.data
        for part in path:
            self.value = self.value[part]

    @property
    def key(self) -> str:
        return Document.key_name(self.path)

    def error(self, message: str) -> InputError:
        return self.doc.error(self.path, message)

    def key_error(self, message: str) -> InputError:
        """An error about the key itself (its spelling), pointing at the key."""
        return self.doc.error(self.path, message, at_key=True)

    def child(self, key: str | int) -> Node:
        return Node(self.doc, (*self.path, key))

    def mapping(self, allowed: Iterable[str], required: Iterable[str] = ()) -> Node:
        if not isinstance(self.value, dict):
            raise self.error("expected a mapping")
        allowed = list(allowed)
        for key in self.value:
            if key not in allowed:
                raise self.child(key).key_error(f"unknown key; {suggest(key, allowed)}")
        for key in required:
            if key not in self.value:
                raise self.error(f"missing required key {key!r}")
        return self

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    def get(self, key: str) -> Node | None:
        return self.child(key) if self.has(key) else None

    def items(self) -> Iterator[tuple[str, Node]]:
        if not isinstance(self.value, dict):
            raise self.error("expected a mapping")
        for key in self.value:
            yield key, self.child(key)

    def elements(self) -> Iterator[Node]:
        if not isinstance(self.value, list):
            raise self.error("expected a list")
        for index in range(len(self.value)):
            yield self.child(index)

    def string(self) -> str:
        if not isinstance(self.value, str):
            raise self.error(f"expected text, got {self.value!r}")
        return self.value

    def name(self) -> str:
        """A name that becomes part of a C identifier."""
        text = self.value if isinstance(self.value, str) else None
        if text is None or not _IDENTIFIER.match(text):
            raise self.error(f"{self.value!r} is not a C identifier (letters, digits, _)")
        return text

    def integer(self, minimum: int | None = 0) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.error(f"expected a whole number, got {self.value!r}")
        if minimum is not None and self.value < minimum:
            raise self.error(f"must be at least {minimum}, got {self.value}")
        return self.value

    def size(self) -> int:
        """Bytes: an integer, or a number with a K (1024) or M (1024*1024) suffix."""
        if isinstance(self.value, int) and not isinstance(self.value, bool):
            if self.value <= 0:
                raise self.error(f"a size must be positive, got {self.value}")
            return self.value
        match = _SIZE.match(self.value) if isinstance(self.value, str) else None
        if not match:
            raise self.error(f"expected a size such as 4096, 16K or 2M, got {self.value!r}")
        number = int(match.group(1)) * {"": 1, "K": 1024, "M": 1024 * 1024}[match.group(2)]
        if number <= 0:
            raise self.error(f"a size must be positive, got {self.value!r}")
        return number

    def choice(self, choices: Iterable[str]) -> str:
        text = self.string()
        choices = list(choices)
        if text not in choices:
            raise self.error(f"{text!r} is not allowed; {suggest(text, choices)}")
        return text

    def names(self) -> list[str]:
        """A list of names; a single name is accepted as a list of one."""
        if isinstance(self.value, str):
            return [self.name()]
        return [item.name() for item in self.elements()]

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.error(f"expected true or false, got {self.value!r}")
        return self.value
