//! The direct-path section of `shmem.h`: the inline definitions of the
//! standard routines in `header_direct.h`, instantiated per type (see
//! `direct` for the table they read).

use super::Table;
use std::fmt::Write;

pub fn section(rma: &Table, sizes: &Table, scalar: &Table, amo: &Table) -> String {
    let mut h = String::from("\n#ifndef ONESIDE_NO_DIRECT");
    h.push_str(include_str!("header_direct.h"));
    for (n, c) in rma {
        let _ = writeln!(h, "ONESIDE_DIRECT_RMA({n}_, {c}, sizeof({c}))");
    }
    for (n, _) in sizes {
        let bytes = match *n {
            "mem" => "1".to_string(),
            bits => format!("{}", bits.parse::<usize>().expect("a size in bits") / 8),
        };
        let _ = writeln!(h, "ONESIDE_DIRECT_SIZED({n}, {bytes})");
    }
    for (n, c) in scalar {
        let _ = writeln!(h, "ONESIDE_DIRECT_SCALAR({n}, {c})");
    }
    for (n, c) in amo {
        let _ = writeln!(h, "ONESIDE_DIRECT_AMO({n}, {c})");
    }
    h.push_str("#endif /* ONESIDE_NO_DIRECT */\n");
    h
}
