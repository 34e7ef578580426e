"""JSON Schema (draft 2020-12) of memplace's file formats, for editors and other tools.

The board schema is built from the key tables the loader itself uses (`board.BOARD_KEYS` and
friends), so the two cannot drift apart: a key the loader accepts without a type here fails
the build of the schema. The loader checks more than a schema can say (names that must exist,
memories that must not overlap, pools that must fit); the schema gives editors completion,
hover help and the shape of every key.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

from memplace import board, hints, rtos
from memplace.board import Key
from memplace.runners import registry

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BOARD_ID = "urn:memplace:schema:board:v1"

Schema = dict[str, Any]
# Definitions shared by the complete and the partial form of the schema.
_PRIMITIVES = ("name", "names", "address", "size", "bytes", "stack_hints")


class _Builder:
    """Builds the definitions either strict (a complete board) or partial (a board that
    extends another, where any key may come from the base and nothing is required)."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.prefix = "" if strict else "partial_"

    def ref(self, name: str) -> Schema:
        return {"$ref": f"#/$defs/{name if name in _PRIMITIVES else self.prefix + name}"}

    def object(self, keys: Iterable[Key], types: dict[str, Schema], description: str) -> Schema:
        """A mapping that takes exactly `keys`, each typed by `types`, described by its help."""
        keys = list(keys)
        schema: Schema = {
            "type": "object",
            "description": description,
            "properties": {
                key.name: {**self.nullable(types[key.name]), "description": key.help}
                for key in keys
            },
            "additionalProperties": False,
        }
        if self.strict:
            schema["required"] = [key.name for key in keys if key.required]
        return schema

    def nullable(self, schema: Schema) -> Schema:
        """In a partial board, null removes a key the base has."""
        return schema if self.strict else {"anyOf": [schema, {"type": "null"}]}

    def rules(self, schema: Schema, **rules: Any) -> Schema:
        """`schema` with conditional rules that hold only for a complete board."""
        return {**schema, **rules} if self.strict else schema

    def named(self, item: Schema, description: str) -> Schema:
        """A mapping from C identifiers to `item`."""
        return {
            "type": "object",
            "description": description,
            "propertyNames": {"$ref": "#/$defs/name"},
            "additionalProperties": self.nullable(item),
        }


def _attrs() -> list[str]:
    """Every spelling the loader accepts: one to three distinct letters of rwx, any order."""
    return [
        "".join(letters) for count in (1, 2, 3) for letters in itertools.permutations("rwx", count)
    ]


def _primitives() -> dict[str, Schema]:
    return {
        "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
        "names": {
            "oneOf": [
                {"$ref": "#/$defs/name"},
                {"type": "array", "items": {"$ref": "#/$defs/name"}},
            ]
        },
        "address": {"type": "integer", "minimum": 0, "maximum": board.ADDRESS_SPACE - 1},
        "size": {
            "oneOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "pattern": r"^\s*\d+\s*[KM]?\s*$"},
            ]
        },
        # A size that may be 0.
        "bytes": {
            "oneOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": r"^\s*\d+\s*[KM]?\s*$"},
            ]
        },
        "stack_hints": _stack_hints(),
    }


def _stack_hints() -> Schema:
    """A `stack_hints:` list: each entry what a stack_hints/v1 file holds (`memplace.hints`
    reads it; its own version key may be left out)."""
    function = {"type": "string", "description": "as the symbol table spells it (nm)"}

    def function_hint(value: str, minimum: int, description: str) -> Schema:
        return {
            "type": "array",
            "description": description,
            "items": {
                "type": "object",
                "properties": {
                    "function": function,
                    value: {"type": "integer", "minimum": minimum},
                },
                "required": ["function", value],
                "additionalProperties": False,
            },
        }

    indirect = {
        "type": "object",
        "properties": {
            "caller": function,
            "at": {"type": "string", "description": "only the call at file:line[:column]"},
            "targets": {"oneOf": [function, {"type": "array", "items": function}]},
        },
        "required": ["caller", "targets"],
        "additionalProperties": False,
    }
    properties = {
        "memplace": {"const": hints.VERSION},
        "indirect_calls": {
            "type": "array",
            "description": "the functions an indirect call can reach",
            "items": indirect,
        },
        "recursion": function_hint("depth", 1, "at most `depth` passes through a cycle"),
        "alloca": function_hint("size", 0, "bytes of alloca and VLAs of one activation"),
        "frames": function_hint("size", 0, "a function's own frame, where code is not followed"),
        "cut_calls": {
            "type": "array",
            "description": "calls the code holds but never makes (an assumption, reported)",
            "items": {
                "type": "object",
                "properties": {
                    "caller": function,
                    "callee": function,
                    "called_from": function,
                },
                "required": ["callee"],
                "additionalProperties": False,
            },
        },
        "interrupts_masked_until_scheduler": {
            "type": "boolean",
            "description": "no interrupt is taken before the RTOS's scheduler starts",
        },
    }
    return {
        "type": "array",
        "items": {"type": "object", "properties": properties, "additionalProperties": False},
    }


def _defs(b: _Builder) -> dict[str, Schema]:
    defs = {
        "board": b.object(
            board.BOARD_KEYS,
            {
                "memplace": {"const": board.VERSION},
                "name": {"type": "string", "pattern": board.BOARD_NAME.pattern},
                "summary": {"type": "string"},
                "extends": {"type": "string"},
                "cores": b.named(b.ref("core"), "every CPU that runs code"),
                "devices": b.named(b.ref("device"), "bus masters that run no code of ours"),
                "memories": b.named(b.ref("memory"), "the physical memory map"),
                "pools": b.named(b.ref("pool"), "planning pools"),
                "contexts": b.named(b.ref("context"), "execution contexts"),
                "run": b.ref("run"),
                "stack_hints": b.ref("stack_hints"),
            },
            "a memplace board file: memory map, pools, cores, devices and contexts",
        ),
        "core": b.rules(
            b.object(
                board.CORE_KEYS,
                {
                    "cpu": {"enum": sorted(board.CPUS)},
                    "float_abi": {"enum": list(board.FLOAT_ABIS)},
                    "layout": b.ref("layout"),
                    "boot": b.ref("address"),
                    "release": b.ref("release"),
                    "rtos": {"enum": list(rtos.names())},
                    "interrupts": {
                        "oneOf": [
                            b.ref("interrupt_lines"),
                            b.object(
                                board.INTERRUPT_KEYS,
                                {
                                    "lines": b.ref("interrupt_lines"),
                                    "names": {
                                        "type": "object",
                                        "propertyNames": {"pattern": "^[0-9]+$"},
                                        "additionalProperties": b.ref("name"),
                                    },
                                },
                                "device interrupt lines with the vendor's names",
                            ),
                        ]
                    },
                    "image": b.ref("name"),
                },
                "a CPU that runs code: its own image (ELF), or the image of another core",
            ),
            # Its own image, laid out by `layout`, or another core's, named by `image`.
            oneOf=[{"required": ["layout"]}, {"required": ["image", "release"]}],
        ),
        "layout": b.object(
            board.LAYOUT_FIELDS,
            {
                **{key: b.ref("name") for key in board.IMAGE_PARTS},
                "copy": {"enum": list(board.COPIERS)},
            },
            "where this core's own image sections go",
        ),
        "release": b.object(
            board.RELEASE_KEYS,
            {
                "by": b.ref("name"),
                "steps": {"type": "array", "items": b.ref("step")},
                "handshake": {"enum": list(board.RELEASE_HANDSHAKES)},
            },
            "how another core starts this one",
        ),
        "step": b.rules(
            b.object(
                board.STEP_KEYS,
                {name: b.ref("address") for name in ("write", "set", "clear", "value", "mask")},
                "one 32-bit register access",
            ),
            oneOf=[
                {"required": ["write", "value"]},
                {"required": ["set", "mask"]},
                {"required": ["clear", "mask"]},
            ],
        ),
        "device": b.object(
            board.DEVICE_KEYS,
            {"kind": {"enum": list(board.DEVICE_KINDS)}},
            "a bus master that runs no code of ours",
        ),
        "memory": b.object(
            board.MEMORY_KEYS,
            {
                "origin": b.ref("address"),
                "size": b.ref("size"),
                "attrs": {"enum": _attrs()},
                "kind": {"enum": list(board.MEMORY_KINDS)},
                "access": b.ref("names"),
                "latency": {"type": "integer", "minimum": 0},
                "views": b.named(b.ref("address"), "per-core addresses"),
            },
            "a memory of the physical map; [origin, origin + size)",
        ),
        "pool": b.object(
            board.POOL_KEYS,
            {
                "memory": b.ref("name"),
                "kind": {"enum": list(board.POOL_KINDS)},
                "size": b.ref("size"),
            },
            "a planning pool carved out of a memory",
        ),
        "task_stack": b.object(
            board.TASK_STACK_KEYS, {"size": b.ref("size")}, "the size of a task's stack"
        ),
        "stack": b.object(
            board.STACK_KEYS, {"memory": b.ref("name"), "size": b.ref("size")}, "a stack area"
        ),
        "context": b.rules(
            b.object(
                board.CONTEXT_KEYS,
                {
                    "core": b.ref("name"),
                    "kind": {"enum": list(board.CONTEXT_KINDS)},
                    "entry": b.ref("name"),
                    # A task's stack may be the RTOS's: then only its size is given.
                    "stack": {"anyOf": [b.ref("stack"), b.ref("task_stack")]},
                    "threads": {"type": "integer", "minimum": 1},
                    "max_stack_alloca": b.ref("bytes"),
                    "preempts": b.ref("names"),
                    "priority": {"type": "integer", "minimum": 0, "maximum": board.MAX_PRIORITY},
                    "task": {"type": "string", "minLength": 1},
                    "irq": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": max(board.MAX_INTERRUPTS.values()) - 1,
                    },
                },
                "an execution context with its stack budget",
            ),
            # A thread needs a stack and has no priority or interrupt line; an isr may run
            # on the stacks it preempts.
            **{
                "if": {"properties": {"kind": {"const": "isr"}}, "required": ["kind"]},
                "else": {
                    "required": ["stack"],
                    "not": {"anyOf": [{"required": ["priority"]}, {"required": ["irq"]}]},
                },
            },
        ),
        "run": b.object(
            board.RUN_KEYS,
            {
                "qemu": b.ref("qemu"),
                "flash": b.ref("flash"),
                "simulator": {"type": "boolean"},
                "on_exit": {"enum": list(board.ON_EXIT)},
            },
            "how the board runs",
        ),
        "interrupt_lines": {
            "type": "integer",
            "minimum": 0,
            "maximum": max(board.MAX_INTERRUPTS.values()),
        },
        "qemu": b.object(
            board.QEMU_KEYS, {"machine": {"type": "string"}}, "the board runs under QEMU"
        ),
        "flash": b.rules(_flash(b), allOf=_flash_runner_rules()),
    }
    return {b.prefix + name: schema for name, schema in defs.items()}


def _flash(b: _Builder) -> Schema:
    """`run.flash`: a flash runner, one of those the runners' records name."""
    config = {"type": "array", "items": {"type": "string"}, "minItems": 1}
    return b.object(
        board.FLASH_KEYS,
        {
            "runner": {"enum": list(registry.flash_runners())},
            "target": {"type": "string"},
            "frequency": {"type": "integer", "minimum": 1},
            "config": {"oneOf": [{"type": "string"}, config]},
        },
        "how a real board is programmed",
    )


def _flash_runner_rules() -> list[Schema]:
    """Per flash runner, from its record: the settings it needs, and those of a board file
    it does not take."""
    rules = []
    for name, record in registry.records().items():
        caps = record.capabilities
        if not caps.flash:
            continue
        refused = [
            {"required": [key]} for key in registry.BOARD_SETTINGS if key not in caps.settings
        ]
        then: Schema = {"required": sorted(caps.needs)}
        if refused:
            then["not"] = refused[0] if len(refused) == 1 else {"anyOf": refused}
        rules.append({"if": {"properties": {"runner": {"const": name}}}, "then": then})
    return rules


def board_schema() -> Schema:
    """The JSON Schema of a `memplace: board/v1` file. A file with `extends:` is checked
    against the partial definitions: the base may supply any key."""
    return {
        "$schema": DRAFT,
        "$id": BOARD_ID,
        "title": "memplace board/v1",
        "description": "A memplace board file. Reference: docs/guide.md and docs/boards.md.",
        "if": {"required": ["extends"]},
        "then": {"$ref": "#/$defs/partial_board", "required": ["memplace", "name"]},
        "else": {"$ref": "#/$defs/board"},
        "$defs": {
            **_primitives(),
            **_defs(_Builder(strict=True)),
            **_defs(_Builder(strict=False)),
        },
    }


# Each file format memplace reads, by the name `memplace schema NAME` takes.
SCHEMAS: dict[str, Callable[[], Schema]] = {"board": board_schema}
