#ifndef ENV_H
#define ENV_H

#include "environment.h"

// Reads every variable of struct environment (base/environment.h), once, at
// the edge: a program's main, or the harness that is one. The one file of
// common/ that reads the environment. It also hands base/peak.c its cache
// file (peak_cache_use), which a process keeps for its whole run.
struct environment env_read(void);

#endif
