# Compile rules shared by every stage Makefile (and the top-level one).
# The includer sets ROOT (the repository root, relative or absolute).
#
# MODE=release (default) builds for benchmarks; MODE=test adds the
# sanitizers and -Werror. Objects go under build/obj/<compiler>-<mode>/ so
# gcc, clang and the two modes never mix.

ifeq ($(origin CC),default)
  CC := gcc
endif
MODE ?= release
BUILD := $(ROOT)/build
# EMULATE=avx512 (`make test-avx512`): the AVX-512 kernels built for AVX2,
# with SIMDe standing in for their intrinsics, on a CPU without AVX-512.
OBJ := $(BUILD)/obj/$(notdir $(CC))-$(MODE)$(if $(EMULATE),-emulated-$(EMULATE))
ARCH := $(shell $(CC) -dumpmachine 2>/dev/null | cut -d- -f1)

# The commit the programs measure, for their results files' `#` lines
# (common/base/machine.c); `make check-book` compares it with the code's
# history. Worked out once, by the first make, and handed down through the
# environment; "-dirty" when the tree had changes not committed.
RUN_COMMIT := $(or $(RUN_COMMIT),$(shell git -C $(ROOT) describe --always --dirty --abbrev=12 \
  --exclude '*' 2>/dev/null),unknown)
export RUN_COMMIT

# A call to an undeclared function is always an error: C would otherwise
# assume it returns int, and a pointer returned through it is cut in half.
WARN := -Wall -Wextra -Wpedantic -Werror=implicit-function-declaration -Werror=int-conversion $(if $(WERROR),-Werror)

# common/ is grouped by layer (base/, loops/, gemm/, ...); every group's
# headers are on the include path.
COMMON_DIRS := $(patsubst %/,%,$(sort $(dir $(wildcard $(ROOT)/common/*/*.[ch]))))

# OpenBLAS's own headers and library, as its pkg-config file names them.
# Debian's netlib BLAS (libblas-dev) installs a cblas.h of its own on the
# default include path, which does not declare OpenBLAS's extensions.
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS := $(or $(shell pkg-config --libs openblas 2>/dev/null),-lopenblas)

CFLAGS_BASE := -std=c17 -g -fopenmp $(addprefix -I,$(COMMON_DIRS)) $(BLAS_CFLAGS) $(WARN)
SANITIZE := -fsanitize=address,undefined
# The test build also poisons planned memory: a buffer is filled with NaN
# when its tensor dies (common/autograd/memory.c), so a read after that fails.
ifeq ($(MODE),test)
  CFLAGS_MODE := -O1 -Werror $(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer \
                 -DTAPE_POISON
  LDFLAGS := $(SANITIZE)
else
  CFLAGS_MODE := -O2
  LDFLAGS :=
endif
OPT ?=
CFLAGS := $(CFLAGS_BASE) $(CFLAGS_MODE)
LDLIBS := -fopenmp $(BLAS_LIBS) -lz -lm

# Each ISA's code lives in files named *_avx2.c, *_avx512.c, *_neon.c and is
# built with that ISA's flags only; the program picks a path at run time.
ifeq ($(ARCH),x86_64)
  ISA_avx2 := -mavx2 -mfma
  ISA_avx512 := -mavx512f -mfma
endif
# -Wno-psabi: clang warns that a 512-bit vector passed without AVX-512 is
# passed differently; every file that passes one is built the same way here.
ifeq ($(EMULATE),avx512)
  ISA_avx512 := -mavx2 -mfma -Wno-psabi -include $(abspath $(ROOT))/tests/avx512_emulated.h
  CFLAGS += -DEMULATE_AVX512
else ifneq ($(EMULATE),)
  $(error EMULATE=$(EMULATE): the one instruction set this build can emulate is avx512)
endif
isa_flags = $(if $(filter %_avx512.c,$<),$(ISA_avx512),$(if $(filter %_avx2.c,$<),$(ISA_avx2)))
# The scalar peak must stay scalar: no auto-vectorization.
# listing: o3
# At -O2, gcc 12 vectorizes only loops that need no scalar tail, and keeps a
# register block of C in registers only when it unrolls the i and j loops
# completely: the tiled (chapter 2) and SIMD (chapter 3) kernels need -O3.
# So do the sums of blocks and the additions into C of Strassen's algorithm
# (chapter 5), plain loops of unknown length, col2im's (chapter 8), and the
# Winograd transforms (chapter 8), whose loops over a tile's six rows (and a
# filter's three) must unroll for their values to stay in registers.
extra_flags = $(if $(filter %peak_scalar.c,$<),-fno-tree-vectorize) \
              $(if $(filter %/tiled.c %/simd.c %/simd_scalar.c %/simd_avx2.c %/simd_avx512.c \
                            %/simd_neon.c %/gemm_strassen.c %/gemm_strassen_fused.c \
                            %/im2col.c %/conv_winograd.c %/conv_winograd_scalar.c \
                            %/conv_winograd_avx2.c,$<),-O3)
# end listing

COMMON_SRCS := $(wildcard $(ROOT)/common/*/*.c)
COMMON_OBJS := $(patsubst $(ROOT)/common/%.c,$(OBJ)/common/%.o,$(COMMON_SRCS))

# The CSV header records how the code was compiled.
$(OBJ)/common/base/machine.o: OBJ_DEF = -DMACHINE_CFLAGS='"$(CFLAGS_MODE) $(OPT)"'
# Nothing of where the checkout is gets compiled in: a program finds its
# checkout from its own location (common/base/checkout.c), so a checkout
# moved or copied after `make` runs as it is.

# Every object depends on the flags it was built with, so a change of flags
# (OpenBLAS's headers arriving after a first build, say) rebuilds it.
FLAGS_STAMP := $(OBJ)/flags
$(shell mkdir -p $(OBJ) && echo '$(CC) $(BLAS_CFLAGS) $(CFLAGS_MODE) $(WARN) $(LDLIBS)' > $(FLAGS_STAMP).new && \
  { cmp -s $(FLAGS_STAMP).new $(FLAGS_STAMP) && rm -f $(FLAGS_STAMP).new || mv $(FLAGS_STAMP).new $(FLAGS_STAMP); })

$(OBJ)/common/%.o: $(ROOT)/common/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(isa_flags) $(extra_flags) $(OBJ_DEF) -MMD -MP -c $< -o $@

-include $(wildcard $(OBJ)/common/*/*.d)

# Dependency files are written by the compiler, never made by a rule.
%.d: ;
