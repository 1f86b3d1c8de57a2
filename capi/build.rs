//! Gives `liboneside_shmem.so` its versioned soname (see [`soname`]), and
//! writes next to the library (`target/<profile>/`) the soname's link and
//! `oneside-shmem.pc`, the pkg-config file of the build tree, pointing at
//! this crate's `include/` and at that directory. (`make install` writes the
//! installed one.)

use std::path::PathBuf;

/// `liboneside_shmem.so.<major>`, where a 0.x version's major is `0.<minor>`
/// (Cargo's compatibility rule): programs record it, and a later
/// incompatible library gets another name.
fn soname() -> String {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_default();
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap_or_default();
    if major == "0" {
        format!("liboneside_shmem.so.0.{minor}")
    } else {
        format!("liboneside_shmem.so.{major}")
    }
}

fn main() {
    let soname = soname();
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out.
    let Some(libdir) = out.ancestors().nth(3) else {
        return;
    };
    let include = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include");
    let pc = format!(
        "prefix={libdir}\nlibdir={libdir}\nincludedir={include}\n\n\
         Name: oneside-shmem\nDescription: OpenSHMEM 1.6 on oneside\nVersion: {version}\n\
         Cflags: -I${{includedir}}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -loneside_shmem\n",
        libdir = libdir.display(),
        include = include.display(),
        version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
    );
    let _ = std::fs::write(libdir.join("oneside-shmem.pc"), pc);
    // Programs linked in the build tree ask for the soname at run time.
    let link = libdir.join(&soname);
    if std::fs::symlink_metadata(&link).is_err() {
        let _ = std::os::unix::fs::symlink("liboneside_shmem.so", &link);
    }
    // oshc++ is oshcc under another name (rustc rejects '+' in a binary's
    // crate name); oshcc compiles C++ when called so.
    let cxx = libdir.join("oshc++");
    if std::fs::symlink_metadata(&cxx).is_err() {
        let _ = std::os::unix::fs::symlink("oshcc", &cxx);
    }
    println!("cargo:rerun-if-changed=build.rs");
}
