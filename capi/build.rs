//! Writes `oneside-shmem.pc`, the pkg-config file, next to the library
//! (`target/<profile>/`), pointing at this crate's `include/` and at that
//! directory.

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out.
    let Some(libdir) = out.ancestors().nth(3) else {
        return;
    };
    let include = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include");
    let pc = format!(
        "prefix={libdir}\nlibdir={libdir}\nincludedir={include}\n\n\
         Name: oneside-shmem\nDescription: OpenSHMEM 1.5 on oneside\nVersion: {version}\n\
         Cflags: -I${{includedir}}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -loneside_shmem\n",
        libdir = libdir.display(),
        include = include.display(),
        version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
    );
    let _ = std::fs::write(libdir.join("oneside-shmem.pc"), pc);
    // oshc++ is oshcc under another name (rustc rejects '+' in a binary's
    // crate name); oshcc compiles C++ when called so.
    let cxx = libdir.join("oshc++");
    if std::fs::symlink_metadata(&cxx).is_err() {
        let _ = std::os::unix::fs::symlink("oshcc", &cxx);
    }
    println!("cargo:rerun-if-changed=build.rs");
}
