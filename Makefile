# Two commands for a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: run test test-fast bench clean

$(STAMP): setup.py constraints.txt Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# torch first, pinned: DI-treetensor alone would pull the newest (CUDA) torch.
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e '.[test,plot,box2d,atari,envpool,mujoco,minigrid,marl,offline,realtime,ray,bench,report,tune,export,video,wandb]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/rlpipe train cartpole-dqn

# Two passes: most tests spread over one pytest-xdist worker per core, then the `serial` ones
# (wall-clock, kill and Ray tests; tests/conftest.py) alone.
# (both passes run; the target fails when either does)
test: $(STAMP)
	$(BIN)/python -m pytest -q -ra --durations=20 -n $(JOBS) -m "not serial" tests; parallel=$$?; \
	$(BIN)/python -m pytest -q -ra --durations=10 -m "serial" tests; serial=$$?; \
	test $$parallel -eq 0 -a $$serial -eq 0

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -ra -n $(JOBS) -m "not slow and not serial" tests; parallel=$$?; \
	$(BIN)/python -m pytest -q -ra -m "serial and not slow" tests; serial=$$?; \
	test $$parallel -eq 0 -a $$serial -eq 0

clean:
	rm -rf $(VENV) build *.egg-info
