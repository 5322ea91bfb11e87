# The targets every stage has: build, bench, test, run, plot, assignment,
# grade (FORMAT=gradescope: results.json), autograder, classroom, clean. A stage Makefile sets these and includes this file last:
#   ROOT      the repository root
#   STAGE     the two-digit stage number
#   SRCS      the stage's library sources (what its tests exercise)
#   DRIVERS   its programs, one bench_*.c or run_*.c each (bench_X.c → X... see below)
#   TESTED_DRIVERS  those of them its tests run (built like the tests)
#   GRADE_KERNELS  the kernels whose speed `make grade` scores
#   GRADE_BUILD    the one build they are scored in, in words (the grade
#                  report and the kit README print it); bench-run sees
#                  GRADE=1 under `make grade`
#   GRADE_SCORES   for a stage with no GRADE_KERNELS, what `make grade` scores,
#                  in words (the kit README prints it)
#   FULL_SIZES     the sizes of `make bench FULL=1`
# and may define bench-run / run-run recipes of its own (see below).

include $(ROOT)/common/build.mk

STAGE_NAME := $(notdir $(CURDIR))
BIN := $(BUILD)/stage-$(STAGE)
SOBJ := $(OBJ)/stage-$(STAGE)
RESULTS := $(BUILD)/results/stage-$(STAGE).csv
STAGE_OBJS := $(patsubst %.c,$(SOBJ)/%.o,$(SRCS))
PROGRAMS := $(patsubst %.c,$(BIN)/%,$(DRIVERS))
TEST_SRC := $(ROOT)/tests/test_$(STAGE_NAME).c
TEST_BIN := $(BIN)/test-$(notdir $(CC))

export PEAK_CACHE := $(abspath $(BUILD))/peak.csv
# Where gemm() may use Strassen's algorithm on this machine, as the Strassen
# study (`make stage-05 strassen`) measured it; without the file, nowhere.
export GEMM_STRASSEN_RULE := $(abspath $(BUILD))/strassen-rule.txt

# The knobs of common/README.md, turned into driver flags. Every program takes
# --isa (ISA=) and --threads (THREADS=); the GEMM benchmarks of stages 01-05
# take KERNELS= for their rows; the training stages take GEMM= (the backend
# of every matmul), MEMORY= (where a step's tensors live: arena, planned; the
# benchmarks take a list) and stage 08 CONV= (the convolution path).
# BENCH_KNOBS are those that do not choose the sizes, for runs with shapes of
# their own (stage 05's network shapes).
ISA_KNOB = $(if $(ISA),--isa $(ISA))
MEMORY_KNOB = $(if $(MEMORY),--memory $(MEMORY))
BENCH_KNOBS = $(if $(REPS),--reps $(REPS)) $(ISA_KNOB) \
  $(if $(KERNELS),--kernels $(KERNELS))
# The rounds of a race against OpenBLAS (stages 04 and 05's main runs):
# ROUNDS=, else 3; one under QUICK=1 and `make grade`. Each round times the
# harness's yardstick too (common/harness/bench.h).
RACE_ROUNDS = --rounds $(if $(QUICK)$(GRADE),1,$(or $(ROUNDS),3))
BENCH_ARGS = $(if $(THREADS),--threads $(THREADS)) $(if $(SIZES),--sizes $(SIZES)) \
  $(if $(SHAPES),--shapes $(SHAPES)) $(BENCH_KNOBS) $(if $(QUICK),--quick) \
  $(if $(FULL),$(if $(SIZES)$(SHAPES),,--sizes $(FULL_SIZES)))

# BACKEND= was the training stages' name for GEMM=: still taken, with a note.
ifdef BACKEND
  ifndef GEMM
    $(info note: BACKEND= is now GEMM=; using GEMM=$(BACKEND))
    GEMM := $(BACKEND)
  endif
endif

.PHONY: build programs bench test run plot assignment grade autograder classroom clean test-build
.DEFAULT_GOAL := build

# Every target checks what it needs first (and installs it, or says how), so
# any order of commands works on a fresh machine. The programs are made by a
# second make, which reads OpenBLAS's flags afresh if the check installed it.
build:
	@$(ROOT)/tools/deps.sh build quiet
	@$(MAKE) --no-print-directory programs

programs: $(PROGRAMS)

# The programs have one directory for every compiler and mode, so each
# depends on a note of the objects it was last linked from: a build with
# another compiler (CC=clang) links them again, and so does the next build
# with the first; without it, make would keep the other compiler's programs.
LINKED_FROM := $(BIN)/linked-from
$(shell mkdir -p $(BIN) && echo '$(OBJ)' > $(LINKED_FROM).new && \
  { cmp -s $(LINKED_FROM).new $(LINKED_FROM) && rm -f $(LINKED_FROM).new || \
    mv $(LINKED_FROM).new $(LINKED_FROM); })

$(SOBJ)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(isa_flags) $(extra_flags) $(OPT) -MMD -MP -c $< -o $@

$(PROGRAMS): $(BIN)/%: $(SOBJ)/%.o $(STAGE_OBJS) $(COMMON_OBJS) $(LINKED_FROM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(filter %.o,$^) $(LDLIBS) -o $@

-include $(wildcard $(SOBJ)/*.d $(OBJ)/tests/*.d)

# The default benchmark runs the stage's bench driver; a stage that needs
# more (stage 01 runs three builds of its kernels) defines bench-run itself.
bench: build
	@mkdir -p $(dir $(RESULTS))
	$(MAKE) --no-print-directory bench-run
	@echo "results: $(RESULTS)"

run: build
	$(MAKE) --no-print-directory run-run

# A stage whose results are not GEMM rows sets PLOT_TOOL to its own script;
# PLOT_STUDIES lists its other figures, FILE:TOOL (FILE in build/results/, else
# plots/data/; TOOL in tools/, called with FILE and the plot's basename).
PLOT_TOOL ?= $(ROOT)/tools/plot.sh
plot:
	@mkdir -p $(BUILD)/plots
	@if [ -f $(RESULTS) ]; then src=$(RESULTS); else src=$(ROOT)/plots/data/stage-$(STAGE).csv; fi; \
	  echo "plotting $$src"; $(PLOT_TOOL) $$src $(BUILD)/plots/stage-$(STAGE)
	@for s in $(PLOT_STUDIES); do \
	  file=$${s%%:*}; tool=$${s#*:}; src=$(BUILD)/results/$$file; \
	  [ -f $$src ] || src=$(ROOT)/plots/data/$$file; [ -f $$src ] || continue; \
	  echo "plotting $$src"; $(ROOT)/tools/$$tool $$src $(BUILD)/plots/$${file%.*} || exit 1; \
	done

# Tests build in MODE=test (sanitizers, -Werror) with their own objects.
# The drivers a stage names in TESTED_DRIVERS (run_mlp.c) are built the same
# way for the tests that run them, which find them through TEST_DRIVERS.
TEST_DRIVER_DIR := $(BIN)/test-drivers-$(notdir $(CC))
TEST_DRIVERS := $(patsubst %.c,$(TEST_DRIVER_DIR)/%,$(TESTED_DRIVERS))
test:
	@$(ROOT)/tools/deps.sh stage quiet
	$(MAKE) --no-print-directory MODE=test test-build
	GEMM_STRASSEN_RULE= LSAN_OPTIONS=suppressions=$(abspath $(ROOT)/tests/lsan.supp):print_suppressions=0 \
	  TEST_DRIVERS=$(abspath $(TEST_DRIVER_DIR)) \
	  $(TEST_BIN) $(if $(TASK),--filter 'task_$(subst .,_,$(TASK))/*')

test-build: $(TEST_BIN) $(TEST_DRIVERS)

$(TEST_DRIVERS): $(TEST_DRIVER_DIR)/%: $(SOBJ)/%.o $(STAGE_OBJS) $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OBJ)/tests/%.o: $(ROOT)/tests/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I. -MMD -MP -c $< -o $@

$(TEST_BIN): $(OBJ)/tests/test_$(STAGE_NAME).o $(STAGE_OBJS) $(COMMON_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcriterion $(LDLIBS) -o $@


# The kit ships the student edition of the book, built (and checked to hold
# no answer) first.
KIT := $(BUILD)/assignments/$(STAGE_NAME)
assignment:
	@$(MAKE) --no-print-directory -C $(ROOT) book EDITION=student
	python3 $(ROOT)/tools/make_assignment.py $(ROOT) $(STAGE_NAME) $(KIT) \
	  --book $(BUILD)/book-student

# A stage graded on more than GEMM speed (stage 07: accuracy and epoch time)
# sets GRADE_TOOL to its own script, called with the same arguments.
GRADE_TOOL ?= $(ROOT)/tools/grade.sh
# FORMAT=gradescope: one test per task and the speed of the tasks' code
# against the book's solution (tools/grade_platform.py), written as
# Gradescope's results.json to RESULTS_JSON. The solution is GRADE_REFERENCE,
# a stage directory with the solutions in: in the repository, this one.
RESULTS_JSON ?= $(BUILD)/results/results.json
GRADE_REFERENCE ?= $(if $(shell grep -rl 'BEGIN[ ]SOLUTION' $(ROOT)/common 2>/dev/null | head -n 1),$(CURDIR))
GRADE_ROUNDS ?= 3
grade:
	@$(if $(GRADE_BUILD),,echo "error: stages/$(STAGE_NAME)/Makefile declares no GRADE_BUILD" >&2; exit 2)
ifeq ($(FORMAT),)
	$(GRADE_TOOL) "$(MAKE)" $(STAGE) "$(GRADE_KERNELS)" "$(GRADE_SIZE)" "$(GRADE_BUILD)"
else
	python3 $(ROOT)/tools/grade_platform.py $(CURDIR) --format $(FORMAT) --out $(RESULTS_JSON) \
	  --kernels "$(GRADE_KERNELS)" --size "$(GRADE_SIZE)" --rounds $(GRADE_ROUNDS) \
	  $(if $(GRADE_REFERENCE),--reference $(GRADE_REFERENCE))
endif

# The stage's kit, graded on Gradescope (a zip: setup.sh, run_autograder,
# the kit with its solutions for the reference) and on GitHub Classroom (the
# kit with .github/workflows/classroom.yml). Both from tools/platforms.py.
autograder: assignment
	python3 $(ROOT)/tools/platforms.py autograder $(ROOT) $(STAGE_NAME) $(KIT) \
	  $(BUILD)/assignments/$(STAGE_NAME)-autograder.zip
classroom: assignment
	python3 $(ROOT)/tools/platforms.py classroom $(ROOT) $(STAGE_NAME) $(KIT)

clean:
	rm -rf $(BIN) $(BUILD)/obj/*/stage-$(STAGE) $(RESULTS)
.SECONDARY:
