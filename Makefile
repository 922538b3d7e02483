# Two commands on a fresh machine (Python >= 3.11, make, and the package registries):
#   make report   sets up .venv with the runtime install and writes the TREC-COVID round 1 campaign report to report/
#   make test     sets up .venv with the test tools (and Debian's Chromium for the documentation-site test), runs the
#                 floor subset at the lowest declared versions (`make test-floor`), then every test in two processes
# Both are idempotent: the venv is made once and re-installed only when setup.py or settings.ini change.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
FLOOR  ?= .venv-floor
# the lowest versions settings.ini declares (keep in sync: tests/test_readme.py checks it)
FLOOR_PINS := numpy==2.0.0 pandas==3.0.0 scipy==1.13.0 matplotlib==3.9.0 seaborn==0.13.0 pyarrow==16.0.0 tqdm==4.60.0 fastcore==1.5.29
# root installs Debian packages directly; anyone else through sudo
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST := python -m pytest -q -p no:cacheprovider
# two worker processes (the machines have two cores), a file per worker at a time: a notebook's cells share one kernel,
# and the longest files are dealt out first (tests/conftest.py says in what order, and how the workers stay apart)
XDIST  := -n 2 --dist loadfile --no-loadscope-reorder
# the two venvs (and Debian's Chromium) are set up side by side, and the floor run starts as soon as its venv is ready:
# on a fresh clone they are a fifth of the test command's time, mostly waiting on the package registry
MAKEFLAGS += -j2

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

# The floor run tests what the lowest declared versions can break rather than the whole suite again (the main run
# does that at the pinned versions): the tests marked `floor` in tests/conftest.py (FLOOR), about 400 of the library's
# 620 tests, most of them quick: under two minutes where the whole suite took eleven. They cover what irinnov asks of
# numpy, pandas, pyarrow, scipy, statsmodels, matplotlib and seaborn: reading run and qrels files (pyarrow's CSV
# reader and string order, gzip, hostile input) and the mirrored TREC-COVID and Web 2012 data, encoding campaigns
# (dense and ragged, from frames and from files), the classic measure kernels against pytrec_eval and trec_eval's own
# test files, the five methods' kernels on their worked examples, the statistics against scipy and statsmodels, and
# the report's tables, figures and Parquet files. Left out: the same calls repeated (property searches and brute-force
# oracles over many random campaigns, second seeds, whole real campaigns such as TREC-COVID's 143 runs or TREC DL),
# the same functions reached another way (the command line in subprocesses, Dask shards), the trec_eval and
# diversity programs built from C, MovieLens, the notebooks (their stored outputs follow the dev pins), and the nbdev
# checks and the browser tests of the site and the report (they need the dev tools).
# A selection that matches no test (pytest's exit 5) fails the run.
test-floor: $(FLOOR)/.floor
	. $(FLOOR)/bin/activate && $(PYTEST) $(XDIST) -m floor tests --ignore=tests/test_docs_site.py \
	  --ignore=tests/test_nbdev.py --ignore=tests/test_report_browser.py || \
	  { s=$$?; [ $$s -ne 5 ] || echo "make test-floor: no test is marked floor (tests/conftest.py)" >&2; exit $$s; }

docs: $(VENV)/.dev
	$(BIN)/python tests/docsite.py

# the whole suite, notebooks included; its last line is pytest's summary (a run that collects no test, pytest's exit 5,
# is not an error here: CI reports it as a run of no test)
test: $(VENV)/.dev chromium test-floor
	. $(BIN)/activate && python -m pytest -q -p no:cacheprovider $(XDIST) --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg tests nbs \
	  || [ $$? -eq 5 ]
