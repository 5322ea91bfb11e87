#ifndef CPU_H
#define CPU_H

// The instruction sets our kernels are written for. One binary holds every
// x86-64 path and picks at run time, so it runs on any x86-64 machine.
enum isa { ISA_SCALAR, ISA_AVX2, ISA_AVX512, ISA_NEON, ISA_COUNT };

const char *isa_name(enum isa isa);
// 0 and *out set when name is "scalar", "avx2", "avx512" or "neon"; -1 otherwise.
int isa_parse(const char *name, enum isa *out);
// 1 when this CPU (and this build) can run code for isa.
int isa_supported(enum isa isa);
// The widest supported one: what "the machine's peak" is measured with.
enum isa isa_best(void);

// The program's ISA: the widest this CPU runs, unless isa_force (the --isa
// flag) chose another. Each kernel family (the GEMM's micro-kernels, the
// elementwise loops, the optimizers, the convolutions, the pooling) keeps a
// table of its kernels indexed by enum isa and picks the entry of the
// context it is handed; the default context takes this one
// (gemm_context_default in gemm_parts.h, whose ISA tape_config_default
// gives the ops' loops too).
enum isa isa_active(void);
// Makes isa the program's. Returns 0, or -1 (and changes nothing) when this
// CPU or build cannot run it.
int isa_force(enum isa isa);

// Every kernel family counts, by ISA, each time it hands out a kernel from
// its table or runs a GEMM on its context's micro-kernel, so that a test
// can see which instruction sets a training step ran on.
void isa_count_use(enum isa isa);
long isa_uses(enum isa isa);
void isa_uses_clear(void);
// "error: this CPU (AMD EPYC) cannot run avx512 code; it runs scalar, avx2"
// into buf: the one message every program gives for an ISA it lacks.
void isa_unsupported_message(enum isa isa, char *buf, int size);
// float lanes in one vector register of isa.
int isa_lanes(enum isa isa);

// "AMD EPYC 9R45" or similar; "unknown CPU" when the system does not say.
const char *cpu_model(void);
// "family 25, model 1, stepping 1" (x86's CPUID numbers, as /proc/cpuinfo
// gives them): what tells two CPUs apart whose model string a virtual
// machine cuts to "AMD EPYC". "unknown" when the system does not say.
const char *cpu_id(void);
int cpu_count(void);

// Data cache sizes in bytes as the system reports them (sysfs, then sysconf);
// a level the system does not report is filled with a typical size and
// `assumed` set, so callers can say so. L3 is capped at CPU_L3_MAX, the most
// one core shares today (a virtual machine may report a whole package's).
enum { CPU_L3_MAX = 32 * 1024 * 1024 };
struct cpu_caches {
    long l1d, l2, l3;
    long line;
    int assumed;
};
struct cpu_caches cpu_caches(void);

#endif
