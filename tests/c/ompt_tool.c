/* Another OpenMP tool, for tests/races.rs: a library whose
 * ompt_start_tool only says that it was called. libomp asks the first
 * ompt_start_tool it finds; linked after oneside's library, this one is
 * started only when oneside's hands on to it (the race checker off). */
#include <stdio.h>

struct ompt_start_tool_result_t;

const struct ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime)
{
    (void)version;
    fprintf(stderr, "another tool was started by %s\n", runtime);
    return NULL;
}
