# Two entry points do all the set-up on a fresh machine (see README, Quick start):
#   make demo   tune the split-K example (CPU interpreter without a GPU) and explain a rejection
#   make test   run the test suite
# torch is pinned to the CPU build that is quick to install; on a GPU machine use your own torch.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0
STORE  ?= $(VENV)/demo-store.sqlite

.PHONY: demo test venv clean

$(BIN)/tunegate: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

venv: $(BIN)/tunegate

demo: venv
	rm -f $(STORE)
	$(BIN)/tunegate tune examples/splitk.py:TASK --store $(STORE)
	$(BIN)/tunegate policy explain "BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, SPLIT_K=2, num_warps=4" \
	    --kernel examples/splitk.py:TASK --store $(STORE)

test: venv
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build dist *.egg-info
