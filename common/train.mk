# What the training stages' Makefiles share (stages 07 and 08): where the
# data is, the training run on Fashion-MNIST (and the MNIST digits when
# present), and the comparison with PyTorch at its best on the same data,
# recipe and cores. A stage Makefile includes it after stage.mk, having set:
#   TRAINER     its training driver, a program in $(BIN) (run_mlp)
#   PEER        its PyTorch peer in tools/ (torch_mlp.py)
#   RECIPE      the chapter's recipe, flags both the driver and the peer take
#   MODEL_ARGS  flags for the driver alone (the CNN's --conv)
#   PROFILE_RECIPE  the flags of the peer's training step, for `make profile`

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

# Ours against PyTorch at its best (tools/compare.py): PyTorch probed in
# every arrangement (threads, malloc, memory format, Adam's foreach), then
# ours and the fastest in ROUNDS rounds of EPOCHS epochs each, taking
# turns; the first round's epochs into the training CSV, every probe,
# round and the medians into the speed CSV. A round is COMPARE_EPOCHS
# epochs unless EPOCHS= says otherwise. A stage may set COMPARE_INFERENCE,
# its benchmark that times our forward alone, to race PyTorch's no_grad too.
COMPARE_THREADS = $(or $(THREADS),$(shell nproc))
ROUNDS ?= 3
COMPARE_EPOCHS ?= 3
ifeq ($(origin EPOCHS),file)
compare: EPOCHS = $(COMPARE_EPOCHS)
endif
compare: build
	@$(ROOT)/tools/deps.sh compare quiet
	@mkdir -p $(dir $(COMPARE_CSV))
	@$(pick_fashion); \
	/usr/bin/python3 $(ROOT)/tools/compare.py --peer $(ROOT)/tools/$(PEER) \
	  --ours '$(BIN)/$(TRAINER) $(MODEL_ARGS) $(if $(GEMM),--gemm $(GEMM)) $(ISA_KNOB)' \
	  $(if $(COMPARE_INFERENCE),--ours-inference '$(BIN)/$(COMPARE_INFERENCE)') \
	  --data $$set --threads $(COMPARE_THREADS) --rounds $(ROUNDS) \
	  --train-csv $(COMPARE_TRAIN_CSV) --csv $(COMPARE_CSV) -- $(RECIPE)

# Where PyTorch's training step goes, op by op (torch.profiler), for the
# chapter's comparison with its own breakdown: in PyTorch's fastest
# arrangement, the one `make compare` found (else probed afresh).
PROFILE_CSV := $(BUILD)/results/stage-$(STAGE)-torch-profile.csv
profile: build
	@$(ROOT)/tools/deps.sh compare quiet
	@mkdir -p $(dir $(PROFILE_CSV))
	@$(pick_fashion); \
	/usr/bin/python3 $(ROOT)/tools/compare.py --peer $(ROOT)/tools/$(PEER) \
	  --profile $(PROFILE_CSV) --best-from $(COMPARE_CSV) --data $$set \
	  --machine '$(BIN)/$(TRAINER) --threads $(COMPARE_THREADS) $(ISA_KNOB)' \
	  --threads $(COMPARE_THREADS) -- $(PROFILE_RECIPE)

.PHONY: compare run-run profile
