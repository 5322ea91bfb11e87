# What the training stages' Makefiles share (stages 07 and 08): where the
# data is, the training run on Fashion-MNIST (and the MNIST digits when
# present), and the comparison with PyTorch on the same data, recipe and
# threads. A stage Makefile includes it after stage.mk, having set:
#   TRAINER     its training driver, a program in $(BIN) (run_mlp)
#   PEER        its PyTorch peer in tools/ (torch_mlp.py)
#   RECIPE      the chapter's recipe, flags both the driver and the peer take
#   MODEL_ARGS  flags for the driver alone (the CNN's --conv)

ifdef DATA_DIR
export DATA_DIR
endif
DATA_ROOT = $(or $(DATA_DIR),$(BUILD)/datasets)
TRAIN_CSV := $(BUILD)/results/stage-$(STAGE)-train.csv
COMPARE_TRAIN_CSV := $(BUILD)/results/stage-$(STAGE)-compare-train.csv
COMPARE_CSV := $(BUILD)/results/stage-$(STAGE)-compare.csv
TRAIN_ARGS = $(RECIPE) $(MODEL_ARGS) $(if $(THREADS),--threads $(THREADS)) \
  $(if $(GEMM),--gemm $(GEMM)) $(ISA_KNOB) $(MEMORY_KNOB)

# Fashion-MNIST when `make datasets` got it, else the committed sample (and
# a note saying so). The shell snippet sets $$set.
pick_fashion = if ls $(DATA_ROOT)/fashion/train-images-idx3-ubyte* >/dev/null 2>&1; then \
    set=fashion; else set=sample; \
    echo "note: no Fashion-MNIST in $(DATA_ROOT) (make datasets gets it); using the committed sample"; fi

run-run:
	@mkdir -p $(dir $(TRAIN_CSV))
	@rm -f $(TRAIN_CSV)
	@$(pick_fashion); \
	$(BIN)/$(TRAINER) --data $$set $(TRAIN_ARGS) --csv $(TRAIN_CSV) --append || exit 1; \
	if ls $(DATA_ROOT)/mnist/train-images-idx3-ubyte* >/dev/null 2>&1; then \
	  $(BIN)/$(TRAINER) --data mnist $(TRAIN_ARGS) --csv $(TRAIN_CSV) --append || exit 1; fi
	@echo "results: $(TRAIN_CSV)"

# Ours, then PyTorch, on the same data, recipe and threads; PyTorch's rows go
# into the same training CSV, and the speed of both into one file.
COMPARE_THREADS = $(or $(THREADS),$(shell nproc))
compare: build
	@mkdir -p $(dir $(COMPARE_CSV))
	@rm -f $(COMPARE_TRAIN_CSV) $(COMPARE_CSV)
	@$(pick_fashion); \
	$(BIN)/$(TRAINER) --data $$set $(RECIPE) $(MODEL_ARGS) --threads $(COMPARE_THREADS) \
	  $(if $(GEMM),--gemm $(GEMM)) $(ISA_KNOB) --csv $(COMPARE_TRAIN_CSV) || exit 1; \
	/usr/bin/python3 $(ROOT)/tools/$(PEER) --data $$set $(RECIPE) \
	  --threads $(COMPARE_THREADS) --csv $(COMPARE_TRAIN_CSV) --speed-csv $(COMPARE_CSV)
	@echo "results: $(COMPARE_TRAIN_CSV)"
	@if [ -f $(COMPARE_CSV) ]; then echo "speed:   $(COMPARE_CSV)"; cat $(COMPARE_CSV) | grep -v '^#'; fi

.PHONY: compare run-run
