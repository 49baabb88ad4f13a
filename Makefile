# embtie: two commands do all set-up on a fresh machine.
#   make run    - the main job (a comparison of sharing strategies on a small default task)
#   make test   - lint + type check + the fast test suite
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

# the packages whose types are checked (pyproject's [tool.mypy]; every function annotated in sharing/,
# training/ and rundir/); the others join as they pass
TYPED := src/embtie/sharing src/embtie/training src/embtie/rundir

test: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy $(TYPED)
	$(BIN)/python -m pytest

typecheck: venv
	$(BIN)/mypy $(TYPED)

test-slow: venv
	$(BIN)/python -m pytest -m slow

bench: venv
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
