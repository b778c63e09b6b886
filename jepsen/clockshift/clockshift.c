// libraftlock-clockshift.so: moves one process's wall clock while it runs, for the lock lab's
// clock faults (docs/lock-lab.md "The faults").
//
// Preloaded (LD_PRELOAD) into a server or a worker with RAFTLOCK_CLOCKSHIFT_FILE naming a small
// file that the lab rewrites. CLOCK_REALTIME (clock_gettime, gettimeofday, time) then reads
//
//     fake(real) = base_fake_ns + (real - base_real_ns) * rate_ppm / 1e6
//
// so the lab can step the clock (a new base_fake_ns) or make it run slow (rate_ppm < 1e6) without
// a discontinuity. Monotonic clocks are never touched: an NTP step or a drifting RTC moves the
// wall clock only, and timers, sleeps and timeouts keep working.
//
// Written in C, not C++: it is loaded into Redis, PostgreSQL and Python, which should not get a
// C++ runtime injected. It allocates nothing and resolves the real clock_gettime lazily; while
// that resolution runs (dlsym may call malloc, and jemalloc calls clock_gettime while it starts:
// the recursion that makes libfaketime abort inside Redis) the raw system call answers instead.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

// The file's layout, little-endian, written by jepsen/locklab/clockshift.py. `seq` is a seqlock:
// odd while the lab rewrites the other fields.
struct shift_file {
    uint64_t magic;  // kMagic
    uint64_t seq;
    int64_t base_real_ns;
    int64_t base_fake_ns;
    int64_t rate_ppm;
};

static const uint64_t kMagic = 0x314b434f4c43524cULL;  // "RLCLOCK1"
static const int64_t kNsPerS = 1000000000;
// A reader that keeps finding the lab mid-write gives up and reads the true clock: the lab's
// writes take microseconds, so this bound is never reached in practice.
static const int kSeqlockTriesMax = 10000;

typedef int (*clock_gettime_fn)(clockid_t, struct timespec*);

static _Atomic(clock_gettime_fn) real_clock_gettime;
static _Atomic(const struct shift_file*) mapped;
static _Atomic int map_failed;
static __thread int resolving __attribute__((tls_model("initial-exec")));

static int raw_clock_gettime(clockid_t clock, struct timespec* ts) {
    return (int)syscall(SYS_clock_gettime, clock, ts);
}

static int true_clock_gettime(clockid_t clock, struct timespec* ts) {
    clock_gettime_fn fn = atomic_load_explicit(&real_clock_gettime, memory_order_acquire);
    if (fn == NULL && !resolving) {
        resolving = 1;
        fn = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        resolving = 0;
        if (fn != NULL) {
            atomic_store_explicit(&real_clock_gettime, fn, memory_order_release);
        }
    }
    return fn != NULL ? fn(clock, ts) : raw_clock_gettime(clock, ts);
}

// The lab's file, mapped read-only on first use; NULL when there is none (then the clock is true).
static const struct shift_file* shift(void) {
    const struct shift_file* file = atomic_load_explicit(&mapped, memory_order_acquire);
    if (file != NULL || atomic_load_explicit(&map_failed, memory_order_relaxed)) {
        return file;
    }
    const char* path = getenv("RAFTLOCK_CLOCKSHIFT_FILE");
    int fd = path != NULL ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    void* p = MAP_FAILED;
    if (fd >= 0) {
        p = mmap(NULL, sizeof(struct shift_file), PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
    }
    if (p == MAP_FAILED || ((const struct shift_file*)p)->magic != kMagic) {
        atomic_store_explicit(&map_failed, 1, memory_order_relaxed);
        return NULL;
    }
    // Two threads may both map the file; the loser's mapping stays (a few bytes, once).
    const struct shift_file* expected = NULL;
    if (!atomic_compare_exchange_strong(&mapped, &expected, (const struct shift_file*)p)) {
        return expected;
    }
    return (const struct shift_file*)p;
}

static int64_t shifted_ns(const struct shift_file* file, int64_t real_ns) {
    for (int tries = 0; tries < kSeqlockTriesMax; ++tries) {
        const volatile struct shift_file* f = file;
        uint64_t before = f->seq;
        atomic_thread_fence(memory_order_acquire);
        int64_t base_real = f->base_real_ns;
        int64_t base_fake = f->base_fake_ns;
        int64_t rate_ppm = f->rate_ppm;
        atomic_thread_fence(memory_order_acquire);
        if ((before & 1) == 0 && f->seq == before) {
            // 128-bit product: (real - base) can be hours of nanoseconds.
            __int128 elapsed = (__int128)(real_ns - base_real) * rate_ppm / 1000000;
            return base_fake + (int64_t)elapsed;
        }
    }
    return real_ns;
}

int clock_gettime(clockid_t clock, struct timespec* ts) {
    int rc = true_clock_gettime(clock, ts);
    if (rc != 0 || (clock != CLOCK_REALTIME && clock != CLOCK_REALTIME_COARSE) || resolving) {
        return rc;
    }
    const struct shift_file* file = shift();
    if (file == NULL) {
        return rc;
    }
    int64_t ns = shifted_ns(file, (int64_t)ts->tv_sec * kNsPerS + ts->tv_nsec);
    ts->tv_sec = ns / kNsPerS;
    ts->tv_nsec = ns % kNsPerS;
    return 0;
}

// glibc declares tv non-null, but callers pass NULL in practice and glibc's own tolerates it.
#pragma GCC diagnostic ignored "-Wnonnull-compare"
int gettimeofday(struct timeval* tv, void* tz) {
    (void)tz;  // obsolete; glibc fills nothing useful into it either
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0 && tv != NULL) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t* out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        return (time_t)-1;
    }
    if (out != NULL) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
