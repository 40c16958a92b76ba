/* Devices and collectives below the language: every device runs with its own context, the
 * exchange hands every device every contribution in device order (round after round, with
 * slow and fast devices), a failing device stops the others with its own error, devices that
 * skip a collective fail instead of hanging, and psum adds in device order. `make tsan` runs
 * this file under ThreadSanitizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../compiler/collectives.h"
#include "../../compiler/primitive.h"
#include "../../runtime/device.h"

enum { NDEV = 4, ROUNDS = 200 };

static ax_ctx *devices_ctx(int n) {
    ax_ctx *cx = ax_ctx_new();
    assert_non_null(cx);
    cx->ndevices = n;
    assert_int_equal(ax_local_device_count(cx), n);
    return cx;
}

typedef struct seen {
    ax_ctx *main;
    ax_ctx *ctx[NDEV];
    int64_t index[NDEV], size[NDEV];
    atomic_int ran;
} seen;

static int record(ax_ctx *dcx, int i, void *arg) {
    seen *s = arg;
    s->ctx[i] = dcx;
    s->index[i] = ax_device_group_index(dcx);
    s->size[i] = ax_device_group_size(dcx);
    atomic_fetch_add(&s->ran, 1);
    return 0;
}

/* Each device runs once, in its own context, and knows its place in the group. */
static void test_each_device_runs_once(void **state) {
    (void)state;
    ax_ctx *cx = devices_ctx(NDEV);
    for (int round = 0; round < 20; round++) {
        seen s = {.main = cx};
        atomic_init(&s.ran, 0);
        assert_int_equal(ax_devices_run(cx, NDEV, NULL, record, &s), 0);
        assert_int_equal(atomic_load(&s.ran), NDEV);
        for (int i = 0; i < NDEV; i++) {
            assert_ptr_equal(s.ctx[i], ax_device_context(cx, i));
            assert_ptr_not_equal(s.ctx[i], cx);
            assert_int_equal(s.index[i], i);
            assert_int_equal(s.size[i], NDEV);
        }
    }
    /* a subset of the devices, in the order given */
    seen s = {.main = cx};
    atomic_init(&s.ran, 0);
    int devs[2] = {3, 1};
    assert_int_equal(ax_devices_run(cx, 2, devs, record, &s), 0);
    assert_ptr_equal(s.ctx[0], ax_device_context(cx, 3));
    assert_ptr_equal(s.ctx[1], ax_device_context(cx, 1));
    assert_int_equal(s.size[0], 2);
    assert_false(ax_device_running(cx));
    ax_ctx_free(cx);
}

/* Round after round, every device receives every device's value of that round, in device
 * order; device i sleeps a little in some rounds so that fast devices run ahead to the next
 * exchange while slow ones still read the last one. */
static int exchange_rounds(ax_ctx *dcx, int i, void *arg) {
    (void)arg;
    int n = (int)ax_device_group_size(dcx);
    for (int r = 0; r < ROUNDS; r++) {
        ax_array *x = ax_array_scalar(dcx, AX_F64, 1000.0 * r + i);
        const void *const *parts;
        if (!x || ax_device_exchange(dcx, x, &parts)) return -1;
        ax_array_release(x); /* the exchange holds it until every device is done with it */
        if ((r + i) % 7 == 0) nanosleep(&(struct timespec){0, 20000}, NULL);
        for (int j = 0; j < n; j++)
            if (*(const double *)parts[j] != 1000.0 * r + j) {
                ax_error(dcx, AX_ERR_RUNTIME, "round %d: device %d got %g from device %d", r, i,
                         *(const double *)parts[j], j);
                return -1;
            }
    }
    return 0;
}

static void test_exchange_in_device_order(void **state) {
    (void)state;
    ax_ctx *cx = devices_ctx(NDEV);
    int rc = ax_devices_run(cx, NDEV, NULL, exchange_rounds, NULL);
    if (rc) fail_msg("%s", cx->err.message);
    ax_ctx_free(cx);
}

/* Device 2 fails before the first collective; the others, waiting in it, stop; the error
 * that reaches the caller is device 2's own. */
static int fail_on_two(ax_ctx *dcx, int i, void *arg) {
    (void)arg;
    if (i == 2) {
        ax_error(dcx, AX_ERR_VALUE, "device two gives up");
        return -1;
    }
    ax_array *x = ax_array_scalar(dcx, AX_F32, 1.0);
    const void *const *parts;
    int rc = x ? ax_device_exchange(dcx, x, &parts) : -1;
    ax_array_release(x);
    return rc;
}

static void test_a_failure_stops_the_others(void **state) {
    (void)state;
    ax_ctx *cx = devices_ctx(NDEV);
    assert_int_equal(ax_devices_run(cx, NDEV, NULL, fail_on_two, NULL), -1);
    assert_int_equal(cx->err.kind, AX_ERR_VALUE);
    assert_string_equal(cx->err.message, "device two gives up");
    ax_error_clear(cx);
    /* the devices are fine for the next run */
    assert_int_equal(ax_devices_run(cx, NDEV, NULL, exchange_rounds, NULL), 0);
    ax_ctx_free(cx);
}

/* Device 0 skips the collective the others wait in: an error, not a hang. */
static int skip_on_zero(ax_ctx *dcx, int i, void *arg) {
    (void)arg;
    if (i == 0) return 0;
    ax_array *x = ax_array_scalar(dcx, AX_F32, 1.0);
    const void *const *parts;
    int rc = x ? ax_device_exchange(dcx, x, &parts) : -1;
    ax_array_release(x);
    return rc;
}

static void test_devices_out_of_step_fail(void **state) {
    (void)state;
    ax_ctx *cx = devices_ctx(NDEV);
    assert_int_equal(ax_devices_run(cx, NDEV, NULL, skip_on_zero, NULL), -1);
    assert_non_null(strstr(cx->err.message, "did not reach the same collectives"));
    ax_ctx_free(cx);
}

/* psum on the devices (the primitive's eager rule, as a body's program calls it): the sum of
 * the devices' values in device order, the same bits on every device. 1e8 + 1 rounds to 1e8
 * in float32, so only the order 0, 1, 2, 3 gives 1. */
typedef struct psum_job {
    const ax_axis_spec *spec;
    float got[NDEV];
} psum_job;

static int psum_on_device(ax_ctx *dcx, int i, void *arg) {
    psum_job *j = arg;
    static const float values[NDEV] = {1e8f, 1.0f, -1e8f, 1.0f};
    ax_axis_frame f = {.kind = AX_AXIS_DEVICE, .name = j->spec->names[0], .size = NDEV};
    if (ax_axis_push(dcx, &f)) return -1;
    ax_array *x = ax_array_scalar(dcx, AX_F32, values[i]);
    ax_array *y = x ? ax_collective(dcx, AX_P_PSUM, x, j->spec, NULL) : NULL;
    ax_axis_pop(dcx, &f);
    if (y) j->got[i] = *(const float *)ax_array_data(y);
    ax_array_release(x);
    ax_array_release(y);
    return y ? 0 : -1;
}

static void test_psum_adds_in_device_order(void **state) {
    (void)state;
    ax_ctx *cx = devices_ctx(NDEV);
    const char *name = "i";
    psum_job j = {.spec = ax_axis_spec_make(cx, 1, &name, 0, NULL, 0, NULL)};
    assert_non_null(j.spec);
    for (int round = 0; round < 50; round++) {
        assert_int_equal(ax_devices_run(cx, NDEV, NULL, psum_on_device, &j), 0);
        for (int i = 0; i < NDEV; i++) assert_true(j.got[i] == 1.0f);
    }
    ax_ctx_free(cx);
}

/* Specs are interned: equal names and pairs give one pointer. */
/* The device count: --devices N (cx->ndevices) over AX_DEVICES=N over one per core; a bad
 * AX_DEVICES is a ValueError. */
static void test_device_count_sources(void **state) {
    (void)state;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    unsetenv("AX_DEVICES");
    ax_ctx *cx = ax_ctx_new();
    assert_int_equal(ax_local_device_count(cx), CPU_COUNT(&set));
    setenv("AX_DEVICES", "5", 1);
    assert_int_equal(ax_local_device_count(cx), 5);
    cx->ndevices = 3;
    assert_int_equal(ax_local_device_count(cx), 3);
    cx->ndevices = 0;
    setenv("AX_DEVICES", "0", 1);
    assert_int_equal(ax_local_device_count(cx), -1);
    assert_int_equal(cx->err.kind, AX_ERR_VALUE);
    assert_non_null(strstr(cx->err.message, "AX_DEVICES=0"));
    unsetenv("AX_DEVICES");
    ax_ctx_free(cx);
}

static void test_specs_are_interned(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    char a[] = "batch", b[] = "batch";
    const char *na = a, *nb = b, *nc = "other";
    int64_t pairs[2] = {0, 1};
    const ax_axis_spec *s1 = ax_axis_spec_make(cx, 1, &na, 1, pairs, 0, NULL);
    const ax_axis_spec *s2 = ax_axis_spec_make(cx, 1, &nb, 1, pairs, 0, NULL);
    const ax_axis_spec *s3 = ax_axis_spec_make(cx, 1, &nc, 1, pairs, 0, NULL);
    assert_ptr_equal(s1, s2);
    assert_ptr_not_equal(s1, s3);
    assert_ptr_equal(s1->names[0], ax_intern_str(cx, "batch"));
    ax_ctx_free(cx);
}

/* Shape rules in the user's terms. */
static void test_shape_rules(void **state) {
    (void)state;
    ax_ctx *cx = ax_ctx_new();
    const char *name = "i";
    ax_aval in = {.dtype = AX_F32, .ndim = 2, .shape = {4, 3}}, out;
    ax_params p = {.axis = ax_axis_spec_make(cx, 1, &name, 0, NULL, 0, NULL), .length = 2};
    p.naxes = 1;
    p.axes[0] = 1;
    assert_int_equal(ax_prim_infer(cx, AX_P_ALL_GATHER, 1, &in, &p, &out), 0);
    assert_int_equal(out.ndim, 3);
    assert_int_equal(out.shape[1], 2);
    p.flag = 1; /* tiled */
    assert_int_equal(ax_prim_infer(cx, AX_P_ALL_GATHER, 1, &in, &p, &out), 0);
    assert_int_equal(out.shape[1], 6);
    p.axes[0] = 1; /* 3 rows do not split over 2 devices */
    assert_int_equal(ax_prim_infer(cx, AX_P_PSUM_SCATTER, 1, &in, &p, &out), -1);
    assert_non_null(strstr(cx->err.message, "which 2 devices cannot split evenly"));
    ax_error_clear(cx);
    p.axes[0] = 0;
    assert_int_equal(ax_prim_infer(cx, AX_P_PSUM_SCATTER, 1, &in, &p, &out), 0);
    assert_int_equal(out.shape[0], 2);
    p.flag = 0;
    p.naxes = 2;
    p.axes[0] = 0, p.axes[1] = 1;
    in.shape[0] = 2;
    assert_int_equal(ax_prim_infer(cx, AX_P_ALL_TO_ALL, 1, &in, &p, &out), 0);
    assert_int_equal(out.shape[0], 3);
    assert_int_equal(out.shape[1], 2);
    assert_int_equal(ax_prim_infer(cx, AX_P_AXIS_INDEX, 0, NULL, &p, &out), 0);
    assert_int_equal(out.dtype, AX_I32);
    assert_int_equal(out.ndim, 0);
    ax_ctx_free(cx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_device_runs_once),
        cmocka_unit_test(test_exchange_in_device_order),
        cmocka_unit_test(test_a_failure_stops_the_others),
        cmocka_unit_test(test_devices_out_of_step_fail),
        cmocka_unit_test(test_psum_adds_in_device_order),
        cmocka_unit_test(test_device_count_sources),
        cmocka_unit_test(test_specs_are_interned),
        cmocka_unit_test(test_shape_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
