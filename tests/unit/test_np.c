/* The NumPy layer (stdlib/np*.c) and the builtins: type promotion, broadcasting, indexing
 * (results, views, placement of advanced indices), .at updates, attributes and methods, and
 * the errors with their kinds and messages. Programs run through the interpreter and are
 * checked by the REPL echo ("[2. 4.] : f32[2]": value and type); a few checks call the C API
 * directly. Expected values come from NumPy 1.24 (with JAX's dtype rules). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../compiler/trace.h"
#include "../../stdlib/np.h"

#include "interp_fixture.h"

/* Runs src; returns the echo output, or "error[Kind]: message" on failure (caller frees). */
static char *run(fixture *fx, const char *src) {
    char *buf = NULL;
    size_t len = 0;
    FILE *echo = open_memstream(&buf, &len);
    if (ax_interp_run(fx->in, src, "<test>", echo) < 0) {
        fprintf(echo, "error[%s]: %s\n", ax_error_kind_name(fx->cx->err.kind), fx->cx->err.message);
        ax_error_clear(fx->cx);
    }
    fclose(echo);
    return buf;
}

typedef struct {
    const char *src, *want;
} np_case;

static void check_cases(void **state, const np_case *cases, size_t n) {
    fixture *fx = *state;
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        char *got = run(fx, cases[i].src);
        if (strcmp(got, cases[i].want) != 0) {
            fprintf(stderr, "--- program:\n%s\n--- wanted:\n%s--- got:\n%s\n", cases[i].src,
                    cases[i].want, got);
            failures++;
        }
        free(got);
        ax_interp_reset(fx->in);
    }
    assert_int_equal(failures, 0);
}

#define CHECK(state, cases) check_cases(state, cases, sizeof cases / sizeof cases[0])

/* ---------------------------------------------------------------- promotion */

static void test_promotion(void **state) {
    static const np_case cases[] = {
        {"x = array([1., 2.])\nx * 2", "[2. 4.] : f32[2]\n"},
        {"x = array([1., 2.])\n2.5 * x", "[2.5 5. ] : f32[2]\n"},
        {"array([1., 2.], dtype=f64) * 2.0", "[2. 4.] : f64[2]\n"},
        {"array([1, 2]) * 2", "[2 4] : i32[2]\n"},
        {"array([1, 2]) / array([2, 4])", "[0.5 0.5] : f32[2]\n"},
        {"array([3, 4]) / 2", "[1.5 2. ] : f32[2]\n"},
        {"array([1, 2]) + 0.5", "[1.5 2.5] : f32[2]\n"},
        {"array([250, 3], dtype=u8) + 10", "[ 4 13] : u8[2]\n"},
        {"array([1], dtype=u8) + array([1], dtype=i32)", "[2] : i32[1]\n"},
        {"array([1], dtype=u32) + array([1], dtype=i32)", "[2] : i64[1]\n"},
        {"array([1], dtype=i64) + 1.5", "[2.5] : f32[1]\n"},
        {"array([1.], dtype=f32) + array([1.], dtype=f64)", "[2.] : f64[1]\n"},
        {"array([True, False]) + 1", "[2 1] : i32[2]\n"},
        {"array([True, False]) * 2.0", "[2. 0.] : f32[2]\n"},
        {"1 + 2.0", "3.0 : f32[]\n"},
        {"7 / 2", "3.5 : f32[]\n"},
        {"array([1., 2.]) > 1", "[False  True] : bool[2]\n"},
        {"array([1, 2]) == 2.0", "[False  True] : bool[2]\n"},
        {"sum(array([True, True, False]))", "2 : i32[]\n"},
        {"sum(array([200, 100], dtype=u8))", "300 : u32[]\n"},
        {"mean(array([1, 2]))", "1.5 : f32[]\n"},
        {"exp(array([0, 1]))", "[1.        2.7182817] : f32[2]\n"},
        {"array([1, 2]).astype(f64)", "[1. 2.] : f64[2]\n"},
        {"arange(3), arange(3.), arange(0, 1, 0.5)", "([0 1 2], [0. 1. 2.], [0.  0.5])\n"},
    };
    CHECK(state, cases);
}

static void test_python_arithmetic(void **state) {
    static const np_case cases[] = {
        {"(-7 // 2, 7 // -2, -7 % 2, 7 % -2)", "(-4, -4, 1, -1)\n"},
        {"array([-7., 7.]) // 2", "[-4.  3.] : f32[2]\n"},
        {"array([-7., 7.5]) % 2", "[1.  1.5] : f32[2]\n"},
        {"array([1, 2, 3]) ** 2", "[1 4 9] : i32[3]\n"},
        {"array([1., 2.]) ** -1", "[1.  0.5] : f32[2]\n"},
        {"array([4., 9.]) ** 0.5", "[2. 3.] : f32[2]\n"},
        {"2 ** array([1, 2])", "[2 4] : i32[2]\n"},
        {"-array([2., 3.]) ** 2", "[-4. -9.] : f32[2]\n"},
        {"array([5, 6]) & 3, array([5, 6]) >> 1, ~array([True, False])",
         "([1 2], [2 3], [False  True])\n"},
        {"array([-8, 8]) >> 1", "[-4  4] : i32[2]\n"},
        {"array([8], dtype=u32) >> 1", "[4] : u32[1]\n"},
    };
    CHECK(state, cases);
}

/* The weak flag of results, through the C API. */
static void test_weak_types(void **state) {
    fixture *fx = *state;
    ax_ctx *cx = fx->cx;
    ax_array *one = ax_array_scalar_i64(cx, AX_I32, 1), *half = ax_array_scalar(cx, AX_F32, 0.5);
    one->weak = half->weak = true;
    int64_t n = 3;
    ax_array *u8s = ax_array_zeros(cx, AX_U8, 1, &n);
    ax_array *r = ax_np_binop(cx, AX_OP_ADD, one, half);
    assert_non_null(r);
    assert_int_equal(r->dtype, AX_F32);
    assert_true(r->weak);
    ax_array_release(r);
    r = ax_np_binop(cx, AX_OP_ADD, u8s, one);
    assert_int_equal(r->dtype, AX_U8);
    assert_false(r->weak);
    ax_array_release(r);
    r = ax_np_binop(cx, AX_OP_DIV, one, one);
    assert_int_equal(r->dtype, AX_F32);
    assert_true(r->weak);
    ax_array_release(r);
    r = ax_np_compare(cx, AX_CMP_LT, one, half);
    assert_int_equal(r->dtype, AX_BOOL);
    assert_false(r->weak);
    ax_array_release(r);
    ax_array_release(one);
    ax_array_release(half);
    ax_array_release(u8s);
}

/* ---------------------------------------------------------------- broadcasting */

static void test_broadcasting(void **state) {
    static const np_case cases[] = {
        {"(zeros((3, 1)) + zeros((4,))).shape", "(3, 4)\n"},
        {"(zeros((2, 1, 5)) * ones((3, 1))).shape", "(2, 3, 5)\n"},
        {"(zeros((0, 3)) + 1).shape", "(0, 3)\n"},
        {"array([[1], [2]]) + array([10, 20])", "[[11 21]\n [12 22]] : i32[2,2]\n"},
        {"where(array([True, False]), 1.0, zeros((2, 2)))", "[[1. 0.]\n [1. 0.]] : f32[2,2]\n"},
        {"maximum(array([[1.], [5.]]), array([2., 3.]))", "[[2. 3.]\n [5. 5.]] : f32[2,2]\n"},
        {"(ones((2, 3, 4)) @ ones((4, 5))).shape", "(2, 3, 5)\n"},
        {"(ones((2, 1, 3, 4)) @ ones((5, 4, 2))).shape", "(2, 5, 3, 2)\n"},
        {"(ones(3) @ ones((2, 3, 4))).shape, (ones((2, 3, 4)) @ ones(4)).shape",
         "((2, 4), (2, 3))\n"},
        {"ones(3) @ ones(3)", "3.0 : f32[]\n"},
    };
    CHECK(state, cases);
}

/* ---------------------------------------------------------------- indexing */

static void test_indexing(void **state) {
    static const np_case cases[] = {
        {"x = arange(10)\nx[-1], x[2:8:3], x[::-3], x[7:2:-2]", "(9, [2 5], [9 6 3 0], [7 5 3])\n"},
        {"m = arange(24).reshape((2, 3, 4))\nm[1, -1], m[..., 1].shape, m[:, None, 0].shape",
         "([20 21 22 23], (2, 3), (2, 1, 4))\n"},
        {"m = arange(24).reshape((2, 3, 4))\nm[array([1, 0]), :, array([0, 3])]",
         "[[12 16 20]\n [ 3  7 11]] : i32[2,3]\n"},
        /* advanced indices separated by a slice go first; adjacent ones stay in place */
        {"m = arange(24).reshape((2, 3, 4))\nm[0, :, array([1, 2])].shape, m[:, 0, array([1, "
         "2])].shape",
         "((2, 3), (2, 2))\n"},
        {"m = arange(24).reshape((2, 3, 4))\nm[:, array([[0], [2]]), array([1, 3])].shape",
         "(2, 2, 2)\n"},
        {"x = arange(5)\nx[array([-1, -5])]", "[4 0] : i32[2]\n"},
        {"x = arange(6)\nx[x % 2 == 0]", "[0 2 4] : i32[3]\n"},
        {"m = arange(6).reshape((2, 3))\nm[m > 2]", "[3 4 5] : i32[3]\n"},
        {"m = arange(6).reshape((2, 3))\nm[array([True, False])]", "[[0 1 2]] : i32[1,3]\n"},
        {"m = arange(6).reshape((2, 3))\nm[[1, 0]]", "[[3 4 5]\n [0 1 2]] : i32[2,3]\n"},
        {"arange(3.)[1]", "1.0 : f32[]\n"},
    };
    CHECK(state, cases);
}

/* Basic indexing gives views of the same buffer; advanced indexing copies. */
static void test_views(void **state) {
    fixture *fx = *state;
    char *got = run(fx, "x = arange(12).reshape((3, 4))\nv = x[1:, ::-2]\ng = x[array([0, 2])]");
    assert_string_equal(got, "");
    free(got);
    ax_value *x = ax_interp_lookup(fx->in, "x"), *v = ax_interp_lookup(fx->in, "v");
    ax_value *g = ax_interp_lookup(fx->in, "g");
    assert_non_null(x);
    assert_true(v->arr->buf == x->arr->buf);
    assert_int_equal(v->arr->shape[0], 2);
    assert_int_equal(v->arr->shape[1], 2);
    assert_int_equal(ax_array_get_i64(v->arr, 0), 7);
    assert_int_equal(ax_array_get_i64(v->arr, 3), 9);
    assert_true(g->arr->buf != x->arr->buf);
    ax_interp_reset(fx->in);
}

static void test_at(void **state) {
    static const np_case cases[] = {
        {"x = arange(5)\ny = x.at[0].set(10)\nx, y", "([0 1 2 3 4], [10  1  2  3  4])\n"},
        {"arange(5).at[1:3].add(5)", "[0 6 7 3 4] : i32[5]\n"},
        {"arange(5).at[array([0, 0, 4])].add(1)", "[2 1 2 3 5] : i32[5]\n"},
        {"arange(5).at[-1].mul(3)", "[ 0  1  2  3 12] : i32[5]\n"},
        {"arange(5).at[arange(5) > 2].set(0)", "[0 1 2 0 0] : i32[5]\n"},
        {"zeros((2, 2)).at[:, 1].set(array([1., 2.]))", "[[0. 1.]\n [0. 2.]] : f32[2,2]\n"},
        {"arange(4.).at[1].min(-1.0).at[2].max(0.)", "[ 0. -1.  2.  3.] : f32[4]\n"},
        {"arange(4).at[2].get()", "2 : i32[]\n"},
    };
    CHECK(state, cases);
}

/* ---------------------------------------------------------------- attributes, methods, names */

static void test_attributes(void **state) {
    static const np_case cases[] = {
        {"x = zeros((2, 3))\nx.shape, x.ndim, x.size, x.dtype, x.T.shape",
         "((2, 3), 2, 6, float32, (3, 2))\n"},
        {"arange(6).reshape(2, 3).sum(0)", "[3 5 7] : i32[3]\n"},
        {"arange(6.).reshape((2, 3)).mean(axis=1)", "[1. 4.] : f32[2]\n"},
        {"arange(6).reshape((2, -1)).transpose(1, 0).shape", "(3, 2)\n"},
        {"array([[1, 2]]).tolist(), array([3.5]).item()", "([[1, 2]], 3.5)\n"},
        {"arange(3).block_until_ready()", "[0 1 2] : i32[3]\n"},
        {"jnp.dot(ones(2), ones(2)), np.float32, jnp.pi", "(2.0, float32, 3.1415927)\n"},
        {"sum(arange(4), axis=0, keepdims=True)", "[6] : i32[1]\n"},
        {"max(3, 8), min(array([4, 2]))", "(8, 2)\n"},
        {"jnp.linalg.norm(array([3., 4.]))", "5.0 : f32[]\n"},
        {"jnp.relu(array([-1., 2.]))", "[0. 2.] : f32[2]\n"},
    };
    CHECK(state, cases);
}

/* f32(x), jnp.int32(x): calling a dtype converts (the evaluator calls ax_np_call_dtype). */
static void test_call_dtype(void **state) {
    fixture *fx = *state;
    ax_value *v = ax_value_float(fx->in, 2.75);
    ax_args args = {.n = 1, .pos = &v};
    ax_value *r = ax_np_call_dtype(fx->in, AX_I32, &args);
    assert_non_null(r);
    assert_int_equal(r->arr->dtype, AX_I32);
    assert_false(r->arr->weak);
    assert_int_equal(ax_array_get_i64(r->arr, 0), 2);
    ax_value_release(r);
    ax_args none = {0};
    r = ax_np_call_dtype(fx->in, AX_F64, &none);
    assert_int_equal(r->arr->dtype, AX_F64);
    ax_value_release(r);
    ax_value_release(v);
}

static void count_name(void *arg, const char *name) {
    (void)name;
    (*(int *)arg)++;
}

static void test_each_attr(void **state) {
    (void)state;
    int n = 0;
    ax_np_each_attr(count_name, &n);
    assert_true(n > 30);
}

/* ---------------------------------------------------------------- errors */

static void check_error(fixture *fx, const char *src, ax_error_kind kind, const char *message) {
    int rc = ax_interp_run(fx->in, src, "<test>", NULL);
    const ax_error_info *e = &fx->cx->err;
    bool ok = rc < 0 && e->kind == kind && strstr(e->message, message);
    if (!ok) {
        fprintf(stderr, "--- program:\n%s\n--- wanted error[%s] containing '%s'\n", src,
                ax_error_kind_name(kind), message);
        ax_error_print(fx->cx, stderr);
    }
    ax_error_clear(fx->cx);
    ax_interp_reset(fx->in);
    assert_true(ok);
}

static void test_errors(void **state) {
    fixture *fx = *state;
    check_error(fx, "zeros(3) + zeros(4)", AX_ERR_SHAPE,
                "cannot add f32[3] and f32[4] (shapes do not broadcast)");
    check_error(fx, "zeros(3) * zeros((2, 4))", AX_ERR_SHAPE,
                "cannot multiply f32[3] and f32[2,4] (shapes do not broadcast)");
    check_error(fx, "arange(3) - zeros(2)", AX_ERR_SHAPE,
                "cannot subtract i32[3] and f32[2] (shapes do not broadcast)");
    check_error(fx, "zeros(3) < zeros(2)", AX_ERR_SHAPE,
                "cannot compare f32[3] and f32[2] (shapes do not broadcast)");
    check_error(fx, "maximum(zeros(3), zeros(2))", AX_ERR_SHAPE,
                "cannot maximum f32[3] and f32[2] (shapes do not broadcast)");
    check_error(fx, "zeros((2, 3)) @ zeros((2, 3))", AX_ERR_SHAPE,
                "cannot matmul f32[2,3] and f32[2,3] (contracting dimensions 3 and 2 differ)");
    check_error(fx, "zeros(2) @ 1.0", AX_ERR_VALUE, "matmul needs arrays of rank 1 or more");
    check_error(fx, "arange(10)[10]", AX_ERR_INDEX,
                "index 10 is out of bounds for axis 0 with size 10");
    check_error(fx, "zeros((2, 3))[0, -4]", AX_ERR_INDEX,
                "index -4 is out of bounds for axis 1 with size 3");
    check_error(fx, "arange(5)[array([1, 7])]", AX_ERR_INDEX,
                "index 7 is out of bounds for axis 0 with size 5");
    check_error(fx, "arange(5)[0, 1]", AX_ERR_INDEX,
                "too many indices for array: array is 1-dimensional, but 2 were indexed");
    check_error(fx, "arange(5)[..., ...]", AX_ERR_INDEX, "only have a single ellipsis");
    check_error(fx, "arange(5)[1.5]", AX_ERR_INDEX, "only integers, slices");
    check_error(fx, "arange(4)[array([True, False])]", AX_ERR_INDEX,
                "boolean index did not match indexed array along axis 0");
    check_error(fx, "arange(4)[::0]", AX_ERR_VALUE, "slice step cannot be zero");
    check_error(fx, "arange(6).reshape((4, 2))", AX_ERR_VALUE,
                "cannot reshape array of size 6 into shape (4, 2)");
    check_error(fx, "sum(zeros((2, 2)), axis=2)", AX_ERR_VALUE,
                "axis 2 is out of bounds for array of dimension 2");
    check_error(fx, "sum(zeros(2), axis=(0, 0))", AX_ERR_VALUE, "duplicate value in 'axis'");
    check_error(fx, "sum(zeros(2), axs=0)", AX_ERR_TYPE,
                "sum() got an unexpected keyword argument 'axs'");
    check_error(fx, "exp()", AX_ERR_TYPE, "exp() missing required argument 'x'");
    check_error(fx, "concatenate([zeros((2, 3)), zeros((2, 4))])", AX_ERR_SHAPE,
                "cannot concatenate f32[2,3] and f32[2,4] along axis 0");
    check_error(fx, "max(zeros(0))", AX_ERR_VALUE, "zero-size array to reduction operation");
    check_error(fx, "zeros(3).foo", AX_ERR_ATTRIBUTE, "array f32[3] has no attribute 'foo'");
    check_error(fx, "array([1, 2]) ** -1", AX_ERR_VALUE,
                "integers to negative integer powers are not allowed");
    check_error(fx, "-array([True])", AX_ERR_TYPE, "cannot negate bool[1]");
    check_error(fx, "array([True]) - array([False])", AX_ERR_TYPE,
                "cannot subtract bool[1] and bool[1] (booleans do not subtract");
    check_error(fx, "~array([1.5])", AX_ERR_TYPE, "~ needs a bool or integer array");
    check_error(fx, "array([1.5]) & 1", AX_ERR_TYPE, "cannot bitwise_and f32[1] and i32[]");
    check_error(fx, "array([[1], [2, 3]])", AX_ERR_VALUE, "inhomogeneous shape");
    check_error(fx, "zeros(3, dtype='float16')", AX_ERR_TYPE, "dtype must be a dtype");
    check_error(fx, "bool(zeros(2))", AX_ERR_VALUE, "ambiguous");
    check_error(fx, "einsum('ij,jk->ik', zeros((2, 3)), zeros((4, 5)))", AX_ERR_SHAPE,
                "einsum: label 'j' has sizes 3 and 4");
    check_error(fx, "einsum('i,,j', zeros(2), zeros(2))", AX_ERR_VALUE,
                "do not match the 2 operand(s) given");
    check_error(fx, "broadcast_to(zeros(3), (2, 4))", AX_ERR_SHAPE,
                "cannot broadcast f32[3] to shape (2, 4)");
    check_error(fx, "assert_allclose(array([1., 2.]), array([1., 3.]))", AX_ERR_ASSERTION,
                "1 of 2 elements differ");
}

/* Under tracing a boolean mask has no values, and a static index is still checked. The
 * tracers here are hand-made abstract arrays (no buffer): both errors come before any bind. */
static void test_tracer_errors(void **state) {
    fixture *fx = *state;
    ax_ctx *cx = fx->cx;
    int64_t n = 4;
    ax_array *mask = calloc(1, sizeof *mask), *x = calloc(1, sizeof *x);
    /* arrays own their tracer (freed with them) */
    *mask = (ax_array){.refs = 1,
                       .dtype = AX_BOOL,
                       .ndim = 1,
                       .size = 4,
                       .tracer = calloc(1, sizeof(struct ax_tracer))};
    *x = (ax_array){.refs = 1,
                    .dtype = AX_F32,
                    .ndim = 1,
                    .size = 4,
                    .tracer = calloc(1, sizeof(struct ax_tracer))};
    mask->shape[0] = x->shape[0] = n;
    ax_value *xv = ax_value_array(x), *mv = ax_value_array(mask);
    ax_array *concrete = ax_array_zeros(cx, AX_F32, 1, &n);
    ax_value *cv = ax_value_array(concrete);
    assert_null(ax_np_getitem(fx->in, cv, mv));
    assert_int_equal(cx->err.kind, AX_ERR_CONCRETIZATION);
    assert_non_null(strstr(cx->err.message, "boolean mask indexing needs a concrete mask"));
    ax_error_clear(cx);
    ax_value *ten = ax_value_int(fx->in, 10);
    assert_null(ax_np_getitem(fx->in, xv, ten));
    assert_int_equal(cx->err.kind, AX_ERR_INDEX);
    assert_string_equal(cx->err.message, "index 10 is out of bounds for axis 0 with size 4");
    ax_error_clear(cx);
    ax_value_release(ten);
    ax_value_release(xv);
    ax_value_release(mv);
    ax_value_release(cv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promotion),
        cmocka_unit_test(test_python_arithmetic),
        cmocka_unit_test(test_weak_types),
        cmocka_unit_test(test_broadcasting),
        cmocka_unit_test(test_indexing),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_at),
        cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_each_attr),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_tracer_errors),
        cmocka_unit_test(test_call_dtype),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
