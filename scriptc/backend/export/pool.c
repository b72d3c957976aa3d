/* The thread count and start-up of the thread pool in a library made by `scriptc export` whose code runs
 * parallel regions (prange loops, large element-wise fusion groups). The pool itself is scriptc's own
 * (scriptc/backend/llvm/pool.py), compiled into the library as a second object; this file is compiled beside it
 * only when the library uses it.
 *
 * As in the Python process (scriptc/backend/llvm/threads.py): regions use SCRIPTC_NUM_THREADS threads when it is
 * set to a positive integer, else as many as the CPUs the process may run on; read once, when the library is
 * loaded (an invalid value is ignored here, where the JIT raises ValueError). `scriptc.load` then sets it to the
 * Python process's count and keeps it so (threads.py `follow`). The pool is initialised at load, and again in the
 * child after fork (which has none of the parent's workers). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

int64_t scriptc_pool_threads __asm__("scriptc.pool.threads") = 1;
void scriptc_pool_reset(void) __asm__("scriptc.pool.reset");

static int64_t scriptc_pool_default_threads(void) {
    const char *text = getenv("SCRIPTC_NUM_THREADS");
    if (text != NULL) {
        char *end;
        long long n = strtoll(text, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\n')
            end++;
        if (end != text && *end == 0 && n >= 1)
            return (int64_t)n;
    }
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int64_t)n : 1;
}

__attribute__((constructor)) static void scriptc_pool_on_load(void) {
    scriptc_pool_threads = scriptc_pool_default_threads();
    scriptc_pool_reset();
    pthread_atfork(NULL, NULL, scriptc_pool_reset);
}
