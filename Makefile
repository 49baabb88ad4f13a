# embtie: two commands do all set-up on a fresh machine.
#   make run    - the main job (a comparison of sharing strategies on a small default task)
#   make test   - lint + the fast test suite
# Both create/refresh the virtual environment in .venv by themselves (idempotent).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export EMBTIE_DATA ?= $(abspath $(CURDIR)/../shared/data)

.PHONY: run test test-slow lint typecheck bench venv clean

$(BIN)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,hf,caption]'
	@touch $@

venv: $(BIN)/.installed

run: venv
	$(BIN)/embtie compare

test: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest

# the packages whose types are checked (strict where practical); make test runs it once every package passes
TYPED := src/embtie/sharing src/embtie/training src/embtie/tasks src/embtie/comparison src/embtie/reporting

typecheck: venv
	$(BIN)/mypy $(TYPED)

test-slow: venv
	$(BIN)/python -m pytest -m slow

bench: venv
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
