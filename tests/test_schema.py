"""The JSON Schema of the board file: valid draft 2020-12, true to the loader, and the one
`memplace schema board` prints."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
import yaml

from memplace import board as board_module
from memplace import hints, resources
from memplace.board import Key
from memplace.cli import main
from memplace.schema import board_schema


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = board_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: jsonschema.Draft202012Validator, data: Any) -> list[str]:
    return [error.message for error in validator.iter_errors(data)]


@pytest.mark.parametrize("name", sorted(resources.bundled_boards()))
def test_every_bundled_board_validates(
    validator: jsonschema.Draft202012Validator, name: str
) -> None:
    data = yaml.safe_load(resources.bundled_boards()[name].read_text())
    assert _errors(validator, data) == []


# Each mapping of the schema, with the key table the loader checks it against.
KEY_TABLES: dict[str, tuple[Key, ...]] = {
    "board": board_module.BOARD_KEYS,
    "core": board_module.CORE_KEYS,
    "layout": board_module.LAYOUT_FIELDS,
    "release": board_module.RELEASE_KEYS,
    "step": board_module.STEP_KEYS,
    "device": board_module.DEVICE_KEYS,
    "memory": board_module.MEMORY_KEYS,
    "pool": board_module.POOL_KEYS,
    "stack": board_module.STACK_KEYS,
    "context": board_module.CONTEXT_KEYS,
    "run": board_module.RUN_KEYS,
    "qemu": board_module.QEMU_KEYS,
    "flash": board_module.FLASH_KEYS,
}


@pytest.mark.parametrize("name", sorted(KEY_TABLES))
def test_schema_takes_exactly_the_keys_the_loader_takes(name: str) -> None:
    defs = board_schema()["$defs"]
    keys = KEY_TABLES[name]
    for prefix in ("", "partial_"):
        schema = defs[prefix + name]
        assert list(schema["properties"]) == [key.name for key in keys]
        assert schema["additionalProperties"] is False
        assert all(schema["properties"][key.name]["description"] == key.help for key in keys)
    assert defs[name]["required"] == [key.name for key in keys if key.required]
    assert "required" not in defs["partial_" + name]


def test_choices_come_from_the_loader() -> None:
    defs = board_schema()["$defs"]
    assert defs["core"]["properties"]["cpu"]["enum"] == sorted(board_module.CPUS)
    assert defs["memory"]["properties"]["kind"]["enum"] == list(board_module.MEMORY_KINDS)
    assert "xwr" in defs["memory"]["properties"]["attrs"]["enum"]


@pytest.fixture
def default_board() -> dict[str, Any]:
    path = resources.bundled_boards()["qemu-mps3-an547"]
    return copy.deepcopy(yaml.safe_load(path.read_text()))


def _broken(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node[part]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("memries", {}, "Additional properties are not allowed ('memries'"),
        ("memories.itcm.orign", 0, "Additional properties are not allowed ('orign'"),
        ("memories.itcm.attrs", "rz", "'rz' is not one of"),
        ("memories.itcm.origin", 1 << 32, "is greater than the maximum"),
        ("memories.itcm.size", "512Q", "is not valid under any of the given schemas"),
        ("contexts.main.stack", None, "'stack' is a required property"),
        ("cores.cpu0.cpu", "cortex-m56", "'cortex-m56' is not one of"),
        ("pools.2fast", {"memory": "ddr", "kind": "workspace"}, "'2fast' does not match"),
        ("run.flash", {"runner": "pyocd"}, "'target' is a required property"),
        ("memplace", "board/v2", "'board/v1' was expected"),
        ("contexts.main.max_stack_alloca", "1Q", "is not valid under any of the given schemas"),
        ("contexts.main.priority", 1, "should not be valid"),
        ("contexts.main.irq", 3, "should not be valid"),
        ("cores.cpu0.interrupts", 481, "is not valid under any of the given schemas"),
        ("cores.cpu0.interrupts", "many", "is not valid under any of the given schemas"),
        ("cores.cpu0.interrupts", {"lines": 8, "names": {"1": "2x"}}, "not valid under any"),
        ("run.on_exit", "halt", "'halt' is not one of"),
        ("stack_hints", [{"recursoin": []}], "Additional properties are not allowed"),
        ("stack_hints", [{"recursion": [{"function": "f"}]}], "'depth' is a required property"),
        ("stack_hints", [{"memplace": "stack_hints/v2"}], "'stack_hints/v1' was expected"),
    ],
)
def test_schema_refuses_what_the_loader_refuses(
    validator: jsonschema.Draft202012Validator,
    default_board: dict[str, Any],
    path: str,
    value: Any,
    message: str,
) -> None:
    errors = _errors(validator, _broken(default_board, path, value))
    assert any(message in error for error in errors), errors


def test_a_release_step_takes_one_action(validator: jsonschema.Draft202012Validator) -> None:
    data = yaml.safe_load(resources.bundled_boards()["qemu-mps2-an521"].read_text())
    data["cores"]["cpu1"]["release"]["steps"].append({"write": 0x50021114})
    assert _errors(validator, data)


def test_an_extending_board_may_leave_out_what_its_base_has(
    validator: jsonschema.Draft202012Validator,
) -> None:
    child = {
        "memplace": "board/v1",
        "extends": "qemu-mps3-an547",
        "name": "mine",
        "memories": {"ddr": {"size": "32M"}},
        "pools": {"ddr_const": None},
    }
    assert _errors(validator, child) == []
    child["memories"]["ddr"]["sise"] = "32M"
    assert any("'sise'" in error for error in _errors(validator, child))
    del child["name"]
    assert "'name' is a required property" in _errors(validator, child)


def test_schema_command_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "board"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == board_schema()
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_command_refuses_an_unknown_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "bord"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memplace: error: memplace schema: argument FORMAT: invalid choice")


def test_the_schema_takes_sizes_for_max_stack_alloca_and_inline_stack_hints(
    validator: jsonschema.Draft202012Validator, default_board: dict[str, Any]
) -> None:
    default_board["contexts"]["main"]["max_stack_alloca"] = "1K"
    default_board["contexts"]["tick"] = {
        "core": "cpu0",
        "kind": "isr",
        "preempts": "main",
        "priority": 3,
        "irq": 7,
    }
    default_board["stack_hints"] = [
        {
            "indirect_calls": [{"caller": "dispatch", "at": "ops.c:42", "targets": ["a", "b"]}],
            "recursion": [{"function": "walk", "depth": 4}],
        },
        {"memplace": "stack_hints/v1", "alloca": [{"function": "fmt", "size": 0}]},
    ]
    assert _errors(validator, default_board) == []
    loaded = board_module.Board.from_data(default_board)  # the loader takes it too
    assert loaded.contexts["main"].max_stack_alloca == 1024 and len(loaded.stack_hints) == 2


def test_stack_hints_schema_takes_the_keys_the_hints_reader_takes() -> None:
    entry = board_schema()["$defs"]["stack_hints"]["items"]
    assert list(entry["properties"]) == list(hints.KEYS)
    assert entry["additionalProperties"] is False
