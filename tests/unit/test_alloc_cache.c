/* The context's allocation cache (runtime/array.c): buffers that are freed together and made
 * again, as a jitted function's values are on every call, keep their pages: no page faults
 * after the first round, at every size below the 2 MB pages (above them the cache keeps whole
 * pages of its own). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "kernel_test_util.h"

static long minor_faults(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* Rounds of `count` arrays of `floats` elements each, written whole and then all released;
 * returns the page faults of the rounds after the first. */
static long faults_of_rounds(ax_ctx *cx, int64_t floats, int count, int rounds) {
    ax_array *a[64];
    long before = 0;
    for (int r = 0; r < rounds; r++) {
        if (r == 1) before = minor_faults();
        for (int i = 0; i < count; i++) {
            a[i] = ax_array_new(cx, AX_F32, 1, (int64_t[]){floats});
            assert_non_null(a[i]);
            memset(ax_array_data(a[i]), r + i, (size_t)floats * 4);
        }
        for (int i = 0; i < count; i++) {
            const unsigned char *d = ax_array_data(a[i]);
            assert_int_equal(d[0], (unsigned char)(r + i));
            assert_int_equal(d[floats * 4 - 1], (unsigned char)(r + i));
            ax_array_release(a[i]);
        }
    }
    return minor_faults() - before;
}

/* 16 buffers of 64 KB (the SGD step's 128 x 128 values) and 8 of 1 MB, 20 rounds each: a
 * megabyte freed at the top of the heap went back to the system after every round and was
 * faulted in again (~256 faults a round). */
static void test_freed_buffers_keep_their_pages(void **state) {
    ax_ctx *cx = *state;
    long f64k = faults_of_rounds(cx, 16384, 16, 21);
    long f1m = faults_of_rounds(cx, 262144, 8, 21);
    print_message("page faults in 20 rounds: %ld (64 KB buffers), %ld (1 MB buffers)\n", f64k, f1m);
    assert_true(f64k < 200);
    assert_true(f1m < 200);
}

/* Sizes around every class boundary hold their data; more than the cache keeps is freed
 * (each buffer is checked when it is made again from the cache). */
static void test_sizes_between_classes(void **state) {
    ax_ctx *cx = *state;
    static const int64_t sizes[] = {2047, 2048, 2049, 4096, 100000, 262144, 262145, 400000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) faults_of_rounds(cx, sizes[k], 64, 3);
}

/* Rounds of 40 MB results after four other large sizes were freed: the cache, full of those,
 * makes room for the new size (it kept the old ones and dropped each new buffer, whose pages
 * were faulted in again every round: 20 faults of 2 MB pages a round, or 10240 of 4 KB). */
static void test_large_cache_makes_room_for_new_sizes(void **state) {
    ax_ctx *cx = *state;
    static const int64_t earlier[] = {1 << 20, 2 << 20, 3 << 20, 4 << 20}; /* floats: 4-16 MB */
    for (size_t k = 0; k < sizeof earlier / sizeof *earlier; k++)
        faults_of_rounds(cx, earlier[k], 1, 1);
    long faults = faults_of_rounds(cx, 10 << 20, 1, 11);
    print_message("page faults in 10 rounds of 40 MB: %ld\n", faults);
    assert_true(faults < 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_freed_buffers_keep_their_pages, setup_ctx,
                                        teardown_ctx),
        cmocka_unit_test_setup_teardown(test_sizes_between_classes, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_large_cache_makes_room_for_new_sizes, setup_ctx,
                                        teardown_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
