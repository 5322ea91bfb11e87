// The --memory flags: the tape's memory modes as a flag's choices.
#include "tape.h"
#include "tape_flags.h"

// In the order of enum memory_mode, NULL-terminated.
static const char *const *memory_choices(void)
{
    static const char *names[3];
    names[0] = tape_memory_name(MEMORY_ARENA);
    names[1] = tape_memory_name(MEMORY_PLANNED);
    return names;
}

struct flag tape_memory_flag(int *mode)
{
    return flag_choice("--memory", "MODE", mode, memory_choices(), NULL,
                       "where a step's tensors live: the arena, or planned offsets that "
                       "share bytes");
}

struct flag tape_memories_flag(struct flag_list *modes)
{
    return flag_choices("--memory", "A,B", modes, memory_choices(), NULL,
                        "memory modes to measure, interleaved");
}
