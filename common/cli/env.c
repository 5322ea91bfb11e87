// The environment, read in one place (cli/env.h).
#include <stdlib.h>

#include "env.h"
#include "peak.h"

// NULL for a variable that is unset or empty: both mean "not given".
static const char *given(const char *name)
{
    const char *value = getenv(name);
    return value != NULL && value[0] != '\0' ? value : NULL;
}

struct environment env_read(void)
{
    struct environment env = {
        .openblas_coretype = given("OPENBLAS_CORETYPE"),
        .openblas_l2_size = given("OPENBLAS_L2_SIZE"),
        .peak_cache = given("PEAK_CACHE"),
        .data_dir = given("DATA_DIR"),
        .cc = given("CC"),
        .lazy_cache = given("LAZY_CACHE"),
        .term = given("TERM"),
        .strassen_rule = given("GEMM_STRASSEN_RULE"),
        .run_id = given("RUN_ID"),
        .run_commit = given("RUN_COMMIT"),
    };
    peak_cache_use(env.peak_cache);
    return env;
}
