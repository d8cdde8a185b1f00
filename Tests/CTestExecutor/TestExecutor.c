// A wider global executor for the test binary.
//
// swift-testing starts every test at once and lets the Swift runtime schedule them; on Linux the runtime's
// global executor runs jobs on libdispatch's pool, one thread per core and no more (a job that blocks holds
// its thread). Most tests here block: they wait for a tool's process, a dev server, a child's output. On this
// two-core machine that ran two tests at a time with the processors idle about half the run. Installed before
// main (a constructor), this executor runs the global jobs on STARLINE_TEST_WIDTH threads instead (default 8;
// 0 keeps the runtime's). The tools are not touched: it is linked into the test binary only.
//
// The runtime's hooks (swift/Runtime/Concurrency.h; exported by libswift_Concurrency): a hook receives the job
// and the original function; a job is run with swift_job_run on the generic executor. All of them use the
// Swift calling convention, which clang spells swiftcall.

#include "CTestExecutor.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef struct { void *identity; uintptr_t implementation; } SerialExecutorRef;
typedef __attribute__((swiftcall)) void (*EnqueueOriginal)(void *job);
typedef __attribute__((swiftcall)) void (*EnqueueHook)(void *job, EnqueueOriginal original);
typedef __attribute__((swiftcall)) void (*DelayOriginal)(unsigned long long delay, void *job);
typedef __attribute__((swiftcall)) void (*DelayHook)(unsigned long long delay, void *job, DelayOriginal original);
typedef __attribute__((swiftcall)) void (*DeadlineOriginal)(
    long long sec, long long nsec, long long tsec, long long tnsec, int clock, void *job);
typedef __attribute__((swiftcall)) void (*DeadlineHook)(
    long long sec, long long nsec, long long tsec, long long tnsec, int clock, void *job, DeadlineOriginal original);

extern __attribute__((swiftcall)) void swift_job_run(void *job, SerialExecutorRef executor);
extern __attribute__((swiftcall)) void swift_get_time(long long *seconds, long long *nanoseconds, int clock);
extern EnqueueHook swift_task_enqueueGlobal_hook;
extern DelayHook swift_task_enqueueGlobalWithDelay_hook;
extern DeadlineHook swift_task_enqueueGlobalWithDeadline_hook;

/// A job waiting for a thread, or (with `due`) for its time.
struct Entry {
    void *job;
    uint64_t due;  // CLOCK_MONOTONIC nanoseconds; 0 for a job that is ready
    struct Entry *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t readyChanged;  // on CLOCK_MONOTONIC, like the timer's waits
static pthread_cond_t timersChanged;
static struct Entry *readyHead, *readyTail;
static struct Entry *timers;  // sorted by due
static int width;

static uint64_t monotonicNow(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/// Called with the lock held.
static void pushReady(struct Entry *entry) {
    entry->next = NULL;
    if (readyTail) readyTail->next = entry; else readyHead = entry;
    readyTail = entry;
    pthread_cond_signal(&readyChanged);
}

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!readyHead) pthread_cond_wait(&readyChanged, &lock);
        struct Entry *entry = readyHead;
        readyHead = entry->next;
        if (!readyHead) readyTail = NULL;
        pthread_mutex_unlock(&lock);
        void *job = entry->job;
        free(entry);
        swift_job_run(job, (SerialExecutorRef){0, 0});
    }
    return NULL;
}

/// Moves each job whose time has come to the ready queue.
static void *timer(void *unused) {
    (void)unused;
    pthread_mutex_lock(&lock);
    for (;;) {
        uint64_t now = monotonicNow();
        while (timers && timers->due <= now) {
            struct Entry *entry = timers;
            timers = entry->next;
            pushReady(entry);
        }
        if (!timers) {
            pthread_cond_wait(&timersChanged, &lock);
        } else {
            struct timespec until = {(time_t)(timers->due / 1000000000u), (long)(timers->due % 1000000000u)};
            pthread_cond_timedwait(&timersChanged, &lock, &until);
        }
    }
    return NULL;
}

static struct Entry *entry(void *job, uint64_t due) {
    struct Entry *entry = malloc(sizeof *entry);
    if (!entry) abort();  // as the runtime does when it cannot allocate a job's storage
    entry->job = job;
    entry->due = due;
    return entry;
}

static __attribute__((swiftcall)) void enqueue(void *job, EnqueueOriginal original) {
    (void)original;
    struct Entry *ready = entry(job, 0);
    pthread_mutex_lock(&lock);
    pushReady(ready);
    pthread_mutex_unlock(&lock);
}

static void enqueueAt(void *job, uint64_t due) {
    struct Entry *later = entry(job, due);
    pthread_mutex_lock(&lock);
    struct Entry **link = &timers;
    while (*link && (*link)->due <= due) link = &(*link)->next;
    later->next = *link;
    *link = later;
    pthread_cond_signal(&timersChanged);
    pthread_mutex_unlock(&lock);
}

static __attribute__((swiftcall)) void enqueueWithDelay(unsigned long long delay, void *job, DelayOriginal original) {
    (void)original;
    enqueueAt(job, monotonicNow() + (delay > UINT64_MAX / 2 ? UINT64_MAX / 2 : delay));
}

/// The deadline is on the runtime's clock `clock` (continuous or suspending): what is left of it, read on that
/// clock, is waited on CLOCK_MONOTONIC.
static __attribute__((swiftcall)) void enqueueWithDeadline(
    long long sec, long long nsec, long long tsec, long long tnsec, int clock, void *job, DeadlineOriginal original) {
    (void)tsec;
    (void)tnsec;
    (void)original;
    long long nowSec = 0, nowNsec = 0;
    swift_get_time(&nowSec, &nowNsec, clock);
    long long left = 0;
    if (sec > nowSec || (sec == nowSec && nsec > nowNsec)) {
        long long seconds = sec - nowSec;
        left = seconds > 1000000000LL ? 1000000000LL * 1000000000LL : seconds * 1000000000LL + (nsec - nowNsec);
    }
    enqueueAt(job, monotonicNow() + (uint64_t)(left > 0 ? left : 0));
}

int starline_test_executor_width(void) { return width; }

__attribute__((constructor)) static void installTestExecutor(void) {
    const char *setting = getenv("STARLINE_TEST_WIDTH");
    long wanted = 8;
    if (setting && *setting) {
        char *end = NULL;
        errno = 0;
        wanted = strtol(setting, &end, 10);
        if (errno || *end || wanted < 0 || wanted > 256) wanted = 8;
    }
    if (wanted == 0) return;
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&readyChanged, &monotonic);
    pthread_cond_init(&timersChanged, &monotonic);
    pthread_condattr_destroy(&monotonic);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    // The runtime's pool threads have 8 MiB stacks, like the main thread; debug builds of deep parsers need it.
    pthread_attr_setstacksize(&attributes, 8u << 20);
    pthread_t thread;
    if (pthread_create(&thread, &attributes, timer, NULL) != 0) return;
    for (long i = 0; i < wanted; i++) {
        if (pthread_create(&thread, &attributes, worker, NULL) != 0) break;
        width++;
    }
    pthread_attr_destroy(&attributes);
    if (width == 0) return;
    swift_task_enqueueGlobal_hook = enqueue;
    swift_task_enqueueGlobalWithDelay_hook = enqueueWithDelay;
    swift_task_enqueueGlobalWithDeadline_hook = enqueueWithDeadline;
}
