# From Matmul to MNIST. `make help` lists everything.
#
#   make                  build every stage, quick benchmarks, plots, the book
#   make test             build and run every test
#   make stage-04 bench   one stage, one target (build bench test run plot
#                         assignment grade clean)

ROOT := .
STAGES := $(sort $(wildcard stages/[0-9][0-9]_*))
STAGE_NUMS := $(foreach s,$(STAGES),$(firstword $(subst _, ,$(notdir $(s)))))

# `make stage-NN target...`: hand the other goals to that stage's Makefile.
ifneq ($(filter stage-%,$(firstword $(MAKECMDGOALS))),)

STAGE_GOAL := $(firstword $(MAKECMDGOALS))
STAGE_TARGETS := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
STAGE_DIR := $(wildcard stages/$(patsubst stage-%,%,$(STAGE_GOAL))_*)

$(STAGE_GOAL):
	@if [ -z "$(STAGE_DIR)" ]; then \
	  echo "error: no stage '$(patsubst stage-%,%,$(STAGE_GOAL))'; there are: $(STAGE_NUMS)" >&2; \
	  exit 2; fi
	@$(MAKE) --no-print-directory -C $(STAGE_DIR) $(or $(STAGE_TARGETS),build)

$(STAGE_TARGETS):
	@:

else

# A commit given to make (a resumed make reference); else tools/reference.sh
# works it out itself, leaving the run's own results out of "-dirty".
RUN_COMMIT_GIVEN := $(RUN_COMMIT)
include common/build.mk
include common/blas/blas.mk
include tools/book.mk

.DEFAULT_GOAL := all

.PHONY: all deps test-deps build bench plots book check-book datasets help clean handout \
        test test-run test-neon test-avx512 reference fuzz-idx

all: deps
	@for s in $(STAGES); do $(MAKE) --no-print-directory -C $$s build || exit 1; done
	@$(MAKE) --no-print-directory bench QUICK=1
	@$(MAKE) --no-print-directory plots
	@$(MAKE) --no-print-directory book
	@echo
	@echo "the book:  build/book/book.html (also book.epub, book.pdf)"
	@echo "the plots: build/plots/"
	@echo "the data:  build/results/"

deps:
	@echo "checking what the build needs:"
	@tools/deps.sh all

test-deps:
	@echo "checking what the tests need:"
	@tools/deps.sh test

build:
	@for s in $(STAGES); do $(MAKE) --no-print-directory -C $$s build || exit 1; done
	@$(MAKE) --no-print-directory blas

bench:
	@for s in $(STAGES); do $(MAKE) --no-print-directory -C $$s bench || exit 1; done

# The reference results the book shows: every file of plots/data/, made in
# one run on one machine under one run id, with OpenBLAS on its best path
# (tools/reference.sh: the steps, their budgets, a progress line per step).
# DRY=1 prints the plan; QUICK=1 runs each step's smallest version into
# build/reference-quick/; STEPS=3,7-9 only those steps.
reference:
	@DRY="$(DRY)" QUICK="$(QUICK)" STEPS="$(STEPS)" OUT="$(OUT)" MAKE="$(MAKE)" \
	  RUN_COMMIT="$(RUN_COMMIT_GIVEN)" tools/reference.sh

# One test program holds every stage's tests and the common ones, built with
# the sanitizers and -Werror, so `make test` ends with one Criterion summary.
# The kernels of every stage are compiled in; the stage drivers are not.
TEST_STAGE_SRCS := $(filter-out $(wildcard stages/*/bench_*.c stages/*/run_*.c),\
                   $(wildcard stages/*/*.c))
TEST_SRCS := $(wildcard tests/test_*.c)
# EMULATE=avx512 builds them again, in their own folders (`test-avx512`).
TEST_TAG := $(notdir $(CC))$(if $(EMULATE),-emulated-$(EMULATE))
TEST_OBJ := $(BUILD)/obj/$(notdir $(CC))-test$(if $(EMULATE),-emulated-$(EMULATE))
TEST_OBJS := $(patsubst %.c,$(TEST_OBJ)/all/%.o,$(TEST_STAGE_SRCS) $(TEST_SRCS))
TEST_ALL := $(BUILD)/test-all-$(TEST_TAG)

# The drivers the stages' tests run, built the same way: each stage's
# TESTED_DRIVERS (stages 06 to 08), run on small sets the tests write
# (TEST_DRIVERS tells them where; a test fails when its driver is missing).
TEST_DRIVER_DIR := $(BUILD)/test-drivers-$(TEST_TAG)
TEST_DRIVERS := $(addprefix $(TEST_DRIVER_DIR)/,bench_autograd run_mlp bench_mlp run_cnn)

test: test-deps
	@$(MAKE) --no-print-directory MODE=test test-build
	@tools/check-layers.sh $(BUILD)/obj/$(notdir $(CC))-test/common/gemm
	@tools/check-folders.sh
	@tools/check-moved.sh
	@$(MAKE) --no-print-directory test-neon
	@$(MAKE) --no-print-directory test-avx512
	@$(MAKE) --no-print-directory blas-test
	@$(MAKE) --no-print-directory test-run FILTER='$(TASK_FILTER)'

test-build: $(TEST_ALL) $(TEST_DRIVERS)

# The test program, built, in the environment its tests expect; FILTER= is
# Criterion's --filter pattern. `make test` and tools/test-avx512.sh run it.
TASK_FILTER := $(if $(TASK),task_$(subst .,_,$(TASK))/*)
test-run:
	@PEAK_CACHE= GEMM_STRASSEN_RULE= LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp):print_suppressions=0 \
	  TEST_DRIVERS=$(abspath $(TEST_DRIVER_DIR)) \
	  $(TEST_ALL) $(if $(FILTER),--filter '$(FILTER)')

$(OBJ)/all/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(isa_flags) -I$(dir $<) $(addprefix -I,$(STAGES)) -MMD -MP -c $< -o $@

$(TEST_ALL): $(TEST_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ -lcriterion $(LDLIBS) -o $@

$(TEST_DRIVER_DIR)/bench_autograd: $(TEST_OBJ)/all/stages/06_autograd/bench_autograd.o
$(TEST_DRIVER_DIR)/run_mlp: $(TEST_OBJ)/all/stages/07_mlp/run_mlp.o
$(TEST_DRIVER_DIR)/bench_mlp: $(TEST_OBJ)/all/stages/07_mlp/bench_mlp.o
$(TEST_DRIVER_DIR)/run_cnn: $(TEST_OBJ)/all/stages/08_conv/run_cnn.o
$(TEST_DRIVERS): $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

-include $(wildcard $(BUILD)/obj/*/all/*/*.d $(BUILD)/obj/*/all/*/*/*.d)

# NEON code, cross-built for AArch64 and run under qemu, when both are here.
test-neon:
	@tools/test-neon.sh

# The AVX-512 code on a CPU without AVX-512: every test again, with SIMDe
# standing in for its instructions, when libsimde-dev is installed.
test-avx512:
	@MAKE="$(MAKE)" CC="$(CC)" tools/test-avx512.sh $(if $(TASK_FILTER),'$(TASK_FILTER)')

# Fashion-MNIST, MNIST digits and the committed sample, checked against
# datasets/SHA256SUMS, into build/datasets/ or DATA_DIR=.
datasets:
	@DATA_DIR="$(DATA_DIR)" datasets/fetch.sh

# The IDX reader under libFuzzer for FUZZ_SECONDS (not part of `make test`).
FUZZ_SECONDS ?= 60
fuzz-idx:
	@tools/deps.sh fuzz quiet
	@mkdir -p $(BUILD)/fuzz/idx-corpus
	clang -std=c17 -g -O1 -Wall -Wextra -Wpedantic -Werror -fsanitize=fuzzer,address,undefined -Icommon/data \
	  tests/fuzz/fuzz_idx.c common/data/idx.c -lz -o $(BUILD)/fuzz/fuzz_idx
	$(BUILD)/fuzz/fuzz_idx -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  $(BUILD)/fuzz/idx-corpus tests/fuzz/idx-seeds

# The class's handout (tools/make_handout.py): the repository with every
# answer out, and every stage's kit, with the student edition of the book.
handout:
	@$(MAKE) --no-print-directory book EDITION=student
	python3 tools/make_handout.py . $(BUILD)/handout --book $(BUILD)/book-student

clean:
	rm -rf build

help:
	@echo "From Matmul to MNIST"
	@echo
	@echo "  make                 the main job: check dependencies, build every stage,"
	@echo "                       run the quick benchmarks, draw the plots, build the book"
	@echo "  make test            build and run every test (sanitizers, -Werror); on"
	@echo "                       x86-64 without AVX-512, test-avx512 too, and on any"
	@echo "                       machine test-neon (each when its tools are installed)"
	@echo "  make test-neon       the NEON code, cross-built, under qemu-aarch64"
	@echo "  make test-avx512     every test with the AVX-512 code emulated by SIMDe"
	@echo "  make blas            build/lib/libmmblas.so: the book's gemm() as a BLAS (sgemm_,"
	@echo "                       cblas_sgemm) for LD_PRELOAD; MMBLAS_VERBOSE=1 counts its calls"
	@echo "  make blas-check      netlib's BLAS tester (libblas-test) on it: SGEMM, cblas_sgemm"
	@echo "  make stage-NN [T]    one stage (NN in: $(STAGE_NUMS)); T is one of"
	@echo "                         build  bench  test  run  plot  assignment  grade  clean"
	@echo "                       (assignment: a student kit in build/assignments/, with the"
	@echo "                       student edition of the book)"
	@echo "                       e.g. make stage-01 bench, make stage-01 test TASK=1.2;"
	@echo "                       stage NN goes with chapter NN; stage 08 with chapters 8"
	@echo "                       and 9, stage 09 with chapter 10;"
	@echo "                       stage 04 adds staircase (the GEMM one step at a time);"
	@echo "                       stage 05 adds scaling, paths and strassen (Strassen's"
	@echo "                       algorithm: speed, error, and the rule gemm() reads), and"
	@echo "                       preload (NumPy and PyTorch on OpenBLAS, the book's GEMM,"
	@echo "                       BLIS)"
	@echo "  make stage-07 run    train the MLP on Fashion-MNIST (EPOCHS=10), and on MNIST"
	@echo "                       digits when present; stage-07 compare: against PyTorch at"
	@echo "                       its best, ROUNDS=3 rounds of EPOCHS=3 epochs; profile:"
	@echo "                       PyTorch's step op by op, in its fastest arrangement;"
	@echo "                       inspect: choose a learning rate on a validation split, then"
	@echo "                       the confusion matrix, the surest mistakes, the first layer's"
	@echo "                       templates; seeds: the spread between SEEDS=1,2,3,4,5 (make"
	@echo "                       stage-07 help lists its targets and knobs)"
	@echo "  make stage-08 run    train the CNN on Fashion-MNIST (EPOCHS=15), and on MNIST"
	@echo "                       digits when present; stage-08 compare: against PyTorch at"
	@echo "                       its best; decay: at a constant learning rate; profile:"
	@echo "                       PyTorch's step op by op, in its fastest arrangement;"
	@echo "                       memory: peak memory, arena and planned;"
	@echo "                       inspect: conv1's filters and feature maps after a short run;"
	@echo "                       CONV=PATH (the paths: build/stage-08/run_cnn --help)"
	@echo "  make stage-09 run    train the MLP through the compiler (common/lazy/): the step"
	@echo "                       as a graph, fused, written as C and compiled; stage-09 bench:"
	@echo "                       beside the eager tape; kernels: print every generated kernel"
	@echo "                       (and write them where chapter 10 quotes them from); figure:"
	@echo "                       the first layer's graph, drawn (make stage-09 help: all)"
	@echo "  make bench [FULL=1]  every stage's benchmark (FULL=1: the long size sweep)"
	@echo "  make plots           GFLOPS plots from your results, else the reference ones"
	@echo "  make book            build/book/book.html, book.epub, book.pdf"
	@echo "  make book EDITION=student"
	@echo "                       build/book-student/: every task's solution shown as the"
	@echo "                       kits' stub, checked to hold no answer (the kits ship it)"
	@echo "  make check-book      fail on a missing listing, file or results CSV, or a"
	@echo "                       function on gemm()'s path the book neither shows nor"
	@echo "                       names; print how many lines of each file it shows; fail"
	@echo "                       if the student edition holds an answer, or a results"
	@echo "                       file comes from another compiler than book.md's reference:"
	@echo "                       header names or from two runs; list the files from no run"
	@echo "                       of make reference, from another machine, or stale (older"
	@echo "                       than the last change to their code; STRICT=1: errors);"
	@echo "                       print each chapter's prose"
	@echo "                       words (code left out) and fail above 6,000"
	@echo "  make handout         build/handout/: the repository with every answer taken"
	@echo "                       out, for a class, and every stage's kit (the appendix"
	@echo "                       \"For instructors\" says when to release each)"
	@echo "  make datasets        Fashion-MNIST, MNIST digits and the sample, checked, into"
	@echo "                       build/datasets/ (or DATA_DIR=); says where each came from"
	@echo "  make fuzz-idx        fuzz the IDX reader for FUZZ_SECONDS=60 (clang, libFuzzer)"
	@echo "  make reference       measure every results file the book reads into plots/data/,"
	@echo "                       in one run (one run id), about 75 minutes on two cores;"
	@echo "                       DRY=1 prints the plan, QUICK=1 a short pass into"
	@echo "                       build/reference-quick/, STEPS=3,7-9 some steps. Its steps:"
	@tools/reference.sh --plan | sed 's/^/                     /'
	@echo "  make clean           remove build/"
	@echo
	@echo "knobs (the same flags reach every program: PROGRAM --help lists them):"
	@echo "  ISA=scalar|avx2|avx512|neon   every kernel family of every stage runs it"
	@echo "  THREADS=N  REPS=R  QUICK=1  FULL=1  TASK=N.M (tests)  CC=clang"
	@echo "  GEMM benches (01-05): SIZES=256,512  SHAPES=128x10x256,...  KERNELS=a,b (rows;"
	@echo "                   e.g. KERNELS=gemm,strassen for stage 05)"
	@echo "  training stages (06-09): GEMM=auto|openblas|... (the backend of every matmul;"
	@echo "                   a list for the benches)  EPOCHS=N  DATA_DIR=DIR"
	@echo "                   MEMORY=arena|planned (where a step's tensors live; a list for"
	@echo "                   the benches)"
	@echo "  stage 08: CONV=PATH (a list for the bench; the paths: build/stage-08/run_cnn --help)"
	@echo "  stage 09: LAZY_CACHE=DIR (the generated kernels' cache, default build/lazy-cache)"
	@echo
	@echo "OpenBLAS's best path on machines that set OPENBLAS_CORETYPE:"
	@echo "  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE make stage-05 bench"

endif
