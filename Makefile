PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow test-gpu samples clean

$(STAMP): setup.cfg pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python samples/loops_and_prints.py

# lint and format check (pyproject.toml's [tool.ruff]; `ruff format .` formats), then one worker per core, a
# test file per worker (its module-level functions compile once)
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -n auto --dist loadfile

# the seed articles' programs (scikit-learn, for the digits, is in the test extras)
samples: $(STAMP)
	$(BIN)/python samples/linreg_grad.py
	$(BIN)/python samples/functorch_basics.py
	$(BIN)/python samples/mlp_digits.py --epochs 3
	$(BIN)/python samples/train_state.py

test-slow: $(STAMP)
	SCRIPTC_HYPOTHESIS=explore $(BIN)/python -m pytest -q -m slow

# the GPU path: PTX assembly, the grid emulator, and (marked gpu, skipped without a device) driver-level tests
# (tests/gpu/test_gpu_device.py); the long GPU fuzz is in test-slow
test-gpu: $(STAMP)
	$(BIN)/python -m pytest -q tests/gpu

clean:
	rm -rf $(VENV) build *.egg-info
