/* libgccjit, opened with dlopen the first time jit compiles: linking it would load the whole
 * compiler (~120k relocations) at every start of ax, tripling start-up time for programs that
 * never compile anything. The functions ax calls are read into a table; codegen.c and jit.c
 * call them through it (GCCJIT(name)(args)). */
#ifndef AX_GCCJIT_H
#define AX_GCCJIT_H

#include <libgccjit.h>
#include <stddef.h>

// clang-format off
#define AX_GCCJIT_FUNCTIONS(X)                                                                     \
    X(gcc_jit_block_add_assignment) X(gcc_jit_block_add_assignment_op) X(gcc_jit_block_add_eval)  \
    X(gcc_jit_block_end_with_conditional) X(gcc_jit_block_end_with_jump)                           \
    X(gcc_jit_block_end_with_void_return) X(gcc_jit_context_acquire)                               \
    X(gcc_jit_context_add_command_line_option) X(gcc_jit_context_add_driver_option)                \
    X(gcc_jit_context_compile_to_file) X(gcc_jit_context_dump_to_file)                             \
    X(gcc_jit_context_get_builtin_function) X(gcc_jit_context_get_first_error)                     \
    X(gcc_jit_context_get_type) X(gcc_jit_context_new_array_access)                                \
    X(gcc_jit_context_new_array_type) X(gcc_jit_context_new_binary_op)                             \
    X(gcc_jit_context_new_bitcast) X(gcc_jit_context_new_call)                                     \
    X(gcc_jit_context_new_call_through_ptr) X(gcc_jit_context_new_cast)                            \
    X(gcc_jit_context_new_comparison) X(gcc_jit_context_new_function)                              \
    X(gcc_jit_context_new_function_ptr_type) X(gcc_jit_context_new_param)                          \
    X(gcc_jit_context_new_rvalue_from_int) X(gcc_jit_context_new_rvalue_from_long)                 \
    X(gcc_jit_context_new_unary_op) X(gcc_jit_context_one) X(gcc_jit_context_release)              \
    X(gcc_jit_context_set_bool_print_errors_to_stderr) X(gcc_jit_context_set_int_option)           \
    X(gcc_jit_context_zero) X(gcc_jit_function_new_block) X(gcc_jit_function_new_local)            \
    X(gcc_jit_lvalue_as_rvalue) X(gcc_jit_lvalue_get_address) X(gcc_jit_param_as_rvalue)          \
    X(gcc_jit_rvalue_dereference) X(gcc_jit_rvalue_get_type) X(gcc_jit_type_get_aligned)          \
    X(gcc_jit_type_get_pointer) X(gcc_jit_type_get_vector)
// clang-format on

typedef struct ax_gccjit {
    void *handle;
#define AX_GCCJIT_FIELD(name) __typeof__(name) *name;
    AX_GCCJIT_FUNCTIONS(AX_GCCJIT_FIELD)
#undef AX_GCCJIT_FIELD
} ax_gccjit;

/* A call through the table `api` in scope. */
#define GCCJIT(name) (api->name)

/* Opens libgccjit; NULL with the reason in `why` when it cannot be loaded. */
ax_gccjit *ax_gccjit_open(char *why, size_t n);
void ax_gccjit_close(ax_gccjit *api);

#endif
