"""Loading YAML (and JSON) with positions, so that every error can name file:line:col.

The loader is safe: it builds only plain scalars, lists and mappings, refuses tags such as
`!!python/object`, refuses a key repeated in one mapping, and copies YAML aliases (`*name`)
only where they do not contain themselves and only up to `MAX_ALIAS_VALUES` values in all,
so that a small file cannot expand into a huge one ("billion laughs").

Positions are found on demand. A file is first read the fast way, in time proportional to
its size and with no position kept: JSON by Python's `json`, YAML from libyaml's events
(where PyYAML has libyaml) by a builder that takes only plain mappings, lists and scalars.
Anything else (an alias, a tag, a key given twice, a syntax error, nesting deeper than
FAST_DEPTH) is read again the careful way, which refuses it with its position. A document
read the fast way keeps its text; the first question about a position (an error) reads it
the careful way once and answers from that (`_OnDemand`).
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import itertools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memplace.errors import InputError, Mark
from memplace.files import MAX_DIGITS, read_input

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
FAST_DEPTH = 100
"""Nesting the fast reader takes; deeper documents are read the careful way."""


COLLECT_EVERY = 200_000
"""Objects made between two passes of Python's cyclic collector while memplace reads or
plans (`fewer_collections`): its default, 700, makes a workload of a million buffers
spend a fifth of its time in passes that find nothing to free."""


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Python's cyclic garbage collector runs less often while inside: reading and planning
    make millions of small objects that live until the plan is written, none of them in
    cycles. Memory stays bounded (the collector still runs, every COLLECT_EVERY objects);
    its thresholds are restored on the way out."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], COLLECT_EVERY), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


class _OnDemand(dict):  # type: ignore[type-arg]
    """A dict that `fill` fills the first time anything is asked of it."""

    def __init__(self, fill: Any) -> None:
        super().__init__()
        self._fill = fill

    def _load(self) -> None:
        if self._fill is not None:
            fill, self._fill = self._fill, None
            fill()

    def get(self, key: Any, default: Any = None) -> Any:
        self._load()
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self._load()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._load()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[Any]:
        self._load()
        return super().__iter__()

    def __len__(self) -> int:
        self._load()
        return super().__len__()

    def items(self) -> Any:
        self._load()
        return super().items()

    def keys(self) -> Any:
        self._load()
        return super().keys()

    def values(self) -> Any:
        self._load()
        return super().values()


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
            raw = read_input(path)
        except InputError as exc:
            raise InputError(f"cannot read file: {exc.message}", Mark(str(path), 1, 1)) from None
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
        """The document in `text`: read the fast way where it can be (positions found
        when first asked for), else the careful way."""
        try:
            data = _fast_json(text) if text.lstrip()[:1] in ("{", "[") else _fast_yaml(text)
        except _Careful:
            return cls.careful(text, file)
        doc = cls(data=data, file=file)

        def fill() -> None:
            careful = cls.careful(text, file)
            dict.update(doc.marks, careful.marks)
            dict.update(doc.key_marks, careful.key_marks)

        doc.marks = _OnDemand(fill)
        doc.key_marks = _OnDemand(doc.marks._load)
        return doc

    @classmethod
    def careful(cls, text: str, file: str) -> Document:
        """The document in `text` with the position of every node, read by PyYAML's
        composer: slower, and the reader that refuses what the fast one does not take."""
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

    def marks_below(self, path: Path_) -> dict[str, Mark]:
        """Where each key of the mapping at `path` is written, by name, and each item of
        a list there as "key[1]"."""
        depth = len(path)
        below = self.__dict__.setdefault("_below", {})
        if depth not in below:
            index: dict[Path_, dict[str, Mark]] = {}
            for where, mark in self.marks.items():
                if len(where) == depth + 1 and isinstance(where[-1], str):
                    index.setdefault(where[:depth], {})[where[-1]] = mark
                elif len(where) == depth + 2 and isinstance(where[-1], int):
                    label = f"{where[depth]}[{where[-1]}]"
                    index.setdefault(where[:depth], {})[label] = mark
            below[depth] = index
        return dict(below[depth].get(path, {}))

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


class _Careful(Exception):
    """The fast reader does not take this document: read it the careful way."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Careful
    return found


def _no_float(text: str) -> float:
    # YAML reads 1e5 as text, JSON as a number: such a file is read as YAML reads it.
    if "." not in text:
        raise _Careful
    return float(text)


def _not_json(text: str) -> Any:
    raise _Careful


_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_NESTING = {"[": 1, "{": 1, "]": -1, "}": -1}


def _fast_json(text: str) -> Any:
    brackets = _NOT_BRACKETS.sub("", text)
    if max(itertools.accumulate(map(_NESTING.__getitem__, brackets)), default=0) > FAST_DEPTH:
        raise _Careful  # (brackets inside strings count too: at worst, read carefully)
    try:
        return json.loads(
            text, object_pairs_hook=_unique_keys, parse_float=_no_float, parse_constant=_not_json
        )
    except (ValueError, RecursionError) as exc:
        raise _Careful from exc


# Plain scalars that the YAML 1.1 resolver reads as something other than text.
_NOT_TEXT = {
    "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False",
    "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
}  # fmt: skip
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESOLVER = yaml.resolver.Resolver()
_EVENTS = yaml.events


def _plain_scalar(value: str) -> Any:
    """A plain (unquoted) scalar as the safe loader reads it."""
    if len(value) > MAX_DIGITS + 2 and value[:1] in "+-0123456789":
        raise _Careful  # a number too long to convert: the careful reader says where
    if value.isdigit() and value.isascii() and (value[0] != "0" or value == "0"):
        return int(value)
    if _WORD.match(value) and value not in _NOT_TEXT:
        return value
    tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    if not tag.startswith("tag:yaml.org,2002:") or tag.rsplit(":", 1)[1] not in _SAFE_TAGS:
        raise _Careful
    return _CONSTRUCTOR.construct_object(yaml.ScalarNode(tag, value), deep=True)


def _fast_yaml(text: str) -> Any:
    """The plain data of a YAML document from libyaml's events, with no positions; raises
    _Careful for anything but plain mappings, lists and scalars in one document."""
    parser_class = getattr(yaml.cyaml, "CParser", None)
    if parser_class is None or "\\u" in text:
        raise _Careful
    parser = parser_class(text)
    open_: list[Any] = []  # the mappings and lists being built, innermost last
    keys: list[Any] = []  # per open mapping, its key waiting for a value (None: none)
    root: list[Any] = []
    documents = 0
    scalar, mapping_start, sequence_start = (
        _EVENTS.ScalarEvent,
        _EVENTS.MappingStartEvent,
        _EVENTS.SequenceStartEvent,
    )
    ends = (_EVENTS.MappingEndEvent, _EVENTS.SequenceEndEvent)
    try:
        while True:
            event = parser.get_event()
            kind = type(event)
            if kind is scalar:
                if event.anchor is not None or event.tag not in (None, "!"):
                    raise _Careful
                value: Any = event.value
                if event.implicit[0] and event.tag is None:
                    value = _plain_scalar(value) if value else None
            elif kind is mapping_start or kind is sequence_start:
                if event.anchor is not None or event.tag not in (None, "!"):
                    raise _Careful
                if len(open_) >= FAST_DEPTH:
                    raise _Careful
                value = {} if kind is mapping_start else []
            elif kind in ends:
                open_.pop()
                keys.pop()
                continue
            elif kind is _EVENTS.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _Careful
                continue
            elif kind is _EVENTS.StreamEndEvent:
                break
            elif kind is _EVENTS.AliasEvent:
                raise _Careful
            else:
                continue
            if not open_:
                root.append(value)
            else:
                parent = open_[-1]
                if type(parent) is list:
                    parent.append(value)
                elif keys[-1] is None:
                    if type(value) not in (str, int) or (value == "<<" and event.implicit[0]):
                        raise _Careful
                    key = str(value)
                    if key in parent:
                        raise _Careful
                    keys[-1] = key
                else:
                    parent[keys[-1]] = value
                    keys[-1] = None
            if kind is not scalar:
                open_.append(value)
                keys.append(None)
    except yaml.YAMLError as exc:
        raise _Careful from exc
    return root[0] if root else {}


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
            if node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_DIGITS + 2:
                # Python converts no more than 4,300 digits, and no input needs a tenth.
                raise InputError(
                    f"a number of {len(node.value)} characters; at most {MAX_DIGITS} digits "
                    "are read",
                    self._mark(node),
                )
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
        node = Node.__new__(Node)  # no walk from the root: the value is one step down
        node.doc, node.path, node.value = self.doc, (*self.path, key), self.value[key]
        return node

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
