# Set-up and entry points. `make demo` and `make test` are all a fresh machine needs.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXAMPLE := examples/docsearch

.PHONY: demo test test-deps lint dist dist-check bench clean

# hatch_build.py compiles the native scanner (src/qrelkit/_native/*.c, with its header) during the install
$(BIN)/qrelkit: pyproject.toml hatch_build.py $(wildcard src/qrelkit/_native/*.c src/qrelkit/_native/*.h)
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# the web extra too: the README's judging section (qrelkit judge serve) works after `make demo`; pandas for
	# the README's results.to_pandas()
	$(BIN)/pip install -q -e '.[web,pandas]'
	# byte-compile the sources, as installing a wheel does (an editable install leaves them to each start)
	$(BIN)/python -m compileall -q src/qrelkit
	@touch $@

## demo: create .venv, install qrelkit, and run the workflow on the bundled example: rubric lint, pool,
## the top-up of a run judged deeper than the pool and leave-one-out reusability, agreement of the two labellers,
## evaluation of the four runs, one query explained, the comparison with its bottom line, and the report
demo: $(BIN)/qrelkit
	@mkdir -p demo-out
	$(BIN)/qrelkit rubric lint $(EXAMPLE)/rubric.toml
	$(BIN)/qrelkit pool $(EXAMPLE)/runs/*.run --depth 10 --labellers alice,bob --calibration 10 -o demo-out/pool.jsonl
	$(BIN)/qrelkit pool --extend $(EXAMPLE)/qrels.txt $(EXAMPLE)/runs/rerank.run --depth 20 -o demo-out/top-up.jsonl
	$(BIN)/qrelkit pool --leave-one-out $(EXAMPLE)/runs/*.run --qrels $(EXAMPLE)/qrels.txt --depth 10
	$(BIN)/qrelkit agree $(EXAMPLE)/judgments/alice.qrels $(EXAMPLE)/judgments/bob.qrels \
	    --rubric $(EXAMPLE)/rubric.toml --min-kappa 0.6
	$(BIN)/qrelkit eval $(EXAMPLE)/qrels.txt $(EXAMPLE)/runs/*.run -m nDCG@10 -m R@100 -m Judged@10 -m AP -o demo-out/results.json
	$(BIN)/qrelkit eval $(EXAMPLE)/qrels.txt $(EXAMPLE)/runs/*.run -f table
	$(BIN)/qrelkit explain $(EXAMPLE)/qrels.txt $(EXAMPLE)/runs/rerank.run --query q01
	$(BIN)/qrelkit compare $(EXAMPLE)/qrels.txt $(EXAMPLE)/runs/*.run --noise-floor $(EXAMPLE)/judgments/alice.qrels $(EXAMPLE)/judgments/bob.qrels -f table
	$(BIN)/qrelkit report $(EXAMPLE)/qrels.txt $(EXAMPLE)/runs/*.run \
	    --noise-floor $(EXAMPLE)/judgments/alice.qrels $(EXAMPLE)/judgments/bob.qrels -o demo-out/report.html

$(VENV)/.test-deps: $(BIN)/qrelkit pyproject.toml
	$(BIN)/pip install -q -e '.[test]'
	# Browser tests drive Debian's chromium (no browser download works here): install it when missing.
	# fonts-dejavu-core is the pages' first font (stable screenshots); fonts-liberation is chromium's fallback.
	@if ! command -v chromium >/dev/null 2>&1 || ! dpkg -s fonts-dejavu-core fonts-liberation >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    chromium fonts-dejavu-core fonts-liberation; \
	  else echo "browser tests need: sudo apt-get install chromium fonts-dejavu-core fonts-liberation"; fi; fi
	# irrCAC pins scipy==1.12 (numpy<2): install it without its pins; it runs on current scipy.
	$(BIN)/pip install -q --no-deps irrCAC
	@touch $@

test-deps: $(VENV)/.test-deps

## test: install the test extras and run the whole suite (with the packaging tests of dist-check)
test: test-deps
	$(BIN)/pytest

## lint: ruff over the code, mypy over src/ (strict on the numeric core; configured in pyproject.toml)
lint: test-deps
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

## dist: build the sdist and the wheel into dist/ (the wheel holds the native scanner when a C compiler is found)
dist: test-deps
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

## dist-check: build both, install each into a fresh environment outside the source tree (the sdist with no
## C compiler on PATH) and run the example from it; `make test` runs these tests too
dist-check: test-deps
	$(BIN)/pytest -m dist tests/test_packaging.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache dist
