// The --gemm flags: the backend table's names as a flag's choices.
#include "gemm_backend.h"
#include "gemm_flags.h"

struct flag gemm_backend_flag(int *index)
{
    return flag_choice("--gemm", "NAME", index, gemm_backend_names(), gemm_backend_abouts(),
                       "the GEMM every matmul goes through");
}

struct flag gemm_backends_flag(struct flag_list *list)
{
    return flag_choices("--gemm", "A,B", list, gemm_backend_names(), gemm_backend_abouts(),
                        "only these GEMM backends");
}
