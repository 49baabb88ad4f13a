# embtie: two commands do all set-up on a fresh machine.
#   make run    - the main job (a comparison of sharing strategies on a small default task)
#   make test   - lint + type check + the fast test suite
# Both create/refresh the virtual environment in .venv by themselves (idempotent).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# the data root: ../shared/data beside the checkout when it exists (else embtie's own order: the user cache)
ifneq ($(wildcard $(CURDIR)/../shared/data),)
export EMBTIE_DATA ?= $(abspath $(CURDIR)/../shared/data)
endif

.PHONY: run test test-slow test-cluster lint typecheck bench venv clean

# pyproject.toml states ranges; constraints/cpu.txt pins the exact builds this project tests (torch 2.13.0,
# whose CPU build lies on this machine's disk: nothing multi-GB is downloaded)
CONSTRAINTS := constraints/cpu.txt

$(BIN)/.installed: pyproject.toml $(CONSTRAINTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) -e '.[dev,hf,caption,slurm]'
	@touch $@

venv: $(BIN)/.installed

run: venv
	$(BIN)/embtie compare

# the code whose types are checked (pyproject's [tool.mypy]; every function annotated in sharing/,
# training/ and rundir/): all of src/embtie but hf/, whose transformers objects mypy sees as bare modules
TYPED := $(filter-out src/embtie/hf src/embtie/configs src/embtie/py.typed src/embtie/__pycache__,$(wildcard src/embtie/*))

test: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy $(TYPED)
	$(BIN)/python -m pytest

typecheck: venv
	$(BIN)/mypy $(TYPED)

test-slow: venv
	$(BIN)/python -m pytest -m slow

# `embtie compare --launcher slurm` on a real single-node Slurm the tests start (Debian's slurm-wlm and
# munge, installed by the fixture when missing and run as root) and multi-node torchrun on this machine
test-cluster: venv
	$(BIN)/python -m pytest -m "slurm or multinode"

bench: venv
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
