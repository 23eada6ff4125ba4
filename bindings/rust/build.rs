//! Links the crate against `libloadstate.so`.
//!
//! The library is looked up in `LOADSTATE_LIB_DIR` when that variable is
//! set (and only there; give an absolute path), otherwise in the repository's SwiftPM build
//! folders: `../../.build/debug`, then `../../.build/release`, relative to
//! this crate. The chosen folder is also written into the binaries' rpath,
//! so tests and examples run without `LD_LIBRARY_PATH`.

use std::env;
use std::path::PathBuf;
use std::process;

const LIBRARY_FILE: &str = "libloadstate.so";

fn main() {
    println!("cargo:rerun-if-env-changed=LOADSTATE_LIB_DIR");

    let candidates = candidate_dirs();
    for dir in &candidates {
        println!("cargo:rerun-if-changed={}", dir.join(LIBRARY_FILE).display());
    }

    let Some(dir) = candidates.iter().find(|dir| dir.join(LIBRARY_FILE).is_file()) else {
        let tried: Vec<String> = candidates.iter().map(|d| format!("  {}", d.display())).collect();
        let hint = if env::var_os("LOADSTATE_LIB_DIR").is_some_and(|d| !d.is_empty()) {
            "LOADSTATE_LIB_DIR is set, so no other place was tried."
        } else {
            "Build it with `make lib` in the repository, or set LOADSTATE_LIB_DIR to the folder that holds it."
        };
        eprintln!("error: {LIBRARY_FILE} was not found. Places tried:\n{}\n{hint}", tried.join("\n"));
        process::exit(1);
    };
    // Absolute, but symbolic links kept: SwiftPM's `.build/debug` is a link
    // that follows the current build.
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());

    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=loadstate");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    // Read by dependent build scripts as DEP_LOADSTATE_LIB_DIR.
    println!("cargo:lib_dir={}", dir.display());
}

fn candidate_dirs() -> Vec<PathBuf> {
    if let Some(dir) = env::var_os("LOADSTATE_LIB_DIR").filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(dir)];
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let repository = manifest.parent().and_then(|p| p.parent()).unwrap_or(&manifest);
    vec![repository.join(".build").join("debug"), repository.join(".build").join("release")]
}
