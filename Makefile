# Two commands for a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast bench clean

$(STAMP): setup.py constraints.txt Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# torch first, pinned: DI-treetensor alone would pull the newest (CUDA) torch.
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e '.[test,plot,box2d,atari,envpool,mujoco,minigrid,marl,offline,realtime,ray,bench,report,tune,export,video,wandb]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/rlpipe train cartpole-dqn

test: $(STAMP)
	$(BIN)/python -m pytest -q -ra tests

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "not slow" tests

clean:
	rm -rf $(VENV) build *.egg-info
