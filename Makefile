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

.PHONY: run test test-slow test-docs test-cluster test-packaging lint typecheck bench venv clean gpu gpu-wheels gpu-data

# pyproject.toml states ranges; constraints/cpu.txt pins the exact builds this project tests (torch 2.13.0,
# whose CPU build lies on this machine's disk: nothing multi-GB is downloaded)
CONSTRAINTS := constraints/cpu.txt

$(BIN)/.installed: pyproject.toml $(CONSTRAINTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) -e '.[dev,hf,caption,slurm,gpu]'
	@touch $@

venv: $(BIN)/.installed

run: venv
	$(BIN)/embtie compare

# the code whose types are checked (pyproject's [tool.mypy]; every function annotated in sharing/,
# training/ and rundir/): all of src/embtie but hf/, whose transformers objects mypy sees as bare modules
TYPED := $(filter-out src/embtie/hf src/embtie/configs src/embtie/py.typed src/embtie/__pycache__,$(wildcard src/embtie/*))

# pytest on TEST_WORKERS processes (pytest-xdist): one per core of the 2-core CI machine. --dist loadscope keeps
# each module (and each documentation file's blocks) on one worker, in order (tests/conftest.py, xdist_scope);
# `TEST_WORKERS=0` runs the suite in this one process
TEST_WORKERS ?= 2

test: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy $(TYPED)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --durations=15

typecheck: venv
	$(BIN)/mypy $(TYPED)

test-slow: venv
	$(BIN)/python -m pytest -m slow

# the documentation that runs (tests/docs/test_docs_run.py: every block of README.md and docs/*.md and every
# `embtie CMD --help` example, marked docs_run): kept out of make test's 10 minutes, run by CI right after it
test-docs: venv
	$(BIN)/python -m pytest -m docs_run -n $(TEST_WORKERS) --dist loadscope --durations=10

# the documented journey (issues 39, 52): docs/your-corpus.md's sections 1-3 as the page prints them, no ../shared,
# no data root, an empty HOME; raw 1.8 MB corpus to decided verdicts with test verdicts in bits per byte, timed
# step by step (tests/data/test_corpus_journey.py): CI runs it after make test
test-journey: venv
	$(BIN)/python -m pytest -m journey -s

# `embtie compare --launcher slurm` on a real single-node Slurm the tests start (Debian's slurm-wlm and
# munge, installed by the fixture when missing and run as root), multi-node torchrun on this machine, the
# multi-process tests (DDP, FSDP, ZeRO and the torchrun launcher, marked distributed: about 110 s of one core,
# out of make test's 10 minutes since 2026-12-03), and the GPU campaign's full dry run on the CPU (`make gpu
# DRY=1` through its tests): CI runs it after make test
test-cluster: venv
	$(BIN)/python -m pytest -m "slurm or multinode or distributed or campaign"

# the wheel against the package registry (tests/test_packaging.py, marked registry): pip's dry runs with the
# oldest and the pinned torch and transformers (25-65 s) and the fresh-venv install run outside the checkout
# (110-315 s): CI runs it after make test
test-packaging: venv
	$(BIN)/python -m pytest -m registry

bench: venv
	$(BIN)/python -m bench

# The GPU campaign (docs/gpu.md; bench/gpu_campaign.py): `make gpu STEP=NAME` runs one step, `make gpu` the
# queue (the steps not yet done, `first` first), `make gpu DRY=1` the same on the CPU at tiny sizes. No venv:
# the machine's own python3 and torch run it (here the venv's python when there is one). `make gpu-wheels
# gpu-data` prepare, on a machine with a registry, what the GPU machine lacks, in .gpu/ (ignored; carried to
# the lent machine).
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python3)
STEP ?= queue
GPU_WHEELS := liger-kernel==0.8.5 cut-cross-entropy==25.1.1 sacremoses==0.2.0 platformdirs==4.14.8
GPU_DATA := ptb multi30k wikitext-2

gpu:
	PYTHONPATH=src:. $(GPU_PYTHON) -m bench.gpu_campaign run $(STEP) $(if $(DRY),--dry-run)

gpu-wheels:
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d .gpu/wheels $(GPU_WHEELS)

gpu-data:
	mkdir -p .gpu/data
	cp -r $(addprefix $(EMBTIE_DATA)/,$(GPU_DATA)) .gpu/data/
	chmod -R u+w .gpu/data

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
