"""Loading YAML (and JSON) with positions, so that every error can name file:line:col.

The loader is safe: it builds only plain scalars, lists and mappings, refuses tags such as
`!!python/object`, refuses a key repeated in one mapping, and copies YAML aliases (`*name`)
only where they do not contain themselves and only up to `MAX_ALIAS_VALUES` values in all,
so that a small file cannot expand into a huge one ("billion laughs").
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

MAX_NAME = 100
"""Characters a name may have: generated file names add their own to it, within 255."""
MAX_SIZE = 1 << 32
"""The largest size anything of a 32-bit address space can have."""
_SIZE = re.compile(r"^\s*(\d+)\s*([KM]?)\s*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Values that aliases may copy in one file: far more than sharing a list of users between
# buffers needs, and few enough to build in about a second.
MAX_ALIAS_VALUES = 100_000


@dataclass
class Document:
    """Plain data from one file (or several merged), with the position of every node."""

    data: Any
    marks: dict[Path_, Mark] = field(default_factory=dict)
    file: str = "<data>"
    key_marks: dict[Path_, Mark] = field(default_factory=dict)
    # Where `data` sits in a larger document (see `part`): errors name the whole key.
    prefix: Path_ = ()

    @classmethod
    def from_data(cls, data: Any, file: str = "<data>") -> Document:
        return cls(data=data, marks={}, file=file)

    @classmethod
    def from_file(cls, path: Path) -> Document:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", Mark(str(path), 1, 1)) from exc
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8",
                _text_mark(str(path), raw[: exc.start].decode("utf-8")),
            ) from exc
        return cls.from_text(text, str(path))

    @classmethod
    def from_text(cls, text: str, file: str) -> Document:
        text = _join_surrogates(text)
        try:
            node = yaml.compose(text, Loader=_Loader)
        except yaml.YAMLError as exc:
            raise _yaml_error(exc, text, file) from exc
        except RecursionError as exc:
            raise InputError("not valid YAML: nested too deeply", _deepest(text, file)) from exc
        doc = cls(data=None, marks={}, file=file)
        if node is None:
            doc.data = {}
            doc.marks[()] = Mark(file, 1, 1)
            return doc
        doc.data = _Builder(doc).build(node, ())
        return doc

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
        return InputError(message, mark, self.key_name((*self.prefix, *path)) or None)

    def part(self, path: Path_, data: Any) -> Document:
        """A document of its own for the value at `path` (given as `data`, which may add to
        it), for a reader of another format: positions stay, and errors name the whole key."""
        cut = len(path)
        return Document(
            data=data,
            marks={p[cut:]: m for p, m in self.marks.items() if p[:cut] == path},
            file=self.file,
            key_marks={p[cut:]: m for p, m in self.key_marks.items() if p[:cut] == path},
            prefix=(*self.prefix, *path),
        )


_SAFE_TAGS = {"str", "int", "float", "bool", "null"}
_CONSTRUCTOR = yaml.SafeLoader("")


# An escaped UTF-16 surrogate pair in a double-quoted string (as JSON writers put any
# character beyond the BMP: "\ud83d\ude00"), not preceded by an escaped backslash.
_SURROGATES = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.I)


def _join_surrogates(text: str) -> str:
    """The text with each escaped surrogate pair written as the one character it stands
    for: valid JSON, which YAML's parser would refuse."""
    if "\\u" not in text:
        return text

    def join(match: re.Match[str]) -> str:
        high, low = int(match[2], 16), int(match[3], 16)
        return match[1] + chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))

    return _SURROGATES.sub(join, text)


def _deepest(text: str, file: str) -> Mark:
    """Where the brackets of flow collections (outside quotes) nest deepest: the place a
    document too deep to read goes too deep."""
    depth = deepest = 0
    at = 0
    quote = ""
    for index, char in enumerate(text):
        if quote:
            if char == quote and text[index - 1] != "\\":
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, index
        elif char in "]}":
            depth -= 1
    return _text_mark(file, text[:at])


def _text_mark(file: str, before: str) -> Mark:
    """The position just after `before`, the text that precedes it in the file."""
    line = before.count("\n") + 1
    return Mark(file, line, len(before) - (before.rfind("\n") + 1) + 1)


def _yaml_error(exc: yaml.YAMLError, text: str, file: str) -> InputError:
    """PyYAML's error as one line at the position it names."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = Mark(file, mark.line + 1, mark.column + 1) if mark else Mark(file, 1, 1)
        return InputError(f"not valid YAML: {exc.problem or exc.context}", where)
    if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):
        return InputError(
            f"not valid YAML: character #x{exc.character:04x} is not allowed in YAML text "
            "(control characters are not, except tab and line breaks)",
            _text_mark(file, text[: exc.position]),
        )
    return InputError(f"not valid YAML: {str(exc).splitlines()[0]}", Mark(file, 1, 1))


class _Alias(yaml.Node):
    """An alias (`*name`) kept as its own node, so that its position is known and the
    builder decides how far it may be copied (PyYAML returns the anchored node itself)."""

    id = "alias"

    def __init__(self, anchor: str, target: yaml.Node, start_mark: Any, end_mark: Any) -> None:
        super().__init__(target.tag, target, start_mark, end_mark)
        self.anchor = anchor


class _PythonParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _loader(parser: Any) -> Any:
    """A loader that composes with PyYAML's composer (where aliases are kept apart, below)
    over `parser`'s events."""

    class Loader(
        yaml.composer.Composer,
        parser,  # type: ignore[misc]
        yaml.constructor.SafeConstructor,
        yaml.resolver.Resolver,
    ):
        def __init__(self, stream: str) -> None:
            parser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

        def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                if event.anchor in self.anchors:
                    self.get_event()
                    target = self.anchors[event.anchor]
                    return _Alias(event.anchor, target, event.start_mark, event.end_mark)
            return super().compose_node(parent, index)  # an undefined alias raises there

    return Loader


# libyaml's parser where PyYAML was built with it: parsing is where the time goes.
_Loader = _loader(getattr(yaml.cyaml, "CParser", None) or _PythonParser)


class _Builder:
    """Plain data from the node graph of one file, with the position of every node."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        # The mappings and lists being built, innermost last: an alias to one of them
        # would copy a value into itself for ever.
        self.open: list[yaml.Node] = []
        self.alias_values = 0
        # The outermost alias being copied, and where it is used.
        self.alias: _Alias | None = None
        self.alias_path: Path_ = ()

    def build(self, node: yaml.Node, path: Path_) -> Any:
        if isinstance(node, _Alias):
            return self._alias(node, path)
        if self.alias is not None:
            self.alias_values += 1
            if self.alias_values > MAX_ALIAS_VALUES:
                raise InputError(
                    f"YAML aliases here copy more than {MAX_ALIAS_VALUES} values; "
                    "write the values out",
                    self._mark(self.alias),
                    self.doc.key_name(self.alias_path) or None,
                )
        self.doc.marks[path] = self._where(node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            self._check_tag(node, "seq")
            self.open.append(node)
            items = [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
            self.open.pop()
            return items
        return self._scalar(node)

    def _alias(self, node: _Alias, path: Path_) -> Any:
        if any(node.value is open_node for open_node in self.open):
            raise InputError(
                f"alias *{node.anchor} is inside the value it names, so copying it never ends",
                self._mark(node),
                self.doc.key_name(path) or None,
            )
        if self.alias is not None:
            return self.build(node.value, path)
        self.alias, self.alias_path = node, path
        try:
            return self.build(node.value, path)
        finally:
            self.alias = None

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[str, Any]:
        self._check_tag(node, "map")
        self.open.append(node)
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node)
            if key in result:
                raise InputError(
                    "key given twice in one mapping",
                    self._mark(key_node),
                    self.doc.key_name((*path, key)),
                )
            self.doc.key_marks[(*path, key)] = self._where(key_node)
            result[key] = self.build(value_node, (*path, key))
        self.open.pop()
        return result

    def _key(self, node: yaml.Node) -> str:
        if node.tag == "tag:yaml.org,2002:merge":
            raise InputError(
                "merge keys (<<) are not supported; write the keys out", self._mark(node)
            )
        key = self._scalar(node.value if isinstance(node, _Alias) else node)
        if not isinstance(key, str | int):
            raise InputError("keys must be names", self._mark(node))
        return str(key)

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
        return Mark(self.doc.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def _where(self, node: yaml.Node) -> Mark:
        """Where a value is written; a value an alias copies is where the alias is, since
        what is wrong with a copy (a name used twice) is wrong where it is used."""
        return self._mark(self.alias or node)


def is_identifier(text: str) -> bool:
    return bool(_IDENTIFIER.match(text))


def name_problem(text: str) -> str | None:
    """Why an identifier is too long to name a thing of the generated project, or None."""
    if len(text) > MAX_NAME:
        return (
            f"a name is at most {MAX_NAME} characters (it becomes file names and C "
            f"identifiers), got {len(text)}"
        )
    return None


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
        problem = name_problem(text)
        if problem:
            raise self.error(problem)
        return text

    def integer(self, minimum: int | None = 0) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.error(f"expected a whole number, got {self.value!r}")
        if minimum is not None and self.value < minimum:
            raise self.error(f"must be at least {minimum}, got {self.value}")
        return self.value

    def size(self, allow_zero: bool = False) -> int:
        """Bytes: an integer, or a number with a K (1024) or M (1024*1024) suffix; more
        than 0 unless `allow_zero`."""
        if isinstance(self.value, int) and not isinstance(self.value, bool):
            number = self.value
        else:
            match = _SIZE.match(self.value) if isinstance(self.value, str) else None
            if not match:
                raise self.error(f"expected a size such as 4096, 16K or 2M, got {self.value!r}")
            number = int(match.group(1)) * {"": 1, "K": 1024, "M": 1024 * 1024}[match.group(2)]
        if number < 0 or (number == 0 and not allow_zero):
            least = "0 or more" if allow_zero else "positive"
            raise self.error(f"a size must be {least}, got {self.value!r}")
        if number > MAX_SIZE:
            raise self.error(
                f"a size is at most 4 GiB ({MAX_SIZE} bytes, a 32-bit address space), "
                f"got {self.value!r}"
            )
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
