# common/blas/blas.mk: the book's GEMM as a BLAS. Included after
# common/build.mk by the top-level Makefile and by stage 05's, whose
# `make stage-05 preload` puts it under NumPy and PyTorch.
#
#   make blas          build/lib/libmmblas.so: sgemm_ and cblas_sgemm over gemm()
#   make blas-check    netlib's tester (xblat3s, xscblat3; Debian's libblas-test)
#                      runs SGEMM and cblas_sgemm through it
#
# A shared library's code must run at any address, so its objects are built
# apart from the programs', with -fPIC, in the release build's flags.

BLAS_LIB := $(BUILD)/lib/libmmblas.so
BLAS_OBJ := $(BUILD)/obj/$(notdir $(CC))-pic
# gemm() and what it stands on; not the backend table, which reaches OpenBLAS,
# nor its flags, which reach the command line.
BLAS_SRCS := $(ROOT)/common/blas/mmblas.c $(ROOT)/common/blas/abi/exports.c \
             $(ROOT)/common/base/cpu.c \
             $(filter-out %/gemm_backend.c %/gemm_flags.c,$(wildcard $(ROOT)/common/gemm/*.c))
BLAS_OBJS := $(patsubst $(ROOT)/%.c,$(BLAS_OBJ)/%.o,$(BLAS_SRCS))
BLAS_MAP := $(ROOT)/common/blas/abi/exports.map

.PHONY: blas blas-check blas-test

blas:
	@$(ROOT)/tools/deps.sh build quiet
	@$(MAKE) --no-print-directory $(BLAS_LIB)

$(BLAS_OBJ)/%.o: $(ROOT)/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) -O2 -fPIC $(isa_flags) $(extra_flags) -MMD -MP -c $< -o $@

# One library for every compiler: a note of the objects it was last linked
# from makes a build with another compiler (CC=clang) link it again, and the
# next build with the first too (as common/stage.mk does for the programs).
BLAS_LINKED_FROM := $(BUILD)/lib/linked-from
$(shell mkdir -p $(BUILD)/lib && echo '$(abspath $(BLAS_OBJ))' > $(BLAS_LINKED_FROM).new && \
  { cmp -s $(BLAS_LINKED_FROM).new $(BLAS_LINKED_FROM) && rm -f $(BLAS_LINKED_FROM).new || \
    mv $(BLAS_LINKED_FROM).new $(BLAS_LINKED_FROM); })

# --no-undefined: every name the library uses is found now, not when a
# program loads it. OpenBLAS is linked in for the BLAS's other routines
# (xerbla_, cblas_xerbla, and all the rest) wherever this library is the
# only BLAS a program was given.
$(BLAS_LIB): $(BLAS_OBJS) $(BLAS_MAP) $(BLAS_LINKED_FROM)
	@mkdir -p $(@D)
	$(CC) -shared -fopenmp -Wl,--version-script=$(BLAS_MAP) -Wl,--no-undefined \
	  $(BLAS_OBJS) -Wl,--no-as-needed $(BLAS_LIBS) -lm -o $@
	@echo "library: $@ (sgemm_, cblas_sgemm)"

-include $(wildcard $(BLAS_OBJ)/common/*/*.d $(BLAS_OBJ)/common/*/*/*.d)

# The tester must be installed for blas-check (it installs it, or says how);
# `make test` runs blas-test, which skips it with a note when it is missing.
blas-check:
	@$(ROOT)/tools/deps.sh blas quiet
	@$(MAKE) --no-print-directory blas-test

blas-test: blas
	@$(ROOT)/tools/blas-check.sh $(BLAS_LIB) $(BUILD)/blas-check
