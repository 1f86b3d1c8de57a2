//! The type tables of OpenSHMEM 1.5, one macro each, as the specification
//! lists them. Each calls `$m!(name, RustType, "C type");` once per type,
//! so a family of typed calls is written once, for one type, and its
//! header declarations come from the same table (`header`).
//!
//! C's `long`, `long long`, `size_t` and `ptrdiff_t` are 64 bits and
//! `char` is signed on the LP64 targets this library builds for; `long
//! double` has no Rust type, so it moves as 16 opaque bytes and its
//! by-value calls are inline functions in `shmem.h`.

/// The bytes of a C `long double` (x86-64: 80-bit extended, 16-byte slot).
pub type LongDouble = [u8; 16];
/// A C `float _Complex`.
pub type ComplexF = [f32; 2];
/// A C `double _Complex`.
pub type ComplexD = [f64; 2];

/// The standard RMA types with a Rust value type (everything but `long double`).
macro_rules! for_scalar_rma_types {
    ($m:ident) => {
        $m!(float, f32, "float");
        $m!(double, f64, "double");
        $m!(char, i8, "char");
        $m!(schar, i8, "signed char");
        $m!(short, i16, "short");
        $m!(int, i32, "int");
        $m!(long, i64, "long");
        $m!(longlong, i64, "long long");
        $m!(uchar, u8, "unsigned char");
        $m!(ushort, u16, "unsigned short");
        $m!(uint, u32, "unsigned int");
        $m!(ulong, u64, "unsigned long");
        $m!(ulonglong, u64, "unsigned long long");
        $m!(int8, i8, "int8_t");
        $m!(int16, i16, "int16_t");
        $m!(int32, i32, "int32_t");
        $m!(int64, i64, "int64_t");
        $m!(uint8, u8, "uint8_t");
        $m!(uint16, u16, "uint16_t");
        $m!(uint32, u32, "uint32_t");
        $m!(uint64, u64, "uint64_t");
        $m!(size, u64, "size_t");
        $m!(ptrdiff, i64, "ptrdiff_t");
    };
}

/// Every standard RMA type.
macro_rules! for_rma_types {
    ($m:ident) => {
        for_scalar_rma_types!($m);
        $m!(longdouble, $crate::types::LongDouble, "long double");
    };
}

/// The sized forms (`shmem_put32`, `shmem_putmem`): bits, element type.
macro_rules! for_sizes {
    ($m:ident) => {
        $m!(8, u8, "8");
        $m!(16, u16, "16");
        $m!(32, u32, "32");
        $m!(64, u64, "64");
        $m!(128, [u64; 2], "128");
        $m!(mem, u8, "mem");
    };
}

/// The standard AMO types.
macro_rules! for_amo_types {
    ($m:ident) => {
        $m!(int, i32, "int");
        $m!(long, i64, "long");
        $m!(longlong, i64, "long long");
        $m!(uint, u32, "unsigned int");
        $m!(ulong, u64, "unsigned long");
        $m!(ulonglong, u64, "unsigned long long");
        $m!(int32, i32, "int32_t");
        $m!(int64, i64, "int64_t");
        $m!(uint32, u32, "uint32_t");
        $m!(uint64, u64, "uint64_t");
        $m!(size, u64, "size_t");
        $m!(ptrdiff, i64, "ptrdiff_t");
    };
}

/// The extended AMO types: the standard ones, `float` and `double`.
macro_rules! for_extended_amo_types {
    ($m:ident) => {
        for_amo_types!($m);
        $m!(float, f32, "float");
        $m!(double, f64, "double");
    };
}

/// The bitwise AMO types.
macro_rules! for_bitwise_amo_types {
    ($m:ident) => {
        $m!(uint, u32, "unsigned int");
        $m!(ulong, u64, "unsigned long");
        $m!(ulonglong, u64, "unsigned long long");
        $m!(int32, i32, "int32_t");
        $m!(int64, i64, "int64_t");
        $m!(uint32, u32, "uint32_t");
        $m!(uint64, u64, "uint64_t");
    };
}

/// The point-to-point synchronization types (wait and test).
macro_rules! for_sync_types {
    ($m:ident) => {
        $m!(short, i16, "short");
        $m!(int, i32, "int");
        $m!(long, i64, "long");
        $m!(longlong, i64, "long long");
        $m!(ushort, u16, "unsigned short");
        $m!(uint, u32, "unsigned int");
        $m!(ulong, u64, "unsigned long");
        $m!(ulonglong, u64, "unsigned long long");
        $m!(int32, i32, "int32_t");
        $m!(int64, i64, "int64_t");
        $m!(uint32, u32, "uint32_t");
        $m!(uint64, u64, "uint64_t");
        $m!(size, u64, "size_t");
        $m!(ptrdiff, i64, "ptrdiff_t");
    };
}

/// The deprecated `shmem_<type>_wait` types.
macro_rules! for_deprecated_wait_types {
    ($m:ident) => {
        $m!(short, i16, "short");
        $m!(int, i32, "int");
        $m!(long, i64, "long");
        $m!(longlong, i64, "long long");
    };
}

/// The types of the bitwise reductions (`and`, `or`, `xor`).
macro_rules! for_bitwise_reduce_types {
    ($m:ident) => {
        $m!(uchar, u8, "unsigned char");
        $m!(short, i16, "short");
        $m!(ushort, u16, "unsigned short");
        $m!(int, i32, "int");
        $m!(uint, u32, "unsigned int");
        $m!(long, i64, "long");
        $m!(ulong, u64, "unsigned long");
        $m!(longlong, i64, "long long");
        $m!(ulonglong, u64, "unsigned long long");
        $m!(int8, i8, "int8_t");
        $m!(int16, i16, "int16_t");
        $m!(int32, i32, "int32_t");
        $m!(int64, i64, "int64_t");
        $m!(uint8, u8, "uint8_t");
        $m!(uint16, u16, "uint16_t");
        $m!(uint32, u32, "uint32_t");
        $m!(uint64, u64, "uint64_t");
        $m!(size, u64, "size_t");
    };
}

/// The types of the ordering and arithmetic reductions (`min`, `max`,
/// `sum`, `prod`) with a Rust value type; `long double` is in `shmem.h`.
macro_rules! for_arith_reduce_types {
    ($m:ident) => {
        $m!(char, i8, "char");
        $m!(schar, i8, "signed char");
        $m!(short, i16, "short");
        $m!(int, i32, "int");
        $m!(long, i64, "long");
        $m!(longlong, i64, "long long");
        $m!(ptrdiff, i64, "ptrdiff_t");
        $m!(uchar, u8, "unsigned char");
        $m!(ushort, u16, "unsigned short");
        $m!(uint, u32, "unsigned int");
        $m!(ulong, u64, "unsigned long");
        $m!(ulonglong, u64, "unsigned long long");
        $m!(int8, i8, "int8_t");
        $m!(int16, i16, "int16_t");
        $m!(int32, i32, "int32_t");
        $m!(int64, i64, "int64_t");
        $m!(uint8, u8, "uint8_t");
        $m!(uint16, u16, "uint16_t");
        $m!(uint32, u32, "uint32_t");
        $m!(uint64, u64, "uint64_t");
        $m!(size, u64, "size_t");
        $m!(float, f32, "float");
        $m!(double, f64, "double");
    };
}

/// The integer types of the deprecated `_to_all` reductions.
macro_rules! for_to_all_int_types {
    ($m:ident) => {
        $m!(short, i16, "short");
        $m!(int, i32, "int");
        $m!(long, i64, "long");
        $m!(longlong, i64, "long long");
    };
}

/// The floating types of the deprecated `_to_all` reductions (`long
/// double` is in `shmem.h`).
macro_rules! for_to_all_float_types {
    ($m:ident) => {
        $m!(float, f32, "float");
        $m!(double, f64, "double");
    };
}

/// The complex types (sum and prod reductions).
macro_rules! for_complex_types {
    ($m:ident) => {
        $m!(complexf, $crate::types::ComplexF, "float _Complex");
        $m!(complexd, $crate::types::ComplexD, "double _Complex");
    };
}
