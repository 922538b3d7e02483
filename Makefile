# Two commands on a fresh machine (Python >= 3.11, make, and the package registries):
#   make report   sets up .venv with the runtime install and writes the TREC-COVID round 1 campaign report to report/
#   make test     sets up .venv with the test tools (and Debian's Chromium for the documentation-site test) and runs
#                 every test; `make test-floor` runs the version-sensitive tests again at the lowest declared versions
# Both are idempotent: the venv is made once and re-installed only when setup.py or settings.ini change.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
FLOOR  ?= .venv-floor
# the lowest versions settings.ini declares (keep in sync: tests/test_install.py checks it)
FLOOR_PINS := numpy==2.0.0 pandas==3.0.0 scipy==1.13.0 matplotlib==3.9.0 seaborn==0.13.0 pyarrow==16.0.0 tqdm==4.60.0 fastcore==1.5.29
# root installs Debian packages directly; anyone else through sudo
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST := python -m pytest -q -p no:cacheprovider

.PHONY: report test test-floor chromium docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.runtime: setup.py settings.ini | $(BIN)/python
	$(BIN)/pip install -q -e .
	@touch $@

$(VENV)/.dev: setup.py settings.ini | $(BIN)/python
	$(BIN)/pip install -q -e ".[dev]"
	@touch $@ $(VENV)/.runtime

report: $(VENV)/.runtime
	$(BIN)/irinnov report --dataset trec-covid-round1 -o report/

chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

$(FLOOR)/.floor: setup.py settings.ini Makefile
	$(PYTHON) -m venv $(FLOOR)
	$(FLOOR)/bin/pip install -q --upgrade pip
	$(FLOOR)/bin/pip install -q $(FLOOR_PINS) -e ".[test]"
	@touch $@

# the library's tests at the floor versions: the ones whose results the floor versions of numpy, pandas, pyarrow and
# scipy can change (reading and refusing run files, the encoded campaign, the measure kernels against pytrec_eval and
# brute force, the statistics of meta-evaluation). The rest (command line, report, datasets, methods, and the parity
# with the trec_eval binaries on whole TREC campaigns) runs on the same kernels and is tested once, at the dev pins, in
# the main run: repeating it here took 11 minutes of CI (the DL 2020 parity alone several) for no version-sensitive code.
FLOOR_TESTS := tests/test_trec.py tests/test_hostile_input.py tests/test_metrics.py tests/test_meta.py \
               tests/test_architecture.py
test-floor: $(FLOOR)/.floor
	. $(FLOOR)/bin/activate && $(PYTEST) $(FLOOR_TESTS)

docs: $(VENV)/.dev
	$(BIN)/python tests/docsite.py

test: $(VENV)/.dev chromium test-floor
	. $(BIN)/activate && python -m pytest -q -p no:cacheprovider --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg tests nbs
