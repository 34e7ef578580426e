# The two entry points of the README. Each sets up what it needs first.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint typecheck unit bench wheel clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/memplace demo --out out/demo

test: setup lint typecheck unit

lint:
	$(BIN)/ruff check
	$(BIN)/ruff format --check

typecheck:
	$(BIN)/mypy

# One pytest worker per core (pytest-xdist). Each test module runs on one worker, so what
# its tests share (a module-scoped fixture: a firmware, a CMake build) is made once.
unit:
	$(BIN)/pytest -q -n auto --dist loadscope

bench: setup
	$(BIN)/python benchmarks/planner.py
	$(BIN)/python benchmarks/stack.py
	$(BIN)/python benchmarks/generate_kills.py
	$(BIN)/python benchmarks/tvm_relax.py

wheel: setup
	bash scripts/wheel.sh dist

clean:
	rm -rf out dist build
