# Two entry points for a new user (see README.md):
#   make reproduce   set up .venv and run the reproduction (CONFIG=config/quick.yaml for the miniature,
#                    MIRROR=/path/to/data to read the datasets from a local mirror, CORES=N)
#   make test        set up .venv and run the test suite (make lint: ruff, as CI runs it)
#   make record      the record run (config/record.yaml) of the experiments in EXP, then publish
#                    their outputs, the paper comparison and provenance into docs/results/
# Extra Snakemake options and targets: ARGS, e.g. make reproduce ARGS="--keep-going",
# ARGS="-n" (dry run), ARGS="table1" (one product), ARGS="--unlock". profiles/default/
# (read by every run) already adds --rerun-incomplete and --show-failed-logs.
PYTHON ?= python3
VENV ?= .venv
CONFIG ?= config/config.yaml
CORES ?= all
MIRROR ?=
PYTEST_ARGS ?=
ARGS ?=
EXP ?= e1 e2 e3 e4 e5
RECORD_RESULTS ?= results/record

comma := ,
empty :=
space := $(empty) $(empty)
EXP_LIST := $(subst $(space),$(comma),$(strip $(EXP)))
RECORD_CMD = $(VENV)/bin/snakemake --cores $(CORES) --configfile config/record.yaml \
	--config 'run=[$(EXP_LIST)]' $(if $(MIRROR),mirror=$(abspath $(MIRROR))) -- $(EXP) paper_comparison

STAMP := $(VENV)/.installed

.PHONY: venv reproduce quick test lint report record clean-venv

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[workflow,test]"
	touch $@

venv: $(STAMP)

reproduce: $(STAMP)
	$(VENV)/bin/snakemake $(ARGS) --cores $(CORES) --configfile $(CONFIG) $(if $(MIRROR),--config mirror=$(abspath $(MIRROR)))

quick:
	$(MAKE) reproduce CONFIG=config/quick.yaml

record: $(STAMP)
	$(RECORD_CMD)
	$(VENV)/bin/python -m sparsesvm.experiments.publish --results $(RECORD_RESULTS) \
		--configfile config/record.yaml --dest docs/results --command "$(RECORD_CMD)" $(EXP)

report: $(STAMP)
	$(VENV)/bin/snakemake --configfile $(CONFIG) --report report.zip

test: $(STAMP)
	PATH="$(abspath $(VENV))/bin:$$PATH" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
		$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean-venv:
	rm -rf $(VENV)
