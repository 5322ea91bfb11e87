# common/blas/blas.mk: the book's GEMM as a BLAS. Included by the top-level
# Makefile, after common/build.mk.
#
#   make blas          build/lib/libmmblas.so: sgemm_ and cblas_sgemm over gemm()
#   make blas-check    netlib's tester (xblat3s, xscblat3; Debian's libblas-test)
#                      runs SGEMM and cblas_sgemm through it
#
# A shared library's code must run at any address, so its objects are built
# apart from the programs', with -fPIC, in the release build's flags.

BLAS_LIB := $(BUILD)/lib/libmmblas.so
BLAS_OBJ := $(BUILD)/obj/$(notdir $(CC))-pic
# gemm() and what it stands on; not the backend table, which reaches OpenBLAS
# and the command line.
BLAS_SRCS := common/blas/mmblas.c common/blas/abi/exports.c common/base/cpu.c \
             $(filter-out %/gemm_backend.c,$(wildcard common/gemm/*.c))
BLAS_OBJS := $(patsubst %.c,$(BLAS_OBJ)/%.o,$(BLAS_SRCS))

.PHONY: blas blas-check blas-test

blas:
	@tools/deps.sh build quiet
	@$(MAKE) --no-print-directory $(BLAS_LIB)

$(BLAS_OBJ)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) -O2 -fPIC $(isa_flags) $(extra_flags) -MMD -MP -c $< -o $@

# One library for every compiler: a note of the objects it was last linked
# from makes a build with another compiler (CC=clang) link it again, and the
# next build with the first too (as common/stage.mk does for the programs).
BLAS_LINKED_FROM := $(BUILD)/lib/linked-from
$(shell mkdir -p $(BUILD)/lib && echo '$(BLAS_OBJ)' > $(BLAS_LINKED_FROM).new && \
  { cmp -s $(BLAS_LINKED_FROM).new $(BLAS_LINKED_FROM) && rm -f $(BLAS_LINKED_FROM).new || \
    mv $(BLAS_LINKED_FROM).new $(BLAS_LINKED_FROM); })

# --no-undefined: every name the library uses is found now, not when a
# program loads it. OpenBLAS is linked in for the BLAS's other routines
# (xerbla_, cblas_xerbla, and all the rest) wherever this library is the
# only BLAS a program was given.
$(BLAS_LIB): $(BLAS_OBJS) common/blas/abi/exports.map $(BLAS_LINKED_FROM)
	@mkdir -p $(@D)
	$(CC) -shared -fopenmp -Wl,--version-script=common/blas/abi/exports.map -Wl,--no-undefined \
	  $(BLAS_OBJS) -Wl,--no-as-needed $(BLAS_LIBS) -lm -o $@
	@echo "library: $@ (sgemm_, cblas_sgemm)"

-include $(wildcard $(BLAS_OBJ)/common/*/*.d $(BLAS_OBJ)/common/*/*/*.d)

# The tester must be installed for blas-check (it installs it, or says how);
# `make test` runs blas-test, which skips it with a note when it is missing.
blas-check:
	@tools/deps.sh blas quiet
	@$(MAKE) --no-print-directory blas-test

blas-test: blas
	@tools/blas-check.sh $(BLAS_LIB) $(BUILD)/blas-check
