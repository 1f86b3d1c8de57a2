//! Generates `include/shmem.h` from the type tables in `types`, so that
//! the header declares exactly the typed calls the library defines, and
//! `include/pshmem.h`, the profiling interface's header, from shmem.h's
//! declarations (every routine renamed as `export!` names it). The tests
//! below regenerate both and fail if a committed file differed (then the
//! file is rewritten: rerun and commit it).

use std::fmt::Write;

#[path = "header_direct.rs"]
mod direct;

type Table = Vec<(&'static str, &'static str)>;

macro_rules! table {
    ($for_types:ident) => {{
        let mut t: Table = Vec::new();
        macro_rules! push {
            ($n:tt, $r:ty, $c:literal) => {
                t.push((stringify!($n), $c));
            };
        }
        $for_types!(push);
        t
    }};
}

/// Expands `template` once per type: `{N}` is the type's name, `{T}` its C type.
fn each(out: &mut String, table: &Table, template: &str) {
    for (name, c) in table {
        out.push_str(&template.replace("{N}", name).replace("{T}", c));
        out.push('\n');
    }
}

/// The subset of `table` that `_Generic` can tell apart (no two
/// compatible types), in the order Sandia OpenSHMEM lists them.
fn generic(table: &Table, names: &[&str]) -> Table {
    table.iter().copied().filter(|(n, _)| names.contains(n)).collect()
}

const C11_RMA: &[&str] = &[
    "float",
    "double",
    "longdouble",
    "char",
    "schar",
    "short",
    "int",
    "long",
    "longlong",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "ulonglong",
];
const C11_AMO: &[&str] = &["int", "long", "longlong", "uint", "ulong", "ulonglong"];
const C11_EXT_AMO: &[&str] = &[
    "int",
    "long",
    "longlong",
    "uint",
    "ulong",
    "ulonglong",
    "float",
    "double",
];
const C11_BIT_AMO: &[&str] = &["int32", "int64", "uint", "ulong", "ulonglong"];
const C11_SYNC: &[&str] = &[
    "short",
    "int",
    "long",
    "longlong",
    "ushort",
    "uint",
    "ulong",
    "ulonglong",
];
const C11_BIT_REDUCE: &[&str] = &[
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "ulonglong",
    "int8",
    "short",
    "int",
    "long",
    "longlong",
];
const C11_ARITH_REDUCE: &[&str] = &[
    "char",
    "schar",
    "short",
    "int",
    "long",
    "longlong",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "ulonglong",
    "float",
    "double",
    "longdouble",
    "complexd",
    "complexf",
];

/// A `_Generic` macro on the pointer type of the first argument, with a
/// `shmem_ctx_t` branch on the second when `ctx` (SOS's construction).
fn c11(out: &mut String, name: &str, table: &Table, call: &str, ctx: bool, skip_first: bool) {
    let arg0 = match skip_first {
        true => "SHMEM_C11_ARG1",
        false => "SHMEM_C11_ARG0",
    };
    let _ = writeln!(
        out,
        "#define {name}(...) \\\n    _Generic(SHMEM_C11_TYPE_EVAL_PTR({arg0}(__VA_ARGS__)), \\"
    );
    if ctx {
        // The branch is type-checked for calls without a context too, whose
        // second argument may be a value: hence "pointer or scalar".
        let _ = writeln!(
            out,
            "        shmem_ctx_t: _Generic(SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(SHMEM_C11_ARG1(__VA_ARGS__)), \\"
        );
        for (n, c) in table {
            let _ = writeln!(out, "            {c}*: shmem_ctx_{}, \\", call.replace("{N}", n));
        }
        let _ = writeln!(out, "            default: shmem_c11_generic_selection_failed), \\");
    }
    for (i, (n, c)) in table.iter().enumerate() {
        let sep = if i + 1 == table.len() { "" } else { "," };
        let _ = writeln!(out, "        {c}*: shmem_{}{sep} \\", call.replace("{N}", n));
    }
    out.push_str("    )(__VA_ARGS__)\n\n");
}

/// `shmem.h`, and the byte range of its routine declarations (from the
/// first routine to the direct paths, which pshmem.h does not repeat).
pub fn generate() -> (String, std::ops::Range<usize>) {
    let rma = table!(for_rma_types);
    let scalar_rma = table!(for_scalar_rma_types);
    let sizes = table!(for_sizes);
    let amo = table!(for_amo_types);
    let ext_amo = table!(for_extended_amo_types);
    let bit_amo = table!(for_bitwise_amo_types);
    let sync = table!(for_sync_types);
    let old_wait = table!(for_deprecated_wait_types);
    let bit_reduce = table!(for_bitwise_reduce_types);
    let mut arith_reduce = table!(for_arith_reduce_types);
    let to_all_int = table!(for_to_all_int_types);
    let to_all_float = table!(for_to_all_float_types);
    let complex = table!(for_complex_types);
    let ld: Table = vec![("longdouble", "long double")];
    let not_mem: Table = sizes.iter().copied().filter(|(n, _)| *n != "mem").collect();

    let mut h = String::from(include_str!("header_prologue.h"));
    h.push_str("/* Remote memory access */\n");
    for op in ["put", "get", "put_nbi", "get_nbi"] {
        each(
            &mut h,
            &rma,
            &format!("void shmem_{{N}}_{op}({{T}} *dest, const {{T}} *source, size_t nelems, int pe);"),
        );
        each(
            &mut h,
            &rma,
            &format!(
                "void shmem_ctx_{{N}}_{op}(shmem_ctx_t ctx, {{T}} *dest, const {{T}} *source, size_t nelems, int pe);"
            ),
        );
        let (verb, nbi) = op.split_once('_').map_or((op, ""), |(v, n)| (v, n));
        let suffix = if nbi.is_empty() {
            String::new()
        } else {
            format!("_{nbi}")
        };
        each(
            &mut h,
            &sizes,
            &format!("void shmem_{verb}{{N}}{suffix}(void *dest, const void *source, size_t nelems, int pe);"),
        );
        each(&mut h, &sizes, &format!("void shmem_ctx_{verb}{{N}}{suffix}(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);"));
    }
    for op in ["iput", "iget"] {
        each(&mut h, &rma, &format!("void shmem_{{N}}_{op}({{T}} *dest, const {{T}} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);"));
        each(&mut h, &rma, &format!("void shmem_ctx_{{N}}_{op}(shmem_ctx_t ctx, {{T}} *dest, const {{T}} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);"));
        each(&mut h, &not_mem, &format!("void shmem_{op}{{N}}(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);"));
        each(&mut h, &not_mem, &format!("void shmem_ctx_{op}{{N}}(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);"));
    }
    for op in ["ibput", "ibget"] {
        each(&mut h, &rma, &format!("void shmem_{{N}}_{op}({{T}} *dest, const {{T}} *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);"));
        each(&mut h, &rma, &format!("void shmem_ctx_{{N}}_{op}(shmem_ctx_t ctx, {{T}} *dest, const {{T}} *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);"));
        each(&mut h, &not_mem, &format!("void shmem_{op}{{N}}(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);"));
        each(&mut h, &not_mem, &format!("void shmem_ctx_{op}{{N}}(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);"));
    }
    each(&mut h, &scalar_rma, "void shmem_{N}_p({T} *dest, {T} value, int pe);");
    each(
        &mut h,
        &scalar_rma,
        "void shmem_ctx_{N}_p(shmem_ctx_t ctx, {T} *dest, {T} value, int pe);",
    );
    each(&mut h, &scalar_rma, "{T} shmem_{N}_g(const {T} *source, int pe);");
    each(
        &mut h,
        &scalar_rma,
        "{T} shmem_ctx_{N}_g(shmem_ctx_t ctx, const {T} *source, int pe);",
    );
    h.push_str("static inline __attribute__((__always_inline__)) void shmem_longdouble_p(long double *dest, long double value, int pe) { shmem_longdouble_put(dest, &value, 1, pe); }\n");
    h.push_str("static inline __attribute__((__always_inline__)) void shmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value, int pe) { shmem_ctx_longdouble_put(ctx, dest, &value, 1, pe); }\n");
    h.push_str("static inline __attribute__((__always_inline__)) long double shmem_longdouble_g(const long double *source, int pe) { long double v; shmem_longdouble_get(&v, source, 1, pe); return v; }\n");
    h.push_str("static inline __attribute__((__always_inline__)) long double shmem_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source, int pe) { long double v; shmem_ctx_longdouble_get(ctx, &v, source, 1, pe); return v; }\n");

    h.push_str("\n/* Put with signal */\n");
    for op in ["put_signal", "put_signal_nbi"] {
        let args = "size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe";
        each(
            &mut h,
            &rma,
            &format!("void shmem_{{N}}_{op}({{T}} *dest, const {{T}} *source, {args});"),
        );
        each(
            &mut h,
            &rma,
            &format!("void shmem_ctx_{{N}}_{op}(shmem_ctx_t ctx, {{T}} *dest, const {{T}} *source, {args});"),
        );
        let sized = op.replacen("put", "put{N}", 1);
        each(
            &mut h,
            &sizes,
            &format!("void shmem_{sized}(void *dest, const void *source, {args});"),
        );
        each(
            &mut h,
            &sizes,
            &format!("void shmem_ctx_{sized}(shmem_ctx_t ctx, void *dest, const void *source, {args});"),
        );
    }
    h.push_str("void shmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe);\n");
    h.push_str("void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);\n");
    h.push_str("void shmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe);\n");
    h.push_str("void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);\n");
    h.push_str("uint64_t shmem_signal_fetch(const uint64_t *sig_addr);\n");
    h.push_str("uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);\n");

    h.push_str("\n/* Atomic memory operations */\n");
    for (table, fetching) in [
        (
            &ext_amo,
            vec![
                ("atomic_fetch", "const {T} *source", "source"),
                ("atomic_swap", "{T} *dest, {T} value", "dest"),
            ],
        ),
        (
            &amo,
            vec![
                ("atomic_compare_swap", "{T} *dest, {T} cond, {T} value", "dest"),
                ("atomic_fetch_inc", "{T} *dest", "dest"),
                ("atomic_fetch_add", "{T} *dest, {T} value", "dest"),
            ],
        ),
        (
            &bit_amo,
            vec![
                ("atomic_fetch_and", "{T} *dest, {T} value", "dest"),
                ("atomic_fetch_or", "{T} *dest, {T} value", "dest"),
                ("atomic_fetch_xor", "{T} *dest, {T} value", "dest"),
            ],
        ),
    ] {
        for (op, args, _) in fetching {
            each(&mut h, table, &format!("{{T}} shmem_{{N}}_{op}({args}, int pe);"));
            each(
                &mut h,
                table,
                &format!("{{T}} shmem_ctx_{{N}}_{op}(shmem_ctx_t ctx, {args}, int pe);"),
            );
            each(
                &mut h,
                table,
                &format!("void shmem_{{N}}_{op}_nbi({{T}} *fetch, {args}, int pe);"),
            );
            each(
                &mut h,
                table,
                &format!("void shmem_ctx_{{N}}_{op}_nbi(shmem_ctx_t ctx, {{T}} *fetch, {args}, int pe);"),
            );
        }
    }
    for (table, op, args) in [
        (&ext_amo, "atomic_set", "{T} *dest, {T} value"),
        (&amo, "atomic_inc", "{T} *dest"),
        (&amo, "atomic_add", "{T} *dest, {T} value"),
        (&bit_amo, "atomic_and", "{T} *dest, {T} value"),
        (&bit_amo, "atomic_or", "{T} *dest, {T} value"),
        (&bit_amo, "atomic_xor", "{T} *dest, {T} value"),
    ] {
        each(&mut h, table, &format!("void shmem_{{N}}_{op}({args}, int pe);"));
        each(
            &mut h,
            table,
            &format!("void shmem_ctx_{{N}}_{op}(shmem_ctx_t ctx, {args}, int pe);"),
        );
    }
    h.push_str("/* Deprecated atomic names */\n");
    each(
        &mut h,
        &ext_amo,
        "SHMEM_DEPRECATED {T} shmem_{N}_fetch(const {T} *source, int pe);",
    );
    each(
        &mut h,
        &ext_amo,
        "SHMEM_DEPRECATED void shmem_{N}_set({T} *dest, {T} value, int pe);",
    );
    each(
        &mut h,
        &ext_amo,
        "SHMEM_DEPRECATED {T} shmem_{N}_swap({T} *dest, {T} value, int pe);",
    );
    each(
        &mut h,
        &amo,
        "SHMEM_DEPRECATED {T} shmem_{N}_cswap({T} *dest, {T} cond, {T} value, int pe);",
    );
    each(&mut h, &amo, "SHMEM_DEPRECATED {T} shmem_{N}_finc({T} *dest, int pe);");
    each(&mut h, &amo, "SHMEM_DEPRECATED void shmem_{N}_inc({T} *dest, int pe);");
    each(
        &mut h,
        &amo,
        "SHMEM_DEPRECATED {T} shmem_{N}_fadd({T} *dest, {T} value, int pe);",
    );
    each(
        &mut h,
        &amo,
        "SHMEM_DEPRECATED void shmem_{N}_add({T} *dest, {T} value, int pe);",
    );

    h.push_str("\n/* Point-to-point synchronization */\n");
    let status = "size_t nelems, const int *status, int cmp";
    each(
        &mut h,
        &sync,
        "void shmem_{N}_wait_until({T} *ivar, int cmp, {T} cmp_value);",
    );
    each(&mut h, &sync, "int shmem_{N}_test({T} *ivar, int cmp, {T} cmp_value);");
    for (ret, form, extra) in [
        ("void", "wait_until_all", ""),
        ("size_t", "wait_until_any", ""),
        ("size_t", "wait_until_some", "size_t *indices, "),
        ("int", "test_all", ""),
        ("size_t", "test_any", ""),
        ("size_t", "test_some", "size_t *indices, "),
    ] {
        let s = status.replacen("const int", &format!("{extra}const int"), 1);
        each(
            &mut h,
            &sync,
            &format!("{ret} shmem_{{N}}_{form}({{T}} *ivars, {s}, {{T}} cmp_value);"),
        );
        each(
            &mut h,
            &sync,
            &format!("{ret} shmem_{{N}}_{form}_vector({{T}} *ivars, {s}, const {{T}} *cmp_values);"),
        );
    }
    each(
        &mut h,
        &old_wait,
        "SHMEM_DEPRECATED void shmem_{N}_wait({T} *ivar, {T} cmp_value);",
    );
    h.push_str("SHMEM_DEPRECATED void shmem_wait(long *ivar, long cmp_value);\n");

    h.push_str("\n/* Team collectives */\n");
    for (op, args) in [
        ("broadcast", "size_t nelems, int PE_root"),
        ("collect", "size_t nelems"),
        ("fcollect", "size_t nelems"),
        ("alltoall", "size_t nelems"),
        ("alltoalls", "ptrdiff_t dst, ptrdiff_t sst, size_t nelems"),
    ] {
        each(
            &mut h,
            &rma,
            &format!("int shmem_{{N}}_{op}(shmem_team_t team, {{T}} *dest, const {{T}} *source, {args});"),
        );
        let _ = writeln!(
            h,
            "int shmem_{op}mem(shmem_team_t team, void *dest, const void *source, {args});"
        );
    }
    for op in ["and", "or", "xor"] {
        each(
            &mut h,
            &bit_reduce,
            &format!(
                "int shmem_{{N}}_{op}_reduce(shmem_team_t team, {{T}} *dest, const {{T}} *source, size_t nreduce);"
            ),
        );
    }
    for op in ["min", "max", "sum", "prod"] {
        each(
            &mut h,
            &arith_reduce,
            &format!(
                "int shmem_{{N}}_{op}_reduce(shmem_team_t team, {{T}} *dest, const {{T}} *source, size_t nreduce);"
            ),
        );
    }
    for op in ["sum", "prod"] {
        each(
            &mut h,
            &complex,
            &format!(
                "int shmem_{{N}}_{op}_reduce(shmem_team_t team, {{T}} *dest, const {{T}} *source, size_t nreduce);"
            ),
        );
    }
    for op in ["inscan", "exscan"] {
        each(
            &mut h,
            &arith_reduce,
            &format!("int shmem_{{N}}_sum_{op}(shmem_team_t team, {{T}} *dest, const {{T}} *source, size_t nelems);"),
        );
    }
    h.push_str(include_str!("header_longdouble.h"));

    h.push_str("\n/* Deprecated active-set collectives */\n");
    for bits in ["32", "64"] {
        let _ = writeln!(h, "SHMEM_DEPRECATED void shmem_broadcast{bits}(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync);");
        for op in ["collect", "fcollect", "alltoall"] {
            let _ = writeln!(h, "SHMEM_DEPRECATED void shmem_{op}{bits}(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);");
        }
        let _ = writeln!(h, "SHMEM_DEPRECATED void shmem_alltoalls{bits}(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);");
    }
    let to_all = "({T} *dest, const {T} *source, int nreduce, int PE_start, int logPE_stride, int PE_size, {T} *pWrk, long *pSync);";
    for op in ["and", "or", "xor", "min", "max", "sum", "prod"] {
        each(
            &mut h,
            &to_all_int,
            &format!("SHMEM_DEPRECATED void shmem_{{N}}_{op}_to_all{to_all}"),
        );
    }
    for op in ["min", "max", "sum", "prod"] {
        each(
            &mut h,
            &to_all_float,
            &format!("SHMEM_DEPRECATED void shmem_{{N}}_{op}_to_all{to_all}"),
        );
    }
    for op in ["sum", "prod"] {
        each(
            &mut h,
            &complex,
            &format!("SHMEM_DEPRECATED void shmem_{{N}}_{op}_to_all{to_all}"),
        );
    }

    let first = h.find(FIRST_ROUTINES).expect("the prologue declares routines");
    let declarations = first..h.len();
    h.push_str(&direct::section(&rma, &sizes, &scalar_rma, &amo));

    h.push_str("\n#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\n");
    h.push_str("/* C11 type-generic names */\n");
    h.push_str(
        "#define SHMEM_C11_TYPE_EVAL_PTR(arg) &*(arg)\n#define SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(arg) (arg)+0\n",
    );
    h.push_str("#define SHMEM_C11_ARG0(...) SHMEM_C11_ARG0_HELPER(__VA_ARGS__, sentinel)\n#define SHMEM_C11_ARG0_HELPER(first, ...) first\n");
    h.push_str("#define SHMEM_C11_ARG1(first, ...) SHMEM_C11_ARG1_HELPER(__VA_ARGS__, sentinel)\n#define SHMEM_C11_ARG1_HELPER(second, ...) second\n");
    h.push_str("/* Deliberately matches no OpenSHMEM call: a type without a typed form is a compile error. */\nstatic inline void shmem_c11_generic_selection_failed(void) { }\n\n");
    let g_rma = generic(&rma, C11_RMA);
    for op in [
        "put",
        "get",
        "iput",
        "iget",
        "ibput",
        "ibget",
        "put_nbi",
        "get_nbi",
        "put_signal",
        "put_signal_nbi",
    ] {
        c11(
            &mut h,
            &format!("shmem_{op}"),
            &g_rma,
            &format!("{{N}}_{op}"),
            true,
            false,
        );
    }
    c11(&mut h, "shmem_p", &g_rma, "{N}_p", true, false);
    c11(&mut h, "shmem_g", &g_rma, "{N}_g", true, false);
    let g_amo = generic(&amo, C11_AMO);
    let g_ext = generic(&ext_amo, C11_EXT_AMO);
    let g_bit = generic(&bit_amo, C11_BIT_AMO);
    for (table, ops) in [
        (
            &g_ext,
            &[
                "atomic_fetch",
                "atomic_set",
                "atomic_swap",
                "atomic_fetch_nbi",
                "atomic_swap_nbi",
            ][..],
        ),
        (
            &g_amo,
            &[
                "atomic_compare_swap",
                "atomic_fetch_inc",
                "atomic_inc",
                "atomic_fetch_add",
                "atomic_add",
                "atomic_compare_swap_nbi",
                "atomic_fetch_inc_nbi",
                "atomic_fetch_add_nbi",
            ][..],
        ),
        (
            &g_bit,
            &[
                "atomic_and",
                "atomic_or",
                "atomic_xor",
                "atomic_fetch_and",
                "atomic_fetch_or",
                "atomic_fetch_xor",
                "atomic_fetch_and_nbi",
                "atomic_fetch_or_nbi",
                "atomic_fetch_xor_nbi",
            ][..],
        ),
    ] {
        for op in ops {
            c11(
                &mut h,
                &format!("shmem_{op}"),
                table,
                &format!("{{N}}_{op}"),
                true,
                false,
            );
        }
    }
    for (table, op) in [
        (&g_ext, "fetch"),
        (&g_ext, "set"),
        (&g_ext, "swap"),
        (&g_amo, "cswap"),
        (&g_amo, "finc"),
        (&g_amo, "inc"),
        (&g_amo, "fadd"),
        (&g_amo, "add"),
    ] {
        c11(
            &mut h,
            &format!("shmem_{op}"),
            table,
            &format!("{{N}}_{op}"),
            false,
            false,
        );
    }
    let g_sync = generic(&sync, C11_SYNC);
    for op in [
        "wait_until",
        "test",
        "wait_until_all",
        "wait_until_any",
        "wait_until_some",
        "test_all",
        "test_any",
        "test_some",
        "wait_until_all_vector",
        "wait_until_any_vector",
        "wait_until_some_vector",
        "test_all_vector",
        "test_any_vector",
        "test_some_vector",
    ] {
        c11(
            &mut h,
            &format!("shmem_{op}"),
            &g_sync,
            &format!("{{N}}_{op}"),
            false,
            false,
        );
    }
    c11(
        &mut h,
        "shmem_wait",
        &generic(&old_wait, C11_SYNC),
        "{N}_wait",
        false,
        false,
    );
    for op in ["broadcast", "collect", "fcollect", "alltoall", "alltoalls"] {
        c11(
            &mut h,
            &format!("shmem_{op}"),
            &g_rma,
            &format!("{{N}}_{op}"),
            false,
            true,
        );
    }
    arith_reduce.extend(ld.iter().copied());
    arith_reduce.extend(complex.iter().copied());
    let g_bit_reduce = generic(&bit_reduce, C11_BIT_REDUCE);
    for op in ["and", "or", "xor"] {
        c11(
            &mut h,
            &format!("shmem_{op}_reduce"),
            &g_bit_reduce,
            &format!("{{N}}_{op}_reduce"),
            false,
            true,
        );
    }
    let g_arith = generic(&arith_reduce, C11_ARITH_REDUCE);
    let no_complex: Table = g_arith
        .iter()
        .copied()
        .filter(|(n, _)| !n.starts_with("complex"))
        .collect();
    for op in ["min", "max"] {
        c11(
            &mut h,
            &format!("shmem_{op}_reduce"),
            &no_complex,
            &format!("{{N}}_{op}_reduce"),
            false,
            true,
        );
    }
    for op in ["sum", "prod"] {
        c11(
            &mut h,
            &format!("shmem_{op}_reduce"),
            &g_arith,
            &format!("{{N}}_{op}_reduce"),
            false,
            true,
        );
    }
    h.push_str("#define shmem_sync(...) \\\n    _Generic(SHMEM_C11_TYPE_EVAL_PTR_OR_SCALAR(SHMEM_C11_ARG0(__VA_ARGS__)), \\\n        shmem_team_t: shmem_team_sync, \\\n        int: shmem_sync \\\n    )(__VA_ARGS__)\n");
    h.push_str("#else\n/* Before C11: the untyped names of OpenSHMEM 1.0 */\nlong shmem_swap(long *dest, long value, int pe);\nvoid shmem_wait_until(long *ivar, int cmp, long cmp_value);\n#endif\n");
    h.push_str("\n#ifdef __cplusplus\n}\n#endif\n#endif /* SHMEM_H */\n");
    (h, declarations)
}

/// The comment that opens shmem.h's first routine declarations.
const FIRST_ROUTINES: &str = "/* Setup, exit and query */";

/// The routine names the library exports besides `shmem_*` (OpenSHMEM
/// 1.0's), which the profiling interface also prefixes with `p`.
const OLD_NAMES: [&str; 7] = [
    "start_pes",
    "_my_pe",
    "_num_pes",
    "shmalloc",
    "shmemalign",
    "shrealloc",
    "shfree",
];

/// `name` as the profiling interface spells the routine, if it is one.
fn profiled(word: &str) -> bool {
    word.starts_with("shmem_") || OLD_NAMES.contains(&word)
}

/// One declaration (or inline definition) with every routine name in it
/// prefixed with `p`: `void shmem_putmem(...)` becomes `void pshmem_putmem(...)`.
fn rename_routines(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String, next: Option<char>| {
        if next == Some('(') && profiled(word) {
            out.push('p');
        }
        out.push_str(word);
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        flush(&mut word, &mut out, Some(c));
        out.push(c);
    }
    flush(&mut word, &mut out, None);
    out
}

/// `pshmem.h`: shmem.h's declarations under the profiling names, for tools
/// (TAU, Score-P, a wrapper of one's own) that call the library underneath
/// their own `shmem_*` definitions.
pub fn generate_pshmem() -> String {
    let (shmem_h, range) = generate();
    let mut h = String::from(
        "/* pshmem.h: the profiling interface of oneside's OpenSHMEM library\n \
         * (OpenSHMEM 1.5 section 10): every routine of shmem.h under the name\n \
         * pshmem_... (and pstart_pes, p_my_pe, p_num_pes, pshmalloc, ...).\n \
         * A tool defines shmem_X, counts or times the call, and calls\n \
         * pshmem_X, which does the work.\n \
         *\n \
         * Generated by capi/src/header.rs from shmem.h; do not edit. */\n\
         #ifndef PSHMEM_H\n#define PSHMEM_H\n\n\
         /* A tool defines the routines that shmem.h otherwise gives inline\n \
         * definitions (the direct paths): it needs only their declarations. */\n\
         #if !defined(SHMEM_H) && !defined(ONESIDE_NO_DIRECT)\n#define ONESIDE_NO_DIRECT\n#endif\n\
         #include \"shmem.h\"\n\n\
         #ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
    );
    let mut statement = String::new();
    let (mut in_macro, mut in_comment) = (false, false);
    for line in shmem_h[range].lines() {
        let trimmed = line.trim_start();
        if in_macro || trimmed.starts_with("#define") {
            in_macro = line.ends_with('\\');
            continue;
        }
        if in_comment || (statement.is_empty() && trimmed.starts_with("/*")) {
            in_comment = !line.ends_with("*/");
            h.push_str(line);
            h.push('\n');
            continue;
        }
        if trimmed.starts_with("#if") || trimmed.starts_with("#else") || trimmed.starts_with("#endif") {
            h.push_str(line);
            h.push('\n');
            continue;
        }
        let skip = trimmed.is_empty()
            || trimmed.starts_with("typedef")
            || trimmed.starts_with("extern struct")
            || trimmed.starts_with("ONESIDE_LD_");
        if skip && statement.is_empty() {
            if trimmed.is_empty() {
                h.push('\n');
            }
            continue;
        }
        statement.push_str(line);
        statement.push('\n');
        if line.ends_with(';') || line.ends_with('}') {
            h.push_str(&rename_routines(&statement));
            statement.clear();
        }
    }
    h.push_str(&profiled_long_double());
    h.push_str("\n#ifdef __cplusplus\n}\n#endif\n#endif /* PSHMEM_H */\n");
    h
}

/// The `long double` reductions of `header_longdouble.h` (inline in both
/// headers) under their profiling names: its reduce macro, renamed, on the
/// combiners shmem.h already defines.
fn profiled_long_double() -> String {
    let source = include_str!("header_longdouble.h");
    let from = source
        .find("#define ONESIDE_LD_REDUCE")
        .expect("header_longdouble.h defines the reduce macro");
    let reduce = source[from..]
        .replace("ONESIDE_LD_REDUCE", "ONESIDE_PLD_REDUCE")
        .replace(" shmem_longdouble_##", " pshmem_longdouble_##");
    format!("\n/* long double reductions, inline as in shmem.h, on the profiling names */\n{reduce}")
}

/// Compares `fresh` with the committed header `name`, rewriting it if stale.
fn check_committed(name: &str, fresh: &str) {
    let path = format!("{}/include/{name}", env!("CARGO_MANIFEST_DIR"));
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if old != fresh {
        std::fs::write(&path, fresh).unwrap_or_else(|e| panic!("write include/{name}: {e}"));
        panic!("include/{name} was out of date and has been regenerated: rerun the tests and commit it");
    }
}

#[test]
fn shmem_h_is_up_to_date() {
    check_committed("shmem.h", &generate().0);
}

#[test]
fn pshmem_h_is_up_to_date() {
    check_committed("pshmem.h", &generate_pshmem());
}

#[test]
fn routine_names_get_the_profiling_prefix_and_nothing_else_does() {
    assert_eq!(
        rename_routines("void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);"),
        "void pshmem_putmem(void *dest, const void *source, size_t nelems, int pe);"
    );
    assert_eq!(rename_routines("int _my_pe(void);"), "int p_my_pe(void);");
    assert_eq!(
        rename_routines("static inline long double shmem_longdouble_g(const long double *source, int pe) { long double v; shmem_longdouble_get(&v, source, 1, pe); return v; }"),
        "static inline long double pshmem_longdouble_g(const long double *source, int pe) { long double v; pshmem_longdouble_get(&v, source, 1, pe); return v; }"
    );
    assert_eq!(
        rename_routines("shmem_team_t team, shmem_ctx_t *ctx"),
        "shmem_team_t team, shmem_ctx_t *ctx"
    );
}
