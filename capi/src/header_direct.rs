//! The direct-path section of `shmem.h`: the inline functions of
//! `header_direct.h`, instantiated per type, and the macros that route the
//! standard names to them (see `direct` for the table they read).

use super::Table;
use crate::direct::{AMO_OPS, RMA_OPS, SIZED_OPS};
use std::fmt::Write;

/// Arguments of the macro that replaces a call by its inline function.
const RMA_ARGS: &str = "dest, source, nelems, pe";

pub fn section(rma: &Table, sizes: &Table, scalar: &Table, amo: &Table) -> String {
    let mut h = String::from("\n#ifndef ONESIDE_NO_DIRECT");
    h.push_str(include_str!("header_direct.h"));
    for (n, c) in rma {
        let _ = writeln!(h, "ONESIDE_DIRECT_RMA({n}_, {c}, sizeof({c}))");
        for op in RMA_OPS {
            let _ = writeln!(
                h,
                "#define shmem_{n}_{op}({RMA_ARGS}) oneside_direct_{n}_{op}({RMA_ARGS})"
            );
        }
    }
    for (n, _) in sizes {
        let bytes = match *n {
            "mem" => "1".to_string(),
            bits => format!("{}", bits.parse::<usize>().expect("a size in bits") / 8),
        };
        let _ = writeln!(h, "ONESIDE_DIRECT_SIZED({n}, {bytes})");
        for op in SIZED_OPS {
            let _ = writeln!(
                h,
                "#define shmem_{op}{n}({RMA_ARGS}) oneside_direct_{op}{n}({RMA_ARGS})"
            );
        }
    }
    for (n, c) in scalar {
        let _ = writeln!(h, "ONESIDE_DIRECT_SCALAR({n}, {c})");
        let _ = writeln!(
            h,
            "#define shmem_{n}_p(dest, value, pe) oneside_direct_{n}_p(dest, value, pe)"
        );
        let _ = writeln!(h, "#define shmem_{n}_g(source, pe) oneside_direct_{n}_g(source, pe)");
    }
    for (n, c) in amo {
        let _ = writeln!(h, "ONESIDE_DIRECT_AMO({n}, {c})");
        for (op, args) in AMO_OPS {
            let _ = writeln!(
                h,
                "#define shmem_{n}_atomic_{op}({args}) oneside_direct_{n}_atomic_{op}({args})"
            );
        }
    }
    h.push_str("#define shmem_quiet() oneside_direct_quiet()\n#define shmem_fence() oneside_direct_fence()\n");
    h.push_str("#endif /* ONESIDE_NO_DIRECT */\n");
    h
}
